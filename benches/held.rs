//! Appends of a log's holder, with and without readers beside it reading
//! through it (issue 39): the same 16 appender threads for the same time,
//! alone and with 4 readers polling the log through the holder's socket as
//! `cmdlog log --follow` and `cmdlog sessions` would — every 10 ms (a
//! follower), and without pause (the worst case). Rounds alternate; the
//! figure is the median of the ratios.
//!
//! `cargo bench --bench held` (`CMDLOG_HELD_SECONDS`, default 3 per round).
//! Its files, the socket's folder included, live under `CARGO_TARGET_TMPDIR`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cmdlog_store::{Log, LogConfig, NewRecord};

#[path = "shared/own_state.rs"]
mod own_state;

const APPENDERS: usize = 16;
const READERS: usize = 4;
const ROUNDS: usize = 3;

fn record() -> NewRecord {
    NewRecord::new(
        br#"{"at":1796000000000,"type":"command/run","session":"s-3f2a9c1d7e4b","agent":"main","data":{"registration":12,"name":"review","mode":"non_interactive","source":"user","raw_input":" src/parser.rs please","attachments":[]}}"#
            .to_vec(),
    )
    .stream("s-3f2a9c1d7e4b")
}

/// Appends/s of `APPENDERS` threads for `time`, with `readers` readers that
/// pause `pause` between polls (`None`: no readers).
fn round(log: &Arc<Log>, time: Duration, pause: Option<Duration>) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = pause
        .map(|pause| {
            (0..READERS)
                .map(|_| {
                    let (path, stop, reads) =
                        (log.path().to_path_buf(), stop.clone(), reads.clone());
                    std::thread::spawn(move || {
                        let reader = Log::open_through_holder(&path, LogConfig::default()).unwrap();
                        while !stop.load(Ordering::Relaxed) {
                            // A follower's poll: what came, and the session's tail.
                            let head = reader.wait_for(0, Duration::ZERO);
                            let _ = reader.range(head.saturating_sub(50).max(1), head).unwrap();
                            let seqs = reader
                                .stream_seqs("s-3f2a9c1d7e4b", head.saturating_sub(50))
                                .unwrap();
                            let _ = reader.records_at(&seqs).unwrap();
                            reads.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(pause);
                        }
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let appended = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let appenders: Vec<_> = (0..APPENDERS)
        .map(|_| {
            let (log, appended) = (log.clone(), appended.clone());
            std::thread::spawn(move || {
                while started.elapsed() < time {
                    log.append(vec![record()]).unwrap();
                    appended.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for a in appenders {
        a.join().unwrap();
    }
    let rate = appended.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    rate
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The socket's folder is the user's state folder: this run's own.
    own_state::in_own_state_folder(tmp.path());
    let seconds: u64 = std::env::var("CMDLOG_HELD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let time = Duration::from_secs(seconds);
    let log = Arc::new(Log::open(tmp.path().join("log.redb"), LogConfig::default()).unwrap());
    let _holding = cmdlog_store::serve_readers(&log).unwrap();
    println!("{APPENDERS} appender threads, {seconds} s a round, {ROUNDS} rounds alternating");
    println!(
        "| round | alone (appends/s) | 4 readers every 10 ms | ratio | 4 readers without pause | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    let (mut follow, mut busy) = (Vec::new(), Vec::new());
    for r in 1..=ROUNDS {
        let alone = round(&log, time, None);
        let polled = round(&log, time, Some(Duration::from_millis(10)));
        let hammered = round(&log, time, Some(Duration::ZERO));
        follow.push(polled / alone);
        busy.push(hammered / alone);
        println!(
            "| {r} | {alone:.0} | {polled:.0} | {:.2}x | {hammered:.0} | {:.2}x |",
            polled / alone,
            hammered / alone
        );
    }
    println!(
        "median: readers every 10 ms **{:.2}x**, without pause **{:.2}x** (bar: ≥ 0.9x)",
        median(follow),
        median(busy)
    );
}
