//! `cmdlog blob`: a blob's verified bytes on stdout.

use std::io::{self, Write};

use clap::Args;
use cmdlog_store::Log;

use super::{CliError, VerbResult, store_failure};

#[derive(Args, Debug)]
pub(crate) struct BlobArgs {
    /// The blob's BLAKE3 hash (64 hex characters)
    hash: String,
}

pub(crate) fn exec(log: &Log, args: BlobArgs) -> VerbResult {
    let Some(hash) = cmdlog_store::BlobHash::from_hex(&args.hash) else {
        return Err(CliError::usage(format!(
            "{:?} is not a blob hash: give 64 hex characters, as `cmdlog log --json` shows them",
            args.hash
        )));
    };
    match log.get_blob(&hash) {
        Ok(Some(bytes)) => {
            io::stdout().lock().write_all(&bytes)?;
            Ok(0)
        }
        Ok(None) => Err(CliError::not_found(format!(
            "no blob {hash} in this log (collected by gc, or never stored)"
        ))),
        Err(e @ cmdlog_store::BlobError::Mismatch { .. }) => Err(CliError::damaged(e.to_string())),
        Err(e) => Err(store_failure(e)),
    }
}
