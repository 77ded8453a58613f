//! Opening a log, reading it, and following it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::{
    Database, DatabaseError, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle,
};
use tokio::sync::{oneshot, watch};

use crate::error::{AppendError, BlobError, OpenError, ReadError, read_err};
use crate::journal::{self, Journal, JournalIo, Op, journal_path};
use crate::record::{BlobHash, CommittedRecord, Durability, NewRecord, Receipt, Record, Seq};
use crate::schema::{
    self, BLOB_CHUNKS, BLOB_META, BLOBS, FORMAT, META, RECORDS, SNAPSHOTS, STREAMS,
};
use crate::writer::{self, Request};

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
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            durability: Durability::Durable,
            blob_bytes_max: 32 * 1024 * 1024,
            record_bytes_max: 16 * 1024 * 1024,
            batch_records_max: 4096,
            cache_bytes: 64 * 1024 * 1024,
            lock_wait: Duration::from_secs(2),
            checkpoint_bytes: 64 * 1024 * 1024,
            commit_delay: Duration::from_micros(50),
        }
    }
}

/// Longest stream key, in bytes.
pub(crate) const STREAM_KEY_BYTES_MAX: usize = 256;

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
    /// Opens the log at `path`, creating it (and its folder) if needed. Waits up to
    /// `config.lock_wait` for another process to release the file.
    pub fn open(path: impl AsRef<Path>, config: LogConfig) -> Result<Log, OpenError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| OpenError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.exists()
        {
            // Inputs and attachments may hold secrets: a new log's folder is the owner's.
            std::fs::create_dir_all(parent).map_err(io)?;
            set_mode(parent, 0o700).map_err(io)?;
            sync_parent(parent).map_err(io)?;
        }
        let new_file = !path.exists();
        let mut builder = redb::Builder::new();
        builder.set_cache_size(config.cache_bytes);
        let db = waiting_for_lock(&path, config.lock_wait, || builder.create(&path))?;
        if new_file {
            set_mode(&path, 0o600).map_err(io)?;
        }
        // redb's lock on the log file is held: no other writer touches the journal.
        let wal = journal_path(&path);
        let wal_io = |source| OpenError::Io {
            path: wal.clone(),
            source,
        };
        let new_wal = !wal.exists();
        let journal = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                // Frames beside a log file that was just created belong to a
                // deleted log: never apply them to this one.
                .truncate(new_file)
                .mode(0o600)
                .open(&wal)
                .map_err(wal_io)?
        };
        if new_file || new_wal {
            // A synced frame in a file whose name is not yet durable in its folder
            // could vanish with a power cut: make the new names durable first.
            sync_parent(&path).map_err(io)?;
        }
        Self::from_db(db, path, Box::new(journal), wal, config)
    }

    /// Opens an existing log for reading only. Writers are excluded only while it is
    /// open, so open, read and drop it promptly. A file that needs crash recovery
    /// cannot be opened read-only ([`OpenError::NeedsRecovery`]): open it writable once.
    pub fn open_read_only(path: impl AsRef<Path>, config: LogConfig) -> Result<Log, OpenError> {
        let path = path.as_ref().to_path_buf();
        let mut builder = redb::Builder::new();
        builder.set_cache_size(config.cache_bytes);
        let db = waiting_for_lock(&path, config.lock_wait, || builder.open_read_only(&path))?;
        // Holding redb's shared lock, no writer is running: frames in the write-ahead
        // log are left from a crash and only a writable open applies them.
        let wal = journal_path(&path);
        if journal::has_frames(&path).map_err(|source| OpenError::Io { path: wal, source })? {
            return Err(OpenError::NeedsRecovery { path });
        }
        let db = Db::ReadOnly(db);
        if !Self::initialized(&db, &path)? {
            return Err(OpenError::Format {
                path,
                found: String::new(),
            });
        }
        Self::start(db, path, config, None)
    }

    /// Opens a log on a custom redb storage backend and write-ahead log file (tests
    /// use [`crate::FaultyBackend`] and [`crate::FaultyFile`]).
    pub fn open_with_backend(
        backend: impl redb::StorageBackend,
        journal: impl JournalIo + 'static,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        let path = PathBuf::from("<backend>");
        let db = redb::Builder::new()
            .set_cache_size(config.cache_bytes)
            .create_with_backend(backend)
            .map_err(|e| open_error(&path, e))?;
        Self::from_db(
            db,
            path,
            Box::new(journal),
            PathBuf::from("<backend>-wal"),
            config,
        )
    }

    fn from_db(
        db: Database,
        path: PathBuf,
        journal: Box<dyn JournalIo>,
        wal: PathBuf,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        let db = Db::Writable(db);
        if !Self::initialized(&db, &path)? {
            Self::initialize(db.writable(), &path)?;
        }
        mark_streams_through(db.writable(), &path)?;
        let journal = recover(db.writable(), journal, wal)?;
        // Buffered logs skip the write-ahead log: their commits are not durable anyway.
        let journal = (config.durability == Durability::Durable).then_some(journal);
        Self::start(db, path, config, journal)
    }

    /// Whether the file already holds this format's tables (then opening writes nothing).
    fn initialized(db: &Db, path: &Path) -> Result<bool, OpenError> {
        let storage = storage_error(path);
        let read = db.begin_read().map_err(|e| storage(e.into()))?;
        let tables: Vec<String> = read
            .list_tables()
            .map_err(|e| storage(e.into()))?
            .map(|t| t.name().to_string())
            .collect();
        let wanted = [
            META.name(),
            RECORDS.name(),
            STREAMS.name(),
            BLOBS.name(),
            BLOB_META.name(),
        ];
        if !wanted.iter().all(|w| tables.iter().any(|t| t == w)) {
            return Ok(false);
        }
        let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
        match meta.get("format").map_err(|e| storage(e.into()))? {
            Some(f) if f.value() == FORMAT => Ok(true),
            Some(f) => Err(OpenError::Format {
                path: path.to_path_buf(),
                found: String::from_utf8_lossy(f.value()).into_owned(),
            }),
            None => Ok(false),
        }
    }

    /// Writes the format marker and creates the tables.
    fn initialize(db: &Database, path: &Path) -> Result<(), OpenError> {
        let storage = storage_error(path);
        let txn = db.begin_write().map_err(|e| storage(e.into()))?;
        {
            let mut meta = txn.open_table(META).map_err(|e| storage(e.into()))?;
            let found = meta
                .get("format")
                .map_err(|e| storage(e.into()))?
                .map(|v| v.value().to_vec());
            match found {
                None => {
                    let records = txn.open_table(RECORDS).map_err(|e| storage(e.into()))?;
                    if !records.is_empty().map_err(|e| storage(e.into()))? {
                        return Err(OpenError::Format {
                            path: path.to_path_buf(),
                            found: String::new(),
                        });
                    }
                    drop(records);
                    meta.insert("format", FORMAT)
                        .map_err(|e| storage(e.into()))?;
                }
                Some(f) if f == FORMAT => {}
                Some(f) => {
                    return Err(OpenError::Format {
                        path: path.to_path_buf(),
                        found: String::from_utf8_lossy(&f).into_owned(),
                    });
                }
            }
            txn.open_table(RECORDS).map_err(|e| storage(e.into()))?;
            txn.open_table(STREAMS).map_err(|e| storage(e.into()))?;
            txn.open_table(BLOBS).map_err(|e| storage(e.into()))?;
            txn.open_table(BLOB_META).map_err(|e| storage(e.into()))?;
        }
        txn.commit().map_err(|e| storage(e.into()))?;
        Ok(())
    }

    fn start(
        db: Db,
        path: PathBuf,
        config: LogConfig,
        journal: Option<Journal>,
    ) -> Result<Log, OpenError> {
        let head = {
            let storage = storage_error(&path);
            let read = db.begin_read().map_err(|e| storage(e.into()))?;
            let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
            match records.last().map_err(|e| storage(e.into()))? {
                None => Head {
                    seq: 0,
                    hash: [0; 32],
                },
                Some((k, v)) => {
                    let seq = k.value();
                    let (hash, _, _) =
                        schema::decode_record(v.value()).ok_or_else(|| OpenError::Storage {
                            path: path.clone(),
                            message: format!(
                                "the last record, seq {seq}, is malformed; run `cmdlog verify`"
                            ),
                        })?;
                    Head { seq, hash }
                }
            }
        };

        let pending = Self::pending_streams(&db, &path, head.seq)?;
        let (watch, _) = watch::channel(head.seq);
        let shared = Arc::new(Shared {
            db,
            config,
            head: Mutex::new(head),
            committed: Condvar::new(),
            watch,
            poisoned: Mutex::new(None),
            hook: RwLock::new(None),
            pending: Mutex::new(pending),
        });
        let (requests, writer) = match &shared.db {
            Db::ReadOnly(_) => (None, None),
            Db::Writable(_) => {
                let (tx, writer) =
                    writer::spawn(Arc::clone(&shared), journal).map_err(|source| {
                        OpenError::Io {
                            path: path.clone(),
                            source,
                        }
                    })?;
                (Some(tx), Some(writer))
            }
        };
        Ok(Log {
            shared,
            path,
            requests: Mutex::new(requests),
            writer: Mutex::new(writer),
        })
    }

    /// The stream index entries of the records the `streams` table does not cover.
    fn pending_streams(db: &Db, path: &Path, head: Seq) -> Result<PendingStreams, OpenError> {
        let storage = storage_error(path);
        let read = db.begin_read().map_err(|e| storage(e.into()))?;
        let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
        let through = match meta
            .get(schema::STREAMS_THROUGH)
            .map_err(|e| storage(e.into()))?
        {
            Some(v) => {
                u64::from_le_bytes(v.value().try_into().map_err(|_| OpenError::Storage {
                    path: path.to_path_buf(),
                    message: "meta streams_through is not 8 bytes; run `cmdlog verify`".into(),
                })?)
            }
            None => head,
        };
        let mut pending = PendingStreams::default();
        if through >= head {
            return Ok(pending);
        }
        let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
        for entry in records
            .range(through + 1..=head)
            .map_err(|e| storage(e.into()))?
        {
            let (k, v) = entry.map_err(|e| storage(e.into()))?;
            let seq = k.value();
            let (_, stream, _) =
                schema::decode_record(v.value()).ok_or_else(|| OpenError::Storage {
                    path: path.to_path_buf(),
                    message: format!("record {seq} is malformed; run `cmdlog verify`"),
                })?;
            if let Some(key) = stream {
                pending.push(key, seq);
            }
        }
        Ok(pending)
    }

    /// The file this log lives in (`<backend>` for a custom backend).
    pub fn path(&self) -> &Path {
        &self.path
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

    /// Reads one record.
    pub fn get(&self, seq: Seq) -> Result<Option<Record>, ReadError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let Some(value) = records.get(seq).map_err(read_err)? else {
            return Ok(None);
        };
        decode(seq, value.value()).map(Some)
    }

    /// Calls `f` with every record in `from..=until`, in seq order, until it returns false.
    pub fn scan(
        &self,
        from: Seq,
        until: Seq,
        mut f: impl FnMut(Record) -> bool,
    ) -> Result<(), ReadError> {
        if from > until {
            return Ok(());
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        for entry in records.range(from..=until).map_err(read_err)? {
            let (k, v) = entry.map_err(read_err)?;
            if !f(decode(k.value(), v.value())?) {
                break;
            }
        }
        Ok(())
    }

    /// The records in `from..=until`.
    pub fn range(&self, from: Seq, until: Seq) -> Result<Vec<Record>, ReadError> {
        let mut out = Vec::new();
        self.scan(from, until, |r| {
            out.push(r);
            true
        })?;
        Ok(out)
    }

    /// A read transaction and what `f` takes from the pending stream entries, both
    /// under the pending lock: a batch of entries moving to the `streams` table is
    /// then seen in one place or in both, never in neither.
    fn read_with_pending<T>(
        &self,
        f: impl FnOnce(&PendingStreams) -> T,
    ) -> Result<(redb::ReadTransaction, T), ReadError> {
        let pending = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let read = self.shared.db.begin_read().map_err(read_err)?;
        Ok((read, f(&pending)))
    }

    /// The seqs of the records under stream key `key` after seq `after`, in order.
    pub fn stream_seqs(&self, key: &str, after: Seq) -> Result<Vec<Seq>, ReadError> {
        let (read, pending) = self.read_with_pending(|pending| {
            pending
                .seqs
                .get(key)
                .map(|s| {
                    s.iter()
                        .copied()
                        .filter(|&seq| seq > after)
                        .collect::<Vec<Seq>>()
                })
                .unwrap_or_default()
        })?;
        let streams = read.open_table(STREAMS).map_err(read_err)?;
        let mut seqs = Vec::new();
        let start = after.saturating_add(1);
        for entry in streams
            .range((key, start)..=(key, u64::MAX))
            .map_err(read_err)?
        {
            let (k, _) = entry.map_err(read_err)?;
            seqs.push(k.value().1);
        }
        let last = seqs.last().copied().unwrap_or(0);
        seqs.extend(pending.into_iter().filter(|&seq| seq > last));
        Ok(seqs)
    }

    /// The records under stream key `key` after seq `after`, in order.
    pub fn stream(&self, key: &str, after: Seq) -> Result<Vec<Record>, ReadError> {
        let seqs = self.stream_seqs(key, after)?;
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let value = records
                .get(seq)
                .map_err(read_err)?
                .ok_or(ReadError::Corrupt {
                    seq,
                    message: "indexed under its stream but missing from the log".into(),
                })?;
            out.push(decode(seq, value.value())?);
        }
        Ok(out)
    }

    /// The distinct stream keys, sorted.
    pub fn streams(&self) -> Result<Vec<String>, ReadError> {
        let (read, mut keys) =
            self.read_with_pending(|pending| pending.seqs.keys().cloned().collect::<Vec<_>>())?;
        let streams = read.open_table(STREAMS).map_err(read_err)?;
        let mut iter = streams.iter().map_err(read_err)?;
        // Jump from one key straight past its entries (no seq reaches u64::MAX).
        while let Some(entry) = iter.next() {
            let (k, _) = entry.map_err(read_err)?;
            let key = k.value().0.to_string();
            iter = streams
                .range((key.as_str(), u64::MAX)..)
                .map_err(read_err)?;
            keys.push(key);
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// Blocks until a record after `after` is committed or `timeout` passes;
    /// returns the head seq then.
    pub fn wait_for(&self, after: Seq, timeout: Duration) -> Seq {
        let deadline = Instant::now() + timeout;
        let mut head = self.shared.head.lock().unwrap_or_else(|p| p.into_inner());
        while head.seq <= after {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            head = self
                .shared
                .committed
                .wait_timeout(head, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        head.seq
    }

    /// A receiver of the head seq, updated after every commit (for async tails).
    pub fn subscribe(&self) -> watch::Receiver<Seq> {
        self.shared.watch.subscribe()
    }

    /// Recomputes the hash chain over the whole log. `Ok(Err(break))` names the
    /// first broken seq; `progress` is called with each seq checked.
    pub fn verify_chain(
        &self,
        mut progress: impl FnMut(Seq),
    ) -> Result<Result<Head, ChainBreak>, ReadError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let records = read.open_table(RECORDS).map_err(read_err)?;
        let mut prev = Head {
            seq: 0,
            hash: [0; 32],
        };
        for entry in records.iter().map_err(read_err)? {
            let (k, v) = entry.map_err(read_err)?;
            let seq = k.value();
            if seq != prev.seq + 1 {
                return Ok(Err(ChainBreak::Gap {
                    previous: prev.seq,
                    found: seq,
                }));
            }
            let Some((stored, _, bytes)) = schema::decode_record(v.value()) else {
                return Ok(Err(ChainBreak::Undecodable { seq }));
            };
            let expected = schema::chain(&prev.hash, seq, bytes);
            if stored != expected {
                return Ok(Err(ChainBreak::HashMismatch { seq }));
            }
            prev = Head {
                seq,
                hash: expected,
            };
            progress(seq);
        }
        Ok(Ok(prev))
    }

    /// Stores `bytes` under their BLAKE3 hash. Idempotent: storing the same bytes
    /// again writes nothing. Blocks until committed.
    pub fn put_blob(&self, bytes: Vec<u8>) -> Result<BlobHash, BlobError> {
        self.submit_blob(bytes)?.wait().map_err(BlobError::from)
    }

    /// Stores a blob; resolves once it is committed.
    pub async fn put_blob_async(&self, bytes: Vec<u8>) -> Result<BlobHash, BlobError> {
        self.submit_blob(bytes)?
            .await_receipt()
            .await
            .map_err(BlobError::from)
    }

    /// Stores many blobs; they share group commits instead of paying one commit each.
    /// Resolves once all are committed, with their hashes in order.
    pub async fn put_blobs_async(&self, blobs: Vec<Vec<u8>>) -> Result<Vec<BlobHash>, BlobError> {
        let tickets = blobs
            .into_iter()
            .map(|bytes| self.submit_blob(bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hashes = Vec::with_capacity(tickets.len());
        for ticket in tickets {
            hashes.push(ticket.await_receipt().await?);
        }
        Ok(hashes)
    }

    fn submit_blob(&self, bytes: Vec<u8>) -> Result<BlobTicket, BlobError> {
        let max = self.shared.config.blob_bytes_max;
        if bytes.len() as u64 > max {
            return Err(BlobError::TooLarge {
                size: bytes.len() as u64,
                max,
            });
        }
        let hash = BlobHash::of(&bytes);
        if self.has_blob(&hash)? {
            return Ok(BlobTicket::Done(hash));
        }
        let (reply, rx) = oneshot::channel();
        self.send(Request::PutBlob { hash, bytes, reply })?;
        Ok(BlobTicket::Pending(hash, rx))
    }

    /// Whether a blob is stored (its bytes are not checked).
    pub fn has_blob(&self, hash: &BlobHash) -> Result<bool, ReadError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let meta = read.open_table(BLOB_META).map_err(read_err)?;
        Ok(meta.get(&hash.0).map_err(read_err)?.is_some())
    }

    /// A blob's bytes, re-hashed: a mismatch is an error, never returned bytes.
    pub fn get_blob(&self, hash: &BlobHash) -> Result<Option<Vec<u8>>, BlobError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let Some(bytes) = schema::read_blob(&read, &hash.0).map_err(read_err)? else {
            return Ok(None);
        };
        let actual = BlobHash::of(&bytes);
        if actual != *hash {
            return Err(BlobError::Mismatch {
                hash: *hash,
                actual,
            });
        }
        Ok(Some(bytes))
    }

    /// Every stored blob with the unix-ms time it was added and its size.
    pub fn list_blobs(&self) -> Result<Vec<(BlobHash, u64, u64)>, ReadError> {
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let meta = read.open_table(BLOB_META).map_err(read_err)?;
        let mut out = Vec::new();
        for entry in meta.iter().map_err(read_err)? {
            let (k, v) = entry.map_err(read_err)?;
            let (added_ms, size) = v.value();
            out.push((BlobHash(*k.value()), added_ms, size));
        }
        Ok(out)
    }

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

enum BlobTicket {
    Done(BlobHash),
    Pending(BlobHash, oneshot::Receiver<Result<(), AppendError>>),
}

impl BlobTicket {
    fn wait(self) -> Result<BlobHash, AppendError> {
        match self {
            BlobTicket::Done(h) => Ok(h),
            BlobTicket::Pending(h, rx) => rx
                .blocking_recv()
                .unwrap_or(Err(AppendError::Closed))
                .map(|()| h),
        }
    }

    async fn await_receipt(self) -> Result<BlobHash, AppendError> {
        match self {
            BlobTicket::Done(h) => Ok(h),
            BlobTicket::Pending(h, rx) => rx.await.unwrap_or(Err(AppendError::Closed)).map(|()| h),
        }
    }
}

fn decode(seq: Seq, value: &[u8]) -> Result<Record, ReadError> {
    let (hash, stream, bytes) = schema::decode_record(value).ok_or(ReadError::Corrupt {
        seq,
        message: "the stored value is truncated or malformed".into(),
    })?;
    Ok(Record {
        seq,
        hash,
        stream: stream.map(str::to_string),
        bytes: bytes.to_vec(),
    })
}

/// `fsync`s the folder holding `path`, so a file created in it keeps its name.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Retries `open` while another process holds the file, up to `wait`.
fn waiting_for_lock<T>(
    path: &Path,
    wait: Duration,
    mut open: impl FnMut() -> Result<T, DatabaseError>,
) -> Result<T, OpenError> {
    let deadline = Instant::now() + wait;
    loop {
        match open() {
            Err(DatabaseError::DatabaseAlreadyOpen) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(open_error(path, e)),
            Ok(db) => return Ok(db),
        }
    }
}

fn storage_error(path: &Path) -> impl Fn(redb::Error) -> OpenError + '_ {
    move |e| OpenError::Storage {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn open_error(path: &Path, e: DatabaseError) -> OpenError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path: path.to_path_buf(),
        },
        DatabaseError::RepairAborted => OpenError::NeedsRecovery {
            path: path.to_path_buf(),
        },
        DatabaseError::Storage(redb::StorageError::Io(source)) => OpenError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => OpenError::Storage {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    }
}

/// Applies the write-ahead log's frames that redb does not hold yet (left by a
/// crash) in one durable commit, then starts its next generation.
fn recover(db: &Database, io: Box<dyn JournalIo>, wal: PathBuf) -> Result<Journal, OpenError> {
    let (mut journal, ops) = Journal::open(io, wal.clone()).map_err(|source| OpenError::Io {
        path: wal.clone(),
        source,
    })?;
    if ops.is_empty() && journal.frame_bytes() == 0 {
        return Ok(journal);
    }
    let fail = |message: String| OpenError::Storage {
        path: wal.clone(),
        message: format!(
            "{message}; the log file itself is intact: move {} aside to open it without the unapplied events",
            wal.display()
        ),
    };
    let storage = |e: redb::Error| fail(format!("applying the write-ahead log failed: {e}"));
    let txn = db.begin_write().map_err(|e| storage(e.into()))?;
    {
        let mut records = txn.open_table(RECORDS).map_err(|e| storage(e.into()))?;
        let mut blobs = txn.open_table(BLOBS).map_err(|e| storage(e.into()))?;
        let mut chunks = txn.open_table(BLOB_CHUNKS).map_err(|e| storage(e.into()))?;
        let mut meta = txn.open_table(BLOB_META).map_err(|e| storage(e.into()))?;
        let mut head = match records.last().map_err(|e| storage(e.into()))? {
            None => Head {
                seq: 0,
                hash: [0; 32],
            },
            Some((k, v)) => Head {
                seq: k.value(),
                hash: schema::decode_record(v.value())
                    .map(|(hash, _, _)| hash)
                    .ok_or_else(|| {
                        fail(format!(
                            "the last record, seq {}, is malformed; run `cmdlog verify`",
                            k.value()
                        ))
                    })?,
            },
        };
        for op in ops {
            match op {
                Op::Record { seq, value } if seq <= head.seq => {
                    let stored = records.get(seq).map_err(|e| storage(e.into()))?;
                    if stored.as_ref().map(|v| v.value()) != Some(value.as_slice()) {
                        return Err(fail(format!(
                            "its record at seq {seq} differs from the log's"
                        )));
                    }
                }
                Op::Record { seq, value } if seq == head.seq + 1 => {
                    // Its stream index entry is rebuilt from the record by the open.
                    let Some((hash, _, bytes)) = schema::decode_record(&value) else {
                        return Err(fail(format!("its record at seq {seq} is malformed")));
                    };
                    if hash != schema::chain(&head.hash, seq, bytes) {
                        return Err(fail(format!(
                            "its record at seq {seq} does not continue the hash chain"
                        )));
                    }
                    records
                        .insert(seq, value.as_slice())
                        .map_err(|e| storage(e.into()))?;
                    head = Head { seq, hash };
                }
                Op::Record { seq, .. } => {
                    return Err(fail(format!(
                        "it continues at seq {seq} but the log ends at seq {}",
                        head.seq
                    )));
                }
                Op::Blob {
                    hash,
                    added_ms,
                    bytes,
                } => {
                    if meta.get(&hash).map_err(|e| storage(e.into()))?.is_none() {
                        schema::insert_blob(&mut blobs, &mut chunks, &hash, &bytes)
                            .map_err(|e| storage(e.into()))?;
                        meta.insert(&hash, (added_ms, bytes.len() as u64))
                            .map_err(|e| storage(e.into()))?;
                    }
                }
                Op::RemoveBlobs(hashes) => {
                    for hash in hashes {
                        meta.remove(&hash).map_err(|e| storage(e.into()))?;
                        schema::remove_blob(&mut blobs, &mut chunks, &hash)
                            .map_err(|e| storage(e.into()))?;
                    }
                }
            }
        }
    }
    txn.commit().map_err(|e| storage(e.into()))?;
    journal.reset().map_err(|source| OpenError::Io {
        path: wal.clone(),
        source,
    })?;
    Ok(journal)
}

/// Records in `META` that the `streams` table is complete through the head, for a
/// log written before the stream index was deferred (which has no such entry):
/// from now on the writer defers entries, and a crash must not hide them.
fn mark_streams_through(db: &Database, path: &Path) -> Result<(), OpenError> {
    let storage = storage_error(path);
    let read = db.begin_read().map_err(|e| storage(e.into()))?;
    let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
    if meta
        .get(schema::STREAMS_THROUGH)
        .map_err(|e| storage(e.into()))?
        .is_some()
    {
        return Ok(());
    }
    let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
    let head = records
        .last()
        .map_err(|e| storage(e.into()))?
        .map_or(0, |(k, _)| k.value());
    drop((records, meta, read));
    let txn = db.begin_write().map_err(|e| storage(e.into()))?;
    txn.open_table(META)
        .map_err(|e| storage(e.into()))?
        .insert(schema::STREAMS_THROUGH, head.to_le_bytes().as_slice())
        .map_err(|e| storage(e.into()))?;
    txn.commit().map_err(|e| storage(e.into()))?;
    Ok(())
}
