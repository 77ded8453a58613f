//! What recording the agents costs, side by side in one run:
//! - `cmdlog hook` per payload and `cmdlog run` per line (a new process each time,
//!   as an agent or a person runs them), alternating with the `sqlite3` command
//!   line making the same durable commits (a new process each time too, WAL,
//!   `synchronous=FULL`): medians, the median of the pair ratios, p99, and the
//!   syncs one call of each makes (`strace -f -c`, when installed);
//! - `cmdlog import --from <agent>` for Claude Code, Codex, Gemini and Qwen
//!   (through `cmdlog_agents::import`, as the verb calls it) of a generated
//!   transcript set (`agents/transcripts.rs`) beside plain `serde_json`
//!   decoding of the same lines, and a second import (adds nothing).
//!
//! `cargo bench --bench agents`; CMDLOG_HOOK_CALLS (300 pairs of each) and
//! CMDLOG_IMPORT_MB (100 per agent; 0 skips the imports) size it;
//! CMDLOG_IMPORT_AGENTS (`codex,gemini`; all four when unset) picks the agents.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "agents/transcripts.rs"]
mod transcripts;

use cmdlog_agents::AgentKind;
use cmdlog_store::{Log, LogConfig};
use serde_json::{Value, json};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How many `fsync`/`fdatasync` calls `command` (and its children) make with
/// `input` on stdin, counted by `strace -f -c`; `None` without strace.
fn syncs(command: &Command, input: &[u8]) -> Option<usize> {
    let out = tempfile::NamedTempFile::new().ok()?;
    let mut c = Command::new("strace");
    c.args(["-f", "-c", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(out.path())
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        c.current_dir(dir);
    }
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(input).ok()?;
    if !child.wait().ok()?.success() {
        return None;
    }
    // `strace -c`: one row per syscall, `calls` the fourth column.
    let report = std::fs::read_to_string(out.path()).ok()?;
    Some(
        report
            .lines()
            .filter(|l| l.ends_with("fsync") || l.ends_with("fdatasync"))
            .filter_map(|l| l.split_whitespace().nth(3)?.parse::<usize>().ok())
            .sum(),
    )
}

/// Runs `command` with `input` on stdin; its wall time.
fn timed(mut command: Command, input: &[u8]) -> Duration {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    started.elapsed()
}

/// The median of the per-pair ratios, and each side's median and p99.
struct Pairs {
    cmdlog: Vec<Duration>,
    sqlite: Vec<Duration>,
    ratios: Vec<f64>,
}

/// Runs `cmdlog` and `sqlite` alternately `calls` times each (so both meet the
/// same moments of the machine), pairing their times.
fn alternate(
    calls: usize,
    mut cmdlog: impl FnMut(usize) -> Duration,
    mut sqlite: impl FnMut(usize) -> Duration,
) -> Pairs {
    let mut pairs = Pairs {
        cmdlog: Vec::new(),
        sqlite: Vec::new(),
        ratios: Vec::new(),
    };
    for i in 0..calls {
        let c = cmdlog(i);
        let s = sqlite(i);
        pairs.ratios.push(c.as_secs_f64() / s.as_secs_f64());
        pairs.cmdlog.push(c);
        pairs.sqlite.push(s);
    }
    pairs.cmdlog.sort();
    pairs.sqlite.sort();
    pairs.ratios.sort_by(f64::total_cmp);
    pairs
}

fn sqlite_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("events.sqlite");
    let status = Command::new("sqlite3")
        .arg(&db)
        .arg("PRAGMA journal_mode=WAL; CREATE TABLE events(id INTEGER PRIMARY KEY, at INTEGER, payload TEXT);")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    db
}

/// `inserts` autocommit inserts of `payload` (each its own durable commit).
fn sqlite_inserts(payload: &str, inserts: usize) -> String {
    let insert = format!(
        "INSERT INTO events(at, payload) VALUES (strftime('%s','now'), '{}');",
        payload.replace('\'', "''")
    );
    format!("PRAGMA synchronous=FULL; {}", insert.repeat(inserts))
}

/// `cmdlog hook` per payload and `cmdlog run` per line, a new process each time
/// as agents and people run them, against the `sqlite3` command line making the
/// same durable commits (one insert; two inserts for a run's `command/run` and
/// `command/done`), alternating.
fn short_processes(calls: usize) {
    if Command::new("sqlite3").arg("-version").output().is_err() {
        println!("SKIPPED: short processes against sqlite3: `sqlite3` is not installed");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let commands = ws.path().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("hi.md"), "Say hi to $ARGUMENTS.\n").unwrap();
    let payload = |i: usize| {
        json!({"session_id": "bench-1", "transcript_path": "/x.jsonl", "cwd": ws.path(),
            "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
            "prompt": format!("Fix the failing test number {i} in src/lib.rs and explain the cause")})
        .to_string()
    };
    let cmdlog = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmdlog"));
        c.args(args)
            .current_dir(ws.path())
            .env("HOME", home.path())
            .env_remove("CLAUDE_PROJECT_DIR");
        c
    };
    let db = sqlite_db(ws.path());
    let sqlite = |sql: String| {
        let mut c = Command::new("sqlite3");
        c.arg(&db);
        (c, sql)
    };
    // The log, its registrations and the run's session exist before timing.
    let warm = cmdlog(&["run", "--session", "bench-run", "/hi warm"])
        .output()
        .unwrap();
    assert!(warm.status.success(), "{warm:?}");
    let hook = alternate(
        calls,
        |i| timed(cmdlog(&["hook", "claude-code"]), payload(i).as_bytes()),
        |i| {
            let (c, sql) = sqlite(sqlite_inserts(&payload(i), 1));
            timed(c, sql.as_bytes())
        },
    );
    let run = alternate(
        calls,
        |i| {
            timed(
                cmdlog(&["run", "--session", "bench-run", &format!("/hi {i}")]),
                b"",
            )
        },
        |i| {
            let (c, sql) = sqlite(sqlite_inserts(&payload(i), 2));
            timed(c, sql.as_bytes())
        },
    );
    let hook_syncs = syncs(&cmdlog(&["hook", "claude-code"]), payload(calls).as_bytes());
    let run_syncs = syncs(
        &cmdlog(&["run", "--session", "bench-run", "/hi counted"]),
        b"",
    );
    let (c, sql) = sqlite(sqlite_inserts(&payload(0), 1));
    let one_syncs = syncs(&c, sql.as_bytes());
    let (c, sql) = sqlite(sqlite_inserts(&payload(0), 2));
    let two_syncs = syncs(&c, sql.as_bytes());

    // Every payload and every run is in the log.
    let events = |session: &str, kind: &str| {
        let out = cmdlog(&["log", "--session", session]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(kind))
            .count()
    };
    assert_eq!(
        events("bench-1", "session/prompt"),
        calls + usize::from(hook_syncs.is_some()),
        "every payload recorded"
    );
    assert_eq!(
        events("bench-run", "command/done"),
        calls + 1 + usize::from(run_syncs.is_some()),
        "every run recorded"
    );
    let count = |n: Option<usize>| n.map_or("- (no strace)".to_string(), |n| n.to_string());
    println!(
        "| {calls} alternating pairs, one process each | cmdlog median | sqlite3 median | median of pair ratios | limit | cmdlog p99 | sqlite3 p99 | syncs cmdlog / sqlite3 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, pairs, syncs) in [
        (
            "`cmdlog hook claude-code` vs one insert",
            &hook,
            (hook_syncs, one_syncs),
        ),
        (
            "`cmdlog run \"/hi N\"` vs two inserts",
            &run,
            (run_syncs, two_syncs),
        ),
    ] {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2}x | 1.2x | {:.2} ms | {:.2} ms | {} / {} |",
            ms(percentile(&pairs.cmdlog, 0.5)),
            ms(percentile(&pairs.sqlite, 0.5)),
            pairs.ratios[pairs.ratios.len() / 2],
            ms(percentile(&pairs.cmdlog, 0.99)),
            ms(percentile(&pairs.sqlite, 0.99)),
            count(syncs.0),
            count(syncs.1),
        );
    }
}

/// One agent's generated transcript set, imported three times beside plain
/// decoding of the same lines, then a second time into the last log.
fn import(agent: AgentKind, megabytes: usize) {
    let home = tempfile::tempdir().unwrap();
    let set = transcripts::write(agent, home.path(), megabytes * 1024 * 1024);
    // Plain decoding of the same lines: the floor any reader pays. Both sides are
    // run three times, side by side, and the medians compared (the machine's disk
    // and neighbours make single runs noisy).
    let decode_once = || {
        let started = Instant::now();
        let mut decoded = 0usize;
        for file in &set.files {
            let text = std::fs::read_to_string(file).unwrap();
            for l in text.lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                decoded += v.is_object() as usize;
            }
        }
        assert_eq!(decoded, set.lines);
        started.elapsed()
    };
    // The reader alone: the files parsed into items, nothing appended.
    let parse_once = || {
        let started = Instant::now();
        let mut items = 0;
        for file in &set.files {
            items += cmdlog_agents::read_transcript(agent, file).unwrap().items;
        }
        assert!(items > 0);
        started.elapsed()
    };
    // What `cmdlog import --from <agent>` does, through the library: open the
    // log, give it its identity, import, close (durable).
    let roots = [set.root.clone()];
    let import_once = |ws: &Path| {
        let started = Instant::now();
        let log = Log::open(ws.join(".cmdlog/log.redb"), LogConfig::default()).unwrap();
        cmdlog_engine::identity::ensure_identity(&log).unwrap();
        let done = cmdlog_agents::import(&log, agent, &roots, None, false, 1, |_| {}).unwrap();
        log.close();
        let summary = serde_json::to_value(&done).unwrap();
        (started.elapsed(), summary)
    };
    let median = |mut runs: Vec<Duration>| {
        runs.sort();
        runs[runs.len() / 2]
    };
    let (mut decodes, mut imports, mut summary) = (Vec::new(), Vec::new(), Value::Null);
    let mut parses = Vec::new();
    let mut last_ws = None;
    for _ in 0..3 {
        decodes.push(decode_once());
        parses.push(parse_once());
        let ws = tempfile::tempdir().unwrap();
        let (took, s) = import_once(ws.path());
        imports.push(took);
        summary = s;
        last_ws = Some(ws);
    }
    let ws = last_ws.unwrap();
    let (decode, first, parse) = (median(decodes), median(imports.clone()), median(parses));
    let (second, again) = import_once(ws.path());
    assert_eq!(again["events"], 0, "a second import adds nothing");
    let (lines, files) = (set.lines, set.files.len());
    let events = summary["events"].as_u64().unwrap() as f64;
    let mb = set.bytes as f64 / 1e6;
    let lines_per_s = lines as f64 / decode.as_secs_f64();
    let events_per_s = events / first.as_secs_f64();
    let name = agent.name();
    println!();
    println!(
        "| {name}: import of {mb:.0} MB, {lines} lines in {files} files, {events} events (median of 3) | time | lines/s | events/s | MB/s |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| plain serde_json decode | {:.2} s | {:.0} | - | {:.1} |",
        decode.as_secs_f64(),
        lines_per_s,
        mb / decode.as_secs_f64()
    );
    println!(
        "| its reader alone (items, no log) | {:.2} s | {:.0} | - | {:.1} |",
        parse.as_secs_f64(),
        lines as f64 / parse.as_secs_f64(),
        mb / parse.as_secs_f64()
    );
    println!(
        "| `cmdlog import --from {name}` | {:.2} s (runs: {}) | {:.0} | {:.0} | {:.1} |",
        first.as_secs_f64(),
        imports
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
        lines as f64 / first.as_secs_f64(),
        events_per_s,
        mb / first.as_secs_f64()
    );
    println!(
        "| import lines/s / decode lines/s (bar: 0.5) | {:.2}x | | | |",
        decode.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "| import events/s / decode lines/s | {:.2}x | | | |",
        events_per_s / lines_per_s
    );
    println!(
        "| second import (adds {} events, {} of {files} files unchanged; bar: 0.2 s) | {:.3} s | | | |",
        again["events"],
        again["unchanged"],
        second.as_secs_f64()
    );
}

fn main() {
    let calls = env_or("CMDLOG_HOOK_CALLS", 300);
    if calls > 0 {
        short_processes(calls);
    }
    let megabytes = env_or("CMDLOG_IMPORT_MB", 100);
    if megabytes > 0 {
        // CMDLOG_IMPORT_AGENTS (all four): which, by name, comma-separated.
        let only = std::env::var("CMDLOG_IMPORT_AGENTS").unwrap_or_default();
        for agent in [
            AgentKind::ClaudeCode,
            AgentKind::Codex,
            AgentKind::Gemini,
            AgentKind::Qwen,
        ] {
            if only.is_empty() || only.split(',').any(|a| a == agent.name()) {
                import(agent, megabytes);
            }
        }
    }
}
