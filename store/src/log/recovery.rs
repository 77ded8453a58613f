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
use crate::journal::{self, FoundFrame, Header, Journal, JournalIo, Mark, Op, Scan};
use crate::record::ChainHash;
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
    /// Seqs acknowledged (a mark says so) that no readable frame holds.
    lost: Option<(Seq, Seq)>,
}

/// What the log itself says was acknowledged beyond what the write-ahead log's
/// frames and redb's file hold.
struct Claims {
    /// redb's file's last durable record.
    durable_head: Seq,
    /// The copy of the latest mark in the presence file, with its file's name.
    copy: Option<(Mark, PathBuf)>,
}

impl Claims {
    /// The copy's words when it claims records past `known`: the lost span.
    fn copy_beyond(&self, known: Seq) -> Option<(String, (Seq, Seq))> {
        let (mark, file) = self.copy.as_ref().filter(|(m, _)| m.seq > known)?;
        Some((
            format!(
                "{} records that short-lived appenders acknowledged through seq {} in it",
                file.display(),
                mark.seq
            ),
            (known + 1, mark.seq),
        ))
    }
}

/// Looks at what `scan` found (`None`: no file) and returns the frames to apply, in
/// order, or the problem that makes acknowledged events unrecoverable.
/// `covered(frame)` says whether redb's file already holds everything in a frame.
fn judge(
    scan: Option<Scan>,
    wal_open: bool,
    claims: &Claims,
    covered: &dyn Fn(&FoundFrame) -> bool,
) -> (Vec<FoundFrame>, Option<Problem>) {
    let head = claims.durable_head;
    let missing = |what: &str| {
        if wal_open {
            return Some(Problem {
                what: format!("{what}, but the log was not closed cleanly"),
                dropped: Vec::new(),
                lost: None,
            });
        }
        let (words, lost) = claims.copy_beyond(head)?;
        Some(Problem {
            what: format!("{what}, but {words} ({} lost)", describe_span(Some(lost))),
            dropped: Vec::new(),
            lost: Some(lost),
        })
    };
    let Some(scan) = scan else {
        return (Vec::new(), missing("is missing"));
    };
    let Some(_) = scan.header.generation() else {
        if scan.header == Header::Short {
            return (Vec::new(), missing("is shorter than its header (cut)"));
        }
        // A damaged header, and no mark whose generation reads.
        let later = scan.unreadable.map(|(_, f)| f).unwrap_or_default();
        let uncovered: Vec<FoundFrame> = later.into_iter().filter(|f| !covered(f)).collect();
        let known = seq_span(&uncovered).map_or(head, |(_, last)| last.max(head));
        let claimed = scan
            .mark
            .map_or(0, |m| m.seq)
            .max(claims.copy.as_ref().map_or(0, |(m, _)| m.seq));
        if uncovered.is_empty() && claimed <= head {
            return (Vec::new(), None);
        }
        let lost = (claimed > known).then_some((known + 1, claimed));
        let problem = Problem {
            what: format!(
                "has a damaged header, and {} readable frame(s) after it hold events the log lacks ({}){}",
                uncovered.len(),
                describe_span(seq_span(&uncovered)),
                lost.map_or(String::new(), |l| format!(
                    "; acknowledged and unreadable: {}",
                    describe_span(Some(l))
                ))
            ),
            dropped: uncovered,
            lost,
        };
        return (Vec::new(), Some(problem));
    };
    let short_of_mark = scan.short_of_mark();
    let mark = scan.mark;
    let frames = scan.frames;
    let known = seq_span(&frames).map_or(head, |(_, last)| last.max(head));
    let (offset, later) = scan.unreadable.unwrap_or((scan.end, Vec::new()));
    let uncovered: Vec<FoundFrame> = later.into_iter().filter(|f| !covered(f)).collect();
    let after = if uncovered.is_empty() {
        String::new()
    } else {
        format!(
            "; {} readable frame(s) after it hold events the log lacks ({})",
            uncovered.len(),
            describe_span(seq_span(&uncovered))
        )
    };
    if let Some(mark) = mark.filter(|_| short_of_mark) {
        // Frames a checkpoint already put in redb's file (a crash came before the
        // write-ahead log's reset) lose nothing.
        let checkpointed = mark.seq > 0 && mark.seq <= head && uncovered.is_empty();
        if !checkpointed {
            let lost = (mark.seq > known).then_some((known + 1, mark.seq));
            let what = format!(
                "has damaged frames that were acknowledged: its frames end at byte {offset} ({}), but it acknowledged frames through byte {} ({}){after}",
                scan.stop,
                mark.end,
                match lost {
                    Some(lost) => format!("{} cannot be applied", describe_span(Some(lost))),
                    None => "blobs only".into(),
                }
            );
            return (
                frames,
                Some(Problem {
                    what,
                    dropped: uncovered,
                    lost,
                }),
            );
        }
    }
    if !uncovered.is_empty() {
        let what = format!("has an unreadable frame at byte {offset}{after}");
        return (
            frames,
            Some(Problem {
                what,
                dropped: uncovered,
                lost: None,
            }),
        );
    }
    if let Some((words, lost)) = claims.copy_beyond(known) {
        let what = format!(
            "holds frames through seq {known} only, but {words} ({} lost: the write-ahead log was cut or replaced)",
            describe_span(Some(lost))
        );
        return (
            frames,
            Some(Problem {
                what,
                dropped: Vec::new(),
                lost: Some(lost),
            }),
        );
    }
    // Nothing, or a torn last frame: never acknowledged.
    (frames, None)
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
            hash: ChainHash::ZERO,
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
    copy: Option<Mark>,
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
    let claims = Claims {
        durable_head: head.seq,
        copy: copy.map(|m| (m, super::presence_path(path))),
    };
    let (frames, problem) = judge(scan, open, &claims, &covered);
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
    copy: Option<(Mark, PathBuf)>,
    discard: bool,
) -> Result<(Journal, Option<WalDiscard>), OpenError> {
    let io_error = |source| OpenError::Io {
        path: wal.clone(),
        source,
    };
    let scan = if existed {
        Some(journal::scan(io.as_ref()).map_err(io_error)?)
    } else {
        None
    };
    let frame_bytes = scan.as_ref().map_or(0, Scan::frame_bytes);
    let storage = |message: String| OpenError::Storage {
        path: wal.clone(),
        message: format!(
            "applying the write-ahead log failed: {message}; no acknowledged event is lost and what the log holds is unchanged: free {} on the disk (or fix it), then open the log again",
            space_needed(frame_bytes)
        ),
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
    let blank = Scan::nothing();
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
        let position = scan.as_ref().map_or_else(Scan::nothing, Scan::position);
        let header = position.header;
        let covered = |f: &FoundFrame| {
            frame_covered(f, durable_head, &|h| meta.get(h).ok().flatten().is_some())
        };
        let claims = Claims { durable_head, copy };
        let (frames, problem) = judge(scan, open, &claims, &covered);
        let mut problem = problem;
        // Only a version 2 generation with a valid header goes on.
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
            if let Some(what) = mismatch(&records, head, &frame, &storage)? {
                problem = Some(Problem {
                    what: format!("does not continue the log: {what}"),
                    dropped: Vec::new(),
                    lost: None,
                });
                dropped.insert(0, frame);
                break 'frames;
            }
            // The whole frame continues the log: apply it.
            let mut tables = (&mut records, &mut blobs, &mut chunks, &mut meta);
            applied_any |= apply(&mut tables, &mut head, frame, &mut snapshot, &storage)?;
        }
        dropped.extend(frames);
        if let Some(problem) = problem {
            if !discard {
                return Err(refusal(&wal, &problem.what, head.seq));
            }
            let dropped_seqs = match (seq_span(&dropped), problem.lost) {
                (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
                (span, lost) => span.or(lost),
            };
            discarded = Some(WalDiscard {
                wal: wal.clone(),
                problem: problem.what,
                kept_through: head.seq,
                dropped_seqs,
                dropped_frames: dropped.len(),
            });
            fresh = true;
        }
        resume_scan = position;
    }
    if let Some((seq, bytes)) = snapshot {
        schema::replace_snapshot(&txn, seq, &bytes).map_err(|e| storage(e.to_string()))?;
    }
    let any_frames = resume_scan.frame_bytes() > 0;
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

/// Why `frame` does not continue the log whose head is `head`, if it does not:
/// a record it repeats differs, one it adds is malformed, breaks the hash
/// chain or leaves a gap.
fn mismatch(
    records: &redb::Table<u64, &[u8]>,
    head: Head,
    frame: &FoundFrame,
    storage: &dyn Fn(String) -> OpenError,
) -> Result<Option<String>, OpenError> {
    let mut next = head;
    for op in &frame.ops {
        let Op::Record { seq, value } = op else {
            continue;
        };
        let what = if *seq <= head.seq {
            let stored = records.get(*seq).map_err(|e| storage(e.to_string()))?;
            (stored.as_ref().map(|v| v.value()) != Some(value.as_slice()))
                .then(|| format!("its record at seq {seq} differs from the log's"))
        } else if *seq == next.seq + 1 {
            match schema::decode_record(value) {
                None => Some(format!("its record at seq {seq} is malformed")),
                Some((hash, _, bytes)) if hash != schema::chain(&next.hash, *seq, bytes) => Some(
                    format!("its record at seq {seq} does not continue the hash chain"),
                ),
                Some((hash, _, _)) => {
                    next = Head { seq: *seq, hash };
                    None
                }
            }
        } else {
            Some(format!(
                "it continues at seq {seq} but the log ends at seq {}",
                next.seq
            ))
        };
        if what.is_some() {
            return Ok(what);
        }
    }
    Ok(None)
}

/// The tables a frame is applied to: records, blobs, their chunks, their meta.
type Tables<'a, 't> = (
    &'a mut redb::Table<'t, u64, &'static [u8]>,
    &'a mut redb::Table<'t, &'static [u8; 32], &'static [u8]>,
    &'a mut redb::Table<'t, (&'static [u8; 32], u32), &'static [u8]>,
    &'a mut redb::Table<'t, &'static [u8; 32], (u64, u64)>,
);

/// Applies a frame that continues the log (checked by [`mismatch`]); whether it
/// changed anything. A snapshot it holds is kept in `snapshot`, to replace
/// redb's once every frame is applied.
fn apply(
    (records, blobs, chunks, meta): &mut Tables,
    head: &mut Head,
    frame: FoundFrame,
    snapshot: &mut Option<(Seq, Vec<u8>)>,
    storage: &dyn Fn(String) -> OpenError,
) -> Result<bool, OpenError> {
    let mut applied = false;
    for op in frame.ops {
        match op {
            Op::Record { seq, value } if seq == head.seq + 1 => {
                // Its stream index entry is rebuilt from the record by the open.
                let (hash, _, _) = schema::decode_record(&value).expect("checked");
                records
                    .insert(seq, value.as_slice())
                    .map_err(|e| storage(e.to_string()))?;
                *head = Head { seq, hash };
                applied = true;
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
                    schema::insert_blob(blobs, chunks, &hash, &bytes)
                        .map_err(|e| storage(e.to_string()))?;
                    meta.insert(&hash, (added_ms, bytes.len() as u64))
                        .map_err(|e| storage(e.to_string()))?;
                    applied = true;
                }
            }
            Op::RemoveBlobs(hashes) => {
                for hash in hashes {
                    meta.remove(&hash).map_err(|e| storage(e.to_string()))?;
                    schema::remove_blob(blobs, chunks, &hash)
                        .map_err(|e| storage(e.to_string()))?;
                }
                applied = true;
            }
            Op::Snapshot { seq, bytes } => {
                *snapshot = Some((seq, bytes));
                applied = true;
            }
        }
    }
    Ok(applied)
}

/// The free space a checkpoint of `frame_bytes` of frames may need, in words: redb
/// writes every page it changes anew before it frees the old one, so the log file
/// may grow by up to about twice what the frames hold, plus its own bookkeeping.
fn space_needed(frame_bytes: u64) -> String {
    let bytes = frame_bytes * 2 + 1024 * 1024;
    let mib = bytes.div_ceil(1024 * 1024);
    format!(
        "at least {mib} MiB (the write-ahead log's frames hold {frame_bytes} bytes, which log.redb takes in)"
    )
}
