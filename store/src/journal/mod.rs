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
//!   magic "cmdlog-wal\0\0\0\0\0\x02" (16) | generation u64 | blake3(magic|generation)[..16]
//! acknowledgement marks, at 4096 and at 8192 (a 4 KiB block each): see `mark.rs`
//! frame, from 12288 on, back to back:
//!   "CLWF" | generation u64 | payload length u32 | bodies length u64
//!   | blake3(generation|payload length|bodies length|payload)[..16] | payload | bodies
//! payload: ops, each a tag byte then
//!   1 record:       seq u64 | value length u32 | the `records` table value
//!   2 blob:         hash (32) | added at, unix ms, u64 | size u64   (its body is in bodies)
//!   3 remove blobs: count u32 | hashes (32 each)
//!   4 snapshot:     seq u64 | length u32 | the snapshot's bytes (a cache, written
//!                   by short-lived appenders; a frame of it alone is not synced)
//! ```
//!
//! Version 1 (magic ending in `\x01`, written before the marks) has no marks and
//! its frames from 4096 on; it is read, applied and replaced by a version 2
//! generation at the next writable open.
//!
//! The frames end where a magic, generation or checksum is wrong or a blob body
//! does not hash to its name. Only the last frame can be torn, and a torn frame was
//! never acknowledged — but damage looks the same, so the marks say how far the
//! frames were acknowledged: frames that end before the latest mark are damaged,
//! never a tear (design R14). Frames of an earlier generation are stale by
//! definition.

use std::io;
use std::path::{Path, PathBuf};

use crate::record::BlobHash;

mod file;
mod mark;

use file::Buffered;
pub use file::JournalIo;
pub(crate) use file::MemoryJournal;
pub(crate) use mark::{MARK_BYTES, Mark, read_copy};

/// The write-ahead log beside the log file at `log`: `log.redb` → `log.redb-wal`.
pub fn journal_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push("-wal");
    log.with_file_name(name)
}

const MAGIC: &[u8; 16] = b"cmdlog-wal\0\0\0\0\0\x02";
const MAGIC_V1: &[u8; 16] = b"cmdlog-wal\0\0\0\0\0\x01";
use crate::limits::WAL_HEADER_BYTES as HEADER_BYTES;
/// Where a generation's frames start.
pub(crate) const FRAMES_AT: u64 = HEADER_BYTES * 3;
/// Where a version 1 generation's frames start.
const FRAMES_AT_V1: u64 = HEADER_BYTES;
const FRAME_MAGIC: &[u8; 4] = b"CLWF";
const FRAME_HEADER: usize = 4 + 8 + 4 + 8 + 16;
use crate::limits::{
    WAL_PREALLOCATED_BYTES as PREALLOCATED_BYTES, WAL_SCAN_CHUNK_BYTES as SCAN_CHUNK_BYTES,
    WAL_ZERO_CHUNK_BYTES as ZERO_CHUNK_BYTES,
};

const TAG_RECORD: u8 = 1;
const TAG_BLOB: u8 = 2;
const TAG_REMOVE: u8 = 3;
const TAG_SNAPSHOT: u8 = 4;

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

/// One group commit's frame, borrowing the blob bodies from the batch.
#[derive(Default)]
pub(crate) struct Frame<'a> {
    payload: Vec<u8>,
    bodies: Vec<&'a [u8]>,
    /// Set while the frame holds only snapshots (nothing acknowledged rides on it).
    cache_only: bool,
    /// The last record's seq and chain hash.
    last: Option<(u64, [u8; 32])>,
}

impl<'a> Frame<'a> {
    /// Marks the frame as carrying something an append waits for: it is synced.
    fn acknowledged(&mut self) {
        self.cache_only = false;
    }

    pub(crate) fn record(&mut self, seq: u64, value: &[u8]) {
        self.acknowledged();
        if let Some((hash, _, _)) = crate::schema::decode_record(value) {
            self.last = Some((seq, hash));
        }
        self.payload.push(TAG_RECORD);
        self.payload.extend_from_slice(&seq.to_le_bytes());
        self.payload
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(value);
    }

    pub(crate) fn blob(&mut self, hash: &[u8; 32], added_ms: u64, bytes: &'a [u8]) {
        self.acknowledged();
        self.payload.push(TAG_BLOB);
        self.payload.extend_from_slice(hash);
        self.payload.extend_from_slice(&added_ms.to_le_bytes());
        self.payload
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.bodies.push(bytes);
    }

    pub(crate) fn remove_blobs(&mut self, hashes: &[BlobHash]) {
        self.acknowledged();
        self.payload.push(TAG_REMOVE);
        self.payload
            .extend_from_slice(&(hashes.len() as u32).to_le_bytes());
        for hash in hashes {
            self.payload.extend_from_slice(&hash.0);
        }
    }

    pub(crate) fn snapshot(&mut self, seq: u64, bytes: &[u8]) {
        if self.payload.is_empty() {
            self.cache_only = true;
        }
        self.payload.push(TAG_SNAPSHOT);
        self.payload.extend_from_slice(&seq.to_le_bytes());
        self.payload
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(bytes);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }
}

fn header_bytes(generation: u64) -> [u8; 40] {
    header_with(MAGIC, generation)
}

fn header_with(magic: &[u8; 16], generation: u64) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..16].copy_from_slice(magic);
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
    /// Whether a frame of snapshots alone skips its sync (see [`Journal::append`]).
    pub(crate) cache_frames_unsynced: bool,
    /// Up to where the file may hold bytes other than zeros after `end`: a reset
    /// zeroes them, so that after the last frame of a generation the file reads as
    /// zeros and anything else there is damage or a torn frame.
    dirty_end: u64,
    /// The last record in this generation's frames (seq 0: none yet).
    last: (u64, [u8; 32]),
    /// The mark slot written next.
    slot: usize,
    /// Where each mark is copied too: a short-lived appender's presence file.
    mirror: Option<Box<dyn JournalIo>>,
}

impl Journal {
    /// Continues the generation `scan` found: the next frame goes after its last
    /// readable one. Only a version 2 generation with a valid header is continued
    /// (the callers start a fresh one otherwise).
    pub(crate) fn resume(io: Box<dyn JournalIo>, path: PathBuf, scan: &Scan) -> Journal {
        let generation = match scan.header {
            Header::Valid(generation) => generation,
            _ => fresh_generation(),
        };
        Journal {
            io,
            path,
            generation,
            end: scan.end.max(FRAMES_AT),
            cache_frames_unsynced: false,
            dirty_end: scan.dirty_end.max(FRAMES_AT),
            last: scan.last.unwrap_or((0, [0; 32])),
            slot: scan.next_slot,
            mirror: None,
        }
    }

    /// Starts a generation numbered from the clock, so that no stale frame can carry
    /// it, over whatever the file held (a new file, or one whose frames redb already
    /// holds or were discarded).
    pub(crate) fn fresh(io: Box<dyn JournalIo>, path: PathBuf, scan: &Scan) -> io::Result<Journal> {
        let mut journal = Journal {
            io,
            path,
            generation: fresh_generation(),
            end: FRAMES_AT,
            cache_frames_unsynced: false,
            dirty_end: scan.dirty_end.max(FRAMES_AT),
            last: (0, [0; 32]),
            slot: 0,
            mirror: None,
        };
        journal.reset()?;
        Ok(journal)
    }

    /// Copies every mark to `mirror` too (a short-lived appender's presence file).
    pub(crate) fn mirror_marks_to(&mut self, mirror: Box<dyn JournalIo>) {
        self.mirror = Some(mirror);
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of frames in the current generation.
    pub(crate) fn frame_bytes(&self) -> u64 {
        self.end - FRAMES_AT
    }

    /// Appends one frame and syncs it: once this returns, the frame is durable
    /// (a frame of snapshots alone may wait for the next one's sync). After the
    /// sync a mark says so.
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
        self.end = at;
        self.dirty_end = self.dirty_end.max(at);
        if let Some(last) = frame.last {
            self.last = last;
        }
        // A frame of snapshots alone is a cache: the next frame's sync makes it
        // durable, and a crash before that leaves it torn at the end, dropped.
        if !(frame.cache_only && self.cache_frames_unsynced) {
            self.io.sync_data()?;
            self.write_mark();
        }
        Ok(())
    }

    /// Writes the mark for every frame so far, which the last sync made durable.
    /// Not synced: the next frame's sync (or the kernel's write-back) makes it
    /// durable. A mark that fails to be written costs only the evidence it holds.
    fn write_mark(&mut self) {
        let mark = Mark {
            generation: self.generation,
            end: self.end,
            seq: self.last.0,
            hash: self.last.1,
        }
        .encode();
        let _ = self.io.write_at(mark::SLOTS[self.slot], &mark);
        self.slot = 1 - self.slot;
        if let Some(mirror) = &self.mirror {
            let _ = mirror.write_at(0, &mark);
        }
    }

    /// Takes the appenders' lock (see [`JournalIo::lock`]).
    pub(crate) fn lock(&self) -> io::Result<()> {
        self.io.lock(true)
    }

    /// Releases the appenders' lock.
    pub(crate) fn unlock(&self) -> io::Result<()> {
        self.io.unlock()
    }

    /// Reads the frames other processes appended after the last one this handle
    /// knows, under the appenders' lock, and moves past them. What follows them must
    /// be zeros, and they must reach the latest mark: anything else (another
    /// appender's torn frame, or damage) is refused, and the next writable open
    /// recovers it or names it.
    pub(crate) fn catch_up(&mut self) -> io::Result<Vec<FoundFrame>> {
        let len = self.io.file_len()?;
        if read_header(self.io.as_ref(), len)? != Header::Valid(self.generation) {
            return Err(io::Error::other(
                "another process started a new generation of the write-ahead log",
            ));
        }
        let io = Buffered::new(self.io.as_ref(), len);
        let mut frames = Vec::new();
        while let Some((ops, next)) = read_frame(&io, self.generation, self.end, len)? {
            if let Some(last) = last_record(&ops) {
                self.last = last;
            }
            frames.push(FoundFrame { ops });
            self.end = next;
        }
        self.dirty_end = self.dirty_end.max(self.end);
        if !zeros_at(&io, self.end, len)? {
            return Err(io::Error::other(format!(
                "an unreadable frame at byte {} (an appender died while writing it); a writable open recovers it",
                self.end
            )));
        }
        let (mark, slot) = mark::latest(&mark::read_slots(self.io.as_ref(), len)?, self.generation);
        if let Some(mark) = mark.filter(|m| m.end > self.end) {
            return Err(io::Error::other(format!(
                "the frames end at byte {}, but frames through byte {} (through seq {}) were acknowledged: they are damaged; a writable open names them",
                self.end, mark.end, mark.seq
            )));
        }
        self.slot = slot;
        Ok(frames)
    }

    /// Starts the next generation: every frame so far is stale. Call only once redb
    /// holds all of them durably. The old frames are then overwritten with zeros (in
    /// place, so the blocks stay allocated); the next frame's sync makes the zeros
    /// durable with it.
    pub(crate) fn reset(&mut self) -> io::Result<()> {
        let generation = self.generation + 1;
        let len = self.io.file_len()?;
        if self.dirty_end >= len.max(FRAMES_AT + ZERO_CHUNK_BYTES as u64) {
            // Bytes of unknown extent (a torn or damaged tail, another version's
            // file) up to the end: cut them off rather than write zeros over the
            // whole file, which on a full disk fills the blocks a hole left free.
            self.io.set_len(FRAMES_AT)?;
            self.dirty_end = FRAMES_AT;
        }
        if self.io.file_len()? < PREALLOCATED_BYTES {
            self.io.set_len(PREALLOCATED_BYTES)?;
        }
        self.io.write_at(0, &header_bytes(generation))?;
        self.io.sync_data()?;
        self.generation = generation;
        self.end = FRAMES_AT;
        self.last = (0, [0; 32]);
        self.slot = 0;
        let zeros = vec![0u8; ZERO_CHUNK_BYTES];
        let mut at = FRAMES_AT;
        while at < self.dirty_end {
            let n = (self.dirty_end - at).min(ZERO_CHUNK_BYTES as u64) as usize;
            self.io.write_at(at, &zeros[..n])?;
            at += n as u64;
        }
        self.dirty_end = FRAMES_AT;
        Ok(())
    }
}

/// The last record among `ops`.
fn last_record(ops: &[Op]) -> Option<(u64, [u8; 32])> {
    ops.iter().rev().find_map(|op| match op {
        Op::Record { seq, value } => {
            crate::schema::decode_record(value).map(|(hash, _, _)| (*seq, hash))
        }
        _ => None,
    })
}

fn read_header(io: &dyn JournalIo, len: u64) -> io::Result<Header> {
    if len < HEADER_BYTES {
        return Ok(Header::Short);
    }
    let mut header = [0u8; 40];
    io.read_at(0, &mut header)?;
    let generation = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    Ok(if header == header_bytes(generation) {
        Header::Valid(generation)
    } else if header == header_with(MAGIC_V1, generation) {
        Header::Version1(generation)
    } else {
        Header::Damaged
    })
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
            TAG_SNAPSHOT => {
                let seq = u64_of(&mut p)?;
                let len = u32_of(&mut p)? as usize;
                Op::Snapshot {
                    seq,
                    bytes: take(&mut p, len)?.to_vec(),
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

/// The state of the write-ahead log's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// A valid header of this generation.
    Valid(u64),
    /// A valid header of a version 1 generation (no marks, frames from 4096).
    Version1(u64),
    /// A damaged header whose generation a mark gives, and the frames confirm.
    Restored(u64),
    /// The file is shorter than a header (empty, or cut).
    Short,
    /// The header's checksum is wrong.
    Damaged,
}

impl Header {
    /// The generation whose frames are read, if one is known.
    pub(crate) fn generation(self) -> Option<u64> {
        match self {
            Header::Valid(g) | Header::Version1(g) | Header::Restored(g) => Some(g),
            Header::Short | Header::Damaged => None,
        }
    }
}

/// One readable frame's operations.
#[derive(Debug)]
pub(crate) struct FoundFrame {
    pub(crate) ops: Vec<Op>,
}

/// What reading a write-ahead log found, before anything is decided about it.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) header: Header,
    /// The readable frames of the header's generation, from the start, in order.
    pub(crate) frames: Vec<FoundFrame>,
    /// Where the generation's frames start.
    pub(crate) frames_at: u64,
    /// Where the readable frames end.
    pub(crate) end: u64,
    /// Up to where bytes other than zeros may follow `end`.
    pub(crate) dirty_end: u64,
    /// Where reading stopped on something that is neither a frame nor zeros (a torn
    /// last frame, or damage), or short of the latest mark, with every readable
    /// frame found after it: of the header's generation, or of any generation when
    /// the header is damaged.
    pub(crate) unreadable: Option<(u64, Vec<FoundFrame>)>,
    /// The latest mark of the generation (of any generation when the header is
    /// damaged and no mark's generation reads).
    pub(crate) mark: Option<Mark>,
    /// The mark slot to write next.
    pub(crate) next_slot: usize,
    /// The last record in the readable frames.
    pub(crate) last: Option<(u64, [u8; 32])>,
    /// What is where the readable frames end.
    pub(crate) stop: &'static str,
}

impl Scan {
    /// A scan of no file.
    pub(crate) fn nothing() -> Scan {
        Scan {
            header: Header::Short,
            frames: Vec::new(),
            frames_at: FRAMES_AT,
            end: FRAMES_AT,
            dirty_end: FRAMES_AT,
            unreadable: None,
            mark: None,
            next_slot: 0,
            last: None,
            stop: "the file ends there",
        }
    }

    /// Bytes of readable frames.
    pub(crate) fn frame_bytes(&self) -> u64 {
        self.end.saturating_sub(self.frames_at)
    }

    /// Whether the readable frames end short of the latest mark: acknowledged
    /// frames are damaged.
    pub(crate) fn short_of_mark(&self) -> bool {
        self.header.generation().is_some() && self.mark.is_some_and(|m| m.end > self.end)
    }

    /// The same scan without its frames, for resuming after them.
    pub(crate) fn position(&self) -> Scan {
        Scan {
            header: self.header,
            frames: Vec::new(),
            frames_at: self.frames_at,
            end: self.end,
            dirty_end: self.dirty_end,
            unreadable: None,
            mark: self.mark,
            next_slot: self.next_slot,
            last: self.last,
            stop: self.stop,
        }
    }
}

/// Reads the write-ahead log: its header and marks, its frames in order, and —
/// where the frames stop on anything but zeros, or short of the latest mark —
/// every readable frame after that point, so the caller can tell a torn last frame
/// (nothing readable follows, no mark passes it) from damage.
pub(crate) fn scan(io: &dyn JournalIo) -> io::Result<Scan> {
    let len = io.file_len()?;
    let buffered = Buffered::new(io, len);
    let io: &dyn JournalIo = &buffered;
    let mut header = read_header(io, len)?;
    if matches!(header, Header::Valid(_)) && len < FRAMES_AT {
        // A version 2 generation starts with the file extended past its marks: it
        // was cut since.
        header = Header::Short;
    }
    let slots = mark::read_slots(io, len)?;
    let mut out = Scan::nothing();
    out.header = header;
    if header == Header::Damaged {
        // A mark names the generation when a frame of it reads where frames start.
        let mut known: Vec<Mark> = slots.iter().flatten().copied().collect();
        known.sort_by_key(|m| std::cmp::Reverse(m.generation));
        header = known
            .iter()
            .find(|m| {
                read_frame(io, m.generation, FRAMES_AT, len)
                    .ok()
                    .flatten()
                    .is_some()
            })
            .map_or(Header::Damaged, |m| Header::Restored(m.generation));
        out.header = header;
        out.mark = known.first().copied();
    }
    let (generation, frames_at) = match header {
        Header::Valid(g) | Header::Restored(g) => (g, FRAMES_AT),
        Header::Version1(g) => (g, FRAMES_AT_V1),
        Header::Short => return Ok(out),
        Header::Damaged => {
            out.dirty_end = len;
            out.unreadable = Some((0, frames_after(io, HEADER_BYTES, len, None)?));
            return Ok(out);
        }
    };
    out.frames_at = frames_at;
    if frames_at == FRAMES_AT {
        (out.mark, out.next_slot) = mark::latest(&slots, generation);
    }
    let mut at = frames_at;
    while let Some((ops, next)) = read_frame(io, generation, at, len)? {
        if let Some(last) = last_record(&ops) {
            out.last = Some(last);
        }
        out.frames.push(FoundFrame { ops });
        at = next;
    }
    out.end = at;
    out.dirty_end = at;
    let short_of_mark = out.mark.is_some_and(|m| m.end > at);
    let zeros = zeros_at(io, at, len)?;
    out.stop = if at >= len {
        "the file ends there"
    } else if zeros {
        "zeros there"
    } else {
        "bytes there that are not a whole frame"
    };
    if !zeros || short_of_mark {
        out.dirty_end = len;
        out.unreadable = Some((at, frames_after(io, at + 1, len, Some(generation))?));
    }
    Ok(out)
}

fn fresh_generation() -> u64 {
    (cmdlog_common::time::now_ns() as u64).max(1)
}

/// Whether the file holds only zeros (or ends) in the frame header's length at `at`.
fn zeros_at(io: &dyn JournalIo, at: u64, len: u64) -> io::Result<bool> {
    if at >= len {
        return Ok(true);
    }
    let mut head = vec![0u8; (FRAME_HEADER as u64).min(len - at) as usize];
    io.read_at(at, &mut head)?;
    Ok(head.iter().all(|&b| b == 0))
}

/// Every readable frame from `from` on: of `generation`, or of any generation.
fn frames_after(
    io: &dyn JournalIo,
    from: u64,
    len: u64,
    generation: Option<u64>,
) -> io::Result<Vec<FoundFrame>> {
    let mut found = Vec::new();
    let mut chunk = vec![0u8; SCAN_CHUNK_BYTES];
    let zeros = vec![0u8; SCAN_CHUNK_BYTES];
    let mut at = from;
    while at + FRAME_HEADER as u64 <= len {
        let n = (len - at).min(SCAN_CHUNK_BYTES as u64) as usize;
        io.read_at(at, &mut chunk[..n])?;
        let mut next = at + n.saturating_sub(FRAME_HEADER - 1).max(1) as u64;
        if chunk[..n] == zeros[..n] {
            // Most of a write-ahead log is zeros (a hole): no frame there.
            at = next;
            continue;
        }
        let mut i = 0;
        while i + FRAME_HEADER <= n {
            if chunk[i..i + 4] != *FRAME_MAGIC {
                i += 1;
                continue;
            }
            let offset = at + i as u64;
            let frame_generation =
                u64::from_le_bytes(chunk[i + 4..i + 12].try_into().expect("8 bytes"));
            if generation.is_none_or(|g| g == frame_generation)
                && let Some((ops, end)) = read_frame(io, frame_generation, offset, len)?
            {
                found.push(FoundFrame { ops });
                next = end;
                break;
            }
            i += 1;
        }
        at = next;
    }
    Ok(found)
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
        let scan = scan(&file).unwrap();
        let journal = match scan.header {
            Header::Valid(_) => Journal::resume(Box::new(file), path.to_path_buf(), &scan),
            _ => Journal::fresh(Box::new(file), path.to_path_buf(), &scan).unwrap(),
        };
        let ops = scan.frames.into_iter().flat_map(|f| f.ops).collect();
        (journal, ops)
    }

    fn open_without_writing(path: &Path) -> (Header, Vec<Op>) {
        let scan = scan(&std::fs::File::open(path).unwrap()).unwrap();
        let ops = scan.frames.into_iter().flat_map(|f| f.ops).collect();
        (scan.header, ops)
    }

    fn has_frames(log: &Path) -> bool {
        let file = std::fs::File::open(journal_path(log)).unwrap();
        !scan(&file).unwrap().frames.is_empty()
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
        assert!(has_frames(&dir.path().join("log.redb")));

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
                Op::Snapshot { seq, .. } => format!("snapshot {seq}"),
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
        assert!(!has_frames(&dir.path().join("log.redb")));
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
        // The marks name the generation: the frames still read.
        let (_, ops) = open_without_writing(&path);
        assert_eq!(ops.len(), 3, "{ops:?}");
        // Without the marks nothing says which generation the frames are.
        for at in mark::SLOTS {
            JournalIo::write_at(&file, at, b"torn").unwrap();
        }
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
