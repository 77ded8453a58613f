//! How `cmdlog verify` prints what it found: a line per finding for a person,
//! one JSON object for a program.

use std::io::Write;

use cmdlog_agents::SpillReport;
use cmdlog_engine::event::LogIdentity;
use cmdlog_replay::VerifyReport;

use super::super::output::print_json;
use super::super::{CliError, store_failure};
use crate::render;

/// Prints `report`, the log's `identity`, the hook payloads in its spill folder
/// and what a saved checkpoint showed.
pub(super) fn print(
    report: &VerifyReport,
    identity: Option<&LogIdentity>,
    spill: &SpillReport,
    checkpoint_json: Option<serde_json::Value>,
    json: bool,
) -> Result<(), CliError> {
    let spilled = &spill.waiting;
    let mut out = render::Human::stdout(json);
    if json {
        let mut value = serde_json::to_value(report).map_err(store_failure)?;
        value["log_id"] = serde_json::json!(identity.map(|i| &i.id));
        if let Some(checkpoint) = checkpoint_json {
            value["checkpoint"] = checkpoint;
        }
        value["spilled"] = serde_json::json!(
            spilled
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        );
        value["spill_refused"] = serde_json::json!(
            spill
                .refused
                .iter()
                .map(|r| serde_json::json!({"path": r.path.display().to_string(), "why": r.why}))
                .collect::<Vec<_>>()
        );
        value["spill_set_aside"] = serde_json::json!(
            spill
                .set_aside
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        );
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
        if let Some(checkpoint) = &checkpoint_json
            && checkpoint["consistent"] == true
        {
            writeln!(
                out,
                "checkpoint: the log holds the {} records the checkpoint commits to, unchanged",
                checkpoint["size"]
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
