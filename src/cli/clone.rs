//! `cmdlog clone URL LOG_ID -o FILE`: rebuild a log from its copy on a hub —
//! the same records, byte for byte, so the same seqs and head hash — and the
//! blobs its events reference. Every verb then works on it.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use cmdlog_store::{BlobHash, Log, LogConfig, NewRecord};
use serde_json::json;

use super::{
    Failure, Paths, SETTLED_ERROR, USAGE, VerbResult, hub_failure, open_failure, store_failure,
};
use crate::hub::read::each;
use crate::hub::{HubArgs, HubError, bucket, runtime};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct CloneArgs {
    #[command(flatten)]
    hub: HubArgs,
    /// The log's id (`cmdlog hub list` shows them)
    log_id: String,
    /// Where to write the new log (must not exist)
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

/// Why a clone failed: the hub's copy does not rebuild (exit 1), the new log
/// could not be written (exit 4), or the hub failed (exit 5).
enum Failed {
    Rebuild(String),
    Store(String),
    Hub(HubError),
}

impl From<HubError> for Failed {
    fn from(e: HubError) -> Failed {
        Failed::Hub(e)
    }
}

/// Records appended per atomic append.
const CHUNK: usize = 1000;

pub(crate) fn exec(_paths: &Paths, args: CloneArgs, json: bool) -> VerbResult {
    if args.output.exists() {
        return Err(Failure::new(
            USAGE,
            format!(
                "{} exists; clone writes a new log (choose another -o FILE)",
                args.output.display()
            ),
        ));
    }
    if args.log_id.is_empty() || !args.log_id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Failure::new(
            USAGE,
            format!(
                "{:?} is not a log id; `cmdlog hub list URL` shows them",
                args.log_id
            ),
        ));
    }
    if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(store_failure)?;
    }
    let rt = runtime().map_err(hub_failure)?;
    let hub = rt.block_on(args.hub.connect()).map_err(hub_failure)?;
    let stream = rt.block_on(hub.existing_stream()).map_err(hub_failure)?;
    let log = Log::open(&args.output, LogConfig::default()).map_err(open_failure)?;
    let result = rt.block_on(async {
        if crate::hub::head(&hub, &stream, &args.log_id).await?.is_none() {
            return Err(Failed::Hub(hub.error(format!(
                "no log {} on stream {}; `cmdlog hub list` shows the logs",
                args.log_id, hub.name
            ))));
        }
        let mut pending: Vec<NewRecord> = Vec::new();
        let mut last: Option<(u64, String)> = None;
        let mut next = 1u64;
        let mut stopped: Option<Failed> = None;
        let flush = |pending: &mut Vec<NewRecord>, last: &Option<(u64, String)>| -> Result<(), Failed> {
            if pending.is_empty() {
                return Ok(());
            }
            tokio::task::block_in_place(|| log.append(std::mem::take(pending)))
                .map_err(|e| Failed::Store(e.to_string()))?;
            if let Some((seq, hash)) = last {
                let head = log.head();
                if head.seq != *seq || BlobHash(head.hash).to_hex() != *hash {
                    return Err(Failed::Rebuild(format!(
                        "the hub's copy of log {} does not rebuild: at seq {seq} it records hash {hash}, the rebuilt log has {}",
                        args.log_id,
                        BlobHash(head.hash).to_hex()
                    )));
                }
            }
            Ok(())
        };
        let count = each(&hub, &stream, &hub.subject(&args.log_id), |record| {
            if record.seq != next {
                stopped = Some(Failed::Rebuild(format!(
                    "the hub's copy of log {} holds seq {} where seq {next} was due (stream message {}): it was written by two machines with one id",
                    args.log_id, record.seq, record.stream_seq
                )));
                return Ok(false);
            }
            next += 1;
            last = Some((record.seq, record.hash.clone()));
            let mut r = NewRecord::new(record.bytes);
            if let Some(key) = record.stream {
                r = r.stream(key);
            }
            pending.push(r);
            if pending.len() >= CHUNK
                && let Err(e) = flush(&mut pending, &last)
            {
                stopped = Some(e);
                return Ok(false);
            }
            Ok(true)
        })
        .await?;
        if let Some(failed) = stopped {
            return Err(failed);
        }
        flush(&mut pending, &last)?;
        // The blobs its events reference.
        let wanted =
            cmdlog_replay::referenced_blobs(&log).map_err(|e| Failed::Store(e.to_string()))?;
        let mut fetched = 0u64;
        if !wanted.is_empty() {
            let store = hub
                .js
                .get_object_store(bucket(&hub.name))
                .await
                .map_err(|e| hub.error(format!("blob bucket: {e}")))?;
            for hash in wanted {
                let name = hash.to_hex();
                let Ok(mut object) = store.get(&name).await else {
                    continue;
                };
                let mut bytes = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes)
                    .await
                    .map_err(|e| hub.error(format!("blob {name}: {e}")))?;
                if BlobHash::of(&bytes) != hash {
                    return Err(Failed::Hub(
                        hub.error(format!("blob {name}: its bytes do not hash to its name")),
                    ));
                }
                tokio::task::block_in_place(|| log.put_blob(bytes))
                    .map_err(|e| Failed::Store(e.to_string()))?;
                fetched += 1;
            }
        }
        Ok((count, fetched))
    });
    let (count, blobs) = match result {
        Ok(r) => r,
        Err(failed) => {
            // A clone that failed leaves no file.
            drop(log);
            let _ = std::fs::remove_file(&args.output);
            let _ = std::fs::remove_file(cmdlog_store::journal_path(&args.output));
            return Err(match failed {
                Failed::Rebuild(m) => Failure::new(SETTLED_ERROR, m),
                Failed::Store(m) => Failure::new(super::STORE, m),
                Failed::Hub(e) => hub_failure(e),
            });
        }
    };
    let head = log.head();
    drop(log);
    let mut out = render::Human::stdout(json);
    let hash = BlobHash(head.hash).to_hex();
    if json {
        writeln!(
            out,
            "{}",
            json!({"log_id": args.log_id, "file": args.output.display().to_string(),
                "records": count, "blobs": blobs, "head_seq": head.seq, "head_hash": hash})
        )?;
    } else {
        writeln!(
            out,
            "cloned log {} into {}: {} records, {} blobs; head seq {} hash {}",
            args.log_id,
            render::clean(&args.output.display().to_string()),
            count,
            blobs,
            head.seq,
            hash
        )?;
    }
    Ok(0)
}
