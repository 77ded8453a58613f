//! Reading the write-ahead log: its header, its marks and its frames, and —
//! where the frames stop — what lies after, so that a torn last frame is told
//! from damage (`mod.rs` has the layout).

use crate::record::ChainHash;
use std::io;

use super::file::{Buffered, JournalIo};
use super::format::{
    FRAME_HEADER, FRAME_MAGIC, FRAMES_AT, FRAMES_AT_V1, HEADER_BYTES, MAGIC_V1, Op, TAG_BLOB,
    TAG_RECORD, TAG_REMOVE, TAG_SNAPSHOT, frame_check, header_bytes, header_with,
};
use super::mark::{self, Mark};
use crate::limits::WAL_SCAN_CHUNK_BYTES as SCAN_CHUNK_BYTES;
use crate::record::BlobHash;

/// The last record among `ops`.
pub(super) fn last_record(ops: &[Op]) -> Option<(u64, ChainHash)> {
    ops.iter().rev().find_map(|op| match op {
        Op::Record { seq, value } => {
            crate::schema::decode_record(value).map(|(hash, _, _)| (*seq, hash))
        }
        _ => None,
    })
}

pub(super) fn read_header(io: &dyn JournalIo, len: u64) -> io::Result<Header> {
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
pub(super) fn read_frame(
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
    pub(crate) last: Option<(u64, ChainHash)>,
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

/// Whether the file holds only zeros (or ends) in the frame header's length at `at`.
pub(super) fn zeros_at(io: &dyn JournalIo, at: u64, len: u64) -> io::Result<bool> {
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
