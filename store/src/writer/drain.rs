//! Draining the overlay: a writable log's group commits are acknowledged once their
//! frame is durable and laid over redb in memory ([`crate::overlay`]); the writer
//! writes them to redb here, many at once, in one non-durable transaction.
//!
//! Taking redb off the acknowledgement's path is what lets group commit approach
//! the disk: with 64 appenders, each waited for its batch's frame, then for redb's
//! transaction, then for the others to come back; the transaction now runs once per
//! many batches, while the appenders are on their way back or the log is idle.

use redb::{Durability as RedbDurability, ReadableTable};

use crate::overlay::Overlay;
use crate::schema::{self, BLOB_CHUNKS, BLOB_META, BLOBS, RECORDS};
use crate::shared::Shared;

/// What the overlay holds since the last drain, counted by the writer (which alone
/// adds to it) to know when to drain.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Undrained {
    pub(super) batches: usize,
    pub(super) records: usize,
    pub(super) bytes: usize,
}

impl Undrained {
    pub(super) fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// Whether the overlay holds enough to drain now rather than when idle.
    pub(super) fn is_full(&self, config: &LogConfig) -> bool {
        self.records >= config.drain_records || self.bytes >= DRAIN_BYTES
    }
}

use crate::config::LogConfig;
use crate::limits::DRAIN_BYTES;

/// Writes everything the overlay holds to redb in one non-durable transaction,
/// then empties it. Readers keep the overlay's read lock while they begin a redb
/// read, and the overlay is emptied only after the commit: a reader finds each
/// record in the overlay, in redb, or in both (and then reads one).
pub(super) fn drain(shared: &Shared, undrained: &mut Undrained) -> Result<(), redb::Error> {
    if undrained.is_empty() {
        return Ok(());
    }
    {
        let overlay = shared.overlay.read().unwrap_or_else(|p| p.into_inner());
        if !overlay.is_empty() {
            write(shared, &overlay)?;
        }
    }
    *shared.overlay.write().unwrap_or_else(|p| p.into_inner()) = Overlay::default();
    *undrained = Undrained::default();
    Ok(())
}

fn write(shared: &Shared, overlay: &Overlay) -> Result<(), redb::Error> {
    let mut txn = shared.db.writable().begin_write()?;
    txn.set_durability(RedbDurability::None)
        .map_err(|e| redb::Error::from(redb::StorageError::Backend(Box::new(e))))?;
    {
        let mut records = txn.open_table(RECORDS)?;
        for (seq, value) in &overlay.records {
            records.insert(*seq, value.as_slice())?;
        }
        let mut blobs = txn.open_table(BLOBS)?;
        let mut chunks = txn.open_table(BLOB_CHUNKS)?;
        let mut meta = txn.open_table(BLOB_META)?;
        // A hash is in at most one of the two (see `Overlay::put_blob`).
        for hash in &overlay.removed {
            meta.remove(hash)?;
            schema::remove_blob(&mut blobs, &mut chunks, hash)?;
        }
        for (hash, blob) in &overlay.blobs {
            if meta.get(hash)?.is_none() {
                schema::insert_blob(&mut blobs, &mut chunks, hash, &blob.bytes)?;
                meta.insert(hash, (blob.added_ms, blob.bytes.len() as u64))?;
            }
        }
    }
    if let Some((seq, bytes)) = &overlay.snapshot {
        schema::replace_snapshot(&txn, *seq, bytes)?;
    }
    txn.commit()?;
    Ok(())
}
