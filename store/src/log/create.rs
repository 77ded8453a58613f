//! Making a new log where several processes may try at once (the first hooks of
//! a project start together). The log is made whole under a fresh temporary
//! name, then published at its path by a hard link, which fails if another
//! process published first: the path only ever names an initialized log, and no
//! process ever removes a log file that another may have opened.
//!
//! Publishing happens under the appenders' lock of the write-ahead log: a
//! write-ahead log found beside a log that does not exist yet holds frames of a
//! deleted log, and is emptied before the new log appears; an appender cannot
//! be appending to it then, since appenders open a log that exists.

use std::path::Path;

use cmdlog_common::private_fs;

use crate::error::OpenError;
use crate::journal::{JournalIo, journal_path};

use super::{Log, LogConfig};

/// Makes a new, initialized log at `path` unless one is there already (made
/// by another process meanwhile). A failure leaves nothing behind but the
/// write-ahead log's empty file.
pub(super) fn create(path: &Path, config: &LogConfig) -> Result<(), OpenError> {
    let io = |source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (temp, file) = private_fs::create_fresh_beside(path).map_err(io)?;
    drop(file);
    let made = make_and_publish(path, &temp, config);
    let _ = std::fs::remove_file(&temp);
    made
}

fn make_and_publish(path: &Path, temp: &Path, config: &LogConfig) -> Result<(), OpenError> {
    let io = |source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    {
        // No other process knows this name: no lock to wait for.
        let mut builder = redb::Builder::new();
        builder.set_cache_size(config.cache_bytes);
        let db = builder
            .create(temp)
            .map_err(|e| super::storage_error(path)(e.into()))?;
        Log::initialize(&db, path)?;
    }
    let wal = journal_path(path);
    let wal_io = |source| OpenError::Io {
        path: wal.clone(),
        source,
    };
    let journal = private_fs::open_or_create_private(&wal).map_err(wal_io)?;
    JournalIo::lock(&journal, true).map_err(wal_io)?;
    let published = (|| {
        if path.exists() {
            return Ok(());
        }
        journal.set_len(0).map_err(wal_io)?;
        journal.sync_all().map_err(wal_io)?;
        match std::fs::hard_link(temp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            // A file system without hard links (FAT, some network mounts): the
            // appenders' lock held here already keeps other creators out.
            Err(_) => std::fs::rename(temp, path).map_err(io)?,
        }
        // The new names durable before anything is appended under them.
        super::sync_parent(path).map_err(io)
    })();
    let _ = JournalIo::unlock(&journal);
    published
}
