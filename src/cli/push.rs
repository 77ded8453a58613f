//! `cmdlog push URL [--follow]`: replicate this log to a hub (`docs/hub.md`).

use std::io::Write;
use std::time::Duration;

use clap::Args;
use cmdlog_store::{Log, LogConfig};
use serde_json::json;

use super::hub::{HubArgs, runtime};
use super::open::{open_existing, require_log};
use super::{CliError, Paths, VerbResult, hub_failure, open_failure, store_failure};
use crate::render;
use cmdlog_hub::{PushError, Pusher, push};

#[derive(Args, Debug)]
pub(crate) struct PushArgs {
    #[command(flatten)]
    hub: HubArgs,
    /// Keep pushing as the log grows (retrying for ever while the hub is away)
    #[arg(long)]
    follow: bool,
    /// How long to keep retrying an unreachable hub before giving up, in seconds
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    patience: u64,
    /// The key each round's checkpoint is signed with (docs/verifiable.md)
    #[command(flatten)]
    key: super::checkpoint::KeyArgs,
}

/// The log's identity, given now (by a short writable open) if it has none.
fn identity(paths: &Paths) -> Result<cmdlog_engine::event::LogIdentity, CliError> {
    let log = open_existing(paths)?;
    if let Some(identity) = cmdlog_engine::identity::read_identity(&log).map_err(store_failure)? {
        return Ok(identity);
    }
    drop(log);
    let log = Log::open(&paths.log, LogConfig::default()).map_err(open_failure)?;
    cmdlog_engine::identity::ensure_identity(&log).map_err(store_failure)
}

pub(crate) fn exec(paths: &Paths, args: PushArgs, json: bool) -> VerbResult {
    require_log(paths)?;
    let identity = identity(paths)?;
    let rt = runtime()?;
    let hub = rt
        .block_on(args.hub.options()?.connect())
        .map_err(hub_failure)?;
    let host = cmdlog_engine::identity::host_name();
    let mut pusher = Pusher::new(hub, &identity.id, &host);
    match super::checkpoint::signer(&identity, &args.key) {
        Ok(signer) => pusher.sign_checkpoints(signer),
        Err(e) => eprintln!(
            "cmdlog: push: warning: no signed checkpoints on the hub ({}): readers of the hub cannot tell its records from forged ones",
            render::clean(&e.message)
        ),
    }
    let patience = if args.follow {
        Duration::MAX
    } else {
        Duration::from_secs(args.patience)
    };
    let shown = pusher.hub().shown.clone();
    let note = |m: &str| eprintln!("cmdlog: push: {}", render::clean(m));
    let mut total = (0u64, 0u64, 0u64);
    loop {
        // Opened for each round and closed after it: hooks and other verbs
        // append between rounds.
        let log = open_existing(paths)?;
        let bar = super::progress::Progress::new(log.head().seq, "push");
        let result = rt.block_on(push(&mut pusher, &log, false, patience, bar.tick(), note));
        bar.finish();
        drop(log);
        let pushed = match result {
            Ok(p) => p,
            Err(
                e @ (PushError::Fork { .. }
                | PushError::Rollback { .. }
                | PushError::Checkpoint(cmdlog_hub::PublishError::Inconsistent { .. })),
            ) => {
                return Err(CliError::conflict(e.to_string()));
            }
            Err(e) => return Err(hub_failure(e)),
        };
        if pusher
            .hub()
            .created
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            note(&format!(
                "created the hub's stream {} with one replica; for a cluster, `cmdlog hub init URL,URL,URL --replicas 3` (docs/hub.md)",
                pusher.hub().name
            ));
        }
        for f in &pushed.foreign {
            note(&format!(
                "the hub holds a foreign record of log {} at stream message {} (claims seq {}: {}): forged, or another machine's with this id; pushed past it",
                identity.id, f.stream_seq, f.seq, f.why
            ));
        }
        total.0 += pushed.records;
        total.1 += pushed.bytes;
        total.2 += pushed.blobs;
        let head = pushed.head.clone();
        if !args.follow {
            let mut out = render::Human::stdout(json);
            let (seq, hash) = head.map(|h| (h.seq, h.hash)).unwrap_or_default();
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"log_id": identity.id, "hub": shown, "stream": args.hub.stream,
                        "pushed": total.0, "bytes": total.1, "blobs": total.2,
                        "head_seq": seq, "head_hash": hash})
                )?;
            } else {
                writeln!(
                    out,
                    "log {} on {}: pushed {} records ({} bytes), {} blobs; the hub holds through seq {} hash {}",
                    identity.id, shown, total.0, total.1, total.2, seq, hash
                )?;
            }
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
