//! `cmdlog checkpoint`: the signed C2SP checkpoint of the log's head; and what the
//! verbs of the verifiable log share (`key`, `prove`, `verify --checkpoint`,
//! `tiles`): the log's identity, its key, and their failures.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use cmdlog_engine::event::LogIdentity;
use cmdlog_replay::CheckpointError;
use cmdlog_store::Log;
use cmdlog_tlog::Signer;

use super::open::{open_existing, open_existing_writable};
use super::{CliError, Paths, VerbResult, store_failure};

/// The key that signs the log's checkpoints.
#[derive(Args, Debug, Clone)]
pub(crate) struct KeyArgs {
    /// The log's signing key file [default: ~/.config/cmdlog/keys/<log id>.key,
    /// made owner-only on first need]; made there if missing
    #[arg(long, value_name = "FILE", env = "CMDLOG_KEY")]
    pub(crate) key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    key: KeyArgs,
    /// Write the checkpoint to FILE (owner's, replaced whole) as well as stdout
    /// (`-`: stdout only)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The log and its identity; a log made before ids gets one (a writable open).
pub(crate) fn open_with_identity(paths: &Paths) -> Result<(Log, LogIdentity), CliError> {
    let log = open_existing(paths)?;
    if let Some(identity) = cmdlog_engine::identity::read_identity(&log).map_err(store_failure)? {
        return Ok((log, identity));
    }
    drop(log);
    let log = open_existing_writable(paths)?;
    let identity = cmdlog_engine::identity::ensure_identity(&log).map_err(store_failure)?;
    Ok((log, identity))
}

/// The log's signer, made on first need.
pub(crate) fn signer(identity: &LogIdentity, key: &KeyArgs) -> Result<Signer, CliError> {
    cmdlog_replay::log_signer(&identity.id, key.key.as_deref()).map_err(key_failure)
}

/// A key that cannot be read or made (exit 4), with the way out.
pub(crate) fn key_failure(e: cmdlog_tlog::keys::KeyError) -> CliError {
    CliError::io(e.to_string()).hint(
        "a key file must be a regular file of yours, mode 0600, in a folder only you can reach; pass another with --key FILE (or CMDLOG_KEY)",
    )
}

/// A failed checkpoint, proof or check, with the exit code its kind takes.
pub(crate) fn checkpoint_failure(e: CheckpointError) -> CliError {
    match e {
        CheckpointError::Key(e) => key_failure(e),
        CheckpointError::SeqOutOfRange { .. } => CliError::not_found(e.to_string())
            .hint("`cmdlog log` lists the seqs; `cmdlog verify` prints the head"),
        CheckpointError::Note(_) => CliError::damaged(e.to_string()).hint(
            "a checkpoint file is the note `cmdlog checkpoint` printed, whole: its body, a blank line and its signature lines",
        ),
        CheckpointError::OtherLog { .. } => CliError::conflict(e.to_string())
            .hint("give the checkpoint of this log, or --log the log it names"),
        CheckpointError::Shorter { .. } | CheckpointError::DifferentTree { .. } => {
            CliError::conflict(e.to_string()).hint(
                "the log no longer holds what the checkpoint committed to: compare it with a copy (a hub: `cmdlog verify --against URL`) before you append more",
            )
        }
        other => store_failure(other),
    }
}

pub(crate) fn exec(paths: &Paths, args: CheckpointArgs) -> VerbResult {
    let (log, identity) = open_with_identity(paths)?;
    let signer = signer(&identity, &args.key)?;
    let view = log.tree().map_err(store_failure)?;
    let note = cmdlog_replay::sign(&view, &cmdlog_replay::origin(&identity.id), &signer)
        .map_err(checkpoint_failure)?
        .note;
    // `-o -` is standard output, where the checkpoint goes anyway.
    if let Some(path) = args.output.as_ref().filter(|p| p.as_os_str() != "-") {
        write_file(path, note.as_bytes())?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(note.as_bytes())?;
    Ok(0)
}

/// Writes `bytes` to `path` whole: a fresh file beside it, renamed over it.
pub(crate) fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::io(format!("cannot write {}: {e}", path.display()));
    let (fresh, mut file) = cmdlog_common::private_fs::create_fresh_beside(path).map_err(failed)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&fresh, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&fresh);
        return Err(failed(e));
    }
    Ok(())
}
