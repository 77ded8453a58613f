//! The single writer thread: group commit.
//!
//! It takes one request, then whatever else is already queued (up to
//! `batch_records_max` records), appends all of it as one frame to the write-ahead
//! log and syncs it, writes it to redb in one non-durable transaction, runs the
//! commit hook, wakes tailers, and only then acknowledges each request. Every
//! `checkpoint_bytes` of frames (64 MiB), and at shutdown, a durable redb commit
//! checkpoints. A batch carrying more than 1 MiB of attachments or 2 MiB of
//! records (a bulk import) skips the frame: it is one durable redb commit, which
//! writes those bytes once instead of twice and checkpoints every earlier frame.
//! A failed commit poisons the writer: the batch and every later request fail until the log
//! is reopened.
//!
//! (A second thread applying batch N to redb while this one syncs batch N+1 was
//! tried and measured: it halves the batches and adds a hand-off per batch, and was
//! no faster on 2 cores.)

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Instant;

use cmdlog_common::time::now_ms;

use redb::{Durability as RedbDurability, ReadableTable};
use tokio::sync::oneshot;

use crate::error::AppendError;
use crate::journal::{Frame, Journal};
use crate::record::Head;
use crate::record::{BlobHash, CommittedRecord, NewRecord, Receipt};
use crate::schema::{self, BLOB_CHUNKS, BLOB_META, BLOBS, META, RECORDS, STREAMS, TREE};
use crate::shared::{PendingStreams, Shared, check_records};

mod short_lived;

pub(crate) use short_lived::Inline;
use short_lived::{commit_short_lived, write_overlay};

/// Builds an append's records once its first seq is known (on the writer thread).
pub(crate) type BuildRecords = Box<dyn FnMut(u64) -> Vec<NewRecord> + Send>;

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

/// A batch whose frame is durable, or that goes to redb durably itself.
struct Applying {
    batch: Vec<Request>,
    prepared: Prepared,
    start: Head,
    head: Head,
    added_ms: u64,
    durability: RedbDurability,
}

/// Starts the writer thread.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    journal: Option<Journal>,
) -> std::io::Result<(Sender<Request>, JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel();
    let writer = std::thread::Builder::new()
        .name("cmdlog-writer".into())
        .spawn(move || run(&shared, rx, journal))?;
    Ok((tx, writer))
}

fn poisoned(shared: &Shared) -> Option<String> {
    shared
        .poisoned
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

fn run(shared: &Shared, rx: Receiver<Request>, mut journal: Option<Journal>) {
    let mut head = *shared.head.lock().unwrap_or_else(|p| p.into_inner());
    let mut shutting_down = false;
    // Requests in the last group commit: with several appenders, the ones just
    // acknowledged are still on their way back when the next batch is taken.
    let mut last_batch = 0usize;
    let mut wrote = false;
    while !shutting_down {
        let first = match spin_for_lone_appender(&rx, last_batch) {
            Some(request) => request,
            None => match rx.recv() {
                Ok(request) => request,
                Err(_) => break,
            },
        };
        let deadline = Instant::now() + shared.config.commit_delay;
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
                // Under concurrency, wait briefly for the batch to refill: one sync
                // then carries them all instead of two syncs half as full.
                if next.is_none() && last_batch > 1 && batch.len() < last_batch {
                    let now = Instant::now();
                    if now < deadline {
                        next = rx.recv_timeout(deadline - now).ok();
                    }
                }
            }
        }
        last_batch = batch.len();
        if batch.is_empty() {
            continue;
        }
        if let Some(cause) = poisoned(shared) {
            for request in batch {
                request.fail(AppendError::Poisoned {
                    cause: cause.clone(),
                });
            }
            continue;
        }
        let short_lived = shared.db.short_lived();
        if journal.is_some()
            && !short_lived
            && !shared.wal_open.load(Ordering::SeqCst)
            && let Err(e) = set_wal_state(shared, schema::WAL_OPEN)
        {
            let message = format!("cannot mark the write-ahead log in use: {e}");
            poison(shared, message.clone());
            for request in batch {
                request.fail(AppendError::Storage {
                    message: message.clone(),
                });
            }
            continue;
        }
        commit_batch(shared, &mut journal, &mut head, batch);
        wrote = true;
        let pending = shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count;
        if pending >= STREAMS_FLUSH_ENTRIES
            && !short_lived
            && poisoned(shared).is_none()
            && let Err(e) = flush_streams(shared, RedbDurability::None, None)
        {
            poison(shared, e.to_string());
        }
        if !short_lived
            && journal
                .as_ref()
                .is_some_and(|j| j.frame_bytes() >= shared.config.checkpoint_bytes)
            && let Err(failure) = checkpoint(shared, &mut journal)
        {
            poison(shared, failure.to_string());
        }
    }
    // Non-durable commits reach redb's file with the next durable one: make one now,
    // so a clean close leaves nothing for the next open to apply. A log that took
    // no writes (and had no crash to tidy up after) is left untouched.
    let pending = shared
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .count;
    // A short-lived appender never writes redb's file: the next writable open applies
    // its frames.
    if poisoned(shared).is_none() && (wrote || pending > 0) && !shared.db.short_lived() {
        let _ = checkpoint_at_close(shared, &mut journal);
    }
    // Refuse whatever raced in behind the shutdown.
    while let Ok(request) = rx.try_recv() {
        request.fail(AppendError::Closed);
    }
}

/// After a batch of one request, a lone appender usually sends its next append a
/// few microseconds after its acknowledgement: spinning that long for it spares a
/// futex wake-up of this thread per append (measured: +8-10% appends/s for one
/// appender). Under concurrency the batch was larger and nothing spins.
fn spin_for_lone_appender(rx: &Receiver<Request>, last_batch: usize) -> Option<Request> {
    if last_batch != 1 {
        return None;
    }
    let until = Instant::now() + LONE_APPENDER_SPIN;
    loop {
        if let Ok(request) = rx.try_recv() {
            return Some(request);
        }
        if Instant::now() >= until {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// Makes everything redb holds durable there, then starts the write-ahead log's
/// next generation.
fn checkpoint(shared: &Shared, journal: &mut Option<Journal>) -> Result<(), WriterFailure> {
    flush_streams(shared, RedbDurability::Immediate, None)?;
    start_generation(journal)
}

/// The last checkpoint of a clean close: it also marks the write-ahead log clean, so
/// the next open knows that redb's file holds everything even if the write-ahead
/// log is gone.
fn checkpoint_at_close(
    shared: &Shared,
    journal: &mut Option<Journal>,
) -> Result<(), WriterFailure> {
    let state = journal.is_some().then_some(schema::WAL_CLEAN);
    flush_streams(shared, RedbDurability::Immediate, state)?;
    shared.wal_open.store(false, Ordering::SeqCst);
    start_generation(journal)
}

/// Durably records the write-ahead log's state in `META`.
fn set_wal_state(shared: &Shared, state: &[u8]) -> Result<(), redb::Error> {
    let txn = shared.db.writable().begin_write()?;
    txn.open_table(META)?.insert(schema::WAL_STATE, state)?;
    txn.commit()?;
    shared
        .wal_open
        .store(state == schema::WAL_OPEN, Ordering::SeqCst);
    Ok(())
}

/// Starts the write-ahead log's next generation if it holds frames. Only once redb
/// holds all of them durably.
fn start_generation(journal: &mut Option<Journal>) -> Result<(), WriterFailure> {
    match journal.as_mut().filter(|j| j.frame_bytes() > 0) {
        Some(journal) => journal.reset().map_err(|e| journal_error(journal, e)),
        None => Ok(()),
    }
}

/// Writes the pending stream index entries to the `streams` table, sorted, in one
/// transaction that also records how far the table now reaches. Runs on the writer
/// thread between batches, so no entry is added meanwhile.
fn flush_streams(
    shared: &Shared,
    durability: RedbDurability,
    wal_state: Option<&[u8]>,
) -> Result<(), redb::Error> {
    let through = shared.head.lock().unwrap_or_else(|p| p.into_inner()).seq;
    let entries = shared
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .seqs
        .clone();
    let mut txn = shared.db.writable().begin_write()?;
    txn.set_durability(durability)
        .map_err(|e| redb::Error::from(redb::StorageError::Backend(Box::new(e))))?;
    {
        let mut streams = txn.open_table(STREAMS)?;
        for (key, seqs) in &entries {
            for seq in seqs {
                streams.insert((key.as_str(), *seq), ())?;
            }
        }
        let mut meta = txn.open_table(META)?;
        meta.insert(schema::STREAMS_THROUGH, through.to_le_bytes().as_slice())?;
        if let Some(state) = wal_state {
            meta.insert(schema::WAL_STATE, state)?;
        }
    }
    txn.commit()?;
    // Readers that began before the commit still had the entries here; readers
    // after it find them in both places and keep one.
    *shared.pending.lock().unwrap_or_else(|p| p.into_inner()) = PendingStreams::default();
    Ok(())
}

/// Turns each built append into a plain one now that its first seq is known, and
/// refuses (outside the transaction) any whose built records break the limits.
fn materialize(shared: &Shared, start: u64, batch: Vec<Request>) -> Vec<Request> {
    let mut next = start + 1;
    let mut out = Vec::with_capacity(batch.len());
    for request in batch {
        let request = match request {
            Request::AppendBuilt { mut build, reply } => {
                let records = build(next);
                match check_records(&shared.config, &records) {
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

use crate::limits::{
    DIRECT_BLOB_BYTES, DIRECT_RECORD_BYTES, LONE_APPENDER_SPIN, STREAMS_FLUSH_ENTRIES,
};

fn journal_error(journal: &Journal, source: std::io::Error) -> WriterFailure {
    WriterFailure::Journal {
        path: journal.path().to_path_buf(),
        source,
    }
}

/// What stops the writer: its text becomes the poison cause every later append
/// reports, and the message of the appends it failed.
#[derive(Debug, thiserror::Error)]
enum WriterFailure {
    /// redb refused a transaction.
    #[error(transparent)]
    Redb(#[from] redb::Error),
    /// The write-ahead log could not be written or reset.
    #[error("write-ahead log {}: {source}", .path.display())]
    Journal {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Another process's frame does not continue the chain this process holds.
    #[error("another appender's frame: {0}")]
    Discontinuous(String),
}

fn poison(shared: &Shared, message: String) {
    *shared.poisoned.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
}

/// Each appended record's seq and `records` value, in batch order.
type Prepared = Vec<(u64, Vec<u8>)>;

/// Links the batch's records into the chain.
fn prepare(start: Head, batch: &[Request]) -> (Prepared, Head) {
    let mut head = start;
    let mut prepared = Vec::new();
    for request in batch {
        if let Request::Append { records, .. } = request {
            for record in records {
                let seq = head.seq + 1;
                let hash = schema::chain(&head.hash, seq, &record.bytes);
                prepared.push((
                    seq,
                    schema::encode_record(&hash, record.stream.as_deref(), &record.bytes),
                ));
                head = Head { seq, hash };
            }
        }
    }
    (prepared, head)
}

/// Writes the batch's frame to the write-ahead log and syncs it.
fn write_frame(
    journal: &mut Journal,
    batch: &[Request],
    prepared: &Prepared,
    added_ms: u64,
    short_lived: bool,
) -> Result<(), WriterFailure> {
    let mut frame = Frame::default();
    let mut values = prepared.iter();
    for request in batch {
        match request {
            Request::Append { records, .. } => {
                for (seq, value) in values.by_ref().take(records.len()) {
                    frame.record(*seq, value);
                }
            }
            Request::PutBlob { hash, bytes, .. } => frame.blob(&hash.0, added_ms, bytes),
            Request::RemoveBlobs { hashes, .. } => frame.remove_blobs(hashes),
            // Snapshots are a cache: redb alone keeps a writable log's, durable at the
            // next checkpoint; a short-lived appender's go in frames.
            Request::PutSnapshot { seq, bytes, .. } if short_lived => frame.snapshot(*seq, bytes),
            Request::PutSnapshot { .. } | Request::AppendBuilt { .. } | Request::Shutdown => {}
        }
    }
    if frame.is_empty() {
        return Ok(());
    }
    journal
        .append(&frame)
        .map_err(|e| journal_error(journal, e))
}

/// One group commit: the frame, then redb, the commit hook and the acks.
fn commit_batch(
    shared: &Shared,
    journal: &mut Option<Journal>,
    head: &mut Head,
    batch: Vec<Request>,
) {
    if shared.db.short_lived()
        && let Some(journal) = journal.as_mut()
    {
        return commit_short_lived(shared, journal, head, batch);
    }
    let start = *head;
    let batch = materialize(shared, start.seq, batch);
    if batch.is_empty() {
        return;
    }
    let (prepared, end) = prepare(start, &batch);
    let added_ms = now_ms();
    // Large blobs would be written twice (frame, then checkpoint): such a batch is
    // one durable redb commit instead, which also checkpoints every earlier frame.
    let blob_bytes: usize = batch
        .iter()
        .map(|r| match r {
            Request::PutBlob { bytes, .. } => bytes.len(),
            _ => 0,
        })
        .sum();
    let record_bytes: usize = prepared.iter().map(|(_, value)| value.len()).sum();
    let direct = journal.is_some()
        && (blob_bytes >= DIRECT_BLOB_BYTES || record_bytes >= DIRECT_RECORD_BYTES);
    if !direct
        && let Some(journal) = journal.as_mut()
        && let Err(failure) = write_frame(journal, &batch, &prepared, added_ms, false)
    {
        let message = failure.to_string();
        poison(shared, message.clone());
        for request in batch {
            request.fail(AppendError::Storage {
                message: message.clone(),
            });
        }
        return;
    }
    let durability = if direct {
        RedbDurability::Immediate
    } else {
        RedbDurability::None
    };
    *head = end;
    let applied = apply(
        shared,
        Applying {
            batch,
            prepared,
            start,
            head: end,
            added_ms,
            durability,
        },
    );
    // A direct batch made every earlier frame durable in redb: start afresh.
    if direct
        && applied
        && let Err(failure) = start_generation(journal)
    {
        poison(shared, failure.to_string());
    }
}

/// Writes a batch to redb, runs the commit hook and acknowledges; false if it failed.
fn apply(shared: &Shared, applying: Applying) -> bool {
    let Applying {
        batch,
        prepared,
        start,
        head,
        added_ms,
        durability,
    } = applying;
    let written = match poisoned(shared) {
        Some(cause) => Err(cause),
        None if shared.db.short_lived() => write_overlay(shared, &batch, &prepared, added_ms)
            .map_err(|e| {
                let message = e.to_string();
                poison(shared, message.clone());
                message
            }),
        None => write_batch(shared, &batch, &prepared, added_ms, durability).map_err(|e| {
            let message = e.to_string();
            poison(shared, message.clone());
            message
        }),
    };
    let receipts = match written {
        Ok(receipts) => receipts,
        Err(message) => {
            for request in batch {
                request.fail(AppendError::Storage {
                    message: message.clone(),
                });
            }
            return false;
        }
    };
    // One pass: the stream index entries and what the commit hook sees.
    let committed: Vec<CommittedRecord<'_>> = {
        let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
        batch
            .iter()
            .filter_map(|r| match r {
                Request::Append { records, .. } => Some(records),
                _ => None,
            })
            .flatten()
            .zip(start.seq + 1..)
            .map(|(record, seq)| {
                if let Some(key) = &record.stream {
                    pending.push(key, seq);
                }
                CommittedRecord {
                    seq,
                    stream: record.stream.as_deref(),
                    bytes: &record.bytes,
                }
            })
            .collect()
    };
    run_hook(shared, &committed);
    drop(committed);
    publish_head(shared, head);
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
    true
}

/// Runs the commit hook over `committed`; a panic poisons the writer.
pub(crate) fn run_hook(shared: &Shared, committed: &[CommittedRecord<'_>]) {
    if !committed.is_empty()
        && let Some(hook) = shared
            .hook
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        && let Err(panic) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(committed)))
    {
        // The records are durable, but whoever folds them missed them: stop
        // accepting appends rather than let the fold drift from the log.
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        poison(shared, format!("the commit hook panicked: {message}"));
    }
}

/// Makes `head` the log's head and wakes whoever waits for it.
pub(crate) fn publish_head(shared: &Shared, head: Head) {
    *shared.head.lock().unwrap_or_else(|p| p.into_inner()) = head;
    shared.committed.notify_all();
    shared.watch.send_replace(head.seq);
}

fn write_batch(
    shared: &Shared,
    batch: &[Request],
    prepared: &Prepared,
    added_ms: u64,
    durability: RedbDurability,
) -> Result<Vec<Option<Receipt>>, redb::Error> {
    let mut txn = shared.db.writable().begin_write()?;
    txn.set_durability(durability)
        .map_err(|e| redb::Error::from(redb::StorageError::Backend(Box::new(e))))?;
    let mut receipts = Vec::with_capacity(batch.len());
    let mut values = prepared.iter();
    // The tree grows in the same transaction; its edge moves on only if it commits.
    let mut frontier = shared
        .frontier
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(frontier) = frontier.as_mut()
        && let Some((first, _)) = prepared.first()
    {
        // The batch's hashes as one entry (a few for a batch past its size).
        let mut tree = txn.open_table(TREE)?;
        let mut run = crate::tree::Run::at(first - 1);
        for (seq, value) in prepared {
            let (_, _, bytes) = schema::decode_record(value).expect("encoded just before");
            run.push(frontier, *seq, bytes);
            if run.is_full() {
                run.flush(&mut tree)?;
            }
        }
        run.flush(&mut tree)?;
    }
    {
        let mut records_table = txn.open_table(RECORDS)?;
        let mut blobs = txn.open_table(BLOBS)?;
        let mut chunks = txn.open_table(BLOB_CHUNKS)?;
        let mut meta = txn.open_table(BLOB_META)?;
        for request in batch {
            match request {
                Request::Append { records, .. } => {
                    let mut first = None;
                    let mut last = 0;
                    for (seq, value) in values.by_ref().take(records.len()) {
                        records_table.insert(*seq, value.as_slice())?;
                        first.get_or_insert(*seq);
                        last = *seq;
                    }
                    receipts.push(Some(Receipt {
                        first: first.expect("appends are never empty"),
                        last,
                    }));
                }
                Request::PutBlob { hash, bytes, .. } => {
                    if meta.get(&hash.0)?.is_none() {
                        debug_assert_eq!(BlobHash::of(bytes), *hash);
                        schema::insert_blob(&mut blobs, &mut chunks, &hash.0, bytes)?;
                        meta.insert(&hash.0, (added_ms, bytes.len() as u64))?;
                    }
                    receipts.push(None);
                }
                Request::RemoveBlobs { hashes, .. } => {
                    let mut removed = 0;
                    for hash in hashes {
                        if meta.remove(&hash.0)?.is_some() {
                            removed += 1;
                        }
                        schema::remove_blob(&mut blobs, &mut chunks, &hash.0)?;
                    }
                    // The count rides in `last` of a receipt that names no records.
                    receipts.push(Some(Receipt {
                        first: 0,
                        last: removed,
                    }));
                }
                Request::PutSnapshot { seq, bytes, .. } => {
                    schema::replace_snapshot(&txn, *seq, bytes)?;
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
    *shared.frontier.lock().unwrap_or_else(|p| p.into_inner()) = frontier;
    Ok(receipts)
}
