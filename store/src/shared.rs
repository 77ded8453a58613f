//! What the log's handle and its writer thread share: the database, the head,
//! the commit hook, the stream index entries not yet written, the poison flag;
//! and the check of an append against the limits, made on both sides.

use std::sync::{Condvar, Mutex, RwLock};

use redb::{Database, ReadableDatabase};
use tokio::sync::watch;

use crate::config::LogConfig;
use crate::error::AppendError;
use crate::limits::STREAM_KEY_BYTES_MAX;
use crate::overlay::Overlay;
use crate::record::{CommitHook, Head, NewRecord, Seq};

/// The redb handle: writable (with a writer thread), read-only (a snapshot reader
/// that never blocks writers for long), or read-only under a short-lived appender
/// whose writer thread appends to the write-ahead log alone (see [`crate::overlay`]).
pub(crate) enum Db {
    Writable(Database),
    ReadOnly(redb::ReadOnlyDatabase),
    ShortLived(redb::ReadOnlyDatabase),
    /// Nothing of its own: another process holds the log and answers its
    /// reads ([`crate::holder`]).
    Remote,
}

impl Db {
    pub(crate) fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) | Db::ShortLived(db) => db.begin_read(),
            Db::Remote => Err(redb::TransactionError::Storage(redb::StorageError::Io(
                std::io::Error::other(
                    "this read is not answered through the process that holds the log yet; stop it and run the command again",
                ),
            ))),
        }
    }

    pub(crate) fn writable(&self) -> &Database {
        match self {
            Db::Writable(db) => db,
            Db::ReadOnly(_) | Db::ShortLived(_) | Db::Remote => {
                unreachable!("only a writable log writes redb's file")
            }
        }
    }

    /// Whether appends go to the write-ahead log alone.
    pub(crate) fn short_lived(&self) -> bool {
        matches!(self, Db::ShortLived(_))
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
    /// The write-ahead log's frames redb's file lacks, for a log that does not
    /// write redb (empty otherwise).
    pub(crate) overlay: RwLock<Overlay>,
    /// The right edge of the Merkle tree over redb's records, for a writable log
    /// (whose writer extends the `tree` table with every batch); `None` otherwise.
    pub(crate) frontier: Mutex<Option<cmdlog_tlog::Frontier>>,
}

impl Shared {
    /// What a log's handle and writer share, at `head`, nothing poisoned, no
    /// commit hook.
    pub(crate) fn new(
        db: Db,
        config: LogConfig,
        head: Head,
        pending: PendingStreams,
        wal_open: bool,
        overlay: Overlay,
        frontier: Option<cmdlog_tlog::Frontier>,
    ) -> Shared {
        let (watch, _) = watch::channel(head.seq);
        Shared {
            db,
            config,
            head: Mutex::new(head),
            committed: Condvar::new(),
            watch,
            poisoned: Mutex::new(None),
            hook: RwLock::new(None),
            pending: Mutex::new(pending),
            wal_open: std::sync::atomic::AtomicBool::new(wal_open),
            overlay: RwLock::new(overlay),
            frontier: Mutex::new(frontier),
        }
    }
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
