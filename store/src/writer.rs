//! The single writer thread: group commit.
//!
//! It takes one request, then whatever else is already queued (up to
//! `batch_records_max` records), writes all of it in one redb write transaction,
//! commits, runs the commit hook, wakes tailers, and only then acknowledges each
//! request. A failed commit poisons the writer: the batch and every later request
//! fail until the log is reopened.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{SystemTime, UNIX_EPOCH};

use redb::{Durability as RedbDurability, ReadableTable};
use tokio::sync::oneshot;

use crate::error::AppendError;
use crate::log::{Head, Shared};
use crate::record::{BlobHash, CommittedRecord, Durability, NewRecord, Receipt};
use crate::schema::{self, BLOB_META, BLOBS, RECORDS, SNAPSHOTS, STREAMS};

/// Builds an append's records once its first seq is known (on the writer thread).
pub(crate) type BuildRecords = Box<dyn FnOnce(u64) -> Vec<NewRecord> + Send>;

pub(crate) enum Request {
    Append {
        records: Vec<NewRecord>,
        reply: oneshot::Sender<Result<Receipt, AppendError>>,
    },
    /// An append whose records name their own seqs (the run that lists the seqs of
    /// the admissions appended with it).
    AppendBuilt {
        build: BuildRecords,
        reply: oneshot::Sender<Result<Receipt, AppendError>>,
    },
    RemoveBlobs {
        hashes: Vec<BlobHash>,
        reply: oneshot::Sender<Result<u64, AppendError>>,
    },
    /// Replaces every snapshot with this one.
    PutSnapshot {
        seq: u64,
        bytes: Vec<u8>,
        reply: oneshot::Sender<Result<u64, AppendError>>,
    },
    PutBlob {
        hash: BlobHash,
        bytes: Vec<u8>,
        reply: oneshot::Sender<Result<(), AppendError>>,
    },
    Shutdown,
}

impl Request {
    fn weight(&self) -> usize {
        match self {
            Request::Append { records, .. } => records.len(),
            Request::RemoveBlobs { hashes, .. } => hashes.len(),
            Request::AppendBuilt { .. }
            | Request::PutBlob { .. }
            | Request::PutSnapshot { .. }
            | Request::Shutdown => 1,
        }
    }

    fn fail(self, error: AppendError) {
        match self {
            Request::Append { reply, .. } | Request::AppendBuilt { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::PutBlob { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::RemoveBlobs { reply, .. } | Request::PutSnapshot { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::Shutdown => {}
        }
    }
}

pub(crate) fn run(shared: Arc<Shared>, rx: Receiver<Request>) {
    let mut shutting_down = false;
    while !shutting_down {
        let Ok(first) = rx.recv() else { break };
        let mut batch = Vec::new();
        let mut weight = 0;
        let mut next = Some(first);
        while let Some(request) = next.take() {
            if matches!(request, Request::Shutdown) {
                shutting_down = true;
                break;
            }
            weight += request.weight();
            batch.push(request);
            if weight < shared.config.batch_records_max {
                next = rx.try_recv().ok();
            }
        }
        if batch.is_empty() {
            continue;
        }
        let poisoned = shared
            .poisoned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(cause) = poisoned {
            for request in batch {
                request.fail(AppendError::Poisoned {
                    cause: cause.clone(),
                });
            }
            continue;
        }
        commit_batch(&shared, batch);
    }
    if shared.config.durability == Durability::Buffered {
        // Buffered commits reach the disk with the next durable one: make one now.
        let _ = flush(&shared);
    }
    // Refuse whatever raced in behind the shutdown.
    while let Ok(request) = rx.try_recv() {
        request.fail(AppendError::Closed);
    }
}

fn flush(shared: &Shared) -> Result<(), redb::Error> {
    let mut txn = shared.db.writable().begin_write()?;
    txn.set_durability(RedbDurability::Immediate)
        .map_err(|e| redb::Error::from(redb::StorageError::Backend(Box::new(e))))?;
    txn.commit()?;
    Ok(())
}

/// Turns each built append into a plain one now that its first seq is known, and
/// refuses (outside the transaction) any whose built records break the limits.
fn materialize(shared: &Shared, start: u64, batch: Vec<Request>) -> Vec<Request> {
    let mut next = start + 1;
    let mut out = Vec::with_capacity(batch.len());
    for request in batch {
        let request = match request {
            Request::AppendBuilt { build, reply } => {
                let records = build(next);
                match crate::log::check_records(&shared.config, &records) {
                    Ok(()) => Request::Append { records, reply },
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                }
            }
            other => other,
        };
        if let Request::Append { records, .. } = &request {
            next += records.len() as u64;
        }
        out.push(request);
    }
    out
}

fn commit_batch(shared: &Shared, batch: Vec<Request>) {
    let start = *shared.head.lock().unwrap_or_else(|p| p.into_inner());
    let batch = materialize(shared, start.seq, batch);
    if batch.is_empty() {
        return;
    }
    match write_batch(shared, start, &batch) {
        Ok((head, receipts)) => {
            let committed: Vec<CommittedRecord<'_>> = batch
                .iter()
                .filter_map(|r| match r {
                    Request::Append { records, .. } => Some(records),
                    _ => None,
                })
                .flatten()
                .zip(start.seq + 1..)
                .map(|(record, seq)| CommittedRecord {
                    seq,
                    stream: record.stream.as_deref(),
                    bytes: &record.bytes,
                })
                .collect();
            if !committed.is_empty()
                && let Some(hook) = shared
                    .hook
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                && let Err(panic) =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&committed)))
            {
                // The records are durable, but whoever folds them missed them: stop
                // accepting appends rather than let the fold drift from the log.
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                *shared.poisoned.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(format!("the commit hook panicked: {message}"));
            }
            drop(committed);
            *shared.head.lock().unwrap_or_else(|p| p.into_inner()) = head;
            shared.committed.notify_all();
            shared.watch.send_replace(head.seq);
            for (request, receipt) in batch.into_iter().zip(receipts) {
                match request {
                    Request::Append { reply, .. } => {
                        let _ = reply.send(Ok(receipt.expect("append has a receipt")));
                    }
                    Request::PutBlob { reply, .. } => {
                        let _ = reply.send(Ok(()));
                    }
                    Request::RemoveBlobs { reply, .. } | Request::PutSnapshot { reply, .. } => {
                        let _ = reply.send(Ok(receipt.map_or(0, |r| r.last)));
                    }
                    Request::AppendBuilt { .. } | Request::Shutdown => {}
                }
            }
        }
        Err(e) => {
            let message = e.to_string();
            *shared.poisoned.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
            for request in batch {
                request.fail(AppendError::Storage {
                    message: message.clone(),
                });
            }
        }
    }
}

type BatchResult = (Head, Vec<Option<Receipt>>);

fn write_batch(
    shared: &Shared,
    start: Head,
    batch: &[Request],
) -> Result<BatchResult, redb::Error> {
    let mut txn = shared.db.writable().begin_write()?;
    let durability = match shared.config.durability {
        Durability::Durable => RedbDurability::Immediate,
        Durability::Buffered => RedbDurability::None,
    };
    txn.set_durability(durability)
        .map_err(|e| redb::Error::from(redb::StorageError::Backend(Box::new(e))))?;
    let mut head = start;
    let mut receipts = Vec::with_capacity(batch.len());
    {
        let mut records_table = txn.open_table(RECORDS)?;
        let mut streams_table = txn.open_table(STREAMS)?;
        let mut blobs = txn.open_table(BLOBS)?;
        let mut meta = txn.open_table(BLOB_META)?;
        for request in batch {
            match request {
                Request::Append { records, .. } => {
                    let first = head.seq + 1;
                    for record in records {
                        let seq = head.seq + 1;
                        let hash = schema::chain(&head.hash, seq, &record.bytes);
                        let value =
                            schema::encode_record(&hash, record.stream.as_deref(), &record.bytes);
                        records_table.insert(seq, value.as_slice())?;
                        if let Some(key) = &record.stream {
                            streams_table.insert((key.as_str(), seq), ())?;
                        }
                        head = Head { seq, hash };
                    }
                    receipts.push(Some(Receipt {
                        first,
                        last: head.seq,
                    }));
                }
                Request::PutBlob { hash, bytes, .. } => {
                    if meta.get(&hash.0)?.is_none() {
                        debug_assert_eq!(BlobHash::of(bytes), *hash);
                        blobs.insert(&hash.0, bytes.as_slice())?;
                        meta.insert(&hash.0, (now_ms(), bytes.len() as u64))?;
                    }
                    receipts.push(None);
                }
                Request::RemoveBlobs { hashes, .. } => {
                    let mut removed = 0;
                    for hash in hashes {
                        if meta.remove(&hash.0)?.is_some() {
                            removed += 1;
                        }
                        blobs.remove(&hash.0)?;
                    }
                    // The count rides in `last` of a receipt that names no records.
                    receipts.push(Some(Receipt {
                        first: 0,
                        last: removed,
                    }));
                }
                Request::PutSnapshot { seq, bytes, .. } => {
                    let mut snapshots = txn.open_table(SNAPSHOTS)?;
                    let old: Vec<u64> = snapshots
                        .iter()?
                        .map(|e| e.map(|(k, _)| k.value()))
                        .collect::<Result<_, _>>()?;
                    for k in old {
                        snapshots.remove(k)?;
                    }
                    snapshots.insert(*seq, bytes.as_slice())?;
                    receipts.push(Some(Receipt {
                        first: 0,
                        last: *seq,
                    }));
                }
                Request::AppendBuilt { .. } => unreachable!("materialized before the transaction"),
                Request::Shutdown => receipts.push(None),
            }
        }
    }
    txn.commit()?;
    Ok((head, receipts))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
