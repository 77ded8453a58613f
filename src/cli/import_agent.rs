//! `cmdlog import --from <agent>`: an agent's transcripts into this log.

use std::io::Write;
use std::path::PathBuf;

use cmdlog_store::{Log, LogConfig};

use super::open::home;
use super::output::print_json;
use super::progress::Progress;
use super::{CliError, Paths, VerbResult, now_ms, open_failure, store_failure};
use crate::render;
use cmdlog_agents::{AgentKind, default_roots, files};

pub(crate) fn exec(
    paths: &Paths,
    agent: &str,
    given: &[PathBuf],
    since_text: Option<&str>,
    redact: bool,
    json: bool,
) -> VerbResult {
    let agent = AgentKind::parse(agent).map_err(|e| CliError::usage(e.to_string()))?;
    let now = now_ms();
    let since = since_text
        .map(|s| super::audit::parse_time("--since", s, now))
        .transpose()?;
    let roots = if given.is_empty() {
        default_roots(agent, &home()?)
    } else {
        for p in given {
            if !p.exists() {
                return Err(CliError::not_found(format!(
                    "{} does not exist",
                    p.display()
                )));
            }
        }
        given.to_vec()
    };
    let total: u64 = files(agent, &roots, since)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let log =
        Log::open_or_through_holder(&paths.log, LogConfig::default()).map_err(open_failure)?;
    cmdlog_engine::identity::ensure_identity(&log).map_err(store_failure)?;
    let bar = Progress::new(total, "import");
    let summary = {
        let mut tick = bar.tick();
        cmdlog_agents::import(&log, agent, &roots, since, redact, now, &mut tick)
            .map_err(store_failure)?
    };
    bar.finish();
    log.close();
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &summary)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{}: {} file(s), {} line(s): {} event(s) appended in {} session(s), {} item(s) already imported{}{}",
        agent.name(),
        summary.files,
        summary.lines,
        summary.events,
        summary.sessions.len(),
        summary.skipped,
        if summary.unchanged > 0 {
            format!(
                ", {} file(s) unchanged since they were imported",
                summary.unchanged
            )
        } else {
            String::new()
        },
        if summary.redacted > 0 {
            format!(", {} secret(s) redacted", summary.redacted)
        } else {
            String::new()
        }
    )?;
    if summary.files == 0 {
        writeln!(
            out,
            "no transcripts found in {}; give files or folders to read",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    for line in summary.malformed.iter().take(20) {
        writeln!(out, "malformed line skipped: {line}")?;
    }
    if summary.malformed.len() > 20 {
        writeln!(
            out,
            "… and {} more malformed lines",
            summary.malformed.len() - 20
        )?;
    }
    for u in &summary.unreadable {
        writeln!(out, "unreadable: {u}")?;
    }
    Ok(0)
}
