//! The stream index is deferred: entries wait in memory and reach the `streams`
//! table in sorted batches. Reads by stream must never notice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cmdlog_store::{Log, LogConfig, NewRecord};

use cmdlog_test_support::tamper::crash_copy;

use cmdlog_test_support::tamper::META;

fn append_round(log: &Log, round: usize, sessions: usize) {
    let records = (0..sessions)
        .map(|s| NewRecord::new(format!("r{round} s{s}").into_bytes()).stream(format!("s{s}")))
        .collect();
    log.append(records).unwrap();
}

fn check_streams(log: &Log, sessions: usize, rounds: usize) {
    assert_eq!(log.streams().unwrap().len(), sessions);
    for s in [0, sessions / 2, sessions - 1] {
        let records = log.stream(&format!("s{s}"), 0).unwrap();
        let texts: Vec<String> = records
            .iter()
            .map(|r| String::from_utf8(r.bytes.clone()).unwrap())
            .collect();
        let expected: Vec<String> = (0..rounds).map(|r| format!("r{r} s{s}")).collect();
        assert_eq!(texts, expected, "stream s{s}");
        // And from the middle on.
        let after = records[rounds / 2].seq;
        assert_eq!(
            log.stream_seqs(&format!("s{s}"), after).unwrap(),
            records[rounds / 2 + 1..]
                .iter()
                .map(|r| r.seq)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn stream_reads_see_every_record_before_during_and_after_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // A reader racing the writer: every answer is ascending, without duplicates,
    // and never shorter than the one before.
    let reader = {
        let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut last = 0;
            let mut reads = 0;
            while !stop.load(Ordering::SeqCst) {
                let seqs = log.stream_seqs("s7", 0).unwrap();
                assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
                assert!(seqs.len() >= last, "{} after {last}", seqs.len());
                last = seqs.len();
                reads += 1;
            }
            reads
        })
    };
    // 64 sessions x 300 rounds = 19,200 entries: one flush at 16 Ki on the way.
    for round in 0..300 {
        append_round(&log, round, 64);
    }
    stop.store(true, Ordering::SeqCst);
    assert!(reader.join().unwrap() > 0);
    check_streams(&log, 64, 300);
    let log = Arc::into_inner(log).unwrap();
    drop(log);
    let log = Log::open_read_only(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    check_streams(&log, 64, 300);
}

#[test]
fn entries_still_in_memory_at_a_crash_are_rebuilt_from_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for round in 0..40 {
        append_round(&log, round, 10);
    }
    // A crash now: both files as they are, the 400 entries only in memory.
    let (_crashed, crashed_path) = crash_copy(&path);
    drop(log);
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    check_streams(&log, 10, 40);
    for round in 40..50 {
        append_round(&log, round, 10);
    }
    check_streams(&log, 10, 50);
}

#[test]
fn a_log_from_before_the_deferred_index_keeps_its_streams() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for round in 0..5 {
        append_round(&log, round, 4);
    }
    drop(log);
    // Such a log has every entry in the table and no `streams_through`.
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .remove("streams_through")
            .unwrap();
        txn.commit().unwrap();
    }
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    check_streams(&log, 4, 5);
    drop(log);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for round in 5..9 {
        append_round(&log, round, 4);
    }
    let (_crashed, crashed_path) = crash_copy(&path);
    drop(log);
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    check_streams(&log, 4, 9);
}
