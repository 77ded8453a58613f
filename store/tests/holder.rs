//! A log read and appended through the process that holds it
//! (`serve_readers`, `Log::open_through_holder`), and a holder that goes away
//! in the middle of a read. The holders' socket folder comes from the
//! environment: the test runs again as a child of itself, with its own.

use std::sync::Arc;

use cmdlog_store::{Log, LogConfig, NewRecord, Record};

fn record(i: u64) -> NewRecord {
    // Large enough that a scan takes several pages.
    NewRecord::new(format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(256)).into_bytes())
        .stream(format!("s{}", i % 7))
}

/// Appends `n` records to `log`, in batches.
fn fill(log: &Log, n: u64) {
    let mut i = 0;
    while i < n {
        let batch: Vec<NewRecord> = (i..(i + 1000).min(n)).map(record).collect();
        i += batch.len() as u64;
        log.append(batch).unwrap();
    }
}

/// Runs `test` again in a process of its own with `state` as its
/// `$XDG_STATE_HOME` (where the holder's socket goes), so the test's
/// environment is not the whole test binary's; true in the parent, once the
/// child passed.
fn ran_in_a_child(test: &str, state: &std::path::Path) -> bool {
    if std::env::var_os("CMDLOG_HOLDER_TEST_CHILD").is_some() {
        return false;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env("CMDLOG_HOLDER_TEST_CHILD", "1")
        .env("XDG_STATE_HOME", state)
        .status()
        .unwrap();
    assert!(status.success(), "{test} in its own process");
    true
}

fn same(a: &[Record], b: &[Record]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.seq, x.hash, &x.stream, &x.bytes) == (y.seq, y.hash, &y.stream, &y.bytes)
        })
}

#[test]
fn a_holder_answers_reads_and_appends_and_its_reader_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    if ran_in_a_child(
        "a_holder_answers_reads_and_appends_and_its_reader_outlives_it",
        &dir.path().join("state"),
    ) {
        return;
    }
    let path = dir.path().join("log.redb");
    let holder = Arc::new(Log::open(&path, LogConfig::default()).unwrap());
    fill(&holder, 20_000);
    let everything = holder.range(1, u64::MAX).unwrap();
    let holding = cmdlog_store::serve_readers(&holder).unwrap();

    // Reads through the holder are the holder's, a streamed scan included.
    let reader = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(reader.is_through_holder());
    assert!(same(&reader.range(1, u64::MAX).unwrap(), &everything));
    assert_eq!(
        reader.stream_seqs("s3", 0).unwrap(),
        holder.stream_seqs("s3", 0).unwrap()
    );
    // A read-only open through the holder appends nothing.
    assert!(reader.append(vec![record(0)]).is_err());

    // A writing open appends in the holder's commit, and sees it.
    let writer = Log::open_or_through_holder(&path, LogConfig::default()).unwrap();
    assert!(writer.is_through_holder());
    let receipt = writer.append(vec![record(20_000), record(20_001)]).unwrap();
    assert_eq!((receipt.first, receipt.last), (20_001, 20_002));
    assert_eq!(holder.head().seq, 20_002);
    assert_eq!(writer.head().seq, 20_002);
    // An append built for its seqs gets the one it was built for.
    let built = writer
        .submit_built(|first| {
            vec![NewRecord::new(
                format!("{{\"first\":{first}}}").into_bytes(),
            )]
        })
        .unwrap()
        .wait()
        .unwrap();
    let got = holder.get(built.first).unwrap().unwrap();
    assert_eq!(
        got.bytes,
        format!("{{\"first\":{}}}", built.first).into_bytes()
    );
    let hash = writer
        .put_blob(b"a blob through the holder".to_vec())
        .unwrap();
    assert!(holder.has_blob(&hash).unwrap());
    drop(writer);

    // The holder stops in the middle of a scan: the reader reads the rest from
    // the log itself, and the answer is whole and the same.
    let everything = holder.range(1, u64::MAX).unwrap();
    let head = holder.head().seq;
    let reader = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(reader.is_through_holder());
    let mut holder = Some((holding, holder));
    let mut seen = Vec::new();
    reader
        .scan(1, head, |r| {
            if r.seq == 10_000 {
                // Its listener and its log closed, as a holder that exits.
                let (holding, log) = holder.take().unwrap();
                drop(holding);
                drop(log);
            }
            seen.push(r);
            true
        })
        .unwrap();
    assert!(holder.is_none(), "the holder stopped mid-scan");
    assert!(
        same(&seen, &everything),
        "{} of {} records",
        seen.len(),
        everything.len()
    );
    // And its later reads too.
    assert!(same(
        &reader.range(head - 10, head).unwrap(),
        &everything[everything.len() - 11..]
    ));
    assert!(
        !Log::open_read_only(&path, LogConfig::default())
            .unwrap()
            .is_through_holder()
    );
}

/// A state folder deep enough that the socket's path does not fit a socket
/// address (a long `$HOME` or `$XDG_STATE_HOME`): the holder still answers.
#[test]
fn a_holder_answers_from_a_deep_state_folder() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir
        .path()
        .join("state")
        .join("d".repeat(60))
        .join("e".repeat(60));
    if ran_in_a_child("a_holder_answers_from_a_deep_state_folder", &deep) {
        return;
    }
    let path = dir.path().join("log.redb");
    let holder = Arc::new(Log::open(&path, LogConfig::default()).unwrap());
    fill(&holder, 10);
    let socket = cmdlog_store::socket_path(&path).unwrap();
    assert!(socket.as_os_str().len() > 108, "{}", socket.display());
    let _holding = cmdlog_store::serve_readers(&holder).unwrap();
    let reader = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(reader.is_through_holder());
    assert!(same(
        &reader.range(1, u64::MAX).unwrap(),
        &holder.range(1, u64::MAX).unwrap()
    ));
}
