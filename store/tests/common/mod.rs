//! What the store's integration tests share.

use std::path::{Path, PathBuf};

use cmdlog_store::journal_path;

/// Both files of a log (the redb file and its write-ahead log) copied as they are
/// now into a new folder: what a crash at this moment leaves.
pub(crate) fn crash_copy(path: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("log.redb");
    std::fs::copy(path, &to).unwrap();
    std::fs::copy(journal_path(path), journal_path(&to)).unwrap();
    (dir, to)
}
