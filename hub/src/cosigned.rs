//! What the team's witnesses say of one log: for each witness key asked for,
//! the checkpoint of the log it cosigned on the hub, checked — the witness's
//! cosignature, the log's own signature (the key the hub published for it),
//! and that the log (a clone of it) holds the tree the checkpoint commits
//! to. The workbench's proof badge shows it (`serve --hub URL --witness KEY`).

use cmdlog_replay::{CheckpointError, check_saved, origin};
use cmdlog_store::Log;
use cmdlog_tlog::{Note, NoteError, NoteVerifier};

use crate::{Hub, HubError, cosigned_checkpoint, hub_checkpoint};

/// One witness's word on a log.
#[derive(Debug)]
pub struct Cosigned {
    /// The witness's name (its key's).
    pub witness: String,
    /// The size of the checkpoint it cosigned, checked against the log; or
    /// why there is none that checks.
    pub outcome: Result<u64, NotCosigned>,
}

/// Why a witness's cosignature of a log does not check.
#[derive(Debug, thiserror::Error)]
pub enum NotCosigned {
    /// It cosigned nothing of this log on the hub.
    #[error("has cosigned no checkpoint of this log")]
    Nothing,
    /// The hub published no key of the log.
    #[error("the hub holds no key of this log to check it with")]
    NoLogKey,
    /// The cosigned note cannot be read.
    #[error("its cosigned checkpoint: {0}")]
    Unreadable(NoteError),
    /// The witness's cosignature does not verify.
    #[error("its cosignature does not verify: {0}")]
    Cosignature(NoteError),
    /// The checkpoint is not the log's, or the log is not its tree.
    #[error("the checkpoint it cosigned: {0}")]
    Checkpoint(#[source] CheckpointError),
}

/// The checkpoint of `log_id` each of `witnesses` cosigned on the hub,
/// checked against `log` (the log, or a clone of it).
pub async fn cosignatures(
    hub: &Hub,
    log_id: &str,
    log: &Log,
    witnesses: &[NoteVerifier],
) -> Result<Vec<Cosigned>, HubError> {
    let published = hub_checkpoint(hub, log_id)
        .await?
        .and_then(|c| c.published_key)
        .and_then(|k| NoteVerifier::parse(&k).ok());
    let mut all = Vec::new();
    for witness in witnesses {
        let note = cosigned_checkpoint(hub, log_id, witness).await?;
        let outcome = match (note, &published) {
            (None, _) => Err(NotCosigned::Nothing),
            (Some(_), None) => Err(NotCosigned::NoLogKey),
            (Some(note), Some(key)) => check(log, log_id, &note, witness, key),
        };
        all.push(Cosigned {
            witness: witness.name().to_string(),
            outcome,
        });
    }
    Ok(all)
}

fn check(
    log: &Log,
    log_id: &str,
    note: &str,
    witness: &NoteVerifier,
    key: &NoteVerifier,
) -> Result<u64, NotCosigned> {
    let parsed = Note::parse(note).map_err(NotCosigned::Unreadable)?;
    parsed
        .verify(std::slice::from_ref(witness))
        .map_err(NotCosigned::Cosignature)?;
    let (checkpoint, _) = check_saved(log, note, &origin(log_id), std::slice::from_ref(key))
        .map_err(NotCosigned::Checkpoint)?;
    Ok(checkpoint.size)
}
