//! How `cmdlog verify` prints what it found: a line per finding for a person,
//! one JSON object for a program.

use std::io::Write;

use cmdlog_agents::SpillReport;
use cmdlog_engine::event::LogIdentity;
use cmdlog_index::Coverage;
use cmdlog_replay::{SavedCheck, VerifyReport};

use super::super::output::print_json;
use super::super::{CliError, store_failure};
use crate::render;

/// What `verify --json` prints: the report and what verify saw beside it.
#[derive(serde::Serialize)]
struct Printed<'a> {
    #[serde(flatten)]
    report: &'a VerifyReport,
    log_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<&'a SavedCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<&'a Coverage>,
    #[serde(flatten)]
    spill: &'a SpillReport,
}

/// Prints `report`, the log's `identity`, the hook payloads in its spill folder
/// and what a saved checkpoint showed.
pub(super) fn print(
    report: &VerifyReport,
    identity: Option<&LogIdentity>,
    spill: &SpillReport,
    checkpoint: Option<&SavedCheck>,
    index: Option<&Coverage>,
    json: bool,
) -> Result<(), CliError> {
    let spilled = &spill.waiting;
    let mut out = render::Human::stdout(json);
    if json {
        let printed = Printed {
            report,
            log_id: identity.map(|i| i.id.as_str()),
            checkpoint,
            index,
            spill,
        };
        // Through a JSON value: its keys print sorted.
        let value = serde_json::to_value(&printed).map_err(store_failure)?;
        print_json(&mut out, &value)?;
    } else {
        writeln!(
            out,
            "{} events, {} blobs checked",
            report.events, report.blobs
        )?;
        if let Some(identity) = identity {
            writeln!(out, "{}", crate::render::identity(identity))?;
        }
        writeln!(
            out,
            "head seq {} hash {}",
            report.head_seq, report.head_hash
        )?;
        for run in &report.open_runs {
            writeln!(
                out,
                "open run: seq {} /{} in session {} (in flight, or its process died)",
                run.seq,
                run.name,
                run.session.as_deref().unwrap_or("-")
            )?;
        }
        for conflict in &report.conflicts {
            writeln!(out, "conflict: {conflict}")?;
        }
        if !spilled.is_empty() {
            writeln!(
                out,
                "spilled: {} hook payload(s) not yet appended, in {}; the next `cmdlog hook` call that reaches the log appends them",
                spilled.len(),
                spilled[0]
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )?;
        }
        for r in &spill.refused {
            writeln!(
                out,
                "spill: ignored {}: {}; cmdlog did not write it (remove it if you did not either)",
                r.path.display(),
                r.why
            )?;
        }
        for p in &spill.set_aside {
            writeln!(
                out,
                "spill: set aside {}: the log could not take it; it is kept for you to read",
                p.display()
            )?;
        }
        if let Some(SavedCheck {
            consistent: true,
            size: Some(size),
            ..
        }) = checkpoint
        {
            writeln!(
                out,
                "checkpoint: the log holds the {size} records the checkpoint commits to, unchanged"
            )?;
        }
        if let Some(c) = index.filter(|c| c.missing_count + c.extra_count == 0) {
            let behind = if c.through < c.head {
                "; `cmdlog index` brings it up"
            } else {
                ""
            };
            writeln!(
                out,
                "index: covers seq 1 through {} of {}{behind}",
                c.through, c.head
            )?;
        }
        if report.is_clean() {
            writeln!(out, "ok: no violations")?;
        } else {
            for v in &report.violations {
                match v.seq {
                    Some(seq) => writeln!(out, "violation at seq {seq}: {}", v.message)?,
                    None => writeln!(out, "violation: {}", v.message)?,
                }
            }
        }
    }
    Ok(())
}
