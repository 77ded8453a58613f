//! Crash recovery from the write-ahead log, and its health: what a writable open
//! applies, and what every open refuses because acknowledged events may be lost.
//!
//! Only a torn *last* frame (never acknowledged) is dropped quietly. A write-ahead
//! log that is missing or cut shorter than its header while `META["wal"]` says a
//! writer had it open, a damaged header or frame with readable frames after it that
//! hold events redb lacks, and frames that do not continue the log are refused by
//! name, with the last seq known good and what may be lost. The way out is
//! [`LogConfig::discard_wal_damage`](super::LogConfig), which keeps every frame up
//! to the damage, drops the rest, and reports what it dropped ([`WalDiscard`]).

use std::path::{Path, PathBuf};

use redb::{Database, ReadableTable};

use crate::error::OpenError;
use crate::journal::{self, FoundFrame, Header, Journal, JournalIo, Op, Scan};
use crate::record::Seq;
use crate::schema::{self, BLOB_CHUNKS, BLOB_META, BLOBS, META, RECORDS};

use super::Head;

/// What an open with `discard_wal_damage` dropped from a damaged write-ahead log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalDiscard {
    /// The write-ahead log.
    pub wal: PathBuf,
    /// What was wrong with it.
    pub problem: String,
    /// The log's last seq after the frames before the damage were applied.
    pub kept_through: Seq,
    /// The first and last seq of the records in the dropped frames, when any could
    /// be read.
    pub dropped_seqs: Option<(Seq, Seq)>,
    /// Readable frames dropped.
    pub dropped_frames: usize,
}

/// Whether `META["wal"]` says the write-ahead log may hold frames redb lacks.
pub(crate) fn wal_open(read: &redb::ReadTransaction) -> Result<bool, redb::Error> {
    let meta = read.open_table(META)?;
    Ok(meta
        .get(schema::WAL_STATE)?
        .is_some_and(|v| v.value() == schema::WAL_OPEN))
}

/// The first and last record seq in `frames`.
fn seq_span<'a>(frames: impl IntoIterator<Item = &'a FoundFrame>) -> Option<(Seq, Seq)> {
    let seqs: Vec<Seq> = frames
        .into_iter()
        .flat_map(|f| &f.ops)
        .filter_map(|op| match op {
            Op::Record { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    Some((*seqs.iter().min()?, *seqs.iter().max()?))
}

fn describe_span(span: Option<(Seq, Seq)>) -> String {
    match span {
        Some((a, b)) if a == b => format!("seq {a}"),
        Some((a, b)) => format!("seqs {a} to {b}"),
        None => "blobs only".into(),
    }
}

/// A problem with the write-ahead log, before the caller decides to refuse or drop.
struct Problem {
    what: String,
    dropped: Vec<FoundFrame>,
}

/// Looks at what `scan` found (`None`: no file) and returns the frames to apply, in
/// order, or the problem that makes acknowledged events unrecoverable.
/// `covered(frame)` says whether redb's file already holds everything in a frame.
fn judge(
    scan: Option<Scan>,
    wal_open: bool,
    covered: &dyn Fn(&FoundFrame) -> bool,
) -> (Vec<FoundFrame>, Option<Problem>) {
    let Some(scan) = scan else {
        let problem = wal_open.then(|| Problem {
            what: "is missing, but the log was not closed cleanly".into(),
            dropped: Vec::new(),
        });
        return (Vec::new(), problem);
    };
    match scan.header {
        Header::Short => {
            let problem = wal_open.then(|| Problem {
                what: "is shorter than its header (cut), but the log was not closed cleanly".into(),
                dropped: Vec::new(),
            });
            (Vec::new(), problem)
        }
        Header::Damaged => {
            let later = scan.unreadable.map(|(_, f)| f).unwrap_or_default();
            let uncovered: Vec<FoundFrame> = later.into_iter().filter(|f| !covered(f)).collect();
            let problem = (!uncovered.is_empty()).then(|| Problem {
                what: format!(
                    "has a damaged header, and {} readable frame(s) after it hold events the log lacks ({})",
                    uncovered.len(),
                    describe_span(seq_span(&uncovered))
                ),
                dropped: uncovered,
            });
            (Vec::new(), problem)
        }
        Header::Valid(_) => {
            let frames = scan.frames;
            let Some((offset, later)) = scan.unreadable else {
                return (frames, None);
            };
            let uncovered: Vec<FoundFrame> = later.into_iter().filter(|f| !covered(f)).collect();
            if uncovered.is_empty() {
                // A torn last frame: it was never acknowledged.
                return (frames, None);
            }
            let problem = Problem {
                what: format!(
                    "has an unreadable frame at byte {offset}, followed by {} readable frame(s) holding events the log lacks ({})",
                    uncovered.len(),
                    describe_span(seq_span(&uncovered))
                ),
                dropped: uncovered,
            };
            (frames, Some(problem))
        }
    }
}

fn refusal(wal: &Path, what: &str, kept_through: Seq) -> OpenError {
    OpenError::WalDamaged {
        wal: wal.to_path_buf(),
        problem: what.to_string(),
        kept_through,
    }
}

/// The last record redb holds.
fn redb_head(
    records: &impl ReadableTable<u64, &'static [u8]>,
    fail: &dyn Fn(String) -> OpenError,
) -> Result<Head, OpenError> {
    Ok(match records.last().map_err(|e| fail(e.to_string()))? {
        None => Head {
            seq: 0,
            hash: [0; 32],
        },
        Some((k, v)) => Head {
            seq: k.value(),
            hash: schema::decode_record(v.value())
                .map(|(hash, _, _)| hash)
                .ok_or_else(|| {
                    fail(format!(
                        "the last record, seq {}, is malformed; run `cmdlog verify`",
                        k.value()
                    ))
                })?,
        },
    })
}

/// The frames of the write-ahead log redb's file lacks, as a log that does not
/// write redb's file sees them.
pub(crate) struct FramesOver {
    /// The frames redb's file does not hold, in order.
    pub(crate) frames: Vec<FoundFrame>,
    /// How many frames redb's file already holds (a crash between a checkpoint and
    /// the write-ahead log's reset leaves them).
    pub(crate) covered: usize,
    /// redb's file's last record.
    pub(crate) redb_head: Head,
}

/// Judges the write-ahead log `scan` found (`None`: no file) beside redb's file
/// opened without writing, as recovery would: a problem that may lose acknowledged
/// events is refused by name ([`OpenError::WalDamaged`]).
pub(crate) fn frames_over(
    read: &redb::ReadTransaction,
    path: &Path,
    scan: Option<Scan>,
) -> Result<FramesOver, OpenError> {
    let wal = journal::journal_path(path);
    let storage = |message: String| OpenError::Storage {
        path: path.to_path_buf(),
        message,
    };
    let open = wal_open(read).map_err(|e| storage(e.to_string()))?;
    let records = read
        .open_table(RECORDS)
        .map_err(|e| storage(e.to_string()))?;
    let blob_meta = read
        .open_table(BLOB_META)
        .map_err(|e| storage(e.to_string()))?;
    let head = redb_head(&records, &|m| storage(m))?;
    let covered =
        |f: &FoundFrame| frame_covered(f, head.seq, &|h| blob_meta.get(h).ok().flatten().is_some());
    let (frames, problem) = judge(scan, open, &covered);
    if let Some(problem) = problem {
        let kept = seq_span(&frames).map_or(head.seq, |(_, last)| last.max(head.seq));
        return Err(refusal(&wal, &problem.what, kept));
    }
    // A frame whose records redb's file holds was checkpointed; frames of blobs
    // alone are laid over again (adding or removing a blob twice changes nothing).
    let checkpointed = |f: &FoundFrame| {
        let mut seqs = f.ops.iter().filter_map(|op| match op {
            Op::Record { seq, .. } => Some(*seq),
            _ => None,
        });
        seqs.next().is_some_and(|first| first <= head.seq)
    };
    let total = frames.len();
    let frames: Vec<FoundFrame> = frames.into_iter().filter(|f| !checkpointed(f)).collect();
    Ok(FramesOver {
        covered: total - frames.len(),
        frames,
        redb_head: head,
    })
}

/// Whether redb's file already holds everything in `frame`: every record is at or
/// below its head, or (a frame of blobs alone) every blob is stored.
fn frame_covered(frame: &FoundFrame, head: Seq, has_blob: &dyn Fn(&[u8; 32]) -> bool) -> bool {
    let mut records = false;
    for op in &frame.ops {
        match op {
            Op::Record { seq, .. } => {
                records = true;
                if *seq > head {
                    return false;
                }
            }
            Op::Blob { hash, .. } if !records && !has_blob(hash) => return false,
            _ => {}
        }
    }
    true
}

/// Applies the write-ahead log's frames that redb does not hold yet (left by a
/// crash) in one durable commit, then starts its next generation. With `discard`,
/// a damaged or mismatched tail is dropped and reported instead of refused.
pub(crate) fn recover(
    db: &Database,
    io: Box<dyn JournalIo>,
    existed: bool,
    wal: PathBuf,
    discard: bool,
) -> Result<(Journal, Option<WalDiscard>), OpenError> {
    let io_error = |source| OpenError::Io {
        path: wal.clone(),
        source,
    };
    let storage = |message: String| OpenError::Storage {
        path: wal.clone(),
        message: format!(
            "applying the write-ahead log failed: {message}; both files are unchanged and no acknowledged event is lost: free space on the disk (or fix it), then open the log again"
        ),
    };
    let scan = if existed {
        Some(journal::scan(io.as_ref()).map_err(io_error)?)
    } else {
        None
    };
    let txn = db.begin_write().map_err(|e| storage(e.to_string()))?;
    let open = {
        let meta = txn.open_table(META).map_err(|e| storage(e.to_string()))?;
        meta.get(schema::WAL_STATE)
            .map_err(|e| storage(e.to_string()))?
            .is_some_and(|v| v.value() == schema::WAL_OPEN)
    };
    let mut discarded = None;
    let mut fresh = !existed;
    let mut applied_any = false;
    // The latest snapshot the frames hold: it replaces redb's once they are applied.
    let mut snapshot = None;
    let blank = Scan {
        header: Header::Short,
        frames: Vec::new(),
        end: 0,
        dirty_end: 0,
        unreadable: None,
    };
    let resume_scan;
    {
        let mut records = txn
            .open_table(RECORDS)
            .map_err(|e| storage(e.to_string()))?;
        let mut blobs = txn.open_table(BLOBS).map_err(|e| storage(e.to_string()))?;
        let mut chunks = txn
            .open_table(BLOB_CHUNKS)
            .map_err(|e| storage(e.to_string()))?;
        let mut meta = txn
            .open_table(BLOB_META)
            .map_err(|e| storage(e.to_string()))?;
        let mut head = redb_head(&records, &|m| storage(m))?;
        let durable_head = head.seq;
        let (header, end, dirty_end) = scan
            .as_ref()
            .map_or((Header::Short, 0, 0), |s| (s.header, s.end, s.dirty_end));
        let covered = |f: &FoundFrame| {
            frame_covered(f, durable_head, &|h| meta.get(h).ok().flatten().is_some())
        };
        let (frames, problem) = judge(scan, open, &covered);
        let mut problem = problem;
        if !matches!(header, Header::Valid(_)) {
            fresh = true;
        }
        // Frames after a problem are dropped from here on.
        let mut dropped: Vec<FoundFrame> = problem
            .as_mut()
            .map(|p| std::mem::take(&mut p.dropped))
            .unwrap_or_default();
        let mut frames = frames.into_iter();
        'frames: for frame in frames.by_ref() {
            // Check the whole frame before applying any of it: a frame is one commit.
            let mut next = head;
            for op in &frame.ops {
                let mismatch = match op {
                    Op::Record { seq, value } if *seq <= head.seq => {
                        let stored = records.get(*seq).map_err(|e| storage(e.to_string()))?;
                        (stored.as_ref().map(|v| v.value()) != Some(value.as_slice()))
                            .then(|| format!("its record at seq {seq} differs from the log's"))
                    }
                    Op::Record { seq, value } if *seq == next.seq + 1 => {
                        match schema::decode_record(value) {
                            None => Some(format!("its record at seq {seq} is malformed")),
                            Some((hash, _, bytes))
                                if hash != schema::chain(&next.hash, *seq, bytes) =>
                            {
                                Some(format!(
                                    "its record at seq {seq} does not continue the hash chain"
                                ))
                            }
                            Some((hash, _, _)) => {
                                next = Head { seq: *seq, hash };
                                None
                            }
                        }
                    }
                    Op::Record { seq, .. } => Some(format!(
                        "it continues at seq {seq} but the log ends at seq {}",
                        next.seq
                    )),
                    _ => None,
                };
                if let Some(what) = mismatch {
                    problem = Some(Problem {
                        what: format!("does not continue the log: {what}"),
                        dropped: Vec::new(),
                    });
                    dropped.insert(0, frame);
                    break 'frames;
                }
            }
            // The whole frame continues the log: apply it.
            for op in frame.ops {
                match op {
                    Op::Record { seq, value } if seq == head.seq + 1 => {
                        // Its stream index entry is rebuilt from the record by the open.
                        let (hash, _, _) = schema::decode_record(&value).expect("checked");
                        records
                            .insert(seq, value.as_slice())
                            .map_err(|e| storage(e.to_string()))?;
                        head = Head { seq, hash };
                        applied_any = true;
                    }
                    Op::Record { .. } => {}
                    Op::Blob {
                        hash,
                        added_ms,
                        bytes,
                    } => {
                        if meta
                            .get(&hash)
                            .map_err(|e| storage(e.to_string()))?
                            .is_none()
                        {
                            schema::insert_blob(&mut blobs, &mut chunks, &hash, &bytes)
                                .map_err(|e| storage(e.to_string()))?;
                            meta.insert(&hash, (added_ms, bytes.len() as u64))
                                .map_err(|e| storage(e.to_string()))?;
                            applied_any = true;
                        }
                    }
                    Op::RemoveBlobs(hashes) => {
                        for hash in hashes {
                            meta.remove(&hash).map_err(|e| storage(e.to_string()))?;
                            schema::remove_blob(&mut blobs, &mut chunks, &hash)
                                .map_err(|e| storage(e.to_string()))?;
                        }
                        applied_any = true;
                    }
                    Op::Snapshot { seq, bytes } => {
                        snapshot = Some((seq, bytes));
                        applied_any = true;
                    }
                }
            }
        }
        dropped.extend(frames);
        if let Some(problem) = problem {
            if !discard {
                return Err(refusal(&wal, &problem.what, head.seq));
            }
            discarded = Some(WalDiscard {
                wal: wal.clone(),
                problem: problem.what,
                kept_through: head.seq,
                dropped_seqs: seq_span(&dropped),
                dropped_frames: dropped.len(),
            });
            fresh = true;
        }
        resume_scan = Scan {
            header,
            frames: Vec::new(),
            end,
            dirty_end,
            unreadable: None,
        };
    }
    if let Some((seq, bytes)) = snapshot {
        schema::replace_snapshot(&txn, seq, &bytes).map_err(|e| storage(e.to_string()))?;
    }
    let any_frames = resume_scan.end > journal_header_end();
    if applied_any || discarded.is_some() || open {
        // redb's file now holds everything the write-ahead log acknowledged.
        txn.open_table(META)
            .map_err(|e| storage(e.to_string()))?
            .insert(schema::WAL_STATE, schema::WAL_CLEAN)
            .map_err(|e| storage(e.to_string()))?;
        txn.commit().map_err(|e| storage(e.to_string()))?;
    } else {
        txn.abort().map_err(|e| storage(e.to_string()))?;
    }
    let journal = if fresh {
        let scan = if existed { &resume_scan } else { &blank };
        Journal::fresh(io, wal.clone(), scan).map_err(io_error)?
    } else {
        let mut journal = Journal::resume(io, wal.clone(), &resume_scan);
        if any_frames {
            // Everything in the frames is now durable in redb: start afresh.
            journal.reset().map_err(io_error)?;
        }
        journal
    };
    Ok((journal, discarded))
}

fn journal_header_end() -> u64 {
    journal::HEADER_BYTES
}
