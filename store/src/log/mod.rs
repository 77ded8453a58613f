//! Opening a log, reading it, and following it.

mod blobs;
mod create;
mod holding;
mod open;
mod overlaid;
mod presence;
mod read;
mod recovery;
mod remote;
mod tree;

pub use holding::{Holding, serve_readers};
pub use open::check_own_folder;
pub use presence::presence_path;
pub use recovery::WalDiscard;
pub use tree::TreeView;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use redb::ReadableTable;
use tokio::sync::oneshot;

use crate::error::{AppendError, ReadError, read_err};
use crate::record::{BlobHash, NewRecord, Receipt, Seq};
use crate::schema::SNAPSHOTS;
use crate::writer::Request;

pub use crate::config::LogConfig;
pub use crate::record::{CommitHook, Head};
pub(crate) use crate::shared::{Db, PendingStreams, Shared, check_records};

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

/// An open log. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Log {
    shared: Arc<Shared>,
    path: PathBuf,
    /// What this open dropped from a damaged write-ahead log.
    wal_discard: Option<WalDiscard>,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// A short-lived log's writer, which commits on the caller's thread.
    inline: Option<Mutex<crate::writer::Inline>>,
    /// The head when this open knew no other process could be appending (see
    /// [`Log::alone_through`]).
    alone_through: Option<Seq>,
    /// A short-lived log's presence lock, held shared while it is open.
    presence: Option<std::fs::File>,
    /// The process that holds the log, answering this open's reads.
    remote: Option<crate::holder::Remote>,
    /// The log itself, opened read-only once the holder stopped mid-read.
    after_holder: std::sync::OnceLock<Box<Log>>,
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

    /// The write-ahead log's frames laid over redb's file (empty for a writable log).
    fn overlay(&self) -> std::sync::RwLockReadGuard<'_, crate::overlay::Overlay> {
        self.shared
            .overlay
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The head as of a moment this open held the log alone among appenders: a
    /// writable open always (at open), a short-lived one when no other short-lived
    /// process had it open then. Runs open at or below it were left by processes
    /// that are gone; later ones may belong to a process appending now. `None` for
    /// a read-only log, or a short-lived one that was not alone.
    pub fn alone_through(&self) -> Option<Seq> {
        self.alone_through
    }

    /// Makes what other short-lived processes appended since this handle's last
    /// append visible to its reads (a no-op for other logs, whose reads see every
    /// append already).
    pub fn catch_up(&self) -> Result<(), AppendError> {
        if let Some(remote) = self.remote.as_ref().filter(|r| r.writable) {
            return self.catch_up_through_holder(remote);
        }
        match &self.inline {
            Some(inline) => inline
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .catch_up(&self.shared),
            None => Ok(()),
        }
    }

    /// Whether this log was opened short-lived ([`Log::open_short_lived`]): other
    /// processes may be appending to it at the same time.
    pub fn is_short_lived(&self) -> bool {
        self.shared.db.short_lived()
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
        if let Some(remote) = &self.remote {
            return self.commit_through_holder(remote, request);
        }
        if matches!(self.shared.db, Db::ReadOnly(_) | Db::Remote) {
            return Err(AppendError::ReadOnly);
        }
        if let Some(inline) = &self.inline {
            inline
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .commit(&self.shared, request);
            return Ok(());
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
    /// quick: it runs inside the group commit. Through a holder it may run more
    /// than once, each time for the seq the append would then get: it must build
    /// the same records each time but for the seqs.
    pub fn submit_built(
        &self,
        build: impl FnMut(Seq) -> Vec<NewRecord> + Send + 'static,
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
        if let Some(answer) =
            self.read_through(|r| r.latest_snapshot(), |log| log.latest_snapshot())
        {
            return answer;
        }
        if let Some(snapshot) = &self.overlay().snapshot {
            return Ok(Some(snapshot.clone()));
        }
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

/// A redb failure while opening `path`.
pub(crate) fn storage_error(path: &Path) -> impl Fn(redb::Error) -> crate::error::OpenError + '_ {
    move |e| crate::error::OpenError::Storage {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// `fsync`s the folder holding `path`, so a file created in it keeps its name.
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()
}
