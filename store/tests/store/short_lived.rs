//! Short-lived appenders: frames to the write-ahead log alone, redb's file never
//! written, everything applied at the next writable open.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::common::{rec, texts};
use cmdlog_store::{BlobHash, Log, LogConfig, NewRecord, OpenError, journal_path};

/// A log closed cleanly with one record and one blob in redb's file.
fn checkpointed(dir: &tempfile::TempDir) -> (std::path::PathBuf, BlobHash) {
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("in redb")]).unwrap();
    let blob = log.put_blob(b"old blob".to_vec()).unwrap();
    drop(log);
    (path, blob)
}

#[test]
fn short_lived_appends_leave_redb_untouched_and_the_next_writable_open_applies_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, old_blob) = checkpointed(&dir);
    let redb_before = std::fs::read(&path).unwrap();

    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    // The receipt names both records (it named only the last before).
    let receipt = log.append(vec![rec("one"), rec("four")]).unwrap();
    assert_eq!((receipt.first, receipt.last), (2, 3));
    let blob = log.put_blob(vec![5u8; 70_000]).unwrap();
    assert_eq!(log.remove_blobs(vec![old_blob]).unwrap(), 1);
    assert_eq!(log.remove_blobs(vec![old_blob]).unwrap(), 0);
    log.append(vec![rec("seven")]).unwrap();
    // The handle reads its own appends over redb's file.
    assert_eq!(texts(&log), ["in redb", "one", "four", "seven"]);
    assert_eq!(
        log.stream("s1", 0).unwrap().len(),
        2,
        "'in redb' and 'four'"
    );
    assert_eq!(log.get_blob(&blob).unwrap().unwrap(), vec![5u8; 70_000]);
    assert!(!log.has_blob(&old_blob).unwrap());
    assert_eq!(
        log.list_blobs()
            .unwrap()
            .iter()
            .map(|b| b.0)
            .collect::<Vec<_>>(),
        [blob]
    );
    let head = log.verify_chain(|_| {}).unwrap().unwrap();
    assert_eq!(head, log.head());
    drop(log);
    assert!(
        std::fs::read(&path).unwrap() == redb_before,
        "redb's file was written"
    );

    // A read-only open and a second short-lived one see all of it.
    let read = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(read.head(), head);
    assert_eq!(read.stream("s2", 0).unwrap().len(), 1, "'seven'");
    drop(read);
    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(log.append(vec![rec("ten")]).unwrap().first, head.seq + 1);
    drop(log);

    // The writable open applies every frame and checkpoints.
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(texts(&log), ["in redb", "one", "four", "seven", "ten"]);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap(), log.head());
    assert_eq!(log.get_blob(&blob).unwrap().unwrap(), vec![5u8; 70_000]);
    assert!(!log.has_blob(&old_blob).unwrap());
    assert_eq!(log.stream("s1", 0).unwrap().len(), 2);
    drop(log);
    assert_ne!(std::fs::read(&path).unwrap(), redb_before);
}

#[test]
fn two_short_lived_appenders_continue_each_others_frames_and_fold_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = checkpointed(&dir);
    let a = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    let b = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    let seen: Arc<Mutex<Vec<u64>>> = Arc::default();
    let hook_seen = Arc::clone(&seen);
    b.set_commit_hook(Box::new(move |records| {
        hook_seen
            .lock()
            .unwrap()
            .extend(records.iter().map(|r| r.seq));
    }));
    let threads: Vec<_> = [Arc::new(a), Arc::new(b)]
        .into_iter()
        .enumerate()
        .map(|(who, log)| {
            std::thread::spawn(move || {
                for i in 0..40 {
                    log.append(vec![rec(&format!("{who}-{i}"))]).unwrap();
                }
                log
            })
        })
        .collect();
    let logs: Vec<Arc<Log>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // Each handle knows every record once it appended after the other's last.
    let last = logs.iter().map(|l| l.head().seq).max().unwrap();
    assert_eq!(last, 81);
    let b = &logs[1];
    b.append(vec![rec("last")]).unwrap();
    assert_eq!(b.head().seq, 82);
    assert_eq!(
        *seen.lock().unwrap(),
        (2..=82).collect::<Vec<u64>>(),
        "b's commit hook saw a's records too, in seq order"
    );
    drop(logs);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.head().seq, 82);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap(), log.head());
}

#[test]
fn a_short_lived_open_falls_back_to_a_writable_one_where_it_must() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    // A new log is created by a writable open.
    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("first")]).unwrap();
    drop(log);
    assert_eq!(
        texts(&Log::open_read_only(&path, LogConfig::default()).unwrap()),
        ["first"]
    );

    // A torn frame at the end of the write-ahead log: the writable open drops it.
    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    log.append(vec![rec("second")]).unwrap();
    drop(log);
    let wal = journal_path(&path);
    let mut bytes = std::fs::read(&wal).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    bytes[end..end + 40].copy_from_slice(&[b'C'; 40]);
    std::fs::write(&wal, &bytes).unwrap();
    let log = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(log.append(vec![rec("third")]).unwrap().first, 3);
    drop(log);
    assert_eq!(
        texts(&Log::open_read_only(&path, LogConfig::default()).unwrap()),
        ["first", "second", "third"]
    );

    // A writer holding the log: the short-lived open waits, then names the lock.
    let writer = Log::open(&path, LogConfig::default()).unwrap();
    let quick = LogConfig {
        lock_wait: Duration::from_millis(50),
        ..LogConfig::default()
    };
    let err = Log::open_short_lived(&path, quick).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err}");
    drop(writer);
}

#[test]
fn a_write_ahead_log_past_a_quarter_of_the_checkpoint_is_checkpointed_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = checkpointed(&dir);
    let small = LogConfig {
        checkpoint_bytes: 64 * 1024,
        ..LogConfig::default()
    };
    let log = Log::open_short_lived(&path, small.clone()).unwrap();
    for i in 0..20 {
        log.append(vec![NewRecord::new(vec![i as u8; 1000])])
            .unwrap();
    }
    drop(log);
    let redb_before = std::fs::read(&path).unwrap();
    // 20 KB of frames is past a quarter of 64 KiB: this open is writable.
    let log = Log::open_short_lived(&path, small).unwrap();
    log.append(vec![rec("after")]).unwrap();
    drop(log);
    assert_ne!(std::fs::read(&path).unwrap(), redb_before);
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(log.head().seq, 22);
    assert_eq!(log.verify_chain(|_| {}).unwrap().unwrap(), log.head());
}

#[test]
fn a_fault_at_any_point_of_a_short_lived_append_loses_no_acknowledged_record() {
    use cmdlog_store::{FaultKind, FaultPlan, open_faulty_short_lived};
    let dir = tempfile::tempdir().unwrap();
    let (template, _) = checkpointed(&dir);
    // Count the write-ahead log's operations of two appends, then fail each.
    let ops = {
        let copy = tempfile::tempdir().unwrap();
        let path = copy.path().join("log.redb");
        std::fs::copy(&template, &path).unwrap();
        std::fs::copy(journal_path(&template), journal_path(&path)).unwrap();
        let plan = FaultPlan::new();
        let log = open_faulty_short_lived(&path, &plan, LogConfig::default())
            .unwrap()
            .expect("short-lived");
        let before = plan.ops();
        log.append(vec![rec("one")]).unwrap();
        log.append(vec![rec("two")]).unwrap();
        plan.ops() - before
    };
    assert!(ops >= 4, "catch-up reads, frame write and sync: {ops}");
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        for k in 1..=ops {
            let copy = tempfile::tempdir().unwrap();
            let path = copy.path().join("log.redb");
            std::fs::copy(&template, &path).unwrap();
            std::fs::copy(journal_path(&template), journal_path(&path)).unwrap();
            let plan = FaultPlan::new();
            let log = open_faulty_short_lived(&path, &plan, LogConfig::default())
                .unwrap()
                .expect("short-lived");
            plan.fail_after(k, kind, true);
            let mut acked = vec!["in redb".to_string()];
            for text in ["one", "two"] {
                match log.append(vec![rec(text)]) {
                    Ok(_) => acked.push(text.into()),
                    Err(e) => assert!(
                        e.to_string().contains("reopen the log"),
                        "k={k}: unclear error: {e}"
                    ),
                }
            }
            drop(log);
            // Another short-lived open (or, past a torn frame, a writable one)
            // and then a writable one: every acknowledged record, in order.
            for open in [Log::open_short_lived, Log::open] {
                let log = open(&path, LogConfig::default()).unwrap();
                let texts = texts(&log);
                assert_eq!(
                    texts[..acked.len()],
                    acked[..],
                    "k={k} {kind:?}: every acknowledged record survives, in order"
                );
                assert!(texts.len() <= 3, "k={k}: nothing invented");
                assert!(log.verify_chain(|_| {}).unwrap().is_ok(), "k={k}");
            }
        }
    }
}

#[test]
fn a_short_lived_open_knows_whether_it_had_the_log_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = checkpointed(&dir);
    let first = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(first.alone_through(), Some(1), "no one else had it open");
    first.append(vec![rec("first's")]).unwrap();
    let second = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(second.alone_through(), None, "the first still has it open");
    drop(first);
    let third = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(third.alone_through(), None, "the second still has it open");
    drop((second, third));
    let fourth = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert_eq!(fourth.alone_through(), Some(2));
    drop(fourth);
    let writable = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(writable.alone_through(), Some(2));
    drop(writable);
    let read = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(read.alone_through(), None);
}
