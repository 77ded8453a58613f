//! The full-text index (issue 41) side by side with what it replaces, in one
//! run, on a generated log of realistic agent sessions (prompts, shell
//! commands, tool outputs of a few KB, replies; their words drawn by Zipf's
//! law over a vocabulary of 5,000, as natural text draws them):
//!
//! - building the index from scratch, events/s, beside replaying (reading
//!   and decoding) the same log; bar ≥ 0.3×;
//! - query latency, p50 and p99, for a word, a phrase, a field filter and a
//!   combination: the index, SQLite FTS5 over the same texts, and `rg` over
//!   the log's export (when `rg` is installed); bars ≥ 10× `rg`, ≥ 1× FTS5;
//! - the index's size ÷ the log's, and the process's peak memory.
//!
//! - incremental indexing beside 64 appending threads: how long until the
//!   index covers the head the log had (bar: within 1 s).
//!
//! `CMDLOG_SEARCH_EVENTS` (100,000) sets the log's size;
//! `CMDLOG_SEARCH_RUNS` (30) the runs per query; `CMDLOG_SEARCH_LAG_SECONDS`
//! (10, 0: none) how long the appenders run; `CMDLOG_SEARCH_DIR` keeps the
//! generated log in a folder for the next run; `CMDLOG_SEARCH_BUILD_ONLY`
//! stops after the build (to profile it); `CMDLOG_SEARCH_QUERY_ONLY` takes
//! the index, the FTS5 database and the export a run left in
//! `CMDLOG_SEARCH_DIR` and measures the queries alone.

use std::io::Write;
use std::time::Instant;

use cmdlog_engine::Event;
use cmdlog_index::SearchIndex;
use cmdlog_store::{Log, LogConfig, NewRecord};
use serde_json::json;

#[path = "corpus/mod.rs"]
mod corpus;
use corpus::{Rng, env_usize};

/// Reads and decodes every event: the replay the index is built beside.
fn replay(log: &Log) -> usize {
    let mut n = 0;
    log.scan(1, log.head().seq, |r| {
        if Event::decode(r.seq, &r.bytes).is_ok() {
            n += 1;
        }
        true
    })
    .unwrap();
    n
}

fn folder_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// The process's peak resident memory (`VmHWM`), KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

/// 64 threads append for `seconds` while `keep_current` indexes, as
/// `cmdlog serve` does; every 50 ms the log's head is noted, and the time
/// until the index covers it is its lag. Returns (appends/s, lag p50, p99,
/// max in ms).
fn follow_lag(seconds: u64) -> (f64, f64, f64, f64) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("log.redb");
    let log = Arc::new(Log::open(&path, LogConfig::default()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let indexer = {
        let (log, stop, path) = (Arc::clone(&log), Arc::clone(&done), path.clone());
        std::thread::spawn(move || {
            let current = || Some(Arc::clone(&log));
            let stopped = || stop.load(Ordering::Relaxed);
            cmdlog_index::keep_current(&path, &current, &stopped).unwrap();
        })
    };
    let start = Instant::now();
    let appenders: Vec<_> = (0..64)
        .map(|t| {
            let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let session = format!("live-{t}");
                    let text = rng.words(20);
                    let record = NewRecord::new(
                        json!({"at": 1_790_000_000_000u64 + n, "type": "session/prompt", "session": session,
                               "agent": "codex", "data": {"text": text, "delivery": "idle"}})
                        .to_string()
                        .into_bytes(),
                    )
                    .stream(session);
                    log.append(vec![record]).unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let index_dir = cmdlog_index::dir_of(&path);
    let covered = || {
        SearchIndex::open_existing(&index_dir)
            .ok()
            .and_then(|i| i.covered())
            .map_or(0, |c| c.through)
    };
    // (when noted, head then); lags once covered.
    let mut waiting: std::collections::VecDeque<(Instant, u64)> = Default::default();
    let mut lags = Vec::new();
    let mut next_note = Instant::now();
    while start.elapsed() < Duration::from_secs(seconds) || !waiting.is_empty() {
        if start.elapsed() < Duration::from_secs(seconds) && Instant::now() >= next_note {
            waiting.push_back((Instant::now(), log.head().seq));
            next_note += Duration::from_millis(50);
        }
        if start.elapsed() >= Duration::from_secs(seconds) {
            stop.store(true, Ordering::Relaxed);
        }
        let through = covered();
        while let Some(&(when, head)) = waiting.front() {
            if through < head {
                break;
            }
            lags.push(when.elapsed().as_secs_f64() * 1e3);
            waiting.pop_front();
        }
        if start.elapsed() > Duration::from_secs(seconds + 30) {
            panic!("the index did not catch up within 30 s of the appends' end");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let appended: u64 = appenders.into_iter().map(|a| a.join().unwrap()).sum();
    indexer.join().unwrap();
    let rate = appended as f64 / seconds as f64;
    let max = lags.iter().copied().fold(0.0, f64::max);
    let (p50, p99) = percentiles(lags);
    (rate, p50, p99, max)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let events = env_usize("CMDLOG_SEARCH_EVENTS", 100_000);
    let lag_seconds = env_usize("CMDLOG_SEARCH_LAG_SECONDS", 10) as u64;
    if lag_seconds > 0 {
        let (rate, p50, p99, max) = follow_lag(lag_seconds);
        println!(
            "64 appenders, {rate:.0} appends/s for {lag_seconds} s, the index kept current as cmdlog serve does: lag p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms (bar: within 1 s)"
        );
    }
    let runs = env_usize("CMDLOG_SEARCH_RUNS", 30);
    let (_tmp, dir, log) = corpus::open_or_build(events);
    let log_bytes = std::fs::metadata(dir.join("log.redb")).unwrap().len();
    println!(
        "{events} events, log {:.1} MiB",
        log_bytes as f64 / 1048576.0
    );

    let query_only = std::env::var_os("CMDLOG_SEARCH_QUERY_ONLY").is_some()
        && dir.join("fts.sqlite").exists()
        && dir.join("export.jsonl").exists();
    if !query_only {
        build_beside_replay(&dir, &log, log_bytes);
        if std::env::var_os("CMDLOG_SEARCH_BUILD_ONLY").is_some() {
            return;
        }
    }
    queries(&dir, &log, runs, !query_only);
}

/// Builds the index from scratch beside replays of the log, alternating,
/// three rounds; prints the rates, the index's size and the peak memory.
fn build_beside_replay(dir: &std::path::Path, log: &Log, log_bytes: u64) {
    println!("| round | replay (events/s) | index build (events/s) | build ÷ replay |");
    println!("|---|---|---|---|");
    let index_dir = dir.join("index");
    let mut ratios = Vec::new();
    for round in 1..=3 {
        let t = Instant::now();
        let n = replay(log);
        let replay_rate = n as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (added, _) = SearchIndex::open(&index_dir).unwrap().rebuild(log).unwrap();
        let build_rate = added as f64 / t.elapsed().as_secs_f64();
        ratios.push(build_rate / replay_rate);
        println!(
            "| {round} | {replay_rate:.0} | {build_rate:.0} | {:.3}x |",
            build_rate / replay_rate
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median build ÷ replay: **{:.3}x** (bar ≥ 0.3x)", ratios[1]);
    let index_bytes = folder_bytes(&index_dir);
    println!(
        "index {:.1} MiB = {:.2}x the log; peak memory {} MiB",
        index_bytes as f64 / 1048576.0,
        index_bytes as f64 / log_bytes as f64,
        peak_kib() / 1024
    );
}

/// Each query's latency through the index, SQLite FTS5 over the same texts
/// and `rg` over the export (both made from the log when `make`).
fn queries(dir: &std::path::Path, log: &Log, runs: usize, make: bool) {
    let index_dir = dir.join("index");
    let export = dir.join("export.jsonl");
    if make {
        fts_and_export(dir, log, &export);
    }
    let db = rusqlite::Connection::open(dir.join("fts.sqlite")).unwrap();
    let rg = std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_ok();

    let index = SearchIndex::open(&index_dir).unwrap();
    // The same index, each search on the caller's thread alone (a phrase too).
    let mut single = SearchIndex::open(&index_dir).unwrap();
    single.set_phrase_threads(1);
    // (name, index query, FTS5 query, rg pattern)
    let queries = [
        ("word", "migration", "migration", "migration"),
        (
            "phrase",
            "\"payments webhook retry\"",
            "\"payments webhook retry\"",
            "payments webhook retry",
        ),
        ("field", "tool:bash", "tool:Bash", "\"tool_name\":\"Bash\""),
        (
            "combination",
            "type:tool status:error timeout",
            "kind:tool_call_update AND failed AND timeout",
            "failed.*timeout",
        ),
    ];
    println!(
        "\n| query | index p50 / p99 (ms) | one thread p50 / p99 (ms) | FTS5 p50 / p99 (ms) | rg p50 / p99 (ms) | vs FTS5 (p50) | vs rg (p50) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, q, fts, pattern) in queries {
        let mut ours = Vec::new();
        let mut alone = Vec::new();
        let mut theirs = Vec::new();
        let mut grep = Vec::new();
        for run in 0..runs {
            // Each side first in turn: the first after `rg` finds the
            // caches cold.
            let sides: [(&SearchIndex, &mut Vec<f64>); 2] = if run % 2 == 0 {
                [(&index, &mut ours), (&single, &mut alone)]
            } else {
                [(&single, &mut alone), (&index, &mut ours)]
            };
            for (side, times) in sides {
                let t = Instant::now();
                let (hits, _) = side.search(log, q, 20).unwrap();
                std::hint::black_box(hits);
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let t = Instant::now();
            let mut stmt = db
                .prepare_cached("SELECT seq, snippet(docs, 3, '[', ']', '…', 12) FROM docs WHERE docs MATCH ?1 ORDER BY rank LIMIT 20")
                .unwrap();
            let rows: Vec<(i64, String)> = stmt
                .query_map([fts], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            std::hint::black_box(rows);
            theirs.push(t.elapsed().as_secs_f64() * 1e3);
            if rg && grep.len() < 5 {
                let t = Instant::now();
                let out = std::process::Command::new("rg")
                    .args(["-c", "--", pattern])
                    .arg(&export)
                    .output()
                    .unwrap();
                std::hint::black_box(out);
                grep.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let (o50, o99) = percentiles(ours);
        let (a50, a99) = percentiles(alone);
        let (f50, f99) = percentiles(theirs);
        let (rg_cell, rg_ratio) = if grep.is_empty() {
            ("not installed".to_string(), "-".to_string())
        } else {
            let (g50, g99) = percentiles(grep);
            (format!("{g50:.2} / {g99:.2}"), format!("{:.1}x", g50 / o50))
        };
        println!(
            "| {name} `{q}` | {o50:.2} / {o99:.2} | {a50:.2} / {a99:.2} | {f50:.2} / {f99:.2} | {rg_cell} | {:.2}x | {rg_ratio} |",
            f50 / o50
        );
    }
}

/// The log's texts in SQLite FTS5 (`fts.sqlite`) and its export for `rg`.
fn fts_and_export(dir: &std::path::Path, log: &Log, export: &std::path::Path) {
    let _ = std::fs::remove_file(dir.join("fts.sqlite"));
    let db = rusqlite::Connection::open(dir.join("fts.sqlite")).unwrap();
    db.execute_batch("CREATE VIRTUAL TABLE docs USING fts5(seq UNINDEXED, kind, tool, text)")
        .unwrap();
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(export).unwrap());
        let tx = db.unchecked_transaction().unwrap();
        {
            let mut insert = tx
                .prepare("INSERT INTO docs(seq, kind, tool, text) VALUES (?1, ?2, ?3, ?4)")
                .unwrap();
            log.scan(1, log.head().seq, |r| {
                let e = Event::decode(r.seq, &r.bytes).unwrap();
                let v = e.to_json();
                writeln!(out, "{v}").unwrap();
                let data = &v["data"];
                let text = data.to_string();
                let kind = data["sessionUpdate"]
                    .as_str()
                    .unwrap_or(v["type"].as_str().unwrap());
                let tool = data["tool_name"].as_str().unwrap_or("");
                insert
                    .execute(rusqlite::params![r.seq as i64, kind, tool, text])
                    .unwrap();
                true
            })
            .unwrap();
        }
        tx.commit().unwrap();
    }
}
