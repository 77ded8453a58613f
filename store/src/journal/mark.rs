//! Acknowledgement marks: the write-ahead log's own record of how far its frames
//! were acknowledged, so that damage to an acknowledged frame is never read as a
//! torn write (design R14).
//!
//! A sync that returns makes every frame before `end` durable; only then is a mark
//! saying so written (not synced itself: the next frame's sync, or the kernel's
//! write-back, makes it durable). A mark therefore never claims a frame that was
//! not durable, and a crash mid-frame leaves the marks short of the torn frame. So
//! when the frames a scan can read end before the mark's `end`, the bytes between
//! were acknowledged and are damaged (zeros, flipped, cut): the open names them.
//!
//! This follows TigerBeetle's journal, which writes every prepare's header again
//! to a redundant headers ring only after the prepare itself is durable, and tells
//! a torn prepare (the redundant header is older) from a corrupt one (the
//! redundant header says it was written): `docs/security.md` cites it.
//!
//! The marks live in two 4 KiB blocks of their own after the header block, written
//! in turn, so a torn or damaged mark block leaves the other one (one write older).
//! Short-lived appenders also copy each mark into the presence file
//! (`log.redb-lock`), so that a write-ahead log deleted or cut below its marks is
//! named too, as long as that file is there.
//!
//! Layout of a mark (little-endian):
//!
//! ```text
//! "CLWM" | generation u64 | end u64 | seq u64 | hash (32) | blake3(all before)[..16]
//! ```
//!
//! `seq` and `hash` name the last record in the generation's frames before `end`
//! (seq 0 when they hold none).

use crate::record::ChainHash;
use std::io;

use super::file::JournalIo;

const MAGIC: &[u8; 4] = b"CLWM";
/// The bytes of one encoded mark.
pub(crate) const MARK_BYTES: usize = 4 + 8 + 8 + 8 + 32 + 16;
/// Where the two mark blocks start in a write-ahead log.
pub(crate) const SLOTS: [u64; 2] = [4096, 8192];

/// How far a write-ahead log's frames were acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The generation whose frames it speaks of.
    pub(crate) generation: u64,
    /// Every frame before this byte was synced before the mark was written.
    pub(crate) end: u64,
    /// The last record in those frames (0: none).
    pub(crate) seq: u64,
    /// Its chain hash.
    pub(crate) hash: ChainHash,
}

impl Mark {
    pub(crate) fn encode(&self) -> [u8; MARK_BYTES] {
        let mut out = [0u8; MARK_BYTES];
        out[..4].copy_from_slice(MAGIC);
        out[4..12].copy_from_slice(&self.generation.to_le_bytes());
        out[12..20].copy_from_slice(&self.end.to_le_bytes());
        out[20..28].copy_from_slice(&self.seq.to_le_bytes());
        out[28..60].copy_from_slice(self.hash.as_bytes());
        let check = blake3::hash(&out[..60]);
        out[60..].copy_from_slice(&check.as_bytes()[..16]);
        out
    }

    /// `None` unless `bytes` is a whole mark with its checksum.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Mark> {
        let bytes = bytes.get(..MARK_BYTES)?;
        if &bytes[..4] != MAGIC || bytes[60..] != blake3::hash(&bytes[..60]).as_bytes()[..16] {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Some(Mark {
            generation: u64_at(4),
            end: u64_at(12),
            seq: u64_at(20),
            hash: ChainHash(bytes[28..60].try_into().expect("32 bytes")),
        })
    }
}

/// The readable marks of a write-ahead log, by slot.
pub(crate) fn read_slots(io: &dyn JournalIo, len: u64) -> io::Result<[Option<Mark>; 2]> {
    let mut out = [None, None];
    for (slot, at) in SLOTS.iter().enumerate() {
        if at + MARK_BYTES as u64 <= len {
            let mut bytes = [0u8; MARK_BYTES];
            io.read_at(*at, &mut bytes)?;
            out[slot] = Mark::decode(&bytes);
        }
    }
    Ok(out)
}

/// The furthest mark of `generation` among `slots`, and the slot to write next (the
/// other one).
pub(crate) fn latest(slots: &[Option<Mark>; 2], generation: u64) -> (Option<Mark>, usize) {
    let of_generation = |slot: usize| slots[slot].filter(|m| m.generation == generation);
    match (of_generation(0), of_generation(1)) {
        (Some(a), Some(b)) if b.end > a.end => (Some(b), 0),
        (Some(a), _) => (Some(a), 1),
        (None, Some(b)) => (Some(b), 0),
        (None, None) => (None, 0),
    }
}

/// The mark a presence file holds (a short-lived appender's copy), if any.
pub(crate) fn read_copy(io: &dyn JournalIo) -> Option<Mark> {
    let mut bytes = [0u8; MARK_BYTES];
    io.read_at(0, &mut bytes).ok()?;
    Mark::decode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_and_any_flipped_bit_makes_it_unreadable() {
        let mark = Mark {
            generation: 7,
            end: 12_345,
            seq: 18,
            hash: ChainHash([9; 32]),
        };
        let bytes = mark.encode();
        assert_eq!(Mark::decode(&bytes), Some(mark));
        for i in 0..MARK_BYTES * 8 {
            let mut flipped = bytes;
            flipped[i / 8] ^= 1 << (i % 8);
            assert_eq!(Mark::decode(&flipped), None, "bit {i}");
        }
        assert_eq!(Mark::decode(&[0u8; MARK_BYTES]), None);
    }

    #[test]
    fn the_latest_mark_of_the_generation_wins_and_the_other_slot_is_written_next() {
        let mark = |generation, end| {
            Some(Mark {
                generation,
                end,
                seq: 0,
                hash: ChainHash::ZERO,
            })
        };
        assert_eq!(latest(&[mark(1, 10), mark(1, 20)], 1), (mark(1, 20), 0));
        assert_eq!(latest(&[mark(1, 30), mark(1, 20)], 1), (mark(1, 30), 1));
        assert_eq!(latest(&[mark(2, 30), mark(1, 20)], 1), (mark(1, 20), 0));
        assert_eq!(latest(&[None, None], 1), (None, 0));
    }
}
