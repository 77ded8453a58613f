//! Garbage collection of blobs: mark every blob an event references, then sweep
//! the unreferenced ones older than a grace period.

use std::collections::BTreeSet;

use serde::Serialize;

use cmdlog_engine::{Event, EventData};
use cmdlog_store::{AppendError, BlobHash, Log, ReadError};

/// A stored blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlobInfo {
    /// Its BLAKE3 hash, hex.
    pub hash: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was stored, unix ms.
    pub added_ms: u64,
}

/// What a collection would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcPlan {
    /// Blobs referenced by some event: never collected.
    pub referenced: usize,
    /// Unreferenced but younger than the grace period (an admission may be in flight).
    pub in_grace: Vec<BlobInfo>,
    /// Unreferenced and older than the grace period: what a collection frees.
    pub collect: Vec<BlobInfo>,
    /// Bytes freed by collecting.
    pub bytes: u64,
}

/// Garbage collection failed; nothing was removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GcError {
    /// Reading the log failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A record cannot be decoded, so what it references is unknown.
    #[error("{0}; gc will not run on a log it cannot fully read: run `cmdlog verify`")]
    Damaged(#[from] cmdlog_engine::event::DecodeError),
    /// Removing failed.
    #[error("could not remove blobs: {0}")]
    Remove(#[from] AppendError),
}

/// Collects every blob hash an event references. Known types name their blobs
/// (`template`, attachment `blob`; an agent's payload or an ACP message moved to
/// blobs names them in its data); for types this version does not know, any
/// string that is a blob hash counts as a reference, so a newer writer's blobs are
/// safe.
pub fn referenced_blobs(log: &Log) -> Result<BTreeSet<BlobHash>, GcError> {
    referenced_blobs_with(log, |_| {})
}

/// [`referenced_blobs`], calling `progress` with each seq read.
pub fn referenced_blobs_with(
    log: &Log,
    mut progress: impl FnMut(cmdlog_store::Seq),
) -> Result<BTreeSet<BlobHash>, GcError> {
    let mut referenced = BTreeSet::new();
    let mut failure = None;
    log.scan(1, log.head().seq, |record| {
        match Event::decode(record.seq, &record.bytes) {
            Ok(event) => match &event.data {
                EventData::Registered(r) => {
                    referenced.extend(r.template.as_deref().and_then(BlobHash::from_hex));
                }
                EventData::AttachmentAdmitted(a) => {
                    referenced.extend(BlobHash::from_hex(&a.blob));
                }
                EventData::Unknown(u) => hashes_in(&u.data, &mut referenced),
                // Large parts of agents' payloads and messages are stored as blobs
                // named inside them.
                EventData::AgentEvent(a) => hashes_in(&a.data, &mut referenced),
                EventData::AcpMessage(m) => hashes_in(&m.message, &mut referenced),
                // Name no blob. A new type that does must say so here, or gc
                // would delete what it names: every type is listed.
                EventData::Unregistered(_)
                | EventData::DiscoveryWarning(_)
                | EventData::CommandRun(_)
                | EventData::CommandDone(_)
                | EventData::SessionCreated(_)
                | EventData::SessionClosed(_)
                | EventData::SessionDied(_)
                | EventData::SessionEnded(_)
                | EventData::SessionPrompt(_)
                | EventData::SessionUpdate(_)
                | EventData::PermissionRequested(_)
                | EventData::PermissionResolved(_)
                | EventData::PermissionAlreadyResolved(_)
                | EventData::ModelSwitched(_)
                | EventData::ModelSwitchFailed(_)
                | EventData::ModeSet(_)
                | EventData::SessionCancelled(_)
                | EventData::WalDiscarded(_)
                | EventData::AgentObserved(_)
                | EventData::ModelRequest(_)
                | EventData::Redacted(_)
                | EventData::LogIdentity(_)
                | EventData::ImportCheckpoint(_) => {}
            },
            Err(e) => {
                failure = Some(e);
                return false;
            }
        }
        progress(record.seq);
        true
    })?;
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(referenced),
    }
}

fn hashes_in(value: &serde_json::Value, out: &mut BTreeSet<BlobHash>) {
    match value {
        serde_json::Value::String(s) => out.extend(BlobHash::from_hex(s)),
        serde_json::Value::Array(items) => items.iter().for_each(|v| hashes_in(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| hashes_in(v, out)),
        _ => {}
    }
}

/// Plans a collection at `now_ms` with a grace period of `grace_ms`.
pub fn plan_gc(log: &Log, now_ms: u64, grace_ms: u64) -> Result<GcPlan, GcError> {
    plan_gc_with(log, now_ms, grace_ms, |_| {})
}

/// [`plan_gc`], calling `progress` with each seq read while marking.
pub fn plan_gc_with(
    log: &Log,
    now_ms: u64,
    grace_ms: u64,
    progress: impl FnMut(cmdlog_store::Seq),
) -> Result<GcPlan, GcError> {
    let referenced = referenced_blobs_with(log, progress)?;
    let mut plan = GcPlan {
        referenced: 0,
        in_grace: Vec::new(),
        collect: Vec::new(),
        bytes: 0,
    };
    for (hash, added_ms, size) in log.list_blobs()? {
        if referenced.contains(&hash) {
            plan.referenced += 1;
            continue;
        }
        let info = BlobInfo {
            hash: hash.to_hex(),
            size,
            added_ms,
        };
        if now_ms.saturating_sub(added_ms) >= grace_ms {
            plan.bytes += size;
            plan.collect.push(info);
        } else {
            plan.in_grace.push(info);
        }
    }
    Ok(plan)
}

/// Removes what `plan` collects; returns how many blobs were removed.
pub fn collect(log: &Log, plan: &GcPlan) -> Result<u64, GcError> {
    let hashes = plan
        .collect
        .iter()
        .filter_map(|b| BlobHash::from_hex(&b.hash))
        .collect();
    Ok(log.remove_blobs(hashes)?)
}
