//! The read verbs on a large log while another process holds it, against the
//! same verbs on the same log unheld (issue 39), and how soon `cmdlog log
//! --follow` prints what the holder appends.
//!
//! `cargo bench --bench held_verbs` (`CMDLOG_HELD_EVENTS`, default 1,000,000;
//! `CMDLOG_HELD_RUNS`, default 5 per verb and side, five times that for a verb
//! under a second; `CMDLOG_HELD_LOG=DIR` keeps the log there and reuses it on
//! the next run). The verbs are the real
//! binary, as a user runs them; the holder is a writable open of this bench
//! answering through `serve_readers`, as `cmdlog serve` does. Rounds
//! alternate unheld and held, each side's first run of a verb after the
//! switch not counted; the figure is the median of each side.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cmdlog_store::{Log, LogConfig, NewRecord};

#[path = "shared/own_state.rs"]
mod own_state;

#[path = "shared/engine_log.rs"]
mod engine_log;

const SESSIONS: usize = 200;
const VERBS: &[&[&str]] = &[&["sessions"], &["audit"], &["log", "--session", "s100"]];
/// Appends `log --follow` is timed on, one every `FOLLOW_GAP`.
const FOLLOWED: usize = 400;
const FOLLOW_GAP: Duration = Duration::from_millis(10);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The verb's wall time, its output read and dropped.
fn time(dir: &Path, verb: &[&str]) -> Duration {
    let started = Instant::now();
    let status = cmdlog(dir, verb).stdout(Stdio::null()).status().unwrap();
    assert!(status.success(), "cmdlog {verb:?}");
    started.elapsed()
}

fn cmdlog(dir: &Path, verb: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cmdlog"));
    command
        .args(verb)
        .arg("--log")
        .arg(dir.join("log.redb"))
        .current_dir(dir.join("ws"))
        .env("HOME", dir.join("home"))
        .env("NO_COLOR", "1");
    command
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// How long after each append's acknowledgement `log --follow` printed it.
fn follow_latencies(dir: &Path, log: &Arc<Log>) -> Vec<Duration> {
    let head = log.head().seq;
    // A command/run of the log, appended again: an event `log` prints.
    let run = (1..=head)
        .rev()
        .map(|seq| log.get(seq).unwrap().unwrap())
        .find(|r| String::from_utf8_lossy(&r.bytes).contains("\"command/run\""))
        .unwrap();
    let stream = run.stream.clone().unwrap();
    let mut follow = cmdlog(dir, &["log", "--follow", "--from", &(head + 1).to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, seen) = std::sync::mpsc::channel();
    let out = follow.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let seq: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
            let _ = tx.send((seq, Instant::now()));
        }
    });
    // Until it follows: the first append is waited for, not timed.
    std::thread::sleep(Duration::from_millis(500));
    let mut latencies = Vec::with_capacity(FOLLOWED);
    for i in 0..=FOLLOWED {
        let receipt = log
            .append(vec![
                NewRecord::new(run.bytes.clone()).stream(stream.clone()),
            ])
            .unwrap();
        let acknowledged = Instant::now();
        let (seq, at) = seen.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(seq, receipt.first);
        if i > 0 {
            latencies.push(at.saturating_duration_since(acknowledged));
        }
        std::thread::sleep(FOLLOW_GAP);
    }
    let _ = follow.kill();
    let _ = follow.wait();
    latencies
}

fn main() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The socket's folder is the user's state folder: this run's own.
    own_state::in_own_state_folder(tmp.path());
    let kept = std::env::var_os("CMDLOG_HELD_LOG").map(std::path::PathBuf::from);
    let dir = kept.as_deref().unwrap_or(tmp.path());
    let events = env_or("CMDLOG_HELD_EVENTS", 1_000_000);
    let runs = env_or("CMDLOG_HELD_RUNS", 5) as usize;
    let started = Instant::now();
    let path = dir.join("log.redb");
    if !path.exists() {
        std::fs::create_dir_all(dir).unwrap();
        engine_log::build(dir, events, SESSIONS);
    }
    // Writable: it recovers a kept log that a killed holder left.
    let head = Log::open(&path, LogConfig::default()).unwrap().head().seq;
    println!(
        "a log of {head} events across {SESSIONS} sessions, built in {:.1?}; {runs} runs per verb and side, alternating",
        started.elapsed()
    );
    // Once each, and a short verb as often as its share of the time allows.
    let times: Vec<usize> = VERBS
        .iter()
        .map(|verb| match time(dir, verb) < Duration::from_secs(1) {
            true => 5,
            false => 1,
        })
        .collect();
    let mut unheld = vec![Vec::new(); VERBS.len()];
    let mut held = vec![Vec::new(); VERBS.len()];
    // Each side's first run after the switch is not counted: the opens and
    // closes between them move the file's pages in and out of memory.
    let side = |out: &mut Vec<Vec<Duration>>| {
        for (i, verb) in VERBS.iter().enumerate() {
            time(dir, verb);
            for _ in 0..times[i] {
                out[i].push(time(dir, verb));
            }
        }
    };
    for _ in 0..runs {
        side(&mut unheld);
        let log = Arc::new(Log::open(&path, LogConfig::default()).unwrap());
        let holding = cmdlog_store::serve_readers(&log).unwrap();
        side(&mut held);
        drop(holding);
        drop(log);
    }
    println!("| verb | unheld (median) | held (median) | held ÷ unheld |");
    println!("|---|---|---|---|");
    for (i, verb) in VERBS.iter().enumerate() {
        let (u, h) = (median(unheld[i].clone()), median(held[i].clone()));
        println!(
            "| `{}` | {u:.2?} | {h:.2?} | {:.2}x |",
            verb.join(" "),
            h.as_secs_f64() / u.as_secs_f64()
        );
    }
    let log = Arc::new(Log::open(&path, LogConfig::default()).unwrap());
    let _holding = cmdlog_store::serve_readers(&log).unwrap();
    let mut latencies = follow_latencies(dir, &log);
    println!(
        "log --follow, {FOLLOWED} appends {FOLLOW_GAP:?} apart: p50 {:.2?}, p99 {:.2?}, max {:.2?} after the acknowledgement (bar: p99 ≤ 50 ms)",
        percentile(&mut latencies, 0.5),
        percentile(&mut latencies, 0.99),
        percentile(&mut latencies, 1.0)
    );
}
