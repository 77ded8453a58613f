//! Signed checkpoints on the hub (`docs/hub.md`, `docs/verifiable.md`): the
//! key-value bucket `<stream>-checkpoints` keeps, per log, the latest checkpoint
//! its pusher signed (key `log.<id>`), as the body a C2SP witness takes — the
//! size of the checkpoint it replaced, the consistency proof from it, a blank
//! line, the signed note — and the log's verifier key as the pusher gave it
//! (`key.<id>`: for those who have no other, trusted on first use, and said so).
//!
//! A pusher publishes one after every round that moved the hub's head, so the
//! hub's records are covered by a signature of the log's own key; whoever reads
//! them checks that signature and the tree instead of trusting the hub's head.

use async_nats::jetstream::kv;
use bytes::Bytes;
use cmdlog_store::Log;
use cmdlog_tlog::{AddCheckpoint, Checkpoint, Note, NoteError, NoteVerifier, Signer};

use crate::connect::Hub;
use crate::error::HubError;
use crate::layout::checkpoint_bucket;

pub(crate) fn checkpoint_key(log_id: &str) -> String {
    format!("log.{log_id}")
}

pub(crate) fn verifier_key(log_id: &str) -> String {
    format!("key.{log_id}")
}

/// Where witness `key_id` keeps its cosigned checkpoint of the log.
pub(crate) fn cosignature_key(log_id: &str, key_id: u32) -> String {
    format!("cosig.{log_id}.{key_id:08x}")
}

/// A log's latest checkpoint on the hub, read but not yet believed.
#[derive(Debug, Clone)]
pub struct HubCheckpoint {
    /// The checkpoint with the proof from the one it replaced.
    pub request: AddCheckpoint,
    /// What its note's text says (its signature unchecked).
    pub checkpoint: Checkpoint,
    /// The verifier key the pusher published beside it, as read.
    pub published_key: Option<String>,
}

impl HubCheckpoint {
    /// Checks the note's signature with `verifiers` (the log's key the caller
    /// trusts; with none, the key the hub published, which proves only that the
    /// hub's copy is self-consistent).
    pub fn verify(&self, verifiers: &[NoteVerifier]) -> Result<(), NoteError> {
        Note::parse(&self.request.note)?
            .verify(verifiers)
            .map(|_| ())
    }
}

/// The bucket, `None` when the hub has none yet.
pub(crate) async fn bucket(hub: &Hub) -> Result<Option<kv::Store>, HubError> {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::context::{GetStreamError, GetStreamErrorKind, KeyValueErrorKind};
    match hub.js.get_key_value(checkpoint_bucket(&hub.name)).await {
        Ok(store) => Ok(Some(store)),
        // Only a bucket the hub says is not there is missing: one it did not
        // answer about (a cluster without its quorum) must not be made again.
        Err(e)
            if e.kind() == KeyValueErrorKind::GetBucket
                && std::error::Error::source(&e)
                    .and_then(|s| s.downcast_ref::<GetStreamError>())
                    .is_some_and(|s| {
                        matches!(s.kind(), GetStreamErrorKind::JetStream(j)
                        if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
                    }) =>
        {
            Ok(None)
        }
        Err(e) => Err(hub.error(format!("checkpoint bucket: {e}"))),
    }
}

async fn bucket_or_create(hub: &Hub) -> Result<kv::Store, HubError> {
    if let Some(store) = bucket(hub).await? {
        return Ok(store);
    }
    hub.js
        .create_key_value(crate::config::checkpoint_config(&hub.name, 1))
        .await
        .map_err(|e| hub.error(format!("checkpoint bucket: {e}")))
}

/// The latest checkpoint of `log_id` on the hub, if any. A value that is not a
/// checkpoint is an error naming the log (someone wrote it who is not a pusher).
pub async fn hub_checkpoint(hub: &Hub, log_id: &str) -> Result<Option<HubCheckpoint>, HubError> {
    let Some(store) = bucket(hub).await? else {
        return Ok(None);
    };
    let read = |key: String| async {
        store
            .get(key)
            .await
            .map_err(|e| hub.error(format!("checkpoint of log {log_id}: {e}")))
    };
    let Some(value) = read(checkpoint_key(log_id)).await? else {
        return Ok(None);
    };
    let malformed = |why: String| {
        hub.error(format!(
            "the hub's checkpoint of log {log_id} is not one: {why}"
        ))
    };
    let text = std::str::from_utf8(&value).map_err(|_| malformed("not UTF-8".into()))?;
    let request = AddCheckpoint::parse(text).map_err(|e| malformed(e.to_string()))?;
    let note = Note::parse(&request.note).map_err(|e| malformed(e.to_string()))?;
    let checkpoint = Checkpoint::parse(note.text()).map_err(|e| malformed(e.to_string()))?;
    let published_key = read(verifier_key(log_id))
        .await?
        .and_then(|v| String::from_utf8(v.to_vec()).ok());
    Ok(Some(HubCheckpoint {
        request,
        checkpoint,
        published_key,
    }))
}

/// Why a checkpoint was not published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The hub holds a checkpoint of this log, signed with this key, that the log
    /// no longer extends: it was rolled back or replaced since.
    #[error(
        "the hub holds a checkpoint of log {log} signed with this log's key that the log no longer extends: {why}"
    )]
    Inconsistent {
        /// The log's id.
        log: String,
        /// What differs.
        why: String,
    },
    /// The log's tree could not be read.
    #[error("cannot sign a checkpoint: {0}")]
    Local(String),
    /// The hub failed.
    #[error(transparent)]
    Hub(#[from] HubError),
}

/// Signs the checkpoint of the first `size` records of `log` (what the hub now
/// holds of it) and publishes it with the proof from the checkpoint it replaces.
/// A checkpoint there that this key did not sign is replaced (and proves
/// nothing); one it signed must be extended by the log.
pub async fn publish_checkpoint(
    hub: &Hub,
    log_id: &str,
    log: &Log,
    size: u64,
    signer: &Signer,
) -> Result<(), PublishError> {
    let store = bucket_or_create(hub).await?;
    let current = hub_checkpoint(hub, log_id).await.ok().flatten();
    let origin = cmdlog_replay::origin(log_id);
    let view = log.tree().map_err(|e| PublishError::Local(e.to_string()))?;
    let size = size.min(view.size());
    let inconsistent = |why: String| PublishError::Inconsistent {
        log: log_id.to_string(),
        why,
    };
    let mut old = 0;
    if let Some(current) =
        current.filter(|c| c.checkpoint.origin == origin && c.verify(&[signer.verifier()]).is_ok())
    {
        let at = current.checkpoint.size;
        if at > size {
            return Err(inconsistent(format!(
                "it commits to {at} records, the hub holds {size} of this log"
            )));
        }
        let root = view
            .root_at(at)
            .map_err(|e| PublishError::Local(e.to_string()))?;
        if root != current.checkpoint.root {
            return Err(inconsistent(format!(
                "its tree of {at} records is not this log's first {at}"
            )));
        }
        if at == size {
            return Ok(());
        }
        old = at;
    }
    let signed = cmdlog_replay::sign_at(&view, size, &origin, signer)
        .map_err(|e| PublishError::Local(e.to_string()))?;
    let proof = view
        .consistency_proof_between(old, size)
        .map_err(|e| PublishError::Local(e.to_string()))?;
    let body = AddCheckpoint {
        old_size: old,
        proof,
        note: signed.note,
    }
    .to_text();
    let put = |key: String, value: String| {
        let store = &store;
        async move {
            store
                .put(key, Bytes::from(value))
                .await
                .map_err(|e| hub.error(format!("checkpoint of log {log_id}: {e}")))
        }
    };
    put(verifier_key(log_id), signer.verifier().to_string()).await?;
    put(checkpoint_key(log_id), body).await?;
    Ok(())
}
