//! Opening a log, reading it, and following it.

mod blobs;
mod open;
mod read;
mod recovery;

pub use recovery::WalDiscard;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use redb::{Database, ReadableDatabase, ReadableTable};
use tokio::sync::{oneshot, watch};

use crate::error::{AppendError, ReadError, read_err};
use crate::record::{BlobHash, CommittedRecord, Durability, NewRecord, Receipt, Seq};
use crate::schema::SNAPSHOTS;
use crate::writer::Request;

/// Called on the writer thread with each committed batch, in seq order, before any
/// appender of the batch is acknowledged. Keep it short: it delays every appender.
pub type CommitHook = Box<dyn Fn(&[CommittedRecord<'_>]) + Send + Sync>;

/// How a log is opened.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Commit durability. Default [`Durability::Durable`].
    pub durability: Durability,
    /// Largest blob accepted by [`Log::put_blob`]. Default 32 MiB.
    pub blob_bytes_max: u64,
    /// Largest single record. Default 16 MiB.
    pub record_bytes_max: usize,
    /// Most records one group commit takes before it commits. Default 4096.
    pub batch_records_max: usize,
    /// redb page cache. Default 64 MiB.
    pub cache_bytes: usize,
    /// How long an open waits for another process to release the file before it
    /// reports [`OpenError::Locked`]. Default 2 s: CLI runs hold the file briefly.
    pub lock_wait: Duration,
    /// A checkpoint (one durable redb commit, after which the write-ahead log starts
    /// over) is made once the write-ahead log holds this many bytes of frames, and
    /// at close. Default 64 MiB: it bounds the file and the replay after a crash.
    pub checkpoint_bytes: u64,
    /// When the last group commit carried several requests, how long the writer
    /// waits for as many to queue before it commits the next (as PostgreSQL's
    /// `commit_delay`). A lone appender never waits. Default 50 µs; zero turns it
    /// off. Measured: 64 concurrent appenders went from ~75,000 to ~116,000
    /// events/s on a 2-core VM.
    pub commit_delay: Duration,
    /// A writable open of a log whose write-ahead log is missing, cut, damaged or
    /// does not continue the log normally refuses with [`OpenError::WalDamaged`].
    /// With this set it applies the frames before the damage, drops the rest and
    /// reports it ([`Log::wal_discard`]). Default false: only `cmdlog recover
    /// --discard-damaged-wal` sets it.
    pub discard_wal_damage: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            durability: Durability::Durable,
            blob_bytes_max: limits::BLOB_BYTES_MAX,
            record_bytes_max: limits::RECORD_BYTES_MAX,
            batch_records_max: limits::BATCH_RECORDS_MAX,
            cache_bytes: limits::CACHE_BYTES,
            lock_wait: limits::LOCK_WAIT,
            checkpoint_bytes: limits::CHECKPOINT_BYTES,
            commit_delay: limits::COMMIT_DELAY,
            discard_wal_damage: false,
        }
    }
}

use crate::limits::{self, STREAM_KEY_BYTES_MAX};

/// The log's last committed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Its seq; 0 for an empty log.
    pub seq: Seq,
    /// Its chain hash; 32 zero bytes for an empty log.
    pub hash: [u8; 32],
}

/// Where [`Log::verify_chain`] found the chain broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainBreak {
    /// A seq is missing or out of order.
    #[error("seq {found} follows seq {previous}: the log has a gap or is reordered")]
    Gap {
        /// The seq before.
        previous: Seq,
        /// The seq found.
        found: Seq,
    },
    /// The stored hash does not match the recomputed one: the record, or one before it, changed.
    #[error("seq {seq}: hash chain broken, the record's bytes or stored hash were altered")]
    HashMismatch {
        /// The first seq whose hash does not match.
        seq: Seq,
    },
    /// The stored value cannot be decoded.
    #[error("seq {seq}: the stored value is truncated or malformed")]
    Undecodable {
        /// Its seq.
        seq: Seq,
    },
}

/// The redb handle: writable (with a writer thread) or read-only (a snapshot reader
/// that never blocks writers for long).
pub(crate) enum Db {
    Writable(Database),
    ReadOnly(redb::ReadOnlyDatabase),
}

impl Db {
    pub(crate) fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
    }

    pub(crate) fn writable(&self) -> &Database {
        match self {
            Db::Writable(db) => db,
            Db::ReadOnly(_) => unreachable!("only a writable log has a writer thread"),
        }
    }
}

pub(crate) struct Shared {
    pub(crate) db: Db,
    pub(crate) config: LogConfig,
    pub(crate) head: Mutex<Head>,
    pub(crate) committed: Condvar,
    pub(crate) watch: watch::Sender<Seq>,
    pub(crate) poisoned: Mutex<Option<String>>,
    pub(crate) hook: RwLock<Option<CommitHook>>,
    /// Stream index entries not yet in the `streams` table.
    pub(crate) pending: Mutex<PendingStreams>,
    /// Whether `META["wal"]` says open: the writer marks it durably before its
    /// first frame, and a clean close marks it clean.
    pub(crate) wal_open: std::sync::atomic::AtomicBool,
}

/// The stream index entries of records after `META["streams_through"]`, kept in
/// memory and written to the `streams` table in sorted batches: one entry per
/// record inserted per commit touched a B-tree leaf per session and cost more than
/// the rest of the commit. Rebuilt from the records at every open.
#[derive(Debug, Default)]
pub(crate) struct PendingStreams {
    /// Stream key -> its seqs, ascending.
    pub(crate) seqs: std::collections::BTreeMap<String, Vec<Seq>>,
    /// How many seqs in all.
    pub(crate) count: usize,
}

impl PendingStreams {
    pub(crate) fn push(&mut self, key: &str, seq: Seq) {
        match self.seqs.get_mut(key) {
            Some(seqs) => seqs.push(seq),
            None => {
                self.seqs.insert(key.to_string(), vec![seq]);
            }
        }
        self.count += 1;
    }
}

/// An open log. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Log {
    shared: Arc<Shared>,
    path: PathBuf,
    /// What this open dropped from a damaged write-ahead log.
    wal_discard: Option<WalDiscard>,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("path", &self.path)
            .field("head", &self.head().seq)
            .finish()
    }
}

impl Log {
    /// The file this log lives in (`<backend>` for a custom backend).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What this open dropped from a damaged write-ahead log, when it was opened with
    /// [`LogConfig::discard_wal_damage`] and found damage.
    pub fn wal_discard(&self) -> Option<&WalDiscard> {
        self.wal_discard.as_ref()
    }

    /// Installs the commit hook, replacing any earlier one.
    pub fn set_commit_hook(&self, hook: CommitHook) {
        *self.shared.hook.write().unwrap_or_else(|p| p.into_inner()) = Some(hook);
    }

    /// The last committed record's seq and hash.
    pub fn head(&self) -> Head {
        *self.shared.head.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the writer is poisoned, if it is.
    pub fn poisoned(&self) -> Option<String> {
        self.shared
            .poisoned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn send(&self, request: Request) -> Result<(), AppendError> {
        if let Some(cause) = self.poisoned() {
            return Err(AppendError::Poisoned { cause });
        }
        if matches!(self.shared.db, Db::ReadOnly(_)) {
            return Err(AppendError::ReadOnly);
        }
        let guard = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let tx = guard.as_ref().ok_or(AppendError::Closed)?;
        tx.send(request).map_err(|_| AppendError::Closed)
    }

    /// Starts an append of `records` as one atomic unit; await or block on the ticket.
    pub fn submit(&self, records: Vec<NewRecord>) -> Result<AppendTicket, AppendError> {
        check_records(&self.shared.config, &records)?;
        let (reply, rx) = oneshot::channel();
        self.send(Request::Append { records, reply })?;
        Ok(AppendTicket { rx })
    }

    /// Starts an atomic append whose records are built on the writer thread from the
    /// seq the first of them will get, so a record can name the seqs of the others
    /// (a `command/run` listing the admissions appended with it). `build` must be
    /// quick: it runs inside the group commit.
    pub fn submit_built(
        &self,
        build: impl FnOnce(Seq) -> Vec<NewRecord> + Send + 'static,
    ) -> Result<AppendTicket, AppendError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::AppendBuilt {
            build: Box::new(build),
            reply,
        })?;
        Ok(AppendTicket { rx })
    }

    /// Removes blobs (garbage collection); returns how many existed. Blocks until
    /// committed. The caller decides which blobs are unreferenced.
    pub fn remove_blobs(&self, hashes: Vec<BlobHash>) -> Result<u64, AppendError> {
        if hashes.is_empty() {
            return Ok(0);
        }
        let (reply, rx) = oneshot::channel();
        self.send(Request::RemoveBlobs { hashes, reply })?;
        rx.blocking_recv().unwrap_or(Err(AppendError::Closed))
    }

    /// Stores a snapshot of a projection as of `seq`, replacing any earlier one. The
    /// store never reads it: it is a cache its owner can always rebuild.
    pub async fn put_snapshot(&self, seq: Seq, bytes: Vec<u8>) -> Result<(), AppendError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::PutSnapshot { seq, bytes, reply })?;
        rx.await.unwrap_or(Err(AppendError::Closed)).map(|_| ())
    }

    /// The latest snapshot and its seq, if any.
    pub fn latest_snapshot(&self) -> Result<Option<(Seq, Vec<u8>)>, ReadError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let table = match read.open_table(SNAPSHOTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(read_err(e)),
        };
        Ok(table
            .last()
            .map_err(read_err)?
            .map(|(k, v)| (k.value(), v.value().to_vec())))
    }

    /// Appends `records` atomically and blocks until they are committed.
    /// Must not be called from inside an async runtime: use [`Log::append_async`] there.
    pub fn append(&self, records: Vec<NewRecord>) -> Result<Receipt, AppendError> {
        self.submit(records)?.wait()
    }

    /// Appends `records` atomically; resolves once they are committed.
    pub async fn append_async(&self, records: Vec<NewRecord>) -> Result<Receipt, AppendError> {
        self.submit(records)?.await_receipt().await
    }
}

impl Log {
    /// Stops the writer after it drained what is queued, and closes the file.
    pub fn close(self) {
        drop(self);
    }

    fn shutdown(&self) {
        let tx = self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(tx) = tx {
            let _ = tx.send(Request::Shutdown);
        }
        if let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = writer.join();
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Checks an append against the limits before it reaches a transaction.
pub(crate) fn check_records(config: &LogConfig, records: &[NewRecord]) -> Result<(), AppendError> {
    if records.is_empty() {
        return Err(AppendError::Empty);
    }
    let max = config.record_bytes_max;
    for (index, record) in records.iter().enumerate() {
        if record.bytes.len() > max {
            return Err(AppendError::RecordTooLarge {
                index,
                size: record.bytes.len(),
                max,
            });
        }
        if let Some(key) = &record.stream
            && (key.is_empty() || key.len() > STREAM_KEY_BYTES_MAX)
        {
            return Err(AppendError::BadStreamKey {
                index,
                len: key.len(),
                max: STREAM_KEY_BYTES_MAX,
            });
        }
    }
    Ok(())
}

/// A pending append.
#[derive(Debug)]
pub struct AppendTicket {
    rx: oneshot::Receiver<Result<Receipt, AppendError>>,
}

impl AppendTicket {
    /// Blocks until the append committed or failed.
    pub fn wait(self) -> Result<Receipt, AppendError> {
        self.rx.blocking_recv().unwrap_or(Err(AppendError::Closed))
    }

    /// Resolves once the append committed or failed.
    pub async fn await_receipt(self) -> Result<Receipt, AppendError> {
        self.rx.await.unwrap_or(Err(AppendError::Closed))
    }
}
