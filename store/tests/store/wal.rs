//! The write-ahead log: what it acknowledged is in the log after a crash, whatever
//! redb's file held then.

use std::path::{Path, PathBuf};

use super::common::{rec, texts};
use cmdlog_store::{BlobHash, Log, LogConfig, OpenError, journal_path};

use cmdlog_test_support::tamper::crash_copy;

/// Where the write-ahead log's frames start (after its header and two mark blocks).
const FRAMES_AT: u64 = 3 * 4096;

/// Copies a log's two files as they are now: what a crash at this moment leaves.
fn copy_files(from: &Path, to_dir: &Path, log: bool) -> PathBuf {
    let to = to_dir.join("log.redb");
    if log {
        std::fs::copy(from, &to).unwrap();
    }
    std::fs::copy(journal_path(from), journal_path(&to)).unwrap();
    to
}

fn discarding() -> LogConfig {
    LogConfig {
        discard_wal_damage: true,
        ..LogConfig::default()
    }
}

/// A log that acknowledged `n` single-record appends after its last checkpoint,
/// copied as a crash leaves it: redb's file as of the checkpoint, every frame in
/// the write-ahead log. Returns the copy and the texts the crashed process had.
fn crashed_with_frames(n: usize) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let (crashed, path, texts, wals) = crashed_in_steps(n);
    std::fs::write(journal_path(&path), &wals[n]).unwrap();
    (crashed, path, texts)
}

fn refusal(path: &Path) -> String {
    let err = Log::open(path, LogConfig::default()).unwrap_err();
    assert!(matches!(err, OpenError::WalDamaged { .. }), "{err}");
    let read_only = Log::open_read_only(path, LogConfig::default()).unwrap_err();
    assert!(
        matches!(read_only, OpenError::WalDamaged { .. }),
        "{read_only}"
    );
    let message = err.to_string();
    assert!(message.contains("log.redb-wal"), "{message}");
    assert!(
        message.contains("cmdlog recover --discard-damaged-wal"),
        "{message}"
    );
    message
}

fn flip(path: &Path, offset: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(journal_path(path))
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    file.write_all_at(&[byte[0] ^ 0x10], offset).unwrap();
}

#[test]
fn a_missing_write_ahead_log_after_a_crash_is_refused_and_after_a_clean_close_is_not() {
    let (_dir, path, texts) = crashed_with_frames(5);
    std::fs::remove_file(journal_path(&path)).unwrap();
    let message = refusal(&path);
    assert!(message.contains("is missing"), "{message}");
    assert!(message.contains("seqs up to 1"), "{message}");
    // Nothing was changed by the refusals; the way out opens it and says so.
    let log = Log::open(&path, discarding()).unwrap();
    assert_eq!(log.head().seq, 1);
    assert!(log.wal_discard().unwrap().problem.contains("missing"));
    assert_eq!(texts.len(), 6);
    drop(log);

    // After a clean close redb's file holds everything: no write-ahead log is needed.
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("log.redb");
    let log = Log::open(&clean, LogConfig::default()).unwrap();
    log.append(vec![rec("one")]).unwrap();
    drop(log);
    std::fs::remove_file(journal_path(&clean)).unwrap();
    assert_eq!(
        Log::open(&clean, LogConfig::default()).unwrap().head().seq,
        1
    );
}

#[test]
fn a_cut_write_ahead_log_is_refused_and_a_cut_at_a_frame_boundary_cannot_be_seen() {
    for len in [0u64, 20, 100] {
        let (_dir, path, _) = crashed_with_frames(3);
        std::fs::OpenOptions::new()
            .write(true)
            .open(journal_path(&path))
            .unwrap()
            .set_len(len)
            .unwrap();
        let message = refusal(&path);
        assert!(
            message.contains("shorter than its header"),
            "{len}: {message}"
        );
    }
    // Cut right after the header, or at a frame boundary: the marks say how far the
    // frames were acknowledged.
    let (_dir, path, _) = crashed_with_frames(3);
    let cut = |len: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(journal_path(&path))
            .unwrap()
            .set_len(len)
            .unwrap()
    };
    let bytes = std::fs::read(journal_path(&path)).unwrap();
    let second_end = FRAMES_AT + frame_len(&bytes, FRAMES_AT);
    let second_end = second_end + frame_len(&bytes, second_end);
    cut(second_end);
    let message = refusal(&path);
    assert!(message.contains("acknowledged"), "{message}");
    assert!(message.contains("seq 4 cannot be applied"), "{message}");
    cut(4096);
    let message = refusal(&path);
    assert!(message.contains("shorter than its header"), "{message}");
}

#[test]
fn a_damaged_header_is_read_through_its_marks_and_refused_without_them() {
    let (_dir, path, texts) = crashed_with_frames(4);
    flip(&path, 20);
    // The marks name the generation, and its frames read: nothing is lost.
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(self::texts(&log), texts);
    assert!(log.wal_discard().is_none());
    drop(log);

    let (_dir, path, _) = crashed_with_frames(4);
    for at in [20, 4096, 8192] {
        flip(&path, at);
    }
    let message = refusal(&path);
    assert!(message.contains("damaged header"), "{message}");
    assert!(message.contains("seqs 2 to 5"), "{message}");
}

#[test]
fn a_damaged_frame_followed_by_a_good_one_is_refused_and_discard_keeps_the_frames_before_it() {
    let (_dir, path, texts) = crashed_with_frames(4);
    // The second frame's payload: the first (seq 2) stays readable.
    let first = std::fs::read(journal_path(&path)).unwrap();
    let second_at = FRAMES_AT + frame_len(&first, FRAMES_AT);
    flip(&path, second_at + 40 + 3);
    let message = refusal(&path);
    assert!(
        message.contains(&format!("frames end at byte {second_at}")),
        "{message}"
    );
    assert!(
        message.contains("seqs 3 to 5 cannot be applied"),
        "{message}"
    );
    assert!(
        message.contains("readable frame(s) after it hold events the log lacks (seqs 4 to 5)"),
        "{message}"
    );
    assert!(message.contains("seqs up to 2"), "{message}");
    let log = Log::open(&path, discarding()).unwrap();
    let discard = log.wal_discard().unwrap().clone();
    assert_eq!(discard.kept_through, 2);
    assert_eq!(discard.dropped_seqs, Some((3, 5)));
    assert_eq!(discard.dropped_frames, 2);
    assert_eq!(self::texts(&log), texts[..2]);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap().seq, 2);
}

#[test]
fn a_torn_last_frame_is_dropped_quietly_and_a_damaged_one_is_named() {
    use std::os::unix::fs::FileExt;
    let (_dir, path, _) = crashed_with_frames(3);
    let acknowledged = std::fs::read(journal_path(&path)).unwrap();
    let mut at = FRAMES_AT;
    let mut starts = Vec::new();
    while acknowledged[at as usize..at as usize + 4] == *b"CLWF" {
        starts.push(at);
        at += frame_len(&acknowledged, at);
    }
    assert_eq!(starts.len(), 3);
    // Damage to the acknowledged last frame (its last bytes zeroed) is named.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(journal_path(&path))
        .unwrap();
    file.write_all_at(&[0u8; 5], at - 5).unwrap();
    let message = refusal(&path);
    assert!(message.contains("seq 4 cannot be applied"), "{message}");

    // A crash in the fourth frame's sync: part of it reached the disk, and no mark
    // says it was acknowledged. It is dropped quietly.
    let (_dir, path, texts, wals) = crashed_in_steps(4);
    let at = at as usize;
    let fourth = frame_len(&wals[4], at as u64) as usize;
    let mut torn = wals[3].clone();
    torn[at..at + fourth / 2].copy_from_slice(&wals[4][at..at + fourth / 2]);
    std::fs::write(journal_path(&path), &torn).unwrap();
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(self::texts(&log), texts[..4]);
    assert!(log.wal_discard().is_none());
}

/// Like [`crashed_with_frames`], with the write-ahead log as it was after each
/// append (index 0: before the first).
fn crashed_in_steps(n: usize) -> (tempfile::TempDir, PathBuf, Vec<String>, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("checkpointed")]).unwrap();
    drop(log);
    let crashed = tempfile::tempdir().unwrap();
    let crashed_path = copy_files(&path, crashed.path(), true);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let mut wals = vec![std::fs::read(journal_path(&path)).unwrap()];
    for i in 0..n {
        log.append(vec![rec(&format!("acknowledged {i}"))]).unwrap();
        wals.push(std::fs::read(journal_path(&path)).unwrap());
    }
    let texts = texts(&log);
    std::fs::copy(&path, &crashed_path).unwrap();
    drop(log);
    (crashed, crashed_path, texts, wals)
}

/// The length of the frame at `at`: its 40-byte header, payload and bodies.
fn frame_len(bytes: &[u8], at: u64) -> u64 {
    let at = at as usize;
    let payload = u32::from_le_bytes(bytes[at + 12..at + 16].try_into().unwrap()) as u64;
    let bodies = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap());
    40 + payload + bodies
}

#[test]
fn frames_redb_never_got_are_applied_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("before")]).unwrap();
    drop(log);
    // redb's file as of the last checkpoint (the clean close)...
    let crashed = tempfile::tempdir().unwrap();
    let crashed_path = copy_files(&path, crashed.path(), true);

    let log = Log::open(&path, LogConfig::default()).unwrap();
    let gone = log.put_blob(b"collected".to_vec()).unwrap();
    for i in 0..50 {
        log.append(vec![rec(&format!("event {i}")), rec("pair")])
            .unwrap();
    }
    let blob = log.put_blob(vec![9u8; 300_000]).unwrap();
    assert_eq!(log.remove_blobs(vec![gone]).unwrap(), 1);
    let head = log.head();
    let expected = texts(&log);
    // ...and the write-ahead log as the process left it when it died.
    copy_files(&path, crashed.path(), false);
    drop(log);

    // A read-only open lays the frames over redb's file and writes nothing...
    let redb_before = std::fs::read(&crashed_path).unwrap();
    let read = Log::open_read_only(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(read.head(), head);
    assert_eq!(texts(&read), expected);
    assert_eq!(read.verify_chain(|_| {}).unwrap().unwrap(), head);
    assert_eq!(read.get_blob(&blob).unwrap().unwrap(), vec![9u8; 300_000]);
    assert!(!read.has_blob(&gone).unwrap());
    drop(read);
    assert!(std::fs::read(&crashed_path).unwrap() == redb_before);
    // ...and the writable open applies them.
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
    assert_eq!(texts(&log), expected);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap(), head);
    assert_eq!(
        log.stream("s1", 0).unwrap().len(),
        expected.iter().filter(|t| t.len() % 3 == 1).count()
    );
    assert_eq!(log.get_blob(&blob).unwrap().unwrap(), vec![9u8; 300_000]);
    assert!(
        !log.has_blob(&gone).unwrap(),
        "the removal was acknowledged"
    );
    drop(log);
    // Applied once: a read-only open needs nothing now.
    let log = Log::open_read_only(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
}

#[test]
fn a_crash_after_redb_got_the_frames_applies_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for i in 0..20 {
        log.append(vec![rec(&format!("event {i}"))]).unwrap();
    }
    let head = log.head();
    // Both files mid-run: redb holds the frames non-durably, here all of them.
    let crashed = tempfile::tempdir().unwrap();
    let crashed_path = copy_files(&path, crashed.path(), true);
    drop(log);
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
    assert_eq!(log.range(1, u64::MAX).unwrap().len(), 20);
    assert_eq!(log.append(vec![rec("next")]).unwrap().first, 21);
}

#[test]
fn a_write_ahead_log_that_does_not_continue_the_log_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    drop(Log::open(&path, LogConfig::default()).unwrap());
    let empty = tempfile::tempdir().unwrap();
    let empty_path = copy_files(&path, empty.path(), true);

    // Frames that start at seq 2, beside a log that ends at seq 0.
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("one")]).unwrap();
    drop(log);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("two")]).unwrap();
    std::fs::copy(journal_path(&path), journal_path(&empty_path)).unwrap();
    drop(log);

    let err = Log::open(&empty_path, LogConfig::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("continues at seq 2 but the log ends at seq 0"),
        "{message}"
    );
    assert!(
        message.contains("cmdlog recover --discard-damaged-wal"),
        "{message}"
    );
    // The way out works, says what it dropped, and the log itself lost nothing.
    let log = Log::open(&empty_path, discarding()).unwrap();
    assert_eq!(log.head().seq, 0);
    let discard = log.wal_discard().expect("the frames were dropped");
    assert_eq!(discard.dropped_seqs, Some((2, 2)));
    drop(log);
    let log = Log::open(&empty_path, LogConfig::default()).unwrap();
    assert!(log.wal_discard().is_none());
}

#[test]
fn a_new_log_never_takes_the_frames_of_a_deleted_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("old")]).unwrap();
    let crashed = tempfile::tempdir().unwrap();
    copy_files(&path, crashed.path(), false);
    drop(log);
    // Only the write-ahead log is left; the log file was deleted.
    let path = crashed.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.head().seq, 0);
}

#[test]
fn a_clean_close_leaves_no_frames_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("one")]).unwrap();
    log.put_blob(b"bytes".to_vec()).unwrap();
    drop(log);
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(log.head().seq, 1);
    assert!(log.has_blob(&BlobHash::of(b"bytes")).unwrap());
}

#[test]
fn a_large_blob_goes_to_redb_durably_and_checkpoints_the_frames_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for i in 0..10 {
        log.append(vec![rec(&format!("event {i}"))]).unwrap();
    }
    let big = log.put_blob(vec![3u8; 2 * 1024 * 1024]).unwrap();
    // A crash now: redb's file alone holds everything.
    let crashed = tempfile::tempdir().unwrap();
    let crashed_path = copy_files(&path, crashed.path(), true);
    let head = log.head();
    drop(log);
    // Whatever frames the copy caught are already in redb's file: none is refused.
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
    assert_eq!(log.get_blob(&big).unwrap().unwrap().len(), 2 * 1024 * 1024);
}

#[test]
fn a_bulk_append_goes_to_redb_durably_and_the_chain_continues_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for i in 0..5 {
        log.append(vec![rec(&format!("event {i}"))]).unwrap();
    }
    // 3 MiB of records in one append: past the direct threshold.
    let bulk: Vec<_> = (0..768)
        .map(|i| rec(&format!("{i:04}{}", "x".repeat(4096))))
        .collect();
    log.append(bulk).unwrap();
    log.append(vec![rec("after")]).unwrap();
    let crashed = tempfile::tempdir().unwrap();
    let crashed_path = copy_files(&path, crashed.path(), true);
    let head = log.head();
    drop(log);
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(
        log.head(),
        head,
        "a crash after the bulk append loses nothing"
    );
    assert_eq!(head.seq, 5 + 768 + 1);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap(), head);
}

#[test]
fn a_fault_at_any_point_of_recovery_leaves_a_log_the_next_open_recovers() {
    use cmdlog_store::{FaultKind, FaultPlan, open_faulty};
    // A crash state: redb as of a checkpoint, the write-ahead log with 11 frames
    // holding records, a blob and a removal.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("before")]).unwrap();
    drop(log);
    let template = tempfile::tempdir().unwrap();
    let template_path = copy_files(&path, template.path(), true);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let gone = log.put_blob(b"short-lived".to_vec()).unwrap();
    for i in 0..8 {
        log.append(vec![rec(&format!("event {i}"))]).unwrap();
    }
    let kept = log.put_blob(vec![5u8; 10_000]).unwrap();
    log.remove_blobs(vec![gone]).unwrap();
    let expected = texts(&log);
    copy_files(&path, template.path(), false);
    drop(log);

    // How many I/O ops does a recovering open take?
    let ops = {
        let (_d, p) = crash_copy(&template_path);
        let plan = FaultPlan::new();
        drop(open_faulty(&p, &plan, LogConfig::default()).unwrap());
        plan.ops()
    };
    assert!(ops > 4, "{ops}");
    eprintln!("a recovering open: {ops} I/O ops, each failed in turn");
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        for k in 1..=ops {
            let (_d, p) = crash_copy(&template_path);
            let plan = FaultPlan::new();
            plan.fail_after(k, kind, true);
            match open_faulty(&p, &plan, LogConfig::default()) {
                Ok(log) => drop(log),
                Err(e) => {
                    let message = e.to_string();
                    assert!(
                        message.contains("injected I/O fault") || message.contains("No space left"),
                        "k={k}: {message}"
                    );
                }
            }
            let log = Log::open(&p, LogConfig::default()).unwrap();
            assert_eq!(texts(&log), expected, "k={k} {kind:?}");
            assert!(log.verify_chain(|_| {}).unwrap().is_ok(), "k={k}");
            assert!(log.has_blob(&kept).unwrap(), "k={k}");
            assert!(!log.has_blob(&gone).unwrap(), "k={k}");
        }
    }
}

#[test]
fn a_crashed_log_reads_recovered_in_memory_and_its_files_stay_as_they_were() {
    let (_dir, path, texts) = crashed_with_frames(6);
    let before = (
        std::fs::read(&path).unwrap(),
        std::fs::read(journal_path(&path)).unwrap(),
    );
    let log = Log::open_recovered_in_memory(&path, LogConfig::default()).unwrap();
    assert_eq!(self::texts(&log), texts);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap().seq, 7);
    drop(log);
    let after = (
        std::fs::read(&path).unwrap(),
        std::fs::read(journal_path(&path)).unwrap(),
    );
    assert!(before == after, "the files were not touched");
    // Damage is refused there as anywhere.
    std::fs::remove_file(journal_path(&path)).unwrap();
    let err = Log::open_recovered_in_memory(&path, LogConfig::default()).unwrap_err();
    assert!(matches!(err, OpenError::WalDamaged { .. }), "{err}");
}
