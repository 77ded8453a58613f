//! `cmdlog prove`: an inclusion proof of one record, or a consistency proof from a
//! checkpoint saved earlier, each with the signed checkpoint of the head it
//! verifies against.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::checkpoint::{KeyArgs, checkpoint_failure, open_with_identity, signer};
use super::output::print_json;
use super::{CliError, Paths, VerbResult};

#[derive(Args, Debug)]
pub(crate) struct ProveArgs {
    /// The record to prove is in the log
    #[arg(
        value_name = "SEQ",
        required_unless_present = "since",
        conflicts_with = "since"
    )]
    seq: Option<u64>,
    /// Prove the log extends this saved checkpoint (`cmdlog checkpoint -o FILE`)
    #[arg(long, value_name = "CHECKPOINT_FILE")]
    since: Option<PathBuf>,
    #[command(flatten)]
    key: KeyArgs,
}

/// Reads a saved checkpoint (a file from anywhere: capped, no link followed).
pub(crate) fn read_checkpoint(path: &std::path::Path) -> Result<String, CliError> {
    let max = cmdlog_tlog::NOTE_BYTES_MAX as u64;
    cmdlog_common::private_fs::read_untrusted_text(path, max).map_err(CliError::not_found)
}

pub(crate) fn exec(paths: &Paths, args: ProveArgs, json: bool) -> VerbResult {
    let (log, identity) = open_with_identity(paths)?;
    let signer = signer(&identity, &args.key)?;
    let origin = cmdlog_replay::origin(&identity.id);
    let mut out = std::io::stdout().lock();
    match (args.seq, &args.since) {
        (Some(seq), _) => {
            let proof = cmdlog_replay::prove_inclusion(&log, seq, &origin, &signer)
                .map_err(checkpoint_failure)?;
            if json {
                print_json(&mut out, &proof.to_json())?;
            } else {
                out.write_all(proof.to_tlog_proof().as_bytes())?;
            }
        }
        (None, Some(path)) => {
            let saved = read_checkpoint(path)?;
            let proof = cmdlog_replay::prove_since(&log, &saved, &origin, &signer)
                .map_err(checkpoint_failure)?;
            if json {
                print_json(&mut out, &proof.to_json())?;
            } else {
                out.write_all(proof.to_witness_request().as_bytes())?;
            }
        }
        (None, None) => unreachable!("clap requires SEQ or --since"),
    }
    Ok(0)
}
