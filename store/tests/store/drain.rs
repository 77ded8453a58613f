//! A writable log acknowledges a group commit once its frame is durable and laid
//! over redb in memory, and writes it to redb later: readers must find every
//! acknowledged record at every moment, before, during and after that move.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cmdlog_store::{BlobHash, Log, LogConfig, NewRecord};
use cmdlog_test_support::tamper::crash_copy;

const APPENDERS: usize = 4;
const EACH: usize = 2_000;

fn record(appender: usize, n: usize) -> NewRecord {
    NewRecord::new(format!("{appender}:{n}").into_bytes()).stream(format!("s{appender}"))
}

/// Everything up to the head, read every way a reader does.
fn check_reads(log: &Log) -> Result<(), String> {
    let head = log.head().seq;
    let mut next = 1;
    log.scan(1, head, |record| {
        if record.seq == next {
            next += 1;
        }
        true
    })
    .map_err(|e| e.to_string())?;
    if next != head + 1 {
        return Err(format!("scan of 1..={head} stopped at seq {}", next - 1));
    }
    if head > 0 && log.get(head).map_err(|e| e.to_string())?.is_none() {
        return Err(format!("the head, seq {head}, is not found by get"));
    }
    for appender in 0..APPENDERS {
        let key = format!("s{appender}");
        let records = log.stream(&key, 0).map_err(|e| e.to_string())?;
        if !records.windows(2).all(|w| w[0].seq < w[1].seq) {
            return Err(format!("stream {key} out of order"));
        }
    }
    Ok(())
}

#[test]
fn readers_find_every_acknowledged_record_while_the_writer_moves_them_to_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    // A small overlay: thousands of moves while the readers read.
    let config = LogConfig {
        drain_records: 8,
        ..LogConfig::default()
    };
    let log = Arc::new(Log::open(&path, config).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (log, done) = (Arc::clone(&log), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !done.load(Ordering::Relaxed) {
                    check_reads(&log).unwrap();
                    if rounds.is_multiple_of(50) {
                        let verified = log.verify_chain(|_| {}).unwrap();
                        assert!(verified.is_ok(), "{verified:?}");
                    }
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let appenders: Vec<_> = (0..APPENDERS)
        .map(|a| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut blobs = Vec::new();
                for n in 0..EACH {
                    let receipt = log.append(vec![record(a, n)]).unwrap();
                    // Acknowledged means readable, at once.
                    let got = log.get(receipt.first).unwrap().expect("acknowledged");
                    assert_eq!(got.bytes, format!("{a}:{n}").into_bytes());
                    if n % 100 == 0 {
                        let bytes = format!("blob {a} {n}").into_bytes();
                        let hash = log.put_blob(bytes.clone()).unwrap();
                        assert_eq!(log.get_blob(&hash).unwrap(), Some(bytes));
                        blobs.push(hash);
                    }
                    // Pauses let the writer find itself idle and drain.
                    if n % 500 == 499 {
                        std::thread::sleep(Duration::from_millis(3));
                    }
                }
                blobs
            })
        })
        .collect();
    let blobs: Vec<BlobHash> = appenders
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() > 0, "the readers read");
    }
    check_reads(&log).unwrap();
    // Removed blobs are gone whether they were still in memory or in redb.
    let removed = log.remove_blobs(blobs[..blobs.len() / 2].to_vec()).unwrap();
    assert_eq!(removed as usize, blobs.len() / 2);
    let head = log.head();
    drop(log);

    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
    check_reads(&log).unwrap();
    assert!(log.verify_chain(|_| {}).unwrap().is_ok());
    for (i, hash) in blobs.iter().enumerate() {
        assert_eq!(
            log.has_blob(hash).unwrap(),
            i >= blobs.len() / 2,
            "blob {i} after reopen"
        );
    }
    for appender in 0..APPENDERS {
        let records = log.stream(&format!("s{appender}"), 0).unwrap();
        assert_eq!(records.len(), EACH, "stream s{appender}");
    }
}

#[test]
fn a_crash_before_the_move_to_redb_loses_nothing_acknowledged() {
    // The records acknowledged from memory are in the write-ahead log's frames: the
    // files as a crash leaves them give them back at the next open.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    for n in 0..100 {
        log.append(vec![record(0, n)]).unwrap();
    }
    let head = log.head();
    let (_crashed, crashed_path) = crash_copy(&path);
    drop(log);
    let log = Log::open(&crashed_path, LogConfig::default()).unwrap();
    assert_eq!(log.head(), head);
    assert_eq!(log.stream("s0", 0).unwrap().len(), 100);
}
