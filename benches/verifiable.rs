//! What the verifiable log costs, side by side in one run (`cargo bench --bench
//! verifiable`):
//!
//! 1. Durable appends with the Merkle tree ÷ the same appends without it
//!    (`LogConfig::merkle_tree`), alternating rounds, medians: one appender, and
//!    64 thread appenders (group commit). Bar: at most 10 % lost.
//! 2. At 1,000,000 events (`CMDLOG_TREE_EVENTS`): `cmdlog checkpoint`,
//!    `cmdlog prove SEQ --json` and `cmdlog prove --since FILE --json` as
//!    processes (median of 15, the open included), and the library calls alone.
//!    Bar: under 20 ms each.
//! 3. The one-time catch-up of a log of that size written without the tree (the
//!    first writable open of a log made before the tree existed).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cmdlog_store::{Durability, Log, LogConfig, NewRecord};

#[path = "shared/tree_cost.rs"]
mod tree_cost;

/// A realistic `command/run` record (about 200 bytes).
const RECORD: &[u8] = br#"{"at":1796000000000,"type":"command/run","session":"s-3f2a9c1d7e4b","agent":"main","data":{"registration":12,"name":"review","mode":"non_interactive","source":"user","raw_input":" src/parser.rs please","attachments":[]}}"#;

fn record() -> NewRecord {
    NewRecord::new(RECORD.to_vec()).stream("s-3f2a9c1d7e4b")
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn append_rows() {
    let cost = tree_cost::measure(11);
    println!(
        "| appends with the tree ÷ without | rounds (with/without appends/s) | median | bar |"
    );
    println!("|---|---|---|---|");
    for (name, rounds) in [
        ("1 appender, durable", &cost.one),
        ("64 thread appenders, durable", &cost.threads),
    ] {
        let shown: Vec<String> = rounds
            .iter()
            .map(|(w, wo)| format!("{w:.0}/{wo:.0}"))
            .collect();
        let m = tree_cost::median_ratio(rounds);
        println!(
            "| {name} | {} | **{m:.2}x** | ≥ 0.90x {} |",
            shown.join(", "),
            if m >= 0.9 { "met" } else { "NOT met" }
        );
    }
}

/// A log of `n` events made as a user's would be (its identity by `cmdlog run`,
/// then the events appended in batches), with or without the tree.
fn big_log(ws: &Path, n: u64, tree: bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["run", "--session", "s", "/help"])
        .current_dir(ws)
        .env("HOME", ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = Log::open(
        ws.join(".cmdlog/log.redb"),
        LogConfig {
            durability: Durability::Buffered,
            merkle_tree: tree,
            ..LogConfig::default()
        },
    )
    .unwrap();
    let head = log.head().seq;
    let mut added = head;
    while added < n {
        let batch = (n - added).min(4096);
        log.append((0..batch).map(|_| record()).collect()).unwrap();
        added += batch;
    }
    log.close();
}

/// Median wall time of `cmdlog ARGS` in `ws`, `runs` times.
fn process_ms(ws: &Path, args: &[&str], runs: usize) -> f64 {
    let mut times = vec![];
    for _ in 0..runs {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
            .args(args)
            .current_dir(ws)
            .env("HOME", ws)
            .output()
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    median(times)
}

fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut times = vec![];
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(f());
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    median(times)
}

fn large_log_rows(n: u64) {
    let d = dir();
    let ws = d.path();
    let t = Instant::now();
    big_log(ws, n, true);
    let built = t.elapsed();
    let seq = (n / 2).to_string();
    let cp = ws.join("old.checkpoint");
    // The key made and a checkpoint saved before timing; then more appended.
    let out = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["checkpoint", "-o", cp.to_str().unwrap()])
        .current_dir(ws)
        .env("HOME", ws)
        .output()
        .unwrap();
    assert!(out.status.success());
    big_log(ws, n + 1000, true);
    let runs = 15;
    let checkpoint = process_ms(ws, &["checkpoint"], runs);
    let prove = process_ms(ws, &["prove", &seq, "--json"], runs);
    let since = process_ms(
        ws,
        &["prove", "--since", cp.to_str().unwrap(), "--json"],
        runs,
    );
    let noop = process_ms(ws, &["--version"], runs);

    let log = Log::open_read_only(ws.join(".cmdlog/log.redb"), LogConfig::default()).unwrap();
    let view_root = timed(101, || log.tree().unwrap().root().unwrap());
    let proof = timed(101, || {
        let view = log.tree().unwrap();
        (
            view.inclusion_proof(n / 2).unwrap(),
            log.leaf(n / 2).unwrap(),
        )
    });
    let consistency = timed(101, || {
        log.tree().unwrap().consistency_proof(n / 3).unwrap()
    });
    drop(log);
    println!("\n| at {n} events (log built in {built:.1?}) | median ms | bar |");
    println!("|---|---|---|");
    let bar = |ms: f64| {
        if ms < 20.0 {
            "< 20 ms met"
        } else {
            "< 20 ms NOT met"
        }
    };
    println!(
        "| `cmdlog checkpoint` (process) | {checkpoint:.1} | {} |",
        bar(checkpoint)
    );
    println!(
        "| `cmdlog prove {seq} --json` (process) | {prove:.1} | {} |",
        bar(prove)
    );
    println!(
        "| `cmdlog prove --since FILE --json` (process) | {since:.1} | {} |",
        bar(since)
    );
    println!("| `cmdlog --version` (the process alone) | {noop:.1} | - |");
    println!("| library: tree view + root | {view_root:.3} | - |");
    println!("| library: inclusion proof + leaf | {proof:.3} | - |");
    println!("| library: consistency proof | {consistency:.3} | - |");

    // The catch-up of a log written without the tree.
    let d = dir();
    big_log(d.path(), n, false);
    let t = Instant::now();
    let log = Log::open(d.path().join(".cmdlog/log.redb"), LogConfig::default()).unwrap();
    let catch_up: Duration = t.elapsed();
    assert!(log.head().seq >= n, "{} records", log.head().seq);
    let t = Instant::now();
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    let verified = t.elapsed();
    println!(
        "| first writable open of a {n}-event log without a tree (catch-up) | {:.0} | - |",
        catch_up.as_secs_f64() * 1000.0
    );
    println!(
        "| `verify_tree` of that log (every record re-hashed) | {:.0} | - |",
        verified.as_secs_f64() * 1000.0
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let started = Instant::now();
    append_rows();
    let n = std::env::var("CMDLOG_TREE_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    large_log_rows(n);
    println!(
        "\nmachine: {} cores; total {:.1?}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        started.elapsed()
    );
}
