//! `cmdlog show`: one event with its context.

use std::io::Write;

use clap::Args;
use cmdlog_replay::show;
use cmdlog_store::Log;

use super::output::print_json;
use super::{CliError, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct ShowArgs {
    /// The event's seq
    seq: u64,
}

pub(crate) fn exec(log: &Log, args: ShowArgs, json: bool) -> VerbResult {
    let Some(shown) = show(log, args.seq).map_err(store_failure)? else {
        return Err(CliError::not_found(format!(
            "no event at seq {}; the log's head is seq {}",
            args.seq,
            log.head().seq
        )));
    };
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &shown)?;
        return Ok(0);
    }
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("events serialize");
    writeln!(out, "{}", pretty(&shown.event))?;
    for r in &shown.related {
        writeln!(
            out,
            "\n{} (seq {}):\n{}",
            r.role,
            r.event["seq"],
            pretty(&r.event)
        )?;
    }
    if let Some(t) = &shown.template {
        writeln!(out, "\ntemplate as registered:\n{t}")?;
    }
    let injections = shown.event["data"]["injections"]
        .as_array()
        .map(|list| list.iter().filter_map(|i| i.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    if !injections.is_empty() {
        writeln!(
            out,
            "\nnot run: its agent would have run or read {} injection(s), which cmdlog never does:",
            injections.len()
        )?;
        for i in injections {
            writeln!(out, "  {i}")?;
        }
    }
    Ok(0)
}
