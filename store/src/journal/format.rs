//! The write-ahead log's byte layout (`mod.rs` describes it): magics, where
//! things are, op tags, and the checksums of a header and a frame.

pub(crate) use crate::limits::WAL_HEADER_BYTES as HEADER_BYTES;

pub(super) const MAGIC: &[u8; 16] = b"cmdlog-wal\0\0\0\0\0\x02";
pub(super) const MAGIC_V1: &[u8; 16] = b"cmdlog-wal\0\0\0\0\0\x01";
/// Where a generation's frames start.
pub(crate) const FRAMES_AT: u64 = HEADER_BYTES * 3;
/// Where a version 1 generation's frames start.
pub(super) const FRAMES_AT_V1: u64 = HEADER_BYTES;
pub(super) const FRAME_MAGIC: &[u8; 4] = b"CLWF";
pub(super) const FRAME_HEADER: usize = 4 + 8 + 4 + 8 + 16;

pub(super) const TAG_RECORD: u8 = 1;
pub(super) const TAG_BLOB: u8 = 2;
pub(super) const TAG_REMOVE: u8 = 3;
pub(super) const TAG_SNAPSHOT: u8 = 4;

/// One operation recovered from a frame.
#[derive(Debug)]
pub(crate) enum Op {
    Record {
        seq: u64,
        value: Vec<u8>,
    },
    Blob {
        hash: [u8; 32],
        added_ms: u64,
        bytes: Vec<u8>,
    },
    RemoveBlobs(Vec<[u8; 32]>),
    Snapshot {
        seq: u64,
        bytes: Vec<u8>,
    },
}

pub(super) fn header_bytes(generation: u64) -> [u8; 40] {
    header_with(MAGIC, generation)
}

pub(super) fn header_with(magic: &[u8; 16], generation: u64) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..16].copy_from_slice(magic);
    out[16..24].copy_from_slice(&generation.to_le_bytes());
    let check = blake3::hash(&out[..24]);
    out[24..40].copy_from_slice(&check.as_bytes()[..16]);
    out
}

pub(super) fn frame_check(
    generation: u64,
    payload_len: u32,
    bodies_len: u64,
    payload: &[u8],
) -> [u8; 16] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&generation.to_le_bytes());
    hasher.update(&payload_len.to_le_bytes());
    hasher.update(&bodies_len.to_le_bytes());
    hasher.update(payload);
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    out
}
