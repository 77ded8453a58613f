//! The write-ahead log (`<log>-wal`) in front of redb.
//!
//! A durable redb commit is one `fdatasync`, but it rewrites several 4 KiB pages
//! (both B-trees, the allocator state, the header) at scattered offsets. A group
//! commit instead appends one *frame* to this file and syncs it: that sync is the
//! acknowledgement. The same batch then goes to redb in a non-durable transaction,
//! which readers in this process see at once. Every so often (a *checkpoint*) one
//! durable redb commit makes all of it durable there, and the write-ahead log
//! starts a new *generation* from its beginning, overwriting the old frames in
//! place. Opening a log for writing applies whatever frames redb does not hold yet.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! header, at 0 (a 4 KiB block):
//!   magic "cmdlog-wal\0\0\0\0\0\x01" (16) | generation u64 | blake3(magic|generation)[..16]
//! frame, from 4096 on, back to back:
//!   "CLWF" | generation u64 | payload length u32 | bodies length u64
//!   | blake3(generation|payload length|bodies length|payload)[..16] | payload | bodies
//! payload: ops, each a tag byte then
//!   1 record:       seq u64 | value length u32 | the `records` table value
//!   2 blob:         hash (32) | added at, unix ms, u64 | size u64   (its body is in bodies)
//!   3 remove blobs: count u32 | hashes (32 each)
//! ```
//!
//! A frame ends the log when its magic, generation or checksum is wrong or a blob
//! body does not hash to its name: only the last frame can be torn, and a torn frame
//! was never acknowledged. Frames of an earlier generation are stale by definition.

use std::io;
use std::path::{Path, PathBuf};

use crate::record::BlobHash;

/// The file operations the write-ahead log needs. `std::fs::File` has them; tests
/// wrap one to inject faults (see [`crate::FaultyFile`]).
pub trait JournalIo: Send + Sync {
    /// The file's length.
    fn file_len(&self) -> io::Result<u64>;
    /// Fills `out` from `offset`.
    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()>;
    /// Writes all of `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Sets the file's length.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes the written data durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
}

impl JournalIo for std::fs::File {
    fn file_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, out, offset)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, data, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        std::fs::File::set_len(self, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        std::fs::File::sync_data(self)
    }
}

/// The write-ahead log beside the log file at `log`: `log.redb` → `log.redb-wal`.
pub fn journal_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push("-wal");
    log.with_file_name(name)
}

const MAGIC: &[u8; 16] = b"cmdlog-wal\0\0\0\0\0\x01";
const HEADER_BYTES: u64 = 4096;
const FRAME_MAGIC: &[u8; 4] = b"CLWF";
const FRAME_HEADER: usize = 4 + 8 + 4 + 8 + 16;
/// A new file is extended to this length (sparse) so frame writes seldom grow it.
pub(crate) const PREALLOCATED_BYTES: u64 = 64 * 1024 * 1024;

const TAG_RECORD: u8 = 1;
const TAG_BLOB: u8 = 2;
const TAG_REMOVE: u8 = 3;

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
}

/// One group commit's frame, borrowing the blob bodies from the batch.
#[derive(Default)]
pub(crate) struct Frame<'a> {
    payload: Vec<u8>,
    bodies: Vec<&'a [u8]>,
}

impl<'a> Frame<'a> {
    pub(crate) fn record(&mut self, seq: u64, value: &[u8]) {
        self.payload.push(TAG_RECORD);
        self.payload.extend_from_slice(&seq.to_le_bytes());
        self.payload
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(value);
    }

    pub(crate) fn blob(&mut self, hash: &[u8; 32], added_ms: u64, bytes: &'a [u8]) {
        self.payload.push(TAG_BLOB);
        self.payload.extend_from_slice(hash);
        self.payload.extend_from_slice(&added_ms.to_le_bytes());
        self.payload
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.bodies.push(bytes);
    }

    pub(crate) fn remove_blobs(&mut self, hashes: &[BlobHash]) {
        self.payload.push(TAG_REMOVE);
        self.payload
            .extend_from_slice(&(hashes.len() as u32).to_le_bytes());
        for hash in hashes {
            self.payload.extend_from_slice(&hash.0);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }
}

fn header_bytes(generation: u64) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..16].copy_from_slice(MAGIC);
    out[16..24].copy_from_slice(&generation.to_le_bytes());
    let check = blake3::hash(&out[..24]);
    out[24..40].copy_from_slice(&check.as_bytes()[..16]);
    out
}

fn frame_check(generation: u64, payload_len: u32, bodies_len: u64, payload: &[u8]) -> [u8; 16] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&generation.to_le_bytes());
    hasher.update(&payload_len.to_le_bytes());
    hasher.update(&bodies_len.to_le_bytes());
    hasher.update(payload);
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    out
}

/// An open write-ahead log, owned by the writer thread.
pub(crate) struct Journal {
    io: Box<dyn JournalIo>,
    path: PathBuf,
    generation: u64,
    /// Where the next frame goes.
    end: u64,
}

impl Journal {
    /// Opens the write-ahead log and reads back the frames of its current
    /// generation, in order. A missing or unreadable header (a new file, or one torn
    /// while a checkpoint rewrote it, when redb already held every frame) starts a
    /// generation numbered from the clock, so no stale frame can carry it.
    pub(crate) fn open(io: Box<dyn JournalIo>, path: PathBuf) -> io::Result<(Journal, Vec<Op>)> {
        let generation = read_generation(io.as_ref())?;
        let fresh = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        };
        let mut journal = Journal {
            io,
            path,
            generation: generation.unwrap_or_else(fresh),
            end: HEADER_BYTES,
        };
        let ops = match generation {
            Some(_) => journal.read_frames()?,
            None => {
                journal.reset()?;
                Vec::new()
            }
        };
        Ok((journal, ops))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of frames in the current generation.
    pub(crate) fn frame_bytes(&self) -> u64 {
        self.end - HEADER_BYTES
    }

    fn read_frames(&mut self) -> io::Result<Vec<Op>> {
        let len = self.io.file_len()?;
        let mut ops = Vec::new();
        let mut at = HEADER_BYTES;
        while let Some((frame_ops, next)) = read_frame(self.io.as_ref(), self.generation, at, len)?
        {
            ops.extend(frame_ops);
            at = next;
        }
        self.end = at;
        Ok(ops)
    }

    /// Appends one frame and syncs it: once this returns, the frame is durable.
    pub(crate) fn append(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        let payload_len = u32::try_from(frame.payload.len())
            .map_err(|_| io::Error::other("a group commit's frame is over 4 GiB"))?;
        let bodies_len: u64 = frame.bodies.iter().map(|b| b.len() as u64).sum();
        let mut head = Vec::with_capacity(FRAME_HEADER + frame.payload.len());
        head.extend_from_slice(FRAME_MAGIC);
        head.extend_from_slice(&self.generation.to_le_bytes());
        head.extend_from_slice(&payload_len.to_le_bytes());
        head.extend_from_slice(&bodies_len.to_le_bytes());
        head.extend_from_slice(&frame_check(
            self.generation,
            payload_len,
            bodies_len,
            &frame.payload,
        ));
        head.extend_from_slice(&frame.payload);
        let mut at = self.end;
        self.io.write_at(at, &head)?;
        at += head.len() as u64;
        for body in &frame.bodies {
            self.io.write_at(at, body)?;
            at += body.len() as u64;
        }
        self.io.sync_data()?;
        self.end = at;
        Ok(())
    }

    /// Starts the next generation: every frame so far is stale. Call only once redb
    /// holds all of them durably.
    pub(crate) fn reset(&mut self) -> io::Result<()> {
        let generation = self.generation + 1;
        if self.io.file_len()? < PREALLOCATED_BYTES {
            self.io.set_len(PREALLOCATED_BYTES)?;
        }
        self.io.write_at(0, &header_bytes(generation))?;
        self.io.sync_data()?;
        self.generation = generation;
        self.end = HEADER_BYTES;
        Ok(())
    }
}

fn read_generation(io: &dyn JournalIo) -> io::Result<Option<u64>> {
    if io.file_len()? < HEADER_BYTES {
        return Ok(None);
    }
    let mut header = [0u8; 40];
    io.read_at(0, &mut header)?;
    let generation = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    Ok((header == header_bytes(generation)).then_some(generation))
}

/// Reads the frame at `at`; `None` where the generation's frames end.
fn read_frame(
    io: &dyn JournalIo,
    generation: u64,
    at: u64,
    len: u64,
) -> io::Result<Option<(Vec<Op>, u64)>> {
    if at + FRAME_HEADER as u64 > len {
        return Ok(None);
    }
    let mut head = [0u8; FRAME_HEADER];
    io.read_at(at, &mut head)?;
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let payload_len = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
    let bodies_len = u64_at(16);
    if &head[..4] != FRAME_MAGIC || u64_at(4) != generation {
        return Ok(None);
    }
    let payload_at = at + FRAME_HEADER as u64;
    let Some(end) = payload_at
        .checked_add(payload_len as u64)
        .and_then(|e| e.checked_add(bodies_len))
        .filter(|&e| e <= len)
    else {
        return Ok(None);
    };
    let mut payload = vec![0u8; payload_len as usize];
    io.read_at(payload_at, &mut payload)?;
    if head[24..40] != frame_check(generation, payload_len, bodies_len, &payload) {
        return Ok(None);
    }
    let Some(mut ops) = parse_payload(&payload) else {
        return Ok(None);
    };
    // Blob bodies follow the payload in op order; each must hash to its name.
    let mut body_at = payload_at + payload_len as u64;
    for op in &mut ops {
        if let Op::Blob { hash, bytes, .. } = op {
            io.read_at(body_at, bytes)?;
            body_at += bytes.len() as u64;
            if BlobHash::of(bytes).0 != *hash {
                return Ok(None);
            }
        }
    }
    if body_at != end {
        return Ok(None);
    }
    Ok(Some((ops, end)))
}

/// Parses a checksummed payload; blob ops get zeroed buffers of their size.
fn parse_payload(mut p: &[u8]) -> Option<Vec<Op>> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = p.split_at_checked(n)?;
        *p = tail;
        Some(head)
    }
    fn u64_of(p: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(p, 8)?.try_into().ok()?))
    }
    fn u32_of(p: &mut &[u8]) -> Option<u32> {
        Some(u32::from_le_bytes(take(p, 4)?.try_into().ok()?))
    }
    fn hash_of(p: &mut &[u8]) -> Option<[u8; 32]> {
        take(p, 32)?.try_into().ok()
    }
    let mut ops = Vec::new();
    while let Some((&tag, rest)) = p.split_first() {
        p = rest;
        let op = match tag {
            TAG_RECORD => {
                let seq = u64_of(&mut p)?;
                let len = u32_of(&mut p)? as usize;
                Op::Record {
                    seq,
                    value: take(&mut p, len)?.to_vec(),
                }
            }
            TAG_BLOB => {
                let hash = hash_of(&mut p)?;
                let added_ms = u64_of(&mut p)?;
                let size = usize::try_from(u64_of(&mut p)?).ok()?;
                Op::Blob {
                    hash,
                    added_ms,
                    bytes: vec![0; size],
                }
            }
            TAG_REMOVE => {
                let count = u32_of(&mut p)? as usize;
                let mut hashes = Vec::with_capacity(count.min(p.len() / 32));
                for _ in 0..count {
                    hashes.push(hash_of(&mut p)?);
                }
                Op::RemoveBlobs(hashes)
            }
            _ => return None,
        };
        ops.push(op);
    }
    Some(ops)
}

/// Whether the write-ahead log beside `log` holds frames redb may not have: then
/// the log needs a writable open to apply them.
pub(crate) fn has_frames(log: &Path) -> io::Result<bool> {
    let file = match std::fs::File::open(journal_path(log)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let Some(generation) = read_generation(&file)? else {
        return Ok(false);
    };
    let len = JournalIo::file_len(&file)?;
    Ok(read_frame(&file, generation, HEADER_BYTES, len)?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> (Journal, Vec<Op>) {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        Journal::open(Box::new(file), path.to_path_buf()).unwrap()
    }

    #[test]
    fn frames_come_back_in_order_until_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb-wal");
        let body = vec![7u8; 5000];
        let hash = BlobHash::of(&body);
        let (mut journal, ops) = open(&path);
        assert!(ops.is_empty());
        let mut frame = Frame::default();
        frame.record(1, b"one");
        frame.blob(&hash.0, 42, &body);
        journal.append(&frame).unwrap();
        let mut frame = Frame::default();
        frame.record(2, b"two");
        frame.remove_blobs(&[hash]);
        journal.append(&frame).unwrap();
        let second_end = journal.end;
        let mut frame = Frame::default();
        frame.record(3, b"three");
        journal.append(&frame).unwrap();
        drop(journal);
        assert!(has_frames(&dir.path().join("log.redb")).unwrap());

        // Tear the third frame's last byte.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let third_end = second_end + FRAME_HEADER as u64 + 1 + 8 + 4 + 5;
        JournalIo::write_at(&file, third_end - 1, b"X").unwrap();
        let (journal, ops) = open(&path);
        assert_eq!(journal.end, second_end, "the torn frame ends the log");
        let summary: Vec<String> = ops
            .iter()
            .map(|op| match op {
                Op::Record { seq, value } => format!("{seq}:{}", String::from_utf8_lossy(value)),
                Op::Blob {
                    added_ms, bytes, ..
                } => format!("blob {added_ms} {}", bytes.len()),
                Op::RemoveBlobs(h) => format!("remove {}", h.len()),
            })
            .collect();
        assert_eq!(summary, ["1:one", "blob 42 5000", "2:two", "remove 1"]);
    }

    #[test]
    fn a_new_generation_makes_every_earlier_frame_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb-wal");
        let (mut journal, _) = open(&path);
        let mut frame = Frame::default();
        frame.record(1, b"one");
        journal.append(&frame).unwrap();
        journal.reset().unwrap();
        drop(journal);
        let (journal, ops) = open(&path);
        assert!(ops.is_empty(), "{ops:?}");
        assert_eq!(journal.frame_bytes(), 0);
        assert!(!has_frames(&dir.path().join("log.redb")).unwrap());
    }

    #[test]
    fn a_torn_header_starts_a_generation_no_stale_frame_carries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb-wal");
        let (mut journal, _) = open(&path);
        let old_generation = journal.generation;
        for seq in 1..=3 {
            let mut frame = Frame::default();
            frame.record(seq, b"same size");
            journal.append(&frame).unwrap();
        }
        drop(journal);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        JournalIo::write_at(&file, 20, b"torn").unwrap();
        let (mut journal, ops) = open(&path);
        assert!(ops.is_empty());
        assert_ne!(journal.generation, old_generation);
        // A frame of the same size as the stale ones: reading stops after it.
        let mut frame = Frame::default();
        frame.record(9, b"same size");
        journal.append(&frame).unwrap();
        drop(journal);
        let (_, ops) = open(&path);
        assert_eq!(ops.len(), 1, "{ops:?}");
    }

    #[test]
    fn a_blob_body_that_does_not_hash_to_its_name_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb-wal");
        let body = vec![1u8; 100];
        let (mut journal, _) = open(&path);
        let mut frame = Frame::default();
        frame.blob(&BlobHash::of(&body).0, 1, &body);
        journal.append(&frame).unwrap();
        let end = journal.end;
        drop(journal);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        JournalIo::write_at(&file, end - 1, &[2]).unwrap();
        let (_, ops) = open(&path);
        assert!(ops.is_empty());
    }
}
