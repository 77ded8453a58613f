//! Opens that never write redb's file: read-only, and short-lived appenders. Both
//! lay the write-ahead log's frames that redb's file lacks over it (see
//! [`crate::overlay`]).

use std::path::{Path, PathBuf};

use crate::error::OpenError;
use crate::journal::{self, Header, Journal, JournalIo, Scan, journal_path};
use crate::limits::SHORT_LIVED_FRAME_BYTES;
use crate::overlay::Overlay;
use crate::record::Durability;
use crate::schema::{self, META};

use super::open::waiting_for_lock;
use super::presence::presence_path;
use super::{Db, Log, LogConfig, recovery, storage_error};

impl Log {
    /// Opens an existing log for reading only, as of now: redb's file and the
    /// write-ahead log's frames it lacks — or, while a long-lived cmdlog
    /// process holds it, that process's answers ([`Log::open_through_holder`]).
    /// Writers are excluded only while it is open, so open, read and drop it
    /// promptly. A file a crashed writer left needing
    /// recovery cannot be opened read-only ([`OpenError::NeedsRecovery`]): open it
    /// writable once.
    pub fn open_read_only(path: impl AsRef<Path>, config: LogConfig) -> Result<Log, OpenError> {
        let path = path.as_ref().to_path_buf();
        super::open::check_own_folder(&path)?;
        super::open::check_own_file(&path)?;
        super::open::check_own_file(&journal_path(&path))?;
        // A holder answers at once; redb's lock would be waited for first.
        if let Ok(log) = Log::open_through_holder(&path, config.clone()) {
            return Ok(log);
        }
        let db = match open_redb_read_only(&path, &config) {
            // Held by a long-lived cmdlog process: read through it.
            Err(OpenError::Locked { .. }) => return Log::open_through_holder(&path, config),
            opened => Db::ReadOnly(opened?),
        };
        if !Self::initialized(&db, &path)? {
            return Err(OpenError::Format {
                path,
                found: String::new(),
            });
        }
        let wal = journal_path(&path);
        let scan = match cmdlog_common::private_fs::open_existing_read(&wal) {
            Ok(file) => Some(scan_locked(&file, &wal)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(OpenError::Io { path: wal, source }),
        };
        let Some(overlay) = lay_frames(&db, &path, scan)?.map(|(overlay, _)| overlay) else {
            return Err(OpenError::NeedsRecovery { path });
        };
        Self::start(db, path, config, None, overlay)
    }

    /// Opens the log for a short-lived process (`cmdlog hook`, `cmdlog run`): each
    /// group commit is one frame appended to the write-ahead log and one sync, and
    /// opening and closing write nothing. redb's file is read, never written: the
    /// next writable open applies the frames (the recovery it always runs). Other
    /// short-lived appenders and readers may have the log open at once; a writable
    /// open waits for them.
    ///
    /// Opens writable instead ([`Log::open`]) where that is needed: a new log, one a
    /// crash left needing recovery, a write-ahead log that is missing, damaged or
    /// ends in a torn frame, one holding 64 KiB of frames or a quarter of
    /// [`LogConfig::checkpoint_bytes`] (every short-lived open reads them all; the
    /// writable open checkpoints them), and buffered durability.
    pub fn open_short_lived(path: impl AsRef<Path>, config: LogConfig) -> Result<Log, OpenError> {
        let path = path.as_ref();
        let wrap = |file| -> Box<dyn JournalIo> { Box::new(file) };
        match Self::try_short_lived(path, &config, &wrap, true)? {
            Ok(log) => Ok(log),
            Err(Declined::Checkpoint) => {
                // A writable open that waits for every short-lived process to let go
                // would starve under a steady stream of them (each holds redb's
                // shared lock): try once, and if the log is busy, append short-lived
                // over the frames — the next open that finds it free checkpoints.
                let once = LogConfig {
                    lock_wait: std::time::Duration::ZERO,
                    ..config.clone()
                };
                match Self::open(path, once) {
                    Err(OpenError::Locked { .. }) => {
                        match Self::try_short_lived(path, &config, &wrap, false)? {
                            Ok(log) => Ok(log),
                            Err(_) => Self::open(path, config),
                        }
                    }
                    other => other,
                }
            }
            Err(Declined::Writable) => Self::open(path, config),
        }
    }

    /// [`Log::open_short_lived`] with its write-ahead log's file wrapped by `wrap`
    /// (tests inject faults with it); why not, where it would open writable.
    pub(crate) fn try_short_lived(
        path: &Path,
        config: &LogConfig,
        wrap: &dyn Fn(std::fs::File) -> Box<dyn JournalIo>,
        bounded: bool,
    ) -> Result<Result<Log, Declined>, OpenError> {
        if config.durability != Durability::Durable || !path.exists() {
            return Ok(Err(Declined::Writable));
        }
        // The writable open refuses them by name.
        if super::open::check_own_folder(path).is_err()
            || super::open::check_own_file(path).is_err()
            || super::open::check_own_file(&journal_path(path)).is_err()
        {
            return Ok(Err(Declined::Writable));
        }
        let db = match open_redb_read_only(path, config) {
            Ok(db) => Db::ShortLived(db),
            Err(e @ OpenError::Locked { .. }) => return Err(e),
            // The writable open recovers it, or names what is wrong.
            Err(_) => return Ok(Err(Declined::Writable)),
        };
        if !matches!(Self::initialized(&db, path), Ok(true)) || !streams_through_marked(&db)? {
            return Ok(Err(Declined::Writable));
        }
        let wal = journal_path(path);
        let Ok(file) = cmdlog_common::private_fs::open_existing_rw(&wal) else {
            return Ok(Err(Declined::Writable));
        };
        let io = |source| OpenError::Io {
            path: wal.clone(),
            source,
        };
        let presence_path = presence_path(path);
        let Ok(presence) = cmdlog_common::private_fs::open_or_create_private(&presence_path) else {
            // A link planted there, or a folder that cannot be written: the writable
            // open needs no presence lock.
            return Ok(Err(Declined::Writable));
        };
        // Under the appenders' lock, so that no one appends meanwhile: whether any
        // other short-lived process has the log open (each holds the presence lock
        // shared for its lifetime), and the frames as they are at that moment.
        JournalIo::lock(&file, true).map_err(io)?;
        let alone = presence.try_lock().is_ok();
        let scanned = journal::scan(&file).map_err(io).map(|scan| {
            let frame_bytes = scan.frame_bytes();
            if !matches!(scan.header, Header::Valid(_)) || scan.unreadable.is_some() {
                return Err(Declined::Writable);
            }
            if bounded && frame_bytes >= frames_max(config) {
                return Err(Declined::Checkpoint);
            }
            let resume = scan.position();
            match lay_frames(&db, path, Some(scan)) {
                Ok(Some((overlay, 0))) => Ok((overlay, resume)),
                _ => Err(Declined::Writable),
            }
        });
        // Held shared from here until the log is dropped (taken while the
        // appenders' lock is held, so no one's check sees it missing meanwhile).
        let present = presence.lock_shared();
        let _ = JournalIo::unlock(&file);
        let (overlay, resume) = match scanned? {
            Ok(laid) => laid,
            Err(declined) => return Ok(Err(declined)),
        };
        present.map_err(|source| OpenError::Io {
            path: presence_path.clone(),
            source,
        })?;
        let mut journal = Journal::resume(wrap(file), wal, &resume);
        journal.cache_frames_unsynced = true;
        if let Ok(copy) = presence.try_clone() {
            journal.mirror_marks_to(Box::new(copy));
        }
        let mut log = Self::start(
            db,
            path.to_path_buf(),
            config.clone(),
            Some(journal),
            overlay,
        )?;
        log.alone_through = alone.then(|| log.head().seq);
        log.presence = Some(presence);
        Ok(Ok(log))
    }
}

/// Why a short-lived open was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Only a writable open can take the log as it is (new, needing recovery, a
    /// write-ahead log missing, damaged or torn, …).
    Writable,
    /// The write-ahead log holds as many frames as a short-lived open takes: a
    /// writable open would checkpoint them.
    Checkpoint,
}

/// The frames a short-lived open takes before it wants a checkpoint.
fn frames_max(config: &LogConfig) -> u64 {
    (config.checkpoint_bytes / 4).min(SHORT_LIVED_FRAME_BYTES)
}

fn open_redb_read_only(
    path: &Path,
    config: &LogConfig,
) -> Result<redb::ReadOnlyDatabase, OpenError> {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(config.cache_bytes);
    waiting_for_lock(path, config.lock_wait, || builder.open_read_only(path))
}

/// Reads the write-ahead log under the appenders' shared lock: no frame is half
/// written while it reads.
fn scan_locked(file: &std::fs::File, wal: &Path) -> Result<Scan, OpenError> {
    let io = |source| OpenError::Io {
        path: wal.to_path_buf(),
        source,
    };
    JournalIo::lock(file, false).map_err(io)?;
    let scan = journal::scan(file);
    let _ = JournalIo::unlock(file);
    scan.map_err(io)
}

/// The overlay of the frames redb's file lacks and how many frames it already
/// holds; `None` when the frames do not continue redb's file (a writable open then
/// recovers them, or refuses by name).
fn lay_frames(
    db: &Db,
    path: &Path,
    scan: Option<Scan>,
) -> Result<Option<(Overlay, usize)>, OpenError> {
    let read = db.begin_read().map_err(|e| storage_error(path)(e.into()))?;
    let copy = super::presence::mark_copy(path).map(|(mark, _)| mark);
    let over = recovery::frames_over(&read, path, scan, copy)?;
    let mut head = over.redb_head;
    let mut overlay = Overlay::default();
    // The stream index entries are rebuilt from the records when the log starts.
    match overlay.apply_frames(&mut head, over.frames) {
        Ok(_) => Ok(Some((overlay, over.covered))),
        Err(_) => Ok(None),
    }
}

/// Whether `META` says how far the `streams` table reaches (a log from before the
/// stream index was deferred gets the mark at its next writable open).
fn streams_through_marked(db: &Db) -> Result<bool, OpenError> {
    let path = PathBuf::from("<log>");
    let storage = storage_error(&path);
    let read = db.begin_read().map_err(|e| storage(e.into()))?;
    let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
    Ok(meta
        .get(schema::STREAMS_THROUGH)
        .map_err(|e| storage(e.into()))?
        .is_some())
}
