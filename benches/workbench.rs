//! The workbench's pages on a big log (issue 42), made in-process as the
//! daemon makes them (the page functions of `cmdlog-workbench`, without
//! HTTP), side by side in one run:
//!
//! - the sessions page of the generated log (`corpus`: 40 events a session),
//!   as the daemon serves it — its fold of the sessions kept current, each
//!   request folding only what was appended since (bar < 300 ms) — beside a
//!   page made from a fold of the whole log (what it would cost without);
//! - the page of a log (up to 100,000 events) that grows by 1,000 events
//!   between two pages;
//! - one session of 100,000 events: its first page and a page in its middle
//!   (500 events a page, read alone from the log).
//!
//! `CMDLOG_WORKBENCH_EVENTS` (100,000) sets the log's size (the bar
//! is for 1,000,000); `CMDLOG_WORKBENCH_RUNS` (20) the runs per page;
//! `CMDLOG_SEARCH_DIR` keeps the generated log for the next run (shared with
//! the search bench).

use std::time::Instant;

use cmdlog_replay::SessionsFold;
use cmdlog_store::{Durability, Log, LogConfig, NewRecord};
use cmdlog_workbench::{ListParams, SessionParams, Site, session_page, sessions_page};
use serde_json::json;

#[path = "corpus/mod.rs"]
mod corpus;
use corpus::env_usize;

fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn timed(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    let ms = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    percentiles(ms)
}

/// A log of one session of `events` events: prompts, tool calls and their
/// outputs, replies.
fn one_long_session(dir: &std::path::Path, events: usize) -> Log {
    let config = LogConfig {
        durability: Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.join("long.redb"), config).unwrap();
    let mut batch = Vec::with_capacity(1000);
    for n in 0..events {
        let data = match n % 4 {
            0 => json!({"text": format!("step {n}: go on"), "delivery": "idle"}),
            1 => {
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{n}"), "title": "Bash",
                        "kind": "execute", "status": "pending", "rawInput": {"command": format!("make step-{n}")}})
            }
            2 => json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("c{}", n - 1),
                        "status": "completed", "rawOutput": {"output": "ok\n".repeat(12)}}),
            _ => {
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("done with step {n}")}})
            }
        };
        let kind = if n % 4 == 0 {
            "session/prompt"
        } else {
            "session/update"
        };
        batch.push(
            NewRecord::new(
                json!({"at": 1_790_000_000_000u64 + n as u64, "type": kind, "session": "long", "agent": "codex", "data": data})
                    .to_string()
                    .into_bytes(),
            )
            .stream("long".to_string()),
        );
        if batch.len() == 1000 {
            log.append(std::mem::take(&mut batch)).unwrap();
        }
    }
    if !batch.is_empty() {
        log.append(batch).unwrap();
    }
    log
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let events = env_usize("CMDLOG_WORKBENCH_EVENTS", 100_000);
    let runs = env_usize("CMDLOG_WORKBENCH_RUNS", 20);
    let (_tmp, _dir, log) = corpus::open_or_build(events);
    let params = ListParams::default();

    // Made once from a fold of the whole log (what a daemon without its
    // fold would pay on every request), then as the daemon serves it.
    let (cold_p50, cold_p99) = timed(runs.min(5), || {
        let mut fold = SessionsFold::default();
        fold.update(&log).unwrap();
        sessions_page(&fold, &params, &Site::local()).unwrap();
    });
    let mut fold = SessionsFold::default();
    let t = Instant::now();
    fold.update(&log).unwrap();
    let first_fold = t.elapsed().as_secs_f64() * 1000.0;
    let mut bytes = 0;
    let (warm_p50, warm_p99) = timed(runs, || {
        fold.update(&log).unwrap();
        bytes = sessions_page(&fold, &params, &Site::local()).unwrap().len();
    });
    println!(
        "{events} events, {} sessions; the daemon's first fold {first_fold:.0} ms (at its start, on a thread of its own)",
        fold.len()
    );
    println!("| sessions page | p50 | p99 |");
    println!("|---|---|---|");
    println!("| from a fold of the whole log | {cold_p50:.1} ms | {cold_p99:.1} ms |");
    println!(
        "| as the daemon serves it (its fold kept current; {} KB of HTML) | {warm_p50:.1} ms | {warm_p99:.1} ms |",
        bytes / 1024
    );

    // After 1,000 events appended since the last page.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let copy = dir.path().join("copy.redb");
    drop(fold);
    let mut fold = SessionsFold::default();
    let grown = Log::open(
        &copy,
        LogConfig {
            durability: Durability::Buffered,
            ..LogConfig::default()
        },
    )
    .unwrap();
    // A log of its own that grows: the corpus's sessions, then 1,000 more
    // events a round.
    let mut n = 0u64;
    let mut append = |count: usize| {
        let batch: Vec<NewRecord> = (0..count)
            .map(|_| {
                n += 1;
                let session = format!("g-{}", n / 40);
                NewRecord::new(
                    json!({"at": 1_790_000_000_000u64 + n, "type": "session/prompt", "session": session,
                           "agent": "gemini", "data": {"text": "go on", "delivery": "idle"}})
                    .to_string()
                    .into_bytes(),
                )
                .stream(session)
            })
            .collect();
        grown.append(batch).unwrap();
    };
    append(events.min(100_000));
    fold.update(&grown).unwrap();
    let (grow_p50, grow_p99) = timed(runs, || {
        append(1000);
        fold.update(&grown).unwrap();
        sessions_page(&fold, &params, &Site::local()).unwrap();
    });
    println!(
        "| a log of {} events growing by 1,000 between two pages | {grow_p50:.1} ms | {grow_p99:.1} ms |",
        events.min(100_000)
    );

    // One session of 100,000 events.
    let long_events = env_usize("CMDLOG_WORKBENCH_SESSION_EVENTS", 100_000);
    let long = one_long_session(dir.path(), long_events);
    // As the daemon makes it: the session at a glance from its fold.
    let mut long_fold = SessionsFold::default();
    long_fold.update(&long).unwrap();
    let known = Some(&long_fold);
    let first = timed(runs.min(5), || {
        session_page(
            &long,
            "long",
            &SessionParams::default(),
            known,
            &Site::local(),
        )
        .unwrap();
    });
    let middle = SessionParams {
        from: (long_events / 2) as u64,
        ..SessionParams::default()
    };
    let mid = timed(runs.min(5), || {
        session_page(&long, "long", &middle, known, &Site::local()).unwrap();
    });
    println!("| one session of {long_events} events | p50 | p99 |");
    println!("|---|---|---|");
    println!("| its first page | {:.1} ms | {:.1} ms |", first.0, first.1);
    println!(
        "| a page in its middle | {:.1} ms | {:.1} ms |",
        mid.0, mid.1
    );
}
