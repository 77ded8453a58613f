//! Crash test: a child process appends and executes under load and reports every
//! acknowledged seq (every third cycle, two short-lived children at once); the
//! parent kills it with SIGKILL at a random moment, reopens the log, and checks that every acknowledged event is there, `verify` is clean
//! and interrupted runs were closed. 20 cycles by default; `CMDLOG_CRASH_CYCLES=500`
//! runs more. The seed is printed; `CMDLOG_SEED` replays one.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use cmdlog_engine::*;
use cmdlog_replay::verify;
use cmdlog_store::{Log, LogConfig};

const CHILD_ENV: &str = "CMDLOG_CRASH_CHILD_LOG";
const CHECKPOINT_ENV: &str = "CMDLOG_CRASH_CHILD_CHECKPOINT_BYTES";
/// Set: the child opens the log short-lived (frames alone, redb's file untouched),
/// and two children append at once.
const SHORT_LIVED_ENV: &str = "CMDLOG_CRASH_CHILD_SHORT_LIVED";
/// Cycles that share one log before the test starts a fresh one.
const LOG_CYCLES: usize = 50;

/// The child: run by the parent through this test binary, never on its own.
#[test]
#[ignore = "run by crash_cycles_lose_no_acknowledged_event as its child process"]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Every other cycle checkpoints every few dozen frames, so kills also land
        // inside checkpoints.
        let mut config = LogConfig::default();
        if let Some(bytes) = std::env::var(CHECKPOINT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config.checkpoint_bytes = bytes;
        }
        let log = if std::env::var_os(SHORT_LIVED_ENV).is_some() {
            Log::open_short_lived(&path, config).unwrap()
        } else {
            Log::open(&path, config).unwrap()
        };
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        let pid = std::process::id();
        let tasks: Vec<_> = (0..8)
            .map(|t| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    let session = format!("p{pid}-t{t}");
                    engine
                        .ensure_session(&session, "main", Mode::NonInteractive)
                        .await
                        .unwrap();
                    for i in 0.. {
                        let ex = engine
                            .execute(ExecuteRequest::new(
                                &session,
                                "main",
                                Mode::NonInteractive,
                                &format!("/model m{i}"),
                            ))
                            .await
                            .unwrap()
                            .unwrap();
                        // Acknowledged: the run and its done are durable.
                        println!("ack {} {}", ex.command_id, ex.done.unwrap());
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
}

/// xorshift64*: a small seeded generator for kill delays.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[test]
fn crash_cycles_lose_no_acknowledged_event() {
    let cycles = cmdlog_test_support::env_usize("CMDLOG_CRASH_CYCLES", 20);
    let seed = cmdlog_test_support::seed();
    eprintln!("crash test seed: {seed} (rerun with CMDLOG_SEED={seed}), {cycles} cycles");
    let mut rng = seed;
    let mut dir = tempfile::tempdir().unwrap();
    let mut acknowledged: Vec<u64> = Vec::new();
    let mut total_acks = 0usize;
    let mut short_lived_acks = 0usize;
    for cycle in 0..cycles {
        // A fresh log every 50 cycles keeps each cycle's full verify cheap.
        if cycle > 0 && cycle % LOG_CYCLES == 0 {
            dir = tempfile::tempdir().unwrap();
            acknowledged.clear();
        }
        let path = dir.path().join("log.redb");
        // Every third cycle, two short-lived children append at once.
        let short_lived = cycle % 3 == 2;
        let children: Vec<_> = (0..if short_lived { 2 } else { 1 })
            .map(|_| {
                let mut command = Command::new(std::env::current_exe().unwrap());
                command
                    .args([
                        "--ignored",
                        "--exact",
                        "crash::crash_child",
                        "--nocapture",
                        "--test-threads",
                        "1",
                    ])
                    .env(CHILD_ENV, &path)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null());
                if short_lived {
                    command.env(SHORT_LIVED_ENV, "1");
                } else {
                    command.env(
                        CHECKPOINT_ENV,
                        if cycle % 2 == 1 { "16384" } else { "67108864" },
                    );
                }
                let mut child = command.spawn().unwrap();
                let stdout = child.stdout.take().unwrap();
                let reader = std::thread::spawn(move || {
                    let mut acks = Vec::new();
                    for line in BufReader::new(stdout).lines() {
                        let Ok(line) = line else { break };
                        if let Some(rest) = line.strip_prefix("ack ") {
                            acks.extend(rest.split(' ').filter_map(|n| n.parse::<u64>().ok()));
                        }
                    }
                    acks
                });
                (child, reader)
            })
            .collect();
        // Let them start and work for a while, then pull the plug.
        std::thread::sleep(Duration::from_millis(150 + next(&mut rng) % 400));
        for (mut child, reader) in children {
            child.kill().unwrap();
            child.wait().unwrap();
            let acks = reader.join().unwrap();
            total_acks += acks.len() / 2;
            if short_lived {
                short_lived_acks += acks.len() / 2;
            }
            acknowledged.extend(acks);
        }

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let log = Log::open(&path, LogConfig::default()).unwrap();
            let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
            let log = engine.log();
            for seq in &acknowledged {
                let record = log.get(*seq).unwrap();
                assert!(
                    record.is_some(),
                    "cycle {cycle} (seed {seed}): acknowledged seq {seq} is gone"
                );
            }
            let report = verify(log, |_| {}).unwrap();
            assert!(
                report.is_clean(),
                "cycle {cycle} (seed {seed}): {:#?}",
                report.violations
            );
            assert!(
                report.open_runs.is_empty(),
                "cycle {cycle} (seed {seed}): interrupted runs were closed"
            );
        });
        if (cycle + 1) % 50 == 0 {
            eprintln!(
                "{} cycles: {total_acks} acknowledged runs, none lost",
                cycle + 1
            );
        }
    }
    assert!(
        total_acks > cycles,
        "the child did work before each kill ({total_acks} acknowledged runs)"
    );
    assert!(
        cycles < 3 || short_lived_acks > 0,
        "the short-lived children did work before their kills"
    );
    eprintln!(
        "{cycles} crash cycles: {total_acks} acknowledged runs ({short_lived_acks} by short-lived children), none lost; verify clean after every cycle"
    );
}
