//! Audit and replay on a large log: 100,000 events across 200 sessions, written by
//! the real engine (prompt runs of file commands, /model runs, some errors).
//!
//! `cargo bench --bench audit` measures, side by side:
//! - `sessions`: every session summarised (a full scan);
//! - `audit_session`: the timeline of one session (through the session index);
//! - `show`: one run with its done, registration, template;
//! - `replay_until_half` / `replay_until_head`: the registry fold as of a seq;
//! - `drift_all`: every prompt run re-expanded (and it asserts no engine regression).

use std::sync::Arc;
use std::time::Duration;

use cmdlog_engine::discovery::{DiscoveryConfig, discover};
use cmdlog_engine::{Engine, EngineConfig, ExecuteRequest, FixedClock, Mode};
use cmdlog_replay::{AuditFilter, audit, drift, sessions, show, state_at};
use cmdlog_store::{Durability, Log, LogConfig};
use criterion::{Criterion, criterion_group, criterion_main};

const EVENTS: u64 = 100_000;
const SESSIONS: usize = 200;

fn build(dir: &std::path::Path) -> cmdlog_engine::discovery::Discovery {
    let home = dir.join("home");
    let ws = dir.join("ws");
    let commands = ws.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for name in ["review", "explain-code", "plan", "test-it"] {
        std::fs::write(
            commands.join(format!("{name}.md")),
            format!("---\ndescription: {name}\n---\n{name} $1 with care; focus on ${{@:2}}.\nArguments: $ARGUMENTS\n"),
        )
        .unwrap();
    }
    let discovery = discover(&DiscoveryConfig::new(&home, &ws)).unwrap();
    let config = LogConfig {
        durability: Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.join("log.redb"), config).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let clock = Arc::new(FixedClock::at(1_795_000_000_000));
        let engine = Engine::open(log, EngineConfig::with_clock(clock.clone()))
            .await
            .unwrap();
        engine.sync(&discovery).await.unwrap();
        let lines = [
            "/review src/lib.rs errors",
            "/explain-code parser.rs",
            "/plan release 'next week'",
            "/test-it unit",
            "/model m1",
            "/model two words",
        ];
        let mut i = 0usize;
        while engine.log().head().seq < EVENTS {
            let session = format!("s{:03}", i % SESSIONS);
            engine
                .ensure_session(&session, "main", Mode::NonInteractive)
                .await
                .unwrap();
            clock.advance(137);
            engine
                .execute(ExecuteRequest::new(
                    &session,
                    "main",
                    Mode::NonInteractive,
                    lines[i % lines.len()],
                ))
                .await
                .unwrap();
            i += 1;
        }
    });
    discovery
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let started = std::time::Instant::now();
    let today = build(dir.path());
    let log = Log::open_read_only(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let head = log.head().seq;
    eprintln!(
        "built a log of {head} events across {SESSIONS} sessions in {:.1?}",
        started.elapsed()
    );

    let report = drift(&log, None, &today).unwrap();
    assert_eq!(
        report.regressions(),
        0,
        "drift over all prompt runs finds no engine regression"
    );
    eprintln!(
        "drift checked {} prompt runs: no engine regression",
        report.runs.len()
    );

    let one_session = AuditFilter {
        session: Some("s100".into()),
        ..AuditFilter::default()
    };
    let middle_run = audit(&log, &one_session, |_| {}).unwrap()[100].seq;

    let mut group = c.benchmark_group("audit_100k");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("sessions", |b| {
        b.iter(|| assert_eq!(sessions(&log, |_| {}).unwrap().len(), SESSIONS))
    });
    group.bench_function("audit_session", |b| {
        b.iter(|| audit(&log, &one_session, |_| {}).unwrap())
    });
    group.bench_function("show", |b| {
        b.iter(|| show(&log, middle_run).unwrap().unwrap())
    });
    group.bench_function("replay_until_half", |b| {
        b.iter(|| state_at(&log, head / 2).unwrap())
    });
    group.bench_function("replay_until_head", |b| {
        b.iter(|| state_at(&log, head).unwrap())
    });
    group.bench_function("drift_all", |b| {
        b.iter(|| drift(&log, None, &today).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
