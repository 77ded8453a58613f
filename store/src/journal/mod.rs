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

use crate::record::ChainHash;
use std::io;
use std::path::{Path, PathBuf};

use crate::record::BlobHash;

mod file;
mod format;
mod mark;
mod read;

use file::Buffered;
pub use file::JournalIo;
pub(crate) use file::MemoryJournal;
pub(crate) use mark::{MARK_BYTES, Mark, read_copy};
pub(crate) use read::{FoundFrame, Header, Scan, scan};
use read::{last_record, read_frame, read_header, zeros_at};

use crate::limits::{
    WAL_PREALLOCATED_BYTES as PREALLOCATED_BYTES, WAL_ZERO_CHUNK_BYTES as ZERO_CHUNK_BYTES,
};
use format::{
    FRAME_HEADER, FRAME_MAGIC, TAG_BLOB, TAG_RECORD, TAG_REMOVE, TAG_SNAPSHOT, frame_check,
    header_bytes,
};
pub(crate) use format::{FRAMES_AT, Op};

/// The write-ahead log beside the log file at `log`: `log.redb` → `log.redb-wal`.
pub fn journal_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push("-wal");
    log.with_file_name(name)
}

/// One group commit's frame, borrowing the blob bodies from the batch.
#[derive(Default)]
pub(crate) struct Frame<'a> {
    payload: Vec<u8>,
    bodies: Vec<&'a [u8]>,
    /// Set while the frame holds only snapshots (nothing acknowledged rides on it).
    cache_only: bool,
    /// The last record's seq and chain hash.
    last: Option<(u64, ChainHash)>,
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
    last: (u64, ChainHash),
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
            last: scan.last.unwrap_or((0, ChainHash::ZERO)),
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
            last: (0, ChainHash::ZERO),
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
        self.dirty_end = self.dirty_end.max(at + head.len() as u64);
        self.io.write_at(at, &head)?;
        at += head.len() as u64;
        for body in &frame.bodies {
            self.dirty_end = self.dirty_end.max(at + body.len() as u64);
            self.io.write_at(at, body)?;
            at += body.len() as u64;
        }
        // A frame of snapshots alone is a cache: the next frame's sync makes it
        // durable, and a crash before that leaves it torn at the end, dropped.
        let synced = !(frame.cache_only && self.cache_frames_unsynced);
        if synced {
            self.io.sync_data()?;
        }
        // Past the frame only once it is where it must be (synced, or a cache).
        self.end = at;
        if let Some(last) = frame.last {
            self.last = last;
        }
        if synced {
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
        self.last = (0, ChainHash::ZERO);
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

fn fresh_generation() -> u64 {
    (cmdlog_common::time::now_ns() as u64).max(1)
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
