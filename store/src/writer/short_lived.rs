//! The short-lived appender's writer: commits on the caller's thread, each one a
//! frame appended under the appenders' lock after the frames other processes
//! appended, laid over redb's file in memory (see [`crate::overlay`]).

use cmdlog_common::time::now_ms;
use redb::Durability as RedbDurability;

use crate::error::AppendError;
use crate::journal::Journal;
use crate::record::{CommittedRecord, Head, Receipt};
use crate::schema::{self, BLOB_META};
use crate::shared::Shared;

use super::{
    Applying, Prepared, Request, WriterFailure, apply, commit_batch, journal_error, materialize,
    poison, poisoned, prepare, publish_head, run_hook, write_frame,
};

/// A short-lived appender's writer: each request is committed on the caller's
/// thread, as its own frame (a process of a few appends has nothing to batch, and
/// a writer thread would cost its start and two hand-offs per append).
pub(crate) struct Inline {
    journal: Option<Journal>,
    head: Head,
}

impl Inline {
    pub(crate) fn new(shared: &Shared, journal: Journal) -> Inline {
        Inline {
            journal: Some(journal),
            head: *shared.head.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// Takes in the frames other processes appended since this handle's last
    /// commit, so that reads see them.
    pub(crate) fn catch_up(&mut self, shared: &Shared) -> Result<(), AppendError> {
        if let Some(cause) = poisoned(shared) {
            return Err(AppendError::Poisoned { cause });
        }
        let Some(journal) = self.journal.as_mut() else {
            return Ok(());
        };
        let storage = |message: String| AppendError::Storage { message };
        journal
            .lock()
            .map_err(|e| storage(journal_error(journal, e).to_string()))?;
        let caught_up = journal
            .catch_up()
            .map_err(|e| journal_error(journal, e))
            .and_then(|frames| take_in(shared, &mut self.head, frames));
        let _ = journal.unlock();
        caught_up.map_err(|failure| storage(failure.to_string()))
    }

    /// Commits `request` and answers it before returning.
    pub(crate) fn commit(&mut self, shared: &Shared, request: Request) {
        if matches!(request, Request::Shutdown) {
            return;
        }
        if let Some(cause) = poisoned(shared) {
            return request.fail(AppendError::Poisoned { cause });
        }
        commit_batch(shared, &mut self.journal, &mut self.head, vec![request]);
    }
}

/// A short-lived appender's group commit: under the appenders' lock on the
/// write-ahead log, it first takes in the frames other processes appended since its
/// last one (so its records continue theirs), then appends and syncs its own frame.
/// redb's file is never written; the overlay holds the batch.
pub(super) fn commit_short_lived(
    shared: &Shared,
    journal: &mut Journal,
    head: &mut Head,
    batch: Vec<Request>,
) {
    let fail = |batch: Vec<Request>, message: String| {
        poison(shared, message.clone());
        for request in batch {
            request.fail(AppendError::Storage {
                message: message.clone(),
            });
        }
    };
    if let Err(e) = journal.lock() {
        return fail(batch, journal_error(journal, e).to_string());
    }
    let caught_up = journal
        .catch_up()
        .map_err(|e| journal_error(journal, e))
        .and_then(|frames| take_in(shared, head, frames));
    if let Err(failure) = caught_up {
        let _ = journal.unlock();
        return fail(batch, failure.to_string());
    }
    let start = *head;
    let batch = materialize(shared, start.seq, batch);
    let (prepared, end) = prepare(start, &batch);
    let added_ms = now_ms();
    let written = if batch.is_empty() {
        Ok(())
    } else {
        write_frame(journal, &batch, &prepared, added_ms, true)
    };
    let _ = journal.unlock();
    if let Err(failure) = written {
        return fail(batch, failure.to_string());
    }
    if batch.is_empty() {
        return;
    }
    *head = end;
    apply(
        shared,
        Applying {
            batch,
            prepared,
            start,
            head: end,
            added_ms,
            durability: RedbDurability::None,
        },
    );
}

/// Lays frames other processes appended over the overlay, runs the commit hook over
/// their records (the fold must see every record, whoever appended it) and moves
/// the head.
fn take_in(
    shared: &Shared,
    head: &mut Head,
    frames: Vec<crate::journal::FoundFrame>,
) -> Result<(), WriterFailure> {
    if frames.is_empty() {
        return Ok(());
    }
    let added = {
        let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
        let mut overlay = shared.overlay.write().unwrap_or_else(|p| p.into_inner());
        let seqs = overlay
            .apply_frames(head, frames)
            .map_err(|d| WriterFailure::Discontinuous(d.0))?;
        // Copied out: the hook runs without the overlay's lock.
        let added: Vec<_> = seqs
            .iter()
            .filter_map(|seq| Some((*seq, overlay.records.get(seq)?.clone())))
            .collect();
        for (seq, value) in &added {
            if let Some((_, Some(key), _)) = schema::decode_record(value) {
                pending.push(key, *seq);
            }
        }
        added
    };
    let committed: Vec<CommittedRecord<'_>> = added
        .iter()
        .filter_map(|(seq, value)| {
            let (_, stream, bytes) = schema::decode_record(value)?;
            Some(CommittedRecord {
                seq: *seq,
                stream,
                bytes,
            })
        })
        .collect();
    run_hook(shared, &committed);
    drop(committed);
    publish_head(shared, *head);
    Ok(())
}

/// Writes a short-lived appender's batch to the overlay.
pub(super) fn write_overlay(
    shared: &Shared,
    batch: &[Request],
    prepared: &Prepared,
    added_ms: u64,
) -> Result<Vec<Option<Receipt>>, redb::Error> {
    // Which blobs to remove redb's file holds, read before the overlay is locked.
    let mut in_redb = std::collections::HashSet::new();
    if batch
        .iter()
        .any(|r| matches!(r, Request::RemoveBlobs { .. }))
    {
        let read = shared.db.begin_read()?;
        let meta = read.open_table(BLOB_META)?;
        for request in batch {
            if let Request::RemoveBlobs { hashes, .. } = request {
                for hash in hashes {
                    if meta.get(&hash.0)?.is_some() {
                        in_redb.insert(hash.0);
                    }
                }
            }
        }
    }
    let mut overlay = shared.overlay.write().unwrap_or_else(|p| p.into_inner());
    let mut receipts = Vec::with_capacity(batch.len());
    let mut values = prepared.iter();
    for request in batch {
        receipts.push(match request {
            Request::Append { records, .. } => {
                let mut first = None;
                let mut last = 0;
                for (seq, value) in values.by_ref().take(records.len()) {
                    first.get_or_insert(*seq);
                    last = *seq;
                    overlay.records.insert(*seq, value.clone());
                }
                Some(Receipt {
                    first: first.expect("appends are never empty"),
                    last,
                })
            }
            Request::PutBlob { hash, bytes, .. } => {
                overlay.put_blob(hash.0, added_ms, std::sync::Arc::new(bytes.clone()));
                None
            }
            Request::RemoveBlobs { hashes, .. } => {
                let removed = hashes
                    .iter()
                    .filter(|h| overlay.remove_blob(h.0, || in_redb.contains(&h.0)))
                    .count();
                Some(Receipt {
                    first: 0,
                    last: removed as u64,
                })
            }
            Request::PutSnapshot { seq, bytes, .. } => {
                overlay.snapshot = Some((*seq, bytes.clone()));
                Some(Receipt {
                    first: 0,
                    last: *seq,
                })
            }
            Request::AppendBuilt { .. } => unreachable!("materialized before the write"),
            Request::Shutdown => None,
        });
    }
    Ok(receipts)
}
