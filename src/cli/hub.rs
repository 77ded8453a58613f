//! `cmdlog hub list URL` and `cmdlog hub audit URL`: the logs a hub holds, and
//! one timeline of runs across all of them, read straight from the hub.

use std::collections::BTreeMap;
use std::io::Write;

use clap::{Args, Subcommand};
use cmdlog_engine::Event;
use cmdlog_replay::{AuditFold, AuditRow};
use serde_json::json;

use super::audit::{audit_line, parse_since};
use super::output::colour;
use super::{VerbResult, hub_failure};
use crate::hub::read::{each, list};
use crate::hub::{HubArgs, runtime};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct HubVerbArgs {
    #[command(subcommand)]
    verb: HubVerb,
}

#[derive(Subcommand, Debug)]
enum HubVerb {
    /// The logs on the hub: id, host, head seq and hash, last push
    List {
        #[command(flatten)]
        hub: HubArgs,
    },
    /// One timeline of runs across every log on the hub
    Audit {
        #[command(flatten)]
        hub: HubArgs,
        /// Only runs since a time (2026-11-28, 2026-11-28T09:30:00Z) or a span back (24h)
        #[arg(long)]
        since: Option<String>,
        /// Only runs recorded by this agent (claude-code, codex, …)
        #[arg(long)]
        agent: Option<String>,
        /// Only this command
        #[arg(long)]
        command: Option<String>,
    },
}

pub(crate) fn exec(args: HubVerbArgs, json: bool) -> VerbResult {
    match args.verb {
        HubVerb::List { hub } => list_logs(hub, json),
        HubVerb::Audit {
            hub,
            since,
            agent,
            command,
        } => {
            let since = since.as_deref().map(parse_since).transpose()?;
            let command = command.map(|c| c.trim_start_matches('/').to_lowercase());
            audit_all(hub, since, agent, command, json)
        }
    }
}

fn list_logs(args: HubArgs, json: bool) -> VerbResult {
    let rt = runtime().map_err(hub_failure)?;
    let logs = rt
        .block_on(async {
            let hub = args.connect().await?;
            let stream = hub.existing_stream().await?;
            list(&hub, &stream).await
        })
        .map_err(hub_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        super::output::print_json(&mut out, &logs)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{:<32}  {:<20} {:>9}  {:<64}  last push",
        "log", "host", "head seq", "head hash"
    )?;
    for log in &logs {
        writeln!(
            out,
            "{:<32}  {:<20} {:>9}  {:<64}  {}",
            render::clean(&log.id),
            render::clean(&log.host),
            log.head_seq,
            render::clean(&log.head_hash),
            log.last_push
        )?;
    }
    if logs.is_empty() {
        writeln!(
            out,
            "(no logs on this hub yet; `cmdlog push URL` adds this one)"
        )?;
    }
    Ok(0)
}

/// A run row with the log it came from.
struct HubRow {
    log_id: String,
    host: String,
    row: AuditRow,
}

fn audit_all(
    args: HubArgs,
    since: Option<u64>,
    agent: Option<String>,
    command: Option<String>,
    json: bool,
) -> VerbResult {
    let rt = runtime().map_err(hub_failure)?;
    // One fold per log (a log's seqs are its own), and its host.
    let mut folds: BTreeMap<String, (String, AuditFold)> = BTreeMap::new();
    rt.block_on(async {
        let hub = args.connect().await?;
        let stream = hub.existing_stream().await?;
        let all = hub.all_logs();
        each(&hub, &stream, &all, |record| {
            if let Ok(event) = Event::decode(record.seq, &record.bytes) {
                let (_, fold) = folds
                    .entry(record.log_id)
                    .or_insert_with(|| (record.host, AuditFold::default()));
                fold.add(&event, |e, run| {
                    !(since.is_some_and(|s| e.at < s)
                        || command.as_deref().is_some_and(|c| c != run.name)
                        || agent
                            .as_deref()
                            .is_some_and(|a| e.agent.as_deref() != Some(a)))
                });
            }
            Ok(true)
        })
        .await
    })
    .map_err(hub_failure)?;
    let mut rows: Vec<HubRow> = folds
        .into_iter()
        .flat_map(|(log_id, (host, fold))| {
            fold.rows().into_iter().map(move |row| HubRow {
                log_id: log_id.clone(),
                host: host.clone(),
                row,
            })
        })
        .collect();
    // One timeline: by time, then log, then seq.
    rows.sort_by(|a, b| (a.row.at, &a.log_id, a.row.seq).cmp(&(b.row.at, &b.log_id, b.row.seq)));
    let mut out = render::Human::stdout(json);
    if json {
        for r in &rows {
            let mut value = serde_json::to_value(&r.row).map_err(super::store_failure)?;
            value["log_id"] = json!(r.log_id);
            value["host"] = json!(r.host);
            writeln!(out, "{value}")?;
        }
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<8} {:<12} {:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
        "log", "host", "time", "seq", "session", "agent", "mode", "command", "duration"
    )?;
    for r in &rows {
        let (line, outcome, code) = audit_line(&r.row);
        let short: String = r.log_id.chars().take(8).collect();
        let host: String = r.host.chars().take(12).collect();
        write!(
            out,
            "{:<8} {:<12} {line} ",
            render::clean(&short),
            render::clean(&host)
        )?;
        out.paint(on, code, &outcome)?;
        writeln!(out)?;
    }
    if rows.is_empty() {
        writeln!(out, "(no runs match)")?;
    }
    Ok(0)
}
