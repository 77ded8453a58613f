//! A fault-injection sweep over a log made by short-lived appenders, as SQLite's
//! and redb's fault suites do: zeros, flipped bits and cuts at every frame and every
//! 4 KiB block of the write-ahead log, the presence file's copy of its marks, and
//! deleted files. Each case must end with every acknowledged event intact, or with
//! an open that refuses and names what was lost — never a shorter log said to be
//! fine (design R14).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::common::{rec, texts};
use cmdlog_store::{Log, LogConfig, OpenError, journal_path, presence_path};

/// Where the write-ahead log's frames start (after its header and two mark blocks).
const FRAMES_AT: u64 = 3 * 4096;
const BLOCK: u64 = 4096;

/// A file's bytes up to its last non-zero one, and its length (the write-ahead log
/// is 64 MiB, nearly all of it a hole).
#[derive(Clone, PartialEq, Eq)]
struct Bytes {
    used: Vec<u8>,
    len: u64,
}

impl Bytes {
    fn read(path: &Path) -> Option<Bytes> {
        const CHUNK: usize = 64 * 1024;
        let mut used = std::fs::read(path).ok()?;
        let len = used.len() as u64;
        // Compared a chunk at a time (a `memcmp`): byte loops are slow unoptimized.
        let zeros = [0u8; CHUNK];
        let chunks = used.len().div_ceil(CHUNK);
        let last = (0..chunks).rev().find(|&c| {
            let chunk = &used[c * CHUNK..((c + 1) * CHUNK).min(used.len())];
            chunk != &zeros[..chunk.len()]
        });
        let end = last.map_or(0, |c| {
            let chunk = &used[c * CHUNK..((c + 1) * CHUNK).min(used.len())];
            c * CHUNK + chunk.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
        });
        used.truncate(end);
        Some(Bytes { used, len })
    }

    /// Fills `range` with zeros (within the file's length).
    fn zero(&mut self, at: usize, n: usize) {
        let end = (at + n).min(self.used.len());
        if at < end {
            self.used[at..end].fill(0);
        }
    }

    fn flip(&mut self, at: usize, bit: u8) {
        if self.used.len() <= at {
            self.used.resize(at + 1, 0);
        }
        self.used[at] ^= bit;
    }

    fn cut(&mut self, len: usize) {
        self.used.truncate(len);
        self.len = self.len.min(len as u64);
    }

    fn write(&self, path: &Path) {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .unwrap();
        file.write_all_at(&self.used, 0).unwrap();
        file.set_len(self.len).unwrap();
    }
}

/// The log's three files.
#[derive(Clone)]
struct Files {
    log: Bytes,
    wal: Option<Bytes>,
    presence: Option<Bytes>,
}

impl Files {
    fn read(path: &Path) -> Files {
        Files {
            log: Bytes::read(path).unwrap(),
            wal: Bytes::read(&journal_path(path)),
            presence: Bytes::read(&presence_path(path)),
        }
    }

    fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("log.redb");
        self.log.write(&path);
        if let Some(wal) = &self.wal {
            wal.write(&journal_path(&path));
        }
        if let Some(presence) = &self.presence {
            presence.write(&presence_path(&path));
        }
        path
    }
}

/// A log whose first record is in redb's file, then twenty short-lived appenders
/// (as `cmdlog hook` runs them), one to three records each, some with a blob.
fn made_by_short_lived_appenders() -> (tempfile::TempDir, PathBuf, Vec<String>) {
    #![allow(clippy::needless_range_loop)]
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("in redb")]).unwrap();
    drop(log);
    for process in 0..20 {
        let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
        if process % 7 == 3 {
            log.put_blob(vec![process as u8; 3000 + process * 100])
                .unwrap();
        }
        let records = (0..1 + process % 3)
            .map(|i| {
                rec(&format!(
                    "hook payload {process}.{i} {}",
                    "x".repeat(process * 37)
                ))
            })
            .collect();
        log.append(records).unwrap();
        drop(log);
    }
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    let texts = texts(&log);
    drop(log);
    (dir, path, texts)
}

/// The frames of a write-ahead log: (start, length).
fn frames(wal: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = FRAMES_AT as usize;
    while wal.get(at..at + 4) == Some(b"CLWF") {
        let payload = u32::from_le_bytes(wal[at + 12..at + 16].try_into().unwrap()) as usize;
        let bodies = u64::from_le_bytes(wal[at + 16..at + 24].try_into().unwrap()) as usize;
        let len = 40 + payload + bodies;
        out.push((at as u64, len as u64));
        at += len;
    }
    out
}

/// How one damaged copy ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Intact,
    Refused,
    Silent(String),
}

/// Opens a damaged copy read-only, then writable, then short-lived: each must read
/// every acknowledged record, or refuse naming the write-ahead log and the seqs.
fn judge(files: &Files, acknowledged: &[String]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = files.write(dir.path());
    let check = |opened: Result<Log, OpenError>, how: &str| -> Result<bool, String> {
        match opened {
            Ok(log) => {
                let got = texts(&log);
                if got != acknowledged {
                    return Err(format!(
                        "{how}: opened with {} of {} records",
                        got.len(),
                        acknowledged.len()
                    ));
                }
                match log.verify_chain(|_| {}) {
                    Ok(Ok(_)) => {}
                    Ok(Err(broken)) => return Err(format!("{how}: chain: {broken:?}")),
                    Err(e) => return Err(format!("{how}: chain: {e}")),
                }
                Ok(true)
            }
            Err(e @ OpenError::WalDamaged { .. }) => {
                let message = e.to_string();
                if !message.contains("seq") || !message.contains("--discard-damaged-wal") {
                    return Err(format!("{how}: a refusal that names no seq: {message}"));
                }
                Ok(false)
            }
            Err(OpenError::NeedsRecovery { .. }) if how == "read-only" => Ok(false),
            Err(e) => Err(format!("{how}: {e}")),
        }
    };
    let before = Files::read(&path);
    let read_only = check(
        Log::open_read_only(&path, LogConfig::default()),
        "read-only",
    );
    let writable = check(Log::open(&path, LogConfig::default()), "writable");
    let (read_only, writable) = match (read_only, writable) {
        (Err(e), _) | (_, Err(e)) => return Outcome::Silent(e),
        (Ok(r), Ok(w)) => (r, w),
    };
    if !writable {
        // A refusal changes neither the write-ahead log nor the presence file, and
        // the way out keeps every record before the damage and names the rest.
        let after = Files::read(&path);
        if after.wal != before.wal || after.presence != before.presence {
            return Outcome::Silent("a refused open changed the files".into());
        }
        let discarding = LogConfig {
            discard_wal_damage: true,
            ..LogConfig::default()
        };
        let log = match Log::open(&path, discarding) {
            Ok(log) => log,
            Err(e) => return Outcome::Silent(format!("the way out failed: {e}")),
        };
        let Some(discard) = log.wal_discard().cloned() else {
            return Outcome::Silent("the way out dropped nothing".into());
        };
        let kept = discard.kept_through as usize;
        let named = discard.dropped_seqs.is_some_and(|(first, last)| {
            first as usize <= kept + 1 && last as usize >= acknowledged.len()
        });
        if texts(&log) != acknowledged[..kept] || !named {
            return Outcome::Silent(format!(
                "the way out kept or named the wrong seqs: {discard:?}"
            ));
        }
        return Outcome::Refused;
    }
    if !read_only && Log::open_read_only(&path, LogConfig::default()).is_err() {
        return Outcome::Silent("still unreadable after a writable open".into());
    }
    // The recovered log takes short-lived appends after every acknowledged record.
    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    let receipt = log.append(vec![rec("after")]).unwrap();
    if receipt.first != acknowledged.len() as u64 + 1 {
        return Outcome::Silent(format!("the next append took seq {}", receipt.first));
    }
    Outcome::Intact
}

#[test]
fn every_fault_in_the_write_ahead_log_ends_intact_or_named_never_silent() {
    let (_dir, path, acknowledged) = made_by_short_lived_appenders();
    // One in redb, then 1 to 3 records from each of the twenty.
    assert_eq!(
        acknowledged.len(),
        1 + (0..20).map(|p| 1 + p % 3).sum::<usize>()
    );
    let pristine = Files::read(&path);
    let wal = pristine.wal.clone().unwrap();
    let presence = pristine
        .presence
        .clone()
        .expect("short-lived appenders leave it");
    let frames = frames(&wal.used);
    assert_eq!(frames.len(), 20 + 3, "one frame per append, blobs included");
    let data_end = frames.last().map_or(FRAMES_AT, |(at, len)| at + len);

    let mut cases: Vec<(String, Files)> = Vec::new();
    let with_wal = |name: String, edit: &dyn Fn(&mut Bytes)| {
        let mut files = pristine.clone();
        edit(files.wal.as_mut().unwrap());
        (name, files)
    };
    for (i, &(at, len)) in frames.iter().enumerate() {
        let (at, len) = (at as usize, len as usize);
        cases.push(with_wal(
            format!("frame {i}: 40 zeros over its header"),
            &|w| w.zero(at, 40),
        ));
        cases.push(with_wal(format!("frame {i}: zeros over all of it"), &|w| {
            w.zero(at, len)
        }));
        for (what, offset) in [
            ("magic", 1),
            ("header", 20),
            ("payload", 41),
            ("end", len - 1),
        ] {
            cases.push(with_wal(
                format!("frame {i}: a bit flipped in its {what}"),
                &|w| w.flip(at + offset, 0x04),
            ));
        }
        for (what, cut) in [("start", at), ("middle", at + len / 2)] {
            cases.push(with_wal(
                format!("frame {i}: the file cut at its {what}"),
                &|w| w.cut(cut),
            ));
        }
    }
    cases.push(with_wal("the file cut after its last frame".into(), &|w| {
        w.cut(data_end as usize)
    }));
    let blocks = data_end.div_ceil(BLOCK) + 1;
    for block in 0..blocks {
        let at = (block * BLOCK) as usize;
        cases.push(with_wal(format!("block {block}: zeros"), &|w| {
            w.zero(at, BLOCK as usize)
        }));
        cases.push(with_wal(format!("block {block}: a bit flipped"), &|w| {
            w.flip(at + 77, 0x40)
        }));
        cases.push(with_wal(format!("the file cut at block {block}"), &|w| {
            w.cut(at)
        }));
    }
    let mut deleted = pristine.clone();
    deleted.wal = None;
    cases.push(("the write-ahead log deleted".into(), deleted));
    let mut deleted = pristine.clone();
    deleted.presence = None;
    cases.push(("the presence file deleted".into(), deleted));
    let mut zeroed = pristine.clone();
    zeroed.presence = Some(Bytes {
        used: Vec::new(),
        len: presence.len,
    });
    cases.push(("the presence file zeroed".into(), zeroed));
    let mut cut = pristine.clone();
    cut.wal.as_mut().unwrap().cut(FRAMES_AT as usize);
    cut.presence = None;
    cases.push((
        "the write-ahead log cut below its frames, the presence file deleted".into(),
        cut,
    ));

    let (mut intact, mut refused, mut silent) = (0, 0, Vec::new());
    for (name, files) in &cases {
        match judge(files, &acknowledged) {
            Outcome::Intact => intact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Silent(why) => silent.push(format!("{name}: {why}")),
        }
    }
    println!(
        "fault sweep: {} cases ({} frames, {blocks} blocks of 4 KiB): {intact} intact, {refused} refused with a name, {} silent",
        cases.len(),
        frames.len(),
        silent.len()
    );
    assert!(silent.is_empty(), "silent:\n{}", silent.join("\n"));
    assert!(intact > 0 && refused > 0);
}
