//! Store behaviour a caller relies on: seqs, atomic appends, group commit,
//! stream reads, tailing, the hash chain, blobs, locking and poisoning.

use std::sync::Arc;

use redb::ReadableTable;
use std::time::Duration;

use cmdlog_store::{
    AppendError, BlobError, BlobHash, ChainBreak, FaultKind, FaultPlan, Log, LogConfig, NewRecord,
    OpenError, open_faulty,
};

fn rec(text: &str) -> NewRecord {
    NewRecord::new(text.as_bytes().to_vec())
}

fn open(dir: &tempfile::TempDir) -> Log {
    Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap()
}

#[test]
fn seqs_start_at_one_and_are_gapless_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    assert_eq!(log.head().seq, 0);
    let r = log.append(vec![rec("a"), rec("b")]).unwrap();
    assert_eq!((r.first, r.last), (1, 2));
    let r = log.append(vec![rec("c")]).unwrap();
    assert_eq!((r.first, r.last), (3, 3));
    let head = log.head();
    drop(log);

    let log = open(&dir);
    assert_eq!(log.head(), head);
    assert_eq!(log.append(vec![rec("d")]).unwrap().first, 4);
    let all: Vec<_> = log
        .range(1, 10)
        .unwrap()
        .into_iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(all, vec![1, 2, 3, 4]);
    assert_eq!(log.range(2, 3).unwrap()[1].bytes, b"c");
}

#[test]
fn concurrent_appenders_all_get_distinct_gapless_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(open(&dir));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                (0..20)
                    .map(|i| {
                        let r = log
                            .append(vec![rec(&format!("{t}-{i}-a")), rec(&format!("{t}-{i}-b"))])
                            .unwrap();
                        assert_eq!(r.last, r.first + 1, "a multi-record append is contiguous");
                        r.first
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut firsts: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    firsts.sort();
    assert_eq!(firsts, (0..320).map(|i| 1 + 2 * i).collect::<Vec<_>>());
    assert_eq!(log.head().seq, 640);
    assert!(log.verify_chain(|_| {}).unwrap().is_ok());
}

#[test]
fn stream_index_returns_only_that_stream_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    log.append(vec![rec("1").stream("s1"), rec("2").stream("s2"), rec("3")])
        .unwrap();
    log.append(vec![rec("4").stream("s1")]).unwrap();
    let s1: Vec<_> = log
        .stream("s1", 0)
        .unwrap()
        .into_iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(s1, vec![1, 4]);
    assert_eq!(log.stream_seqs("s1", 1).unwrap(), vec![4]);
    assert_eq!(log.stream("s3", 0).unwrap(), vec![]);
    assert_eq!(
        log.streams().unwrap(),
        vec!["s1".to_string(), "s2".to_string()]
    );
    assert_eq!(log.get(1).unwrap().unwrap().stream.as_deref(), Some("s1"));
}

#[test]
fn bad_appends_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(
        dir.path().join("log.redb"),
        LogConfig {
            record_bytes_max: 8,
            ..LogConfig::default()
        },
    )
    .unwrap();
    assert_eq!(log.append(vec![]), Err(AppendError::Empty));
    assert!(matches!(
        log.append(vec![rec("ok"), rec("far too long")]),
        Err(AppendError::RecordTooLarge { index: 1, .. })
    ));
    assert!(matches!(
        log.append(vec![rec("x").stream("")]),
        Err(AppendError::BadStreamKey { .. })
    ));
    assert!(matches!(
        log.append(vec![rec("x").stream("k".repeat(300))]),
        Err(AppendError::BadStreamKey { len: 300, .. })
    ));
    assert_eq!(log.head().seq, 0);
}

#[test]
fn waiters_wake_on_commit() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(open(&dir));
    let mut watch = log.subscribe();
    let waiter = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || log.wait_for(0, Duration::from_secs(10)))
    };
    std::thread::sleep(Duration::from_millis(20));
    log.append(vec![rec("x")]).unwrap();
    assert_eq!(waiter.join().unwrap(), 1);
    assert!(watch.has_changed().unwrap());
    assert_eq!(*watch.borrow_and_update(), 1);
    // A wait with nothing new times out and returns the head as it is.
    assert_eq!(log.wait_for(1, Duration::from_millis(10)), 1);
}

#[test]
fn commit_hook_sees_every_record_in_seq_order_before_the_ack() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(open(&dir));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    log.set_commit_hook(Box::new(move |batch| {
        let mut seen = sink.lock().unwrap();
        for r in batch {
            seen.push((r.seq, r.bytes.to_vec()));
        }
    }));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                for i in 0..10 {
                    let r = log.append(vec![rec(&format!("{t}/{i}"))]).unwrap();
                    assert!(seen.lock().unwrap().iter().any(|(s, _)| *s == r.first));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        (1..=80).collect::<Vec<_>>()
    );
    for (seq, bytes) in seen.iter() {
        assert_eq!(&log.get(*seq).unwrap().unwrap().bytes, bytes);
    }
}

#[test]
fn a_tampered_record_is_named_by_verify_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = open(&dir);
    for i in 0..10 {
        log.append(vec![rec(&format!("record {i}"))]).unwrap();
    }
    let head = log.verify_chain(|_| {}).unwrap().unwrap();
    assert_eq!(head, log.head());
    drop(log);

    // Flip one byte of record 6's bytes directly through redb.
    let records = cmdlog_test_support::tamper::RECORDS;
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(records).unwrap();
            let mut value = table.get(6).unwrap().unwrap().value().to_vec();
            let last = value.len() - 1;
            value[last] ^= 0x01;
            table.insert(6, value.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let log = open(&dir);
    assert_eq!(
        log.verify_chain(|_| {}).unwrap(),
        Err(ChainBreak::HashMismatch { seq: 6 })
    );
}

#[test]
fn a_dropped_record_is_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = open(&dir);
    log.append(vec![rec("a"), rec("b"), rec("c")]).unwrap();
    drop(log);
    let records = cmdlog_test_support::tamper::RECORDS;
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(records).unwrap().remove(2).unwrap();
        txn.commit().unwrap();
    }
    let log = open(&dir);
    assert_eq!(
        log.verify_chain(|_| {}).unwrap(),
        Err(ChainBreak::Gap {
            previous: 1,
            found: 3
        })
    );
}

#[test]
fn blobs_are_idempotent_and_verified_on_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = open(&dir);
    let bytes = vec![42u8; 100_000];
    let h1 = log.put_blob(bytes.clone()).unwrap();
    let h2 = log.put_blob(bytes.clone()).unwrap();
    assert_eq!(h1, h2);
    assert_eq!(h1, BlobHash::of(&bytes));
    assert_eq!(log.list_blobs().unwrap().len(), 1);
    assert_eq!(log.get_blob(&h1).unwrap().unwrap(), bytes);
    assert_eq!(log.get_blob(&BlobHash::of(b"absent")).unwrap(), None);
    assert_eq!(BlobHash::from_hex(&h1.to_hex()), Some(h1));
    drop(log);

    let blobs = cmdlog_test_support::tamper::BLOBS;
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(blobs)
            .unwrap()
            .insert(&h1.0, &b"not it"[..])
            .unwrap();
        txn.commit().unwrap();
    }
    let log = open(&dir);
    assert!(matches!(log.get_blob(&h1), Err(BlobError::Mismatch { hash, .. }) if hash == h1));
}

#[test]
fn blob_size_limit_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(
        dir.path().join("log.redb"),
        LogConfig {
            blob_bytes_max: 10,
            ..LogConfig::default()
        },
    )
    .unwrap();
    assert!(matches!(
        log.put_blob(vec![0; 11]),
        Err(BlobError::TooLarge { size: 11, max: 10 })
    ));
    assert!(log.list_blobs().unwrap().is_empty());
}

#[test]
fn a_second_open_of_the_same_file_is_a_clear_lock_error() {
    let dir = tempfile::tempdir().unwrap();
    let _log = open(&dir);
    let err = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("held by another process"), "{err}");
}

#[test]
fn a_file_that_is_not_a_log_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    std::fs::write(&path, b"hello, I am a text file, not a database at all").unwrap();
    let err = Log::open(&path, LogConfig::default()).unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

fn faulty(dir: &tempfile::TempDir, plan: &Arc<FaultPlan>) -> Log {
    open_faulty(&dir.path().join("log.redb"), plan, LogConfig::default()).unwrap()
}

#[test]
fn an_io_error_poisons_the_writer_until_reopen_and_loses_no_acknowledged_record() {
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        let log = faulty(&dir, &plan);
        log.append(vec![rec("kept")]).unwrap();
        plan.fail_after(1, kind, false);
        let err = log.append(vec![rec("lost")]).unwrap_err();
        assert!(matches!(err, AppendError::Storage { .. }), "{err:?}");
        if kind == FaultKind::NoSpace {
            assert!(err.to_string().contains("No space left"), "{err}");
        }
        assert!(matches!(
            log.append(vec![rec("refused")]),
            Err(AppendError::Poisoned { .. })
        ));
        assert!(log.poisoned().is_some());
        drop(log);

        let log = open(&dir);
        let all = log.range(1, 10).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].bytes, b"kept");
        assert!(log.verify_chain(|_| {}).unwrap().is_ok());
        assert_eq!(log.append(vec![rec("again")]).unwrap().first, 2);
    }
}

#[test]
fn buffered_durability_is_flushed_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        durability: cmdlog_store::Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("log.redb"), config.clone()).unwrap();
    for i in 0..5 {
        log.append(vec![rec(&i.to_string())]).unwrap();
    }
    drop(log);
    let log = Log::open(dir.path().join("log.redb"), config).unwrap();
    assert_eq!(log.head().seq, 5);
}

#[test]
fn built_appends_know_their_seqs_even_among_concurrent_appends() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(open(&dir));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for _ in 0..10 {
                    if t % 2 == 0 {
                        log.append(vec![rec("plain")]).unwrap();
                    } else {
                        // Two records; the second names the seq of the first.
                        let r = log
                            .submit_built(|first| {
                                vec![rec("admission"), rec(&format!("run after {first}"))]
                            })
                            .unwrap()
                            .wait()
                            .unwrap();
                        assert_eq!(r.last, r.first + 1);
                        let run = log.get(r.last).unwrap().unwrap();
                        assert_eq!(run.bytes, format!("run after {}", r.first).into_bytes());
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(log.head().seq, 40 + 80);
    assert!(log.verify_chain(|_| {}).unwrap().is_ok());
}

#[test]
fn a_built_append_over_the_limits_is_refused_alone() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(
        dir.path().join("log.redb"),
        LogConfig {
            record_bytes_max: 8,
            ..LogConfig::default()
        },
    )
    .unwrap();
    let bad = log
        .submit_built(|_| vec![rec("far too long for the limit")])
        .unwrap();
    let good = log.submit(vec![rec("ok")]).unwrap();
    assert!(matches!(
        bad.wait(),
        Err(AppendError::RecordTooLarge { .. })
    ));
    assert_eq!(good.wait().unwrap().first, 1);
    assert!(
        log.poisoned().is_none(),
        "a refused build does not poison the writer"
    );
}

#[test]
fn removing_blobs_counts_what_existed() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    let a = log.put_blob(b"a".to_vec()).unwrap();
    let b = log.put_blob(b"b".to_vec()).unwrap();
    assert_eq!(
        log.remove_blobs(vec![a, BlobHash::of(b"never")]).unwrap(),
        1
    );
    assert!(!log.has_blob(&a).unwrap());
    assert_eq!(log.get_blob(&a).unwrap(), None);
    assert_eq!(log.get_blob(&b).unwrap().unwrap(), b"b");
    assert_eq!(log.list_blobs().unwrap().len(), 1);
}

#[test]
fn read_only_opens_read_and_refuse_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = open(&dir);
    log.append(vec![rec("a").stream("s")]).unwrap();
    let head = log.head();
    drop(log);
    let reader = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(reader.head(), head);
    assert_eq!(reader.stream("s", 0).unwrap()[0].bytes, b"a");
    assert_eq!(reader.append(vec![rec("b")]), Err(AppendError::ReadOnly));
    assert!(reader.verify_chain(|_| {}).unwrap().is_ok());
    // Readers share the file with each other.
    let second = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(second.head(), head);
}

#[test]
fn an_open_waits_briefly_for_the_holder_to_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    drop(open(&dir));
    let reader = Log::open_read_only(&path, LogConfig::default()).unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(reader);
    });
    let started = std::time::Instant::now();
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "it waited for the reader"
    );
    log.append(vec![rec("after the reader")]).unwrap();
    release.join().unwrap();

    let config = LogConfig {
        lock_wait: Duration::from_millis(50),
        ..LogConfig::default()
    };
    let err = Log::open_read_only(&path, config).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err:?}");
}

#[test]
fn a_new_log_and_its_folder_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join(".cmdlog");
    let path = folder.join("log.redb");
    drop(Log::open(&path, LogConfig::default()).unwrap());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&cmdlog_store::journal_path(&path)), 0o600);
}

#[test]
fn large_blobs_are_stored_in_chunks_verified_and_removed_whole() {
    const CHUNKS: redb::TableDefinition<(&[u8; 32], u32), &[u8]> =
        cmdlog_test_support::tamper::BLOB_CHUNKS;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let bytes: Vec<u8> = (0..1_000_003u32).map(|i| (i % 251) as u8).collect();
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let hash = log.put_blob(bytes.clone()).unwrap();
    assert_eq!(log.get_blob(&hash).unwrap().unwrap(), bytes);
    drop(log);

    // One flipped byte in one chunk is a mismatch, never returned bytes.
    let chunk_keys = |path: &std::path::Path| -> Vec<u32> {
        let db = redb::Database::create(path).unwrap();
        let read = redb::ReadableDatabase::begin_read(&db).unwrap();
        let table = read.open_table(CHUNKS).unwrap();
        redb::ReadableTable::iter(&table)
            .unwrap()
            .map(|e| e.unwrap().0.value().1)
            .collect()
    };
    assert_eq!(chunk_keys(&path), [0, 1, 2, 3], "255 KiB chunks");
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(CHUNKS).unwrap();
            let mut chunk = table.get((&hash.0, 2)).unwrap().unwrap().value().to_vec();
            chunk[100] ^= 1;
            table.insert((&hash.0, 2), chunk.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert!(matches!(
        log.get_blob(&hash),
        Err(BlobError::Mismatch { .. })
    ));
    assert_eq!(log.remove_blobs(vec![hash]).unwrap(), 1);
    assert_eq!(log.get_blob(&hash).unwrap(), None);
    drop(log);
    assert!(
        chunk_keys(&path).is_empty(),
        "every chunk went with the blob"
    );
}

#[test]
fn a_fault_at_any_point_of_a_checkpoint_loses_no_acknowledged_record() {
    // A checkpoint after every batch: each append is a frame, a durable redb commit
    // and the write-ahead log's reset. Count the ops of one, then fail each in turn.
    let config = || LogConfig {
        checkpoint_bytes: 1,
        ..LogConfig::default()
    };
    let ops = {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        let log = open_faulty(&dir.path().join("log.redb"), &plan, config()).unwrap();
        log.append(vec![rec("warm")]).unwrap();
        let before = plan.ops();
        log.append(vec![rec("one")]).unwrap();
        log.append(vec![rec("two")]).unwrap();
        plan.ops() - before
    };
    assert!(ops >= 6, "frame write and sync, redb commit, reset: {ops}");
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        for k in 1..=ops {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("log.redb");
            let plan = FaultPlan::new();
            let log = open_faulty(&path, &plan, config()).unwrap();
            log.append(vec![rec("warm")]).unwrap();
            plan.fail_after(k, kind, true);
            let mut acked = vec!["warm".to_string()];
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
            let log = Log::open(&path, LogConfig::default()).unwrap();
            let texts: Vec<String> = log
                .range(1, 10)
                .unwrap()
                .into_iter()
                .map(|r| String::from_utf8(r.bytes).unwrap())
                .collect();
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

#[test]
fn disk_full_errors_advise_only_steps_that_keep_acknowledged_events() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let log = faulty(&dir, &plan);
    log.append(vec![rec("kept")]).unwrap();
    plan.fail_after(1, FaultKind::NoSpace, true);
    let appended = log.append(vec![rec("lost")]).unwrap_err().to_string();
    let refused = log.append(vec![rec("refused")]).unwrap_err().to_string();
    drop(log);
    // A crash left frames to apply; the disk is still full when the log is reopened.
    let mut reopened = String::new();
    for k in 1..40 {
        plan.fail_after(k, FaultKind::NoSpace, true);
        match open_faulty(&dir.path().join("log.redb"), &plan, LogConfig::default()) {
            Err(e) => {
                reopened = e.to_string();
                break;
            }
            Ok(log) => drop(log),
        }
    }
    for message in [&appended, &refused, &reopened] {
        assert!(message.contains("free space"), "{message}");
        for unsafe_advice in ["aside", "delete", "remove", "discard"] {
            assert!(!message.contains(unsafe_advice), "{message}");
        }
    }
    plan.disarm();
    assert_eq!(open(&dir).range(1, 10).unwrap()[0].bytes, b"kept");
}
