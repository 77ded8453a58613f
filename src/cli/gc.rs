//! `cmdlog gc`: remove blobs no event references, once past a grace period.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use cmdlog_replay::{collect, plan_gc_with};
use serde_json::json;

use super::open::{open_existing, open_existing_writable};
use super::progress::Progress;
use super::{Paths, VerbResult, now_ms, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    /// Keep unreferenced blobs younger than this (an admission may be in flight)
    #[arg(long, default_value = "1h", value_parser = cmdlog_common::time::parse_duration)]
    grace: Duration,
    /// Say what would be freed without removing anything
    #[arg(long)]
    dry_run: bool,
}

pub(crate) fn exec(paths: &Paths, args: GcArgs, json: bool) -> VerbResult {
    let log = &match args.dry_run {
        true => open_existing(paths)?,
        false => open_existing_writable(paths)?,
    };
    let grace_ms = args.grace.as_millis() as u64;
    let bar = Progress::new(log.head().seq, "gc");
    let plan = plan_gc_with(log, now_ms(), grace_ms, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let removed = if args.dry_run {
        0
    } else {
        collect(log, &plan).map_err(store_failure)?
    };
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            json!({"dry_run": args.dry_run, "removed": removed, "plan": plan})
        )?;
        return Ok(0);
    }
    let verb = if args.dry_run { "would free" } else { "freed" };
    for b in &plan.collect {
        writeln!(out, "{verb} {} ({} bytes)", b.hash, b.size)?;
    }
    writeln!(
        out,
        "{verb} {} blobs, {} bytes; kept {} referenced and {} younger than {}",
        plan.collect.len(),
        plan.bytes,
        plan.referenced,
        plan.in_grace.len(),
        cmdlog_common::time::format_duration(args.grace)
    )?;
    Ok(0)
}
