//! `cmdlog clone URL LOG_ID -o FILE`: rebuild a log from its copy on a hub —
//! the same records, byte for byte, so the same seqs and head hash — and the
//! blobs its events reference. Every verb then works on it.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use cmdlog_hub::{CloneError, clone_log};
use serde_json::json;

use super::hub::{HubArgs, runtime};
use super::{CliError, Paths, VerbResult, hub_failure, open_failure, store_failure};
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
    /// The log's verifier key (`cmdlog key` on its machine) to check the hub's
    /// signed checkpoint with [default: the key the hub publishes beside it,
    /// which proves the copy consistent but not who signed it]; repeatable
    #[arg(long, value_name = "KEY")]
    vkey: Vec<String>,
}

pub(crate) fn exec(_paths: &Paths, args: CloneArgs, json: bool) -> VerbResult {
    if args.output.exists() {
        return Err(CliError::usage(format!(
            "{} exists; clone writes a new log (choose another -o FILE)",
            args.output.display()
        )));
    }
    if args.log_id.is_empty() || !args.log_id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(CliError::usage(format!(
            "{:?} is not a log id; `cmdlog hub list URL` shows them",
            args.log_id
        )));
    }
    if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(store_failure)?;
    }
    let verifiers = args
        .vkey
        .iter()
        .map(|k| cmdlog_tlog::NoteVerifier::parse(k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::usage(format!("--vkey: {e}")))?;
    let options = args.hub.options()?;
    let rt = runtime()?;
    let cloned = rt
        .block_on(async {
            let hub = options.connect().await?;
            clone_log(&hub, &args.log_id, &args.output, &verifiers).await
        })
        .map_err(|e| match e {
            CloneError::OutOfOrder { .. }
            | CloneError::HashDiffers { .. }
            | CloneError::Forged { .. } => CliError::damaged(e.to_string()),
            CloneError::Open(e) => open_failure(e),
            CloneError::Hub(e) => hub_failure(e),
            e => store_failure(e),
        })?;
    for f in &cloned.foreign {
        eprintln!(
            "cmdlog: clone: stream message {} of log {} is not the log's (claims seq {}: {}): forged, or another machine's with this id; left out",
            f.stream_seq,
            render::clean(&args.log_id),
            f.seq,
            f.why
        );
    }
    match cloned.checkpoint {
        None => eprintln!(
            "cmdlog: clone: the hub holds no signed checkpoint of log {}: the copy was checked against its hash chain only",
            render::clean(&args.log_id)
        ),
        Some(size) if cloned.trusted_hub_key => eprintln!(
            "cmdlog: clone: checked against the hub's checkpoint of {size} records with the key the hub publishes; pass --vkey KEY (from `cmdlog key` on the log's machine) to know who signed it"
        ),
        Some(_) => {}
    }
    if let Some((first, last)) = cloned.uncovered {
        eprintln!(
            "cmdlog: clone: the hub's records {first}..={last} of log {} are covered by no signed checkpoint: reported as forged and left out (if the log's owner pushed them, their next push signs them)",
            render::clean(&args.log_id)
        );
    }
    let (count, blobs, head) = (cloned.records, cloned.blobs, cloned.head);
    let mut out = render::Human::stdout(json);
    let hash = head.hash.to_hex();
    if json {
        writeln!(
            out,
            "{}",
            json!({"log_id": args.log_id, "file": args.output.display().to_string(),
                "records": count, "blobs": blobs, "head_seq": head.seq, "head_hash": hash,
                "checkpoint_size": cloned.checkpoint, "trusted_hub_key": cloned.trusted_hub_key,
                "uncovered": cloned.uncovered.map(|(a, b)| json!([a, b]))})
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
