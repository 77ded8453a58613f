//! The presence file (`log.redb-lock`): short-lived processes hold it locked
//! shared while they have the log open, and each short-lived append leaves in it
//! a copy of the write-ahead log's latest acknowledgement mark
//! (`journal/mark.rs`), which names acknowledged seqs should the write-ahead log
//! be deleted or cut.

use std::path::{Path, PathBuf};

use crate::journal::{self, JournalIo};

/// The file short-lived appenders hold locked shared while they have the log open
/// (`log.redb` → `log.redb-lock`). It also holds a copy of the write-ahead log's
/// latest acknowledgement mark, written by each short-lived append (see
/// `journal/mark.rs`).
pub fn presence_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push("-lock");
    log.with_file_name(name)
}

/// The copy of the latest acknowledgement mark in the presence file of the log at
/// `log`, with the file's name. The file is read only when it is this user's own
/// regular file (no link).
pub(crate) fn mark_copy(log: &Path) -> Option<(journal::Mark, PathBuf)> {
    let presence = presence_path(log);
    let file = cmdlog_common::private_fs::open_existing_read(&presence).ok()?;
    Some((journal::read_copy(&file)?, presence))
}

/// Forgets the copy of the acknowledgement mark: the log it spoke of was deleted,
/// or what it named was dropped with the user's consent (its seqs are reused).
pub(crate) fn clear_mark_copy(log: &Path) -> std::io::Result<()> {
    let presence = presence_path(log);
    match cmdlog_common::private_fs::open_existing_rw(&presence) {
        Ok(file) => {
            JournalIo::write_at(&file, 0, &[0u8; journal::MARK_BYTES])?;
            file.sync_data()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
