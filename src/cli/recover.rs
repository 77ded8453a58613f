//! `cmdlog recover`: open the log for writing once, applying what a crash left in
//! its write-ahead log; with `--discard-damaged-wal`, also drop a damaged tail (the
//! drop is recorded in the log as `log/wal_discarded`).

use std::io::Write;

use clap::Args;
use cmdlog_engine::{Engine, EngineConfig};
use cmdlog_store::{Log, LogConfig};
use serde_json::json;

use super::open::require_log;
use super::{CliError, Paths, VerbResult, open_failure, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct RecoverArgs {
    /// When the write-ahead log is missing, cut, damaged or does not continue the
    /// log, keep the frames before the damage and drop the rest (the events they
    /// held are lost; the drop is recorded in the log). Keep a copy of both files first
    #[arg(long)]
    discard_damaged_wal: bool,
}

pub(crate) fn exec(paths: &Paths, args: RecoverArgs, json: bool) -> VerbResult {
    require_log(paths)?;
    let config = LogConfig {
        discard_wal_damage: args.discard_damaged_wal,
        ..LogConfig::default()
    };
    let log = Log::open(&paths.log, config).map_err(open_failure)?;
    let discard = log.wal_discard().cloned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io(format!("cannot start the runtime: {e}")))?;
    // Opening the engine closes interrupted runs and records the discard.
    let engine = runtime
        .block_on(Engine::open(log, EngineConfig::default()))
        .map_err(store_failure)?;
    let head = engine.log().head();
    drop(engine);
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            json!({
                "log": paths.log.display().to_string(),
                "head_seq": head.seq,
                "head_hash": head.hash.to_hex(),
                "discarded": discard.as_ref().map(|d| json!({
                    "problem": d.problem,
                    "kept_through": d.kept_through,
                    "dropped_seqs": d.dropped_seqs,
                    "dropped_frames": d.dropped_frames,
                })),
            })
        )?;
        return Ok(0);
    }
    match &discard {
        Some(d) => {
            writeln!(out, "{} {}", d.wal.display(), d.problem)?;
            writeln!(
                out,
                "kept every event up to seq {}; dropped {} frame(s){}; recorded as log/wal_discarded",
                d.kept_through,
                d.dropped_frames,
                d.dropped_seqs
                    .map(|(a, b)| format!(" holding seqs {a} to {b}"))
                    .unwrap_or_default()
            )?;
        }
        None => writeln!(out, "nothing to discard: the log opened cleanly")?,
    }
    writeln!(out, "head seq {} hash {}", head.seq, head.hash.to_hex())?;
    Ok(0)
}
