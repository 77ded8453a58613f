//! The storage-backend seam: a [`FaultyBackend`] wraps a real backend and fails
//! the k-th I/O operation, so tests can walk every failure point of an operation.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use redb::{BackendError, StorageBackend};

use crate::journal::JournalIo;

/// Which error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `EIO`: the disk failed.
    Io,
    /// `ENOSPC`: the disk is full.
    NoSpace,
}

/// Shared control of a [`FaultyBackend`]: counts operations and arms a failure.
///
/// Operations counted: `read`, `write`, `set_len`, `sync_data`. Op numbers start at 1.
#[derive(Debug)]
pub struct FaultPlan {
    ops: AtomicU64,
    fail_at: AtomicU64,
    sticky: AtomicBool,
    no_space: AtomicBool,
    failed: AtomicBool,
    count_reads: AtomicBool,
}

impl FaultPlan {
    /// A plan that never fails and counts every operation.
    pub fn new() -> Arc<Self> {
        Arc::new(FaultPlan {
            ops: AtomicU64::new(0),
            fail_at: AtomicU64::new(u64::MAX),
            sticky: AtomicBool::new(false),
            no_space: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            count_reads: AtomicBool::new(true),
        })
    }

    /// Operations seen so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::SeqCst)
    }

    /// Fails the operation `k` operations from now (1 = the next one). With `sticky`,
    /// every operation after it fails too, like a disk that went away.
    pub fn fail_after(&self, k: u64, kind: FaultKind, sticky: bool) {
        assert!(k >= 1, "op numbers start at 1");
        self.no_space
            .store(kind == FaultKind::NoSpace, Ordering::SeqCst);
        self.sticky.store(sticky, Ordering::SeqCst);
        self.failed.store(false, Ordering::SeqCst);
        self.fail_at.store(self.ops() + k, Ordering::SeqCst);
    }

    /// Disarms the plan.
    pub fn disarm(&self) {
        self.fail_at.store(u64::MAX, Ordering::SeqCst);
        self.sticky.store(false, Ordering::SeqCst);
    }

    /// Whether an armed fault has fired.
    pub fn fired(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Whether reads are counted (and so can fail). Default true.
    pub fn count_reads(&self, on: bool) {
        self.count_reads.store(on, Ordering::SeqCst);
    }

    fn check(&self, is_read: bool) -> std::io::Result<()> {
        if is_read && !self.count_reads.load(Ordering::SeqCst) {
            return Ok(());
        }
        let n = self.ops.fetch_add(1, Ordering::SeqCst) + 1;
        let at = self.fail_at.load(Ordering::SeqCst);
        let hit = n == at || (n > at && self.sticky.load(Ordering::SeqCst));
        if !hit {
            return Ok(());
        }
        self.failed.store(true, Ordering::SeqCst);
        Err(if self.no_space.load(Ordering::SeqCst) {
            std::io::Error::from_raw_os_error(28) // ENOSPC
        } else {
            std::io::Error::other(format!("injected I/O fault at op {n}"))
        })
    }
}

/// A storage backend that forwards to another and fails where its [`FaultPlan`] says.
#[derive(Debug)]
pub struct FaultyBackend<B> {
    inner: B,
    plan: Arc<FaultPlan>,
}

impl<B: StorageBackend> FaultyBackend<B> {
    /// Wraps `inner`.
    pub fn new(inner: B, plan: Arc<FaultPlan>) -> Self {
        FaultyBackend { inner, plan }
    }
}

impl FaultyBackend<redb::backends::FileBackend> {
    /// Opens (or creates) the file at `path` with redb's file backend and wraps it.
    pub fn file(path: &Path, plan: &Arc<FaultPlan>) -> std::io::Result<Self> {
        let file = open_read_write(path)?;
        let backend = redb::backends::FileBackend::new(file).map_err(std::io::Error::other)?;
        Ok(FaultyBackend::new(backend, Arc::clone(plan)))
    }
}

impl<B: StorageBackend> StorageBackend for FaultyBackend<B> {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.plan.check(true)?;
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.plan.check(false)?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.plan.check(false)?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.plan.check(false)?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

/// A file for the write-ahead log that fails where its [`FaultPlan`] says (the plan
/// shared with the log's [`FaultyBackend`], so one count covers both files).
#[derive(Debug)]
pub struct FaultyFile {
    file: std::fs::File,
    plan: Arc<FaultPlan>,
}

impl FaultyFile {
    /// Opens (or creates) the file at `path` and wraps it.
    pub fn open(path: &Path, plan: &Arc<FaultPlan>) -> std::io::Result<Self> {
        let file = open_read_write(path)?;
        Ok(FaultyFile {
            file,
            plan: Arc::clone(plan),
        })
    }
}

impl JournalIo for FaultyFile {
    fn file_len(&self) -> std::io::Result<u64> {
        JournalIo::file_len(&self.file)
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.plan.check(true)?;
        JournalIo::read_at(&self.file, offset, out)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.plan.check(false)?;
        JournalIo::write_at(&self.file, offset, data)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.plan.check(false)?;
        JournalIo::set_len(&self.file, len)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        self.plan.check(false)?;
        JournalIo::sync_data(&self.file)
    }

    fn lock(&self, exclusive: bool) -> std::io::Result<()> {
        JournalIo::lock(&self.file, exclusive)
    }

    fn unlock(&self) -> std::io::Result<()> {
        JournalIo::unlock(&self.file)
    }
}

/// Opens the log at `path` with both of its files (the redb file and the
/// write-ahead log beside it) failing where `plan` says.
pub fn open_faulty(
    path: &Path,
    plan: &Arc<FaultPlan>,
    config: crate::LogConfig,
) -> Result<crate::Log, crate::OpenError> {
    let io = |source| crate::OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    let backend = FaultyBackend::file(path, plan).map_err(io)?;
    let journal = FaultyFile::open(&crate::journal_path(path), plan).map_err(io)?;
    crate::Log::open_with_backend(backend, journal, config)
}

/// Opens the existing log at `path` short-lived ([`crate::Log::open_short_lived`])
/// with its write-ahead log failing where `plan` says (redb's file is only read).
/// `None` where the open would be writable instead.
pub fn open_faulty_short_lived(
    path: &Path,
    plan: &Arc<FaultPlan>,
    config: crate::LogConfig,
) -> Result<Option<crate::Log>, crate::OpenError> {
    crate::Log::try_short_lived(
        path,
        &config,
        &|file| {
            Box::new(FaultyFile {
                file,
                plan: Arc::clone(plan),
            })
        },
        true,
    )
    .map(Result::ok)
}

/// Opens (or creates) a file for reading and writing, keeping its contents.
fn open_read_write(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}
