//! `cmdlog audit`: a timeline of runs with input, attachments, outcome and duration.

use std::io::Write;

use clap::Args;
use cmdlog_engine::event::Outcome;
use cmdlog_replay::{AuditFilter, AuditRow};
use cmdlog_store::Log;

use super::open::require_session;
use super::output::{colour, print_json};
use super::{CliError, VerbResult, now_ms, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct AuditArgs {
    /// Only this session
    #[arg(long)]
    session: Option<String>,
    /// Only runs since a time (2026-11-28, 2026-11-28T09:30:00Z) or for a span back (24h, 2d)
    #[arg(long)]
    since: Option<String>,
    /// Only this command
    #[arg(long)]
    command: Option<String>,
    /// Only runs that settled as errors
    #[arg(long)]
    errors: bool,
}

/// `--since`: an absolute time (`2026-11-28`, `2026-11-28T09:30:00Z`) or a span back
pub(crate) fn parse_since(text: &str) -> Result<u64, CliError> {
    parse_time("--since", text, now_ms())
}

/// A time given to `flag`, as [`parse_since`] reads it, span back from `now`.
pub(crate) fn parse_time(flag: &str, text: &str, now: u64) -> Result<u64, CliError> {
    cmdlog_common::time::parse_since(text, now).ok_or_else(|| {
        CliError::usage(format!(
            "{flag} {text:?}: give a date (2026-11-28), a UTC time (2026-11-28T09:30:00Z) or a span back (24h, 2d)"
        ))
    })
}

pub(crate) fn exec(log: &Log, args: AuditArgs, json: bool) -> VerbResult {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let filter = AuditFilter {
        session: args.session,
        since_ms: args.since.as_deref().map(parse_since).transpose()?,
        command: args
            .command
            .map(|c| c.trim_start_matches('/').to_lowercase()),
        errors_only: args.errors,
    };
    let (rows, conflicts) =
        cmdlog_replay::audit_with_conflicts(log, &filter, |_| {}).map_err(store_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &rows)?;
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
        "time", "seq", "session", "agent", "mode", "command", "duration"
    )?;
    for row in &rows {
        let (line, mut outcome, code) = audit_line(row);
        if !row.injections.is_empty() {
            outcome.push_str(&format!(" [{} injection(s) not run]", row.injections.len()));
        }
        write!(out, "{line} ")?;
        out.paint(on, code, &outcome)?;
        writeln!(out)?;
    }
    if rows.is_empty() {
        writeln!(out, "(no runs match)")?;
    }
    for conflict in &conflicts {
        writeln!(out, "conflict: {conflict}")?;
    }
    Ok(0)
}

/// A run's row without its outcome, the outcome, and the outcome's colour.
pub(crate) fn audit_line(row: &AuditRow) -> (String, String, &'static str) {
    let input = match &row.input {
        Some(i) => format!("/{}{i}", row.command),
        None => format!("/{} (input not recorded)", row.command),
    };
    let input = if row.attachments.is_empty() {
        input
    } else {
        format!("{input} [{}]", row.attachments.join(", "))
    };
    let input: String = if input.chars().count() > 40 {
        format!("{}…", input.chars().take(39).collect::<String>())
    } else {
        input
    };
    let (outcome, code) = match &row.outcome {
        None => (
            "no done yet (in flight, or its process died)".to_string(),
            "33",
        ),
        Some(
            o @ Outcome::Error {
                interrupted: true, ..
            },
        ) => (o.line(), "33"),
        Some(o @ Outcome::Error { .. }) => (o.line(), "31"),
        Some(o) => (o.line(), "32"),
    };
    let line = format!(
        "{} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9}",
        render::utc(row.at),
        row.seq,
        row.session.as_deref().unwrap_or("-"),
        row.agent.as_deref().unwrap_or("-"),
        row.mode.as_str(),
        input,
        row.elapsed_us
            .map(render::duration)
            .unwrap_or_else(|| "-".into()),
    );
    (line, outcome, code)
}
