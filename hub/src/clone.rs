//! Rebuilding a log from its copy on a hub: the same records, byte for byte, so
//! the same seqs and head hash, and the blobs its events reference.

use std::path::Path;

use cmdlog_store::{BlobHash, Head, Log, LogConfig, NewRecord, OpenError, StoreError};

use crate::chain::Foreign;
use crate::checkpoints::hub_checkpoint;
use crate::connect::Hub;
use crate::error::HubError;
use crate::layout::bucket;
use crate::limits::CLONE_CHUNK_RECORDS;
use crate::read::{each, head, survey};
use cmdlog_tlog::NoteVerifier;

/// Why a clone failed. A failed clone leaves no file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloneError {
    /// The hub's copy holds another seq where the next was due: two machines
    /// wrote with one log id.
    #[error(
        "the hub's copy of log {log} holds seq {seq} where seq {due} was due (stream message {stream_seq}): it was written by two machines with one id"
    )]
    OutOfOrder {
        /// The log's id.
        log: String,
        /// The seq found.
        seq: u64,
        /// The seq due.
        due: u64,
        /// The stream message that holds it.
        stream_seq: u64,
    },
    /// The rebuilt chain differs from the hashes the hub recorded.
    #[error(
        "the hub's copy of log {log} does not rebuild: at seq {seq} it records hash {hub_hash}, the rebuilt log has {local_hash}"
    )]
    HashDiffers {
        /// The log's id.
        log: String,
        /// Where.
        seq: u64,
        /// What the hub recorded.
        hub_hash: String,
        /// What the rebuilt log has.
        local_hash: String,
    },
    /// The new log could not be created.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The new log could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The new log's records could not be read back for the blobs they name.
    #[error(transparent)]
    References(#[from] cmdlog_replay::GcError),
    /// The hub failed, or has no such log.
    #[error(transparent)]
    Hub(#[from] HubError),
    /// The hub's records are not what the log's signed checkpoint commits to, or
    /// the checkpoint is not signed by the log's key.
    #[error("the hub's copy of log {log} is forged: {why}")]
    Forged {
        /// The log's id.
        log: String,
        /// What gives it away.
        why: String,
    },
}

/// What a clone wrote.
#[derive(Debug, Clone)]
pub struct Cloned {
    /// Messages on the log's subject that are not its chain (forged, or another
    /// machine's with this id): left out.
    pub foreign: Vec<Foreign>,
    /// Records appended.
    pub records: u64,
    /// Blobs fetched.
    pub blobs: u64,
    /// The new log's head.
    pub head: Head,
    /// The size of the hub's signed checkpoint the clone was checked against
    /// (`None`: the hub has none, so only the hash chain was checked).
    pub checkpoint: Option<u64>,
    /// Whether the checkpoint was checked with the key the hub published (no key
    /// was given): it then proves the copy consistent, not who signed it.
    pub trusted_hub_key: bool,
    /// Records on the hub past the signed checkpoint (first and last seq): covered
    /// by no signature, so left out of the clone.
    pub uncovered: Option<(u64, u64)>,
}

/// Clones log `log_id` from `hub` into a new log at `output` (which must not
/// exist), checked against the log's latest signed checkpoint on the hub, with
/// `verifiers` (the log's key as the caller knows it; none: the key the hub
/// published). Records past that checkpoint are covered by no signature and are
/// left out. Runs on a multi-threaded runtime (the log's appends block).
pub async fn clone_log(
    hub: &Hub,
    log_id: &str,
    output: &Path,
    verifiers: &[NoteVerifier],
) -> Result<Cloned, CloneError> {
    copy(hub, log_id, output, verifiers, false).await
}

/// Brings the clone of log `log_id` at `output` up to the hub's copy, as
/// [`clone_log`] would make it, appending only the records past its head (one
/// the hub holds other records for, or that no longer matches the signed
/// checkpoint, is removed: it is a copy, made again next time); a clone that
/// does not exist yet is made.
pub async fn update_clone(
    hub: &Hub,
    log_id: &str,
    output: &Path,
    verifiers: &[NoteVerifier],
) -> Result<Cloned, CloneError> {
    copy(hub, log_id, output, verifiers, output.exists()).await
}

async fn copy(
    hub: &Hub,
    log_id: &str,
    output: &Path,
    verifiers: &[NoteVerifier],
    existing: bool,
) -> Result<Cloned, CloneError> {
    let stream = hub.existing_stream().await?;
    let forged = |why: String| CloneError::Forged {
        log: log_id.to_string(),
        why,
    };
    let (checkpoint, trusted_hub_key) = signed_checkpoint(hub, log_id, verifiers, &forged).await?;
    let log = Log::open(output, LogConfig::default())?;
    let after = existing.then(|| log.head()).filter(|h| h.seq > 0);
    let until = checkpoint.as_ref().map(|c| c.size);
    let result = match rebuild(hub, &stream, log_id, &log, until, after).await {
        Ok((records, blobs, foreign, hub_seq)) => check_against(&log, checkpoint.as_ref(), &forged)
            .map(|()| Cloned {
                foreign,
                records,
                blobs,
                head: log.head(),
                checkpoint: until,
                trusted_hub_key,
                uncovered: until
                    .filter(|size| hub_seq > *size)
                    .map(|size| (size + 1, hub_seq)),
            }),
        Err(e) => Err(e),
    };
    drop(log);
    if result.is_err() {
        // A clone that failed leaves no file.
        let _ = std::fs::remove_file(output);
        let _ = std::fs::remove_file(cmdlog_store::journal_path(output));
    }
    result
}

/// The log's latest signed checkpoint on the hub, checked with `verifiers`
/// (none: the key the hub published beside it, and then the second value is
/// true); `None` when the hub has none.
async fn signed_checkpoint(
    hub: &Hub,
    log_id: &str,
    verifiers: &[NoteVerifier],
    forged: &dyn Fn(String) -> CloneError,
) -> Result<(Option<cmdlog_tlog::Checkpoint>, bool), CloneError> {
    let Some(found) = hub_checkpoint(hub, log_id).await? else {
        return Ok((None, false));
    };
    let keys = if verifiers.is_empty() {
        let published = found
            .published_key
            .as_deref()
            .and_then(|k| NoteVerifier::parse(k).ok())
            .ok_or_else(|| {
                forged("its checkpoint has no readable verifier key beside it".into())
            })?;
        vec![published]
    } else {
        verifiers.to_vec()
    };
    found
        .verify(&keys)
        .map_err(|why| forged(format!("its checkpoint does not verify: {why}")))?;
    if found.checkpoint.origin != cmdlog_replay::origin(log_id) {
        return Err(forged(format!(
            "its checkpoint names another log ({:?})",
            found.checkpoint.origin
        )));
    }
    Ok((Some(found.checkpoint), verifiers.is_empty()))
}

/// The rebuilt log against the signed checkpoint: as many records, the same tree.
fn check_against(
    log: &Log,
    checkpoint: Option<&cmdlog_tlog::Checkpoint>,
    forged: &dyn Fn(String) -> CloneError,
) -> Result<(), CloneError> {
    let Some(checkpoint) = checkpoint else {
        return Ok(());
    };
    let view = log
        .tree()
        .map_err(|e| CloneError::Store(StoreError::from(e)))?;
    if view.size() < checkpoint.size {
        return Err(forged(format!(
            "its signed checkpoint commits to {} records, the hub holds {} of them in order: records were removed",
            checkpoint.size,
            view.size()
        )));
    }
    let root = view
        .root_at(checkpoint.size)
        .map_err(|e| forged(format!("the rebuilt tree cannot be read: {e}")))?;
    if root != checkpoint.root {
        return Err(forged(format!(
            "its first {} records are not the tree the log's signed checkpoint commits to: records were changed or replaced",
            checkpoint.size
        )));
    }
    Ok(())
}

async fn rebuild(
    hub: &Hub,
    stream: &async_nats::jetstream::stream::Stream,
    log_id: &str,
    log: &Log,
    until: Option<u64>,
    after: Option<Head>,
) -> Result<(u64, u64, Vec<Foreign>, u64), CloneError> {
    if head(hub, stream, log_id).await?.is_none() {
        return Err(hub
            .error(format!(
                "no log {log_id} on stream {}; `cmdlog hub list` shows the logs",
                hub.name
            ))
            .into());
    }
    // Which messages are the log's: its hash chain (a forged or foreign message
    // on the subject is left out and reported).
    let surveyed = survey(hub, stream, log_id).await?;
    let chain: std::collections::HashSet<u64> = surveyed.chain().into_iter().collect();
    let foreign = surveyed.foreign();
    let mut pending: Vec<NewRecord> = Vec::new();
    let mut last: Option<(u64, String)> = None;
    // An existing clone continues after its head, whose hash the hub's record
    // there must have.
    let mut next = after.as_ref().map_or(1, |h| h.seq + 1);
    let mut stopped: Option<CloneError> = None;
    let flush =
        |pending: &mut Vec<NewRecord>, last: &Option<(u64, String)>| -> Result<(), CloneError> {
            if pending.is_empty() {
                return Ok(());
            }
            tokio::task::block_in_place(|| log.append(std::mem::take(pending)))
                .map_err(|e| CloneError::Store(e.into()))?;
            if let Some((seq, hash)) = last {
                let head = log.head();
                let local_hash = head.hash.to_hex();
                if head.seq != *seq || local_hash != *hash {
                    return Err(CloneError::HashDiffers {
                        log: log_id.to_string(),
                        seq: *seq,
                        hub_hash: hash.clone(),
                        local_hash,
                    });
                }
            }
            Ok(())
        };
    let mut count = 0;
    let hub_seq = surveyed.head().map_or(0, |(seq, _, _)| seq);
    each(hub, stream, &hub.subject(log_id), |record| {
        if !chain.contains(&record.stream_seq) {
            return Ok(true);
        }
        if until.is_some_and(|size| record.seq > size) {
            // Past the signed checkpoint: no signature covers it.
            return Ok(false);
        }
        match held_already(after.as_ref(), &record, log_id) {
            Ok(false) => {}
            Ok(true) => return Ok(true),
            Err(e) => {
                stopped = Some(e);
                return Ok(false);
            }
        }
        count += 1;
        if record.seq != next {
            stopped = Some(CloneError::OutOfOrder {
                log: log_id.to_string(),
                seq: record.seq,
                due: next,
                stream_seq: record.stream_seq,
            });
            return Ok(false);
        }
        next += 1;
        last = Some((record.seq, record.hash.clone()));
        let mut r = NewRecord::new(record.bytes);
        if let Some(key) = record.stream {
            r = r.stream(key);
        }
        pending.push(r);
        if pending.len() >= CLONE_CHUNK_RECORDS
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
    let blobs = fetch_blobs(hub, log).await?;
    Ok((count, blobs, foreign, hub_seq))
}

/// Whether an existing clone whose head is `after` holds `record` already; an
/// error when the hub's record at that head is another than the clone's.
fn held_already(
    after: Option<&Head>,
    record: &crate::read::HubRecord,
    log_id: &str,
) -> Result<bool, CloneError> {
    let Some(head) = after.filter(|h| record.seq <= h.seq) else {
        return Ok(false);
    };
    let local_hash = head.hash.to_hex();
    if record.seq == head.seq && record.hash != local_hash {
        return Err(CloneError::HashDiffers {
            log: log_id.to_string(),
            seq: record.seq,
            hub_hash: record.hash.clone(),
            local_hash,
        });
    }
    Ok(true)
}

/// The blobs the log's events reference, fetched and checked against their names.
async fn fetch_blobs(hub: &Hub, log: &Log) -> Result<u64, CloneError> {
    let wanted = cmdlog_replay::referenced_blobs(log)?;
    let mut fetched = 0u64;
    if wanted.is_empty() {
        return Ok(0);
    }
    let store = hub
        .js
        .get_object_store(bucket(&hub.name))
        .await
        .map_err(|e| hub.error(format!("blob bucket: {e}")))?;
    for hash in wanted {
        if log.has_blob(&hash).unwrap_or(false) {
            continue;
        }
        let name = hash.to_hex();
        let Ok(mut object) = store.get(&name).await else {
            continue;
        };
        let mut bytes = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes)
            .await
            .map_err(|e| hub.error(format!("blob {name}: {e}")))?;
        if BlobHash::of(&bytes) != hash {
            return Err(hub
                .error(format!("blob {name}: its bytes do not hash to its name"))
                .into());
        }
        tokio::task::block_in_place(|| log.put_blob(bytes))
            .map_err(|e| CloneError::Store(e.into()))?;
        fetched += 1;
    }
    Ok(fetched)
}
