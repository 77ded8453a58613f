//! A witness of the hub (`cmdlog witness URL`): it reads each log's signed
//! checkpoints from the hub's checkpoint bucket, in the order they were
//! published, checks each is signed by the log's key (the key it saw first for
//! that log, or one it was given) and consistent with the last it cosigned, and
//! cosigns it (C2SP `tlog-cosignature`, `cosignature/v1`): the cosigned note goes
//! back to the bucket under `cosig.<log id>.<witness key id>`. A log that signs
//! two histories, or rolls one back, is then caught by a party the log's owner
//! does not control: `verify --witness KEY` asks for its cosignature.
//!
//! What it saw is kept owner-only in the user's state folder, per hub and log.

use std::path::PathBuf;

use bytes::Bytes;
use cmdlog_tlog::{AddCheckpoint, Checkpoint, Frontier, Hash, Note, NoteVerifier, Signer};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::checkpoints::{bucket, checkpoint_key, cosignature_key, verifier_key};
use crate::connect::Hub;
use crate::error::HubError;
use crate::read::{each, survey};

/// What the witness last cosigned of one log.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Seen {
    /// The log's verifier key the witness holds it to.
    log_key: String,
    /// The size and root (hex) it last cosigned.
    size: u64,
    root: String,
    /// The bucket revision of the last checkpoint it read.
    revision: u64,
}

/// What happened to one checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Consistent with the last one: cosigned.
    Cosigned {
        /// Its size.
        size: u64,
    },
    /// Refused, and why (a forged checkpoint, a rollback, a fork).
    Refused {
        /// Its size, when it could be read.
        size: Option<u64>,
        /// Why.
        why: String,
    },
}

/// What a pass over the hub found, per log and checkpoint.
#[derive(Debug, Clone, Default)]
pub struct Witnessed {
    /// (log id, verdict), in the order checked.
    pub verdicts: Vec<(String, Verdict)>,
}

fn state_path(hub: &Hub, log_id: &str) -> std::io::Result<PathBuf> {
    let hub_key =
        cmdlog_store::BlobHash::of(format!("{}\n{}", hub.shown, hub.name).as_bytes()).to_hex();
    let dir = cmdlog_common::private_fs::state_dir()?
        .join("witness")
        .join(&hub_key[..16]);
    cmdlog_common::private_fs::ensure_private_dir(&dir)?;
    Ok(dir.join(format!("{log_id}.json")))
}

fn read_seen(hub: &Hub, log_id: &str) -> Option<Seen> {
    let path = state_path(hub, log_id).ok()?;
    let bytes = cmdlog_common::private_fs::read_untrusted(
        &path,
        cmdlog_common::private_fs::Expect {
            bytes_max: 64 * 1024,
            private: true,
        },
    )
    .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write_seen(hub: &Hub, log_id: &str, seen: &Seen) -> Result<(), HubError> {
    use std::io::Write;
    let failed = |e: std::io::Error| hub.error(format!("witness state of log {log_id}: {e}"));
    let path = state_path(hub, log_id).map_err(failed)?;
    let (fresh, mut file) =
        cmdlog_common::private_fs::create_fresh_beside(&path).map_err(failed)?;
    let written = file
        .write_all(&serde_json::to_vec(seen).expect("serializes"))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&fresh, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&fresh);
        return Err(failed(e));
    }
    Ok(())
}

/// The RFC 6962 roots of the hub's own copy of the log at `sizes` (`None` where
/// it holds fewer records): what a witness checks consistency with when the
/// proof it was given starts elsewhere than its last cosigned size.
async fn hub_roots(hub: &Hub, log_id: &str, sizes: &[u64]) -> Result<Vec<Option<Hash>>, HubError> {
    let stream = hub.existing_stream().await?;
    let chain: std::collections::HashSet<u64> = survey(hub, &stream, log_id)
        .await?
        .chain()
        .into_iter()
        .collect();
    let mut frontier = Frontier::new();
    let mut roots = vec![None; sizes.len()];
    let want = sizes.iter().copied().max().unwrap_or(0);
    each(hub, &stream, &hub.subject(log_id), |record| {
        if !chain.contains(&record.stream_seq) || record.seq != frontier.size() + 1 {
            return Ok(true);
        }
        let mut closed = Vec::new();
        let leaf = cmdlog_store::leaf_input(record.seq, &record.bytes);
        frontier.push(cmdlog_tlog::leaf_hash(&leaf), &mut closed);
        for (i, size) in sizes.iter().enumerate() {
            if *size == frontier.size() {
                roots[i] = Some(frontier.root());
            }
        }
        Ok(frontier.size() < want)
    })
    .await?;
    for (i, size) in sizes.iter().enumerate() {
        if *size == 0 {
            roots[i] = Some(cmdlog_tlog::empty_root());
        }
    }
    Ok(roots)
}

/// One pass: every log's checkpoints published since the last pass, checked and
/// cosigned. `log_keys` pins a log's key (`(log id, verifier)`); a log not
/// pinned is held to the key the hub published when the witness first saw it.
pub async fn witness_once(
    hub: &Hub,
    witness: &Signer,
    log_keys: &[(String, NoteVerifier)],
) -> Result<Witnessed, HubError> {
    let mut witnessed = Witnessed::default();
    let Some(store) = bucket(hub).await? else {
        return Ok(witnessed);
    };
    let mut keys = store
        .keys()
        .await
        .map_err(|e| hub.error(format!("checkpoint bucket: {e}")))?;
    let mut logs = Vec::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| hub.error(format!("checkpoint bucket: {e}")))?;
        if let Some(id) = key.strip_prefix("log.")
            && !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            logs.push(id.to_string());
        }
    }
    logs.sort();
    for log_id in logs {
        let mut history = store
            .history(checkpoint_key(&log_id))
            .await
            .map_err(|e| hub.error(format!("checkpoints of log {log_id}: {e}")))?;
        let mut entries = Vec::new();
        while let Some(entry) = history.next().await {
            let entry =
                entry.map_err(|e| hub.error(format!("checkpoints of log {log_id}: {e}")))?;
            entries.push((entry.revision, entry.value));
        }
        entries.sort_by_key(|(revision, _)| *revision);
        let mut seen = read_seen(hub, &log_id);
        for (revision, value) in entries {
            if seen.as_ref().is_some_and(|s| revision <= s.revision) {
                continue;
            }
            let verdict =
                witness_one(hub, &store, witness, log_keys, &log_id, &value, &mut seen).await?;
            if let Some(seen) = seen.as_mut() {
                seen.revision = revision;
                write_seen(hub, &log_id, seen)?;
            }
            witnessed.verdicts.push((log_id.clone(), verdict));
        }
    }
    Ok(witnessed)
}

async fn witness_one(
    hub: &Hub,
    store: &async_nats::jetstream::kv::Store,
    witness: &Signer,
    log_keys: &[(String, NoteVerifier)],
    log_id: &str,
    value: &[u8],
    seen: &mut Option<Seen>,
) -> Result<Verdict, HubError> {
    let refuse = |size: Option<u64>, why: String| Ok(Verdict::Refused { size, why });
    let Some((request, note, checkpoint)) = std::str::from_utf8(value).ok().and_then(|text| {
        let request = AddCheckpoint::parse(text).ok()?;
        let note = Note::parse(&request.note).ok()?;
        let checkpoint = Checkpoint::parse(note.text()).ok()?;
        Some((request, note, checkpoint))
    }) else {
        return refuse(None, "not a signed checkpoint".into());
    };
    let size = Some(checkpoint.size);
    if checkpoint.origin != format!("cmdlog/{log_id}") {
        return refuse(
            size,
            format!("it names another log ({:?})", checkpoint.origin),
        );
    }
    // The log's key: pinned, else the one first seen, else the one published now.
    let key = match log_keys.iter().find(|(id, _)| id == log_id) {
        Some((_, key)) => key.to_string(),
        None => match seen {
            Some(s) => s.log_key.clone(),
            None => match store.get(verifier_key(log_id)).await {
                Ok(Some(key)) => String::from_utf8_lossy(&key).into_owned(),
                _ => return refuse(size, "no verifier key of the log to check it with".into()),
            },
        },
    };
    let Ok(verifier) = NoteVerifier::parse(&key) else {
        return refuse(size, format!("the log's key {key:?} cannot be read"));
    };
    if let Err(e) = note.verify(std::slice::from_ref(&verifier)) {
        return refuse(size, format!("not signed by the log's key ({e}): forged"));
    }
    let hex = |h: &Hash| cmdlog_common::ids::hex(h);
    if let Some(last) = seen.as_ref() {
        if checkpoint.size < last.size {
            return refuse(
                size,
                format!(
                    "the log signed {} records after it had signed {}: rolled back",
                    checkpoint.size, last.size
                ),
            );
        }
        if checkpoint.size == last.size {
            if hex(&checkpoint.root) != last.root {
                return refuse(
                    size,
                    format!("two different trees of {} records: forked", last.size),
                );
            }
            return Ok(Verdict::Cosigned {
                size: checkpoint.size,
            });
        }
        let last_root: Hash = cmdlog_store::BlobHash::from_hex(&last.root)
            .map(|h| h.0)
            .ok_or_else(|| hub.error(format!("witness state of log {log_id} is damaged")))?;
        let consistent = if request.old_size == last.size {
            cmdlog_tlog::verify_consistency(
                last.size,
                checkpoint.size,
                &last_root,
                &checkpoint.root,
                &request.proof,
            )
            .is_ok()
        } else {
            // The proof starts elsewhere: check against the hub's records.
            let roots = hub_roots(hub, log_id, &[last.size, checkpoint.size]).await?;
            roots[0] == Some(last_root) && roots[1] == Some(checkpoint.root)
        };
        if !consistent {
            return refuse(
                size,
                format!(
                    "not consistent with the checkpoint of {} records this witness cosigned: forked or rewritten",
                    last.size
                ),
            );
        }
    }
    let now = cmdlog_common::time::now_ms() / 1000;
    let line = witness.signature_line(note.text(), now);
    let cosigned = Note::with_signature_line(&request.note, &line);
    store
        .put(
            cosignature_key(log_id, witness.verifier().key_id()),
            Bytes::from(cosigned),
        )
        .await
        .map_err(|e| hub.error(format!("cosignature of log {log_id}: {e}")))?;
    *seen = Some(Seen {
        log_key: key,
        size: checkpoint.size,
        root: hex(&checkpoint.root),
        revision: seen.as_ref().map_or(0, |s| s.revision),
    });
    Ok(Verdict::Cosigned {
        size: checkpoint.size,
    })
}

/// The checkpoint of `log_id` that witness `witness` cosigned, as a note carrying
/// the log's signature and the witness's cosignature (checked by the caller).
pub async fn cosigned_checkpoint(
    hub: &Hub,
    log_id: &str,
    witness: &NoteVerifier,
) -> Result<Option<String>, HubError> {
    let Some(store) = bucket(hub).await? else {
        return Ok(None);
    };
    let value = store
        .get(cosignature_key(log_id, witness.key_id()))
        .await
        .map_err(|e| hub.error(format!("cosignature of log {log_id}: {e}")))?;
    Ok(value.and_then(|v| String::from_utf8(v.to_vec()).ok()))
}
