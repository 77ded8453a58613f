//! What recording the agents costs, side by side in one run:
//! - `cmdlog hook` per payload (a new process each time, as an agent runs it):
//!   median and p99 wall time beside the `sqlite3` command line inserting the same
//!   payload into a table (a new process each time too, `synchronous=FULL`),
//!   and the syncs one call of each makes (`strace -f -c`, when installed);
//! - `cmdlog import --from claude-code` (through `cmdlog_agents::import`, as the
//!   verb calls it) of a generated transcript set beside plain
//!   `serde_json` decoding of the same lines, and a second import (adds nothing).
//!
//! `cargo bench --bench agents`; CMDLOG_HOOK_CALLS (300) and CMDLOG_IMPORT_MB (100)
//! size it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

fn hook_latency(calls: usize) {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let payload = |i: usize| {
        json!({"session_id": "bench-1", "transcript_path": "/x.jsonl", "cwd": ws.path(),
            "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
            "prompt": format!("Fix the failing test number {i} in src/lib.rs and explain the cause")})
        .to_string()
    };
    let mut hook: Vec<Duration> = (0..calls)
        .map(|i| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_cmdlog"));
            c.args(["hook", "claude-code"])
                .current_dir(ws.path())
                .env("HOME", home.path())
                .env_remove("CLAUDE_PROJECT_DIR");
            timed(c, payload(i).as_bytes())
        })
        .collect();
    hook.sort();
    let hook_syncs = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmdlog"));
        c.args(["hook", "claude-code"])
            .current_dir(ws.path())
            .env("HOME", home.path())
            .env_remove("CLAUDE_PROJECT_DIR");
        syncs(&c, payload(calls).as_bytes())
    };
    let sqlite = Command::new("sqlite3").arg("-version").output().is_ok();
    let db = ws.path().join("events.sqlite");
    let mut lite: Vec<Duration> = Vec::new();
    if sqlite {
        let status = Command::new("sqlite3")
            .arg(&db)
            .arg("PRAGMA journal_mode=WAL; CREATE TABLE events(id INTEGER PRIMARY KEY, at INTEGER, payload TEXT);")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        lite = (0..calls)
            .map(|i| {
                let sql = format!(
                    "PRAGMA synchronous=FULL; INSERT INTO events(at, payload) VALUES (strftime('%s','now'), '{}');",
                    payload(i).replace('\'', "''")
                );
                let mut c = Command::new("sqlite3");
                c.arg(&db);
                timed(c, sql.as_bytes())
            })
            .collect();
        lite.sort();
    }
    let lite_syncs = sqlite.then(|| {
        let mut c = Command::new("sqlite3");
        c.arg(&db);
        let sql = format!(
            "PRAGMA synchronous=FULL; INSERT INTO events(at, payload) VALUES (strftime('%s','now'), '{}');",
            payload(calls + 1).replace('\'', "''")
        );
        syncs(&c, sql.as_bytes())
    });
    let events = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["log", "--session", "bench-1"])
        .current_dir(ws.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    let recorded = String::from_utf8_lossy(&events.stdout)
        .lines()
        .filter(|l| l.contains("session/prompt"))
        .count();
    // The counted calls add one payload each when strace ran them.
    assert_eq!(
        recorded,
        calls + usize::from(hook_syncs.is_some()),
        "every payload recorded"
    );
    println!("| per payload ({calls} calls, one process each) | median | p99 |");
    println!("|---|---|---|");
    println!(
        "| `cmdlog hook claude-code` | {:.2} ms | {:.2} ms |",
        ms(percentile(&hook, 0.5)),
        ms(percentile(&hook, 0.99))
    );
    if sqlite {
        println!(
            "| `sqlite3` insert (WAL, synchronous=FULL) | {:.2} ms | {:.2} ms |",
            ms(percentile(&lite, 0.5)),
            ms(percentile(&lite, 0.99))
        );
        println!(
            "| cmdlog / sqlite3 | {:.2}x | {:.2}x |",
            ms(percentile(&hook, 0.5)) / ms(percentile(&lite, 0.5)),
            ms(percentile(&hook, 0.99)) / ms(percentile(&lite, 0.99))
        );
    } else {
        println!("| `sqlite3` | not installed | - |");
    }
    let count = |n: Option<usize>| n.map_or("- (no strace)".to_string(), |n| n.to_string());
    println!(
        "\nsyncs (fsync + fdatasync, `strace -f -c`) per call: `cmdlog hook` {}, `sqlite3` insert {}",
        count(hook_syncs),
        count(lite_syncs.flatten())
    );
}

/// A Claude Code transcript line of the given kind, shaped like real ones: the
/// envelope every line carries, and the sizes a session has (short prompts, longer
/// answers, tool results that hold whole files).
fn line(session: &str, n: usize, t: usize) -> Value {
    let uuid = format!("{session}-{n:06}");
    let parent = format!("{session}-{:06}", n.saturating_sub(1));
    let ts = format!(
        "2026-08-01T{:02}:{:02}:{:02}.{:03}Z",
        10 + t / 3600 % 10,
        (t / 60) % 60,
        t % 60,
        n % 1000
    );
    let words = |count: usize| {
        (0..count)
            .map(|i| {
                [
                    "the", "build", "fails", "because", "lib.rs", "returns", "an", "error", "when",
                    "parsing",
                ][(i * 7 + n) % 10]
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let envelope = |kind: &str, message: Value| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/u/src/app",
            "sessionId": session, "version": "2.1.140", "gitBranch": "main", "type": kind,
            "message": message, "uuid": uuid, "timestamp": ts})
    };
    match n % 4 {
        0 => envelope("user", json!({"role": "user", "content": words(40)})),
        1 => envelope(
            "assistant",
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [
                {"type": "text", "text": words(120)},
                {"type": "tool_use", "id": format!("toolu_{n}"), "name": "Read", "input": {"file_path": "/home/u/src/app/src/lib.rs", "limit": 400}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 2310, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 18211, "output_tokens": 212, "service_tier": "standard"}}),
        ),
        2 => {
            let file: String = (0..120)
                .map(|i| format!("{:>4}\t    let value_{i} = parse(input, {i})?;\n", i + 1))
                .collect();
            let mut v = envelope(
                "user",
                json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{}", n - 1), "content": file}]}),
            );
            v["toolUseResult"] = json!({"type": "text", "file": {"filePath": "/home/u/src/app/src/lib.rs", "numLines": 120, "startLine": 1, "totalLines": 400}});
            v
        }
        _ => envelope(
            "assistant",
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": words(200)}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 2500, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 18500, "output_tokens": 350, "service_tier": "standard"}}),
        ),
    }
}

fn import(megabytes: usize) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    let target = megabytes * 1024 * 1024;
    let (mut written, mut lines, mut file_no) = (0usize, 0usize, 0usize);
    while written < target {
        let session = format!("sess-{file_no:04}");
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{session}.jsonl"))).unwrap(),
        );
        for n in 0..2000 {
            let text = line(&session, n, n).to_string();
            writeln!(f, "{text}").unwrap();
            written += text.len() + 1;
            lines += 1;
        }
        file_no += 1;
    }
    // Plain decoding of the same lines: the floor any reader pays. Both sides are
    // run three times, side by side, and the medians compared (the machine's disk
    // and neighbours make single runs noisy).
    let decode_once = || {
        let started = Instant::now();
        let mut decoded = 0usize;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for l in text.lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                decoded += v.is_object() as usize;
            }
        }
        assert_eq!(decoded, lines);
        started.elapsed()
    };
    // What `cmdlog import --from claude-code` does, through the library: open the
    // log, give it its identity, import, close (durable).
    let roots = [home.path().join(".claude/projects")];
    let import_once = |ws: &Path| {
        let started = Instant::now();
        let log = Log::open(ws.join(".cmdlog/log.redb"), LogConfig::default()).unwrap();
        cmdlog_engine::ensure_identity(&log).unwrap();
        let done =
            cmdlog_agents::import(&log, AgentKind::ClaudeCode, &roots, None, false, 1, |_| {})
                .unwrap();
        log.close();
        let summary = serde_json::to_value(&done).unwrap();
        (started.elapsed(), summary)
    };
    let median = |mut runs: Vec<Duration>| {
        runs.sort();
        runs[runs.len() / 2]
    };
    let (mut decodes, mut imports, mut summary) = (Vec::new(), Vec::new(), Value::Null);
    let mut last_ws = None;
    for _ in 0..3 {
        decodes.push(decode_once());
        let ws = tempfile::tempdir().unwrap();
        let (took, s) = import_once(ws.path());
        imports.push(took);
        summary = s;
        last_ws = Some(ws);
    }
    let ws = last_ws.unwrap();
    let (decode, first) = (median(decodes), median(imports.clone()));
    let (second, again) = import_once(ws.path());
    assert_eq!(again["events"], 0, "a second import adds nothing");
    let events = summary["events"].as_u64().unwrap() as f64;
    let mb = written as f64 / 1e6;
    let lines_per_s = lines as f64 / decode.as_secs_f64();
    let events_per_s = events / first.as_secs_f64();
    println!();
    println!(
        "| import of {mb:.0} MB, {lines} lines in {file_no} files, {events} events (median of 3) | time | lines/s | events/s | MB/s |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| plain serde_json decode | {:.2} s | {:.0} | - | {:.1} |",
        decode.as_secs_f64(),
        lines_per_s,
        mb / decode.as_secs_f64()
    );
    println!(
        "| `cmdlog import --from claude-code` | {:.2} s (runs: {}) | {:.0} | {:.0} | {:.1} |",
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
        "| import events/s / decode lines/s | {:.2}x | | | |",
        events_per_s / lines_per_s
    );
    println!(
        "| import lines/s / decode lines/s | {:.2}x | | | |",
        decode.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "| second import (adds {} events) | {:.2} s | | | |",
        again["events"],
        second.as_secs_f64()
    );
}

fn main() {
    hook_latency(env_or("CMDLOG_HOOK_CALLS", 300));
    import(env_or("CMDLOG_IMPORT_MB", 100));
}
