//! Damage the tests do on purpose, below the store's API: a crash's leftovers,
//! a record or a blob changed in redb's file, a byte of the write-ahead log
//! flipped. The table layout is the store's (`docs/architecture.md`).

use std::path::{Path, PathBuf};

use cmdlog_store::journal_path;
use redb::ReadableTable;

/// The store's `records` table: seq → hash · stream key · record bytes.
pub const RECORDS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("records");
/// The store's `blobs` table: hash → bytes (blobs up to one chunk).
pub const BLOBS: redb::TableDefinition<&[u8; 32], &[u8]> = redb::TableDefinition::new("blobs");
/// The store's `blob_chunks` table: (hash, index) → a piece of a larger blob.
pub const BLOB_CHUNKS: redb::TableDefinition<(&[u8; 32], u32), &[u8]> =
    redb::TableDefinition::new("blob_chunks");
/// The store's `meta` table.
pub const META: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");

/// Both files of a log (the redb file and its write-ahead log) copied as they are
/// now into a new folder: what a crash at this moment leaves.
pub fn crash_copy(path: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("log.redb");
    std::fs::copy(path, &to).unwrap();
    std::fs::copy(journal_path(path), journal_path(&to)).unwrap();
    (dir, to)
}

/// Runs `f` on the stored value of record `seq` and writes back what it leaves,
/// in one redb transaction (the log must be closed).
pub fn edit_record(path: &Path, seq: u64, f: impl FnOnce(&mut Vec<u8>)) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        let mut value = table.get(seq).unwrap().unwrap().value().to_vec();
        f(&mut value);
        table.insert(seq, value.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

/// Puts `bytes` where the blob named `hash` is stored (the log must be closed).
pub fn replace_blob(path: &Path, hash: &[u8; 32], bytes: &[u8]) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(BLOBS).unwrap().insert(hash, bytes).unwrap();
    txn.commit().unwrap();
}
