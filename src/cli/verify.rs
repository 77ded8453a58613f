//! `cmdlog verify`: the chain, seqs, lifecycle invariants and blobs.

use std::io::{self, Write};

use cmdlog_replay::verify;
use cmdlog_store::Log;

use super::output::print_json;
use super::progress::Progress;
use super::{SETTLED_ERROR, VerbResult, store_failure};

pub(crate) fn exec(log: &Log, json: bool) -> VerbResult {
    let bar = Progress::new(log.head().seq, "verify");
    let report = verify(log, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &report)?;
    } else {
        writeln!(
            out,
            "{} events, {} blobs checked",
            report.events, report.blobs
        )?;
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
    Ok(if report.is_clean() { 0 } else { SETTLED_ERROR })
}
