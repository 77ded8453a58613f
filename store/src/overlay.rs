//! What a log opened without writing redb holds above redb's file: the frames of
//! the write-ahead log that no checkpoint has applied yet.
//!
//! A short-lived process (`cmdlog hook`, `cmdlog run`) and a read-only open do not
//! open redb for writing: that alone costs four syncs (redb marks its header at open
//! and clears it at close). They read redb's file as of the last checkpoint and lay
//! the write-ahead log's frames over it here; a short-lived process appends frames
//! and adds them here too. The next writable open applies every frame to redb (the
//! crash recovery it always runs), so nothing here outlives the write-ahead log.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::journal::{FoundFrame, Op};
use crate::record::{Head, Seq};
use crate::schema;

/// A blob a frame holds: when it was added and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct OverlayBlob {
    pub(crate) added_ms: u64,
    pub(crate) bytes: Arc<Vec<u8>>,
}

/// The records and blob changes of the frames redb's file does not hold.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    /// Seq -> the `records` table value, for seqs after redb's last record.
    pub(crate) records: BTreeMap<Seq, Vec<u8>>,
    /// Blobs added by frames.
    pub(crate) blobs: HashMap<[u8; 32], OverlayBlob>,
    /// Blobs removed by frames (redb's file may still hold them).
    pub(crate) removed: HashSet<[u8; 32]>,
    /// The latest snapshot a frame holds, and its seq.
    pub(crate) snapshot: Option<(Seq, Vec<u8>)>,
}

/// Why frames cannot be laid over redb's file as they are.
#[derive(Debug)]
pub(crate) struct Discontinuous(pub(crate) String);

impl Overlay {
    /// Whether a blob `redb_has` (in redb's file) is there once the frames are
    /// applied.
    pub(crate) fn has_blob(&self, hash: &[u8; 32], redb_has: impl FnOnce() -> bool) -> bool {
        self.blobs.contains_key(hash) || (!self.removed.contains(hash) && redb_has())
    }

    /// Adds a blob (a no-op when it is there already, as in redb).
    pub(crate) fn put_blob(&mut self, hash: [u8; 32], added_ms: u64, bytes: Arc<Vec<u8>>) {
        self.removed.remove(&hash);
        self.blobs
            .entry(hash)
            .or_insert(OverlayBlob { added_ms, bytes });
    }

    /// Removes a blob; whether it was there (`redb_has`: in redb's file).
    pub(crate) fn remove_blob(&mut self, hash: [u8; 32], redb_has: impl FnOnce() -> bool) -> bool {
        let had = self.has_blob(&hash, redb_has);
        self.blobs.remove(&hash);
        self.removed.insert(hash);
        had
    }

    /// Lays `frames` over the overlay, after `head`: every record must continue the
    /// chain. Returns the seqs of the records added, in order, and moves `head`.
    /// Nothing is changed when they do not continue it.
    pub(crate) fn apply_frames(
        &mut self,
        head: &mut Head,
        frames: Vec<FoundFrame>,
    ) -> Result<Vec<Seq>, Discontinuous> {
        // Check everything first: the frames are applied whole or not at all.
        let mut next = *head;
        for op in frames.iter().flat_map(|f| &f.ops) {
            if let Op::Record { seq, value } = op {
                next = continues(&next, *seq, value)?;
            }
        }
        let mut added = Vec::new();
        for op in frames.into_iter().flat_map(|f| f.ops) {
            match op {
                Op::Record { seq, value } => {
                    self.records.insert(seq, value);
                    added.push(seq);
                }
                Op::Blob {
                    hash,
                    added_ms,
                    bytes,
                } => self.put_blob(hash, added_ms, Arc::new(bytes)),
                Op::RemoveBlobs(hashes) => {
                    for hash in hashes {
                        self.remove_blob(hash, || false);
                    }
                }
                Op::Snapshot { seq, bytes } => self.snapshot = Some((seq, bytes)),
            }
        }
        *head = next;
        Ok(added)
    }
}

/// The head after the record `value` at `seq`, if it continues `head`'s chain.
fn continues(head: &Head, seq: Seq, value: &[u8]) -> Result<Head, Discontinuous> {
    if seq != head.seq + 1 {
        return Err(Discontinuous(format!(
            "a frame continues at seq {seq} but the log ends at seq {}",
            head.seq
        )));
    }
    match schema::decode_record(value) {
        Some((hash, _, bytes)) if hash == schema::chain(&head.hash, seq, bytes) => {
            Ok(Head { seq, hash })
        }
        Some(_) => Err(Discontinuous(format!(
            "the frame's record at seq {seq} does not continue the hash chain"
        ))),
        None => Err(Discontinuous(format!(
            "the frame's record at seq {seq} is malformed"
        ))),
    }
}
