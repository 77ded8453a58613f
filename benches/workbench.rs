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
//!   (500 events a page, read alone from the log);
//! - the same sessions page, and a session's, over HTTP from `cmdlog serve`
//!   run in this process on the generated log (`cmdlog_server::serve` on a
//!   loopback port, with its token), as a browser gets them: the first
//!   request waits for the daemon's first fold.
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
    let (_tmp, corpus_dir, log) = corpus::open_or_build(events);
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

    // The same pages as the daemon serves them, over HTTP (last: the daemon
    // takes the corpus's log).
    let serve_http = move || served(&corpus_dir, log, runs);

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
    serve_http();
}

/// The sessions page and a session's page over HTTP, from `cmdlog serve` run
/// in this process on `log` (its search index brought up first, as a daemon
/// that has run keeps it).
fn served(corpus: &std::path::Path, log: Log, runs: usize) {
    // The daemon registers its built-in commands as it starts: it serves a
    // copy, so the generated log stays as the other benches expect it.
    let t = Instant::now();
    cmdlog_index::beside(&corpus.join("log.redb"), &log, cmdlog_index::Refresh::Sync).unwrap();
    drop(log);
    let copy = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = copy.path();
    for name in ["log.redb", "log.redb-wal"] {
        if corpus.join(name).exists() {
            std::fs::copy(corpus.join(name), dir.join(name)).unwrap();
        }
    }
    std::fs::create_dir(dir.join("index")).unwrap();
    std::fs::set_permissions(
        dir.join("index"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    for file in std::fs::read_dir(corpus.join("index")).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), dir.join("index").join(file.file_name())).unwrap();
    }
    let indexed = t.elapsed().as_secs_f64();
    let path = dir.join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let token = "bench-token";
    let reopen: cmdlog_server::Reopen = std::sync::Arc::new(|| {
        Box::pin(async { panic!("the bench's daemon does not reopen its log") })
    });
    let config = cmdlog_server::ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        token: Some(token.into()),
        allow_origins: vec![],
        allow_hosts: vec![],
        workspace: dir.to_path_buf(),
        home: home.path().to_path_buf(),
        reopen,
        agent: None,
        key: None,
        redact: false,
        web: false,
        hub: None,
        witnesses: vec![],
    };
    let started = Instant::now();
    let log_path = path.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let engine = cmdlog_engine::Engine::open(log, cmdlog_engine::EngineConfig::default())
                .await
                .unwrap();
            cmdlog_server::serve(engine, config, &log_path)
                .await
                .unwrap();
        });
    });
    let url = loop {
        if let Some(daemon) = cmdlog_agents::DaemonFile::read(&path) {
            break daemon.url;
        }
        assert!(
            started.elapsed().as_secs() < 600,
            "the daemon did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let ready = started.elapsed().as_secs_f64() * 1000.0;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(600)))
        .build()
        .into();
    let bearer = format!("Bearer {token}");
    let get = |what: &str| -> String {
        agent
            .get(&format!("{url}{what}"))
            .header("authorization", &bearer)
            .call()
            .unwrap()
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .unwrap()
    };
    let t = Instant::now();
    let list = get("/ui/");
    let first = t.elapsed().as_secs_f64() * 1000.0;
    let (list_p50, list_p99) = timed(runs, || {
        get("/ui/");
    });
    let session = list
        .split("href=\"/ui/session/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a session on the sessions page")
        .to_string();
    let (one_p50, one_p99) = timed(runs, || {
        get(&format!("/ui/session/{session}"));
    });
    println!(
        "over HTTP from `cmdlog serve` in this process (on a copy of the log and its index, brought up and copied in {indexed:.1} s; listening after {ready:.0} ms)"
    );
    println!("| page over HTTP | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| the sessions page, first request (waits for the daemon's first fold) | {first:.1} ms | |"
    );
    println!("| the sessions page | {list_p50:.1} ms | {list_p99:.1} ms |");
    println!("| a session's page ({session}) | {one_p50:.1} ms | {one_p99:.1} ms |");
    let _ = std::fs::remove_file(cmdlog_agents::DaemonFile::path(&path));
}
