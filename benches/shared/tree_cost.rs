//! What the Merkle tree costs durable appends: the same appends into fresh logs
//! with the tree and without it (`LogConfig::merkle_tree`), in alternating
//! rounds, so the VM's slow minutes fall on both sides. Shared by `bench
//! compare` (row 7) and `bench verifiable`.

use std::sync::Arc;
use std::time::Instant;

use cmdlog_store::{Log, LogConfig, NewRecord};

/// A realistic `command/run` record (about 200 bytes).
const RECORD: &[u8] = br#"{"at":1796000000000,"type":"command/run","session":"s-3f2a9c1d7e4b","agent":"main","data":{"registration":12,"name":"review","mode":"non_interactive","source":"user","raw_input":" src/parser.rs please","attachments":[]}}"#;

fn record() -> NewRecord {
    NewRecord::new(RECORD.to_vec()).stream("s-3f2a9c1d7e4b")
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Per round, (with the tree, without) in appends/s.
pub(crate) struct TreeCost {
    /// One appender, 1,000 durable appends a side.
    pub(crate) one: Vec<(f64, f64)>,
    /// 64 thread appenders, 150 durable appends each a side.
    pub(crate) threads: Vec<(f64, f64)>,
}

/// The median of the rounds' with ÷ without ratios.
pub(crate) fn median_ratio(rounds: &[(f64, f64)]) -> f64 {
    let mut ratios: Vec<f64> = rounds.iter().map(|(w, wo)| w / wo).collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

fn config(tree: bool) -> LogConfig {
    LogConfig {
        merkle_tree: tree,
        ..LogConfig::default()
    }
}

/// Appends/s of one appender, `n` durable appends into a fresh log.
fn one_appender(tree: bool, n: usize) -> f64 {
    let d = dir();
    let log = Log::open(d.path().join("log.redb"), config(tree)).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        log.append(vec![record()]).unwrap();
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// Appends/s of 64 threads, `each` durable appends apiece, into a fresh log.
fn threads(tree: bool, each: usize) -> f64 {
    let d = dir();
    let log = Arc::new(Log::open(d.path().join("log.redb"), config(tree)).unwrap());
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..64 {
            let log = Arc::clone(&log);
            s.spawn(move || {
                for _ in 0..each {
                    log.append(vec![record()]).unwrap();
                }
            });
        }
    });
    (64 * each) as f64 / t.elapsed().as_secs_f64()
}

/// `rounds` alternating rounds of both workloads.
pub(crate) fn measure(rounds: usize) -> TreeCost {
    let mut cost = TreeCost {
        one: vec![],
        threads: vec![],
    };
    for _ in 0..rounds {
        let without = one_appender(false, 1000);
        let with = one_appender(true, 1000);
        cost.one.push((with, without));
        let without = threads(false, 150);
        let with = threads(true, 150);
        cost.threads.push((with, without));
    }
    cost
}
