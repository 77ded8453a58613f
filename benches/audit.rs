//! Audit and replay on a large log: 100,000 events across 200 sessions, written by
//! the real engine (prompt runs of file commands, /model runs, some errors).
//!
//! `cargo bench --bench audit` measures, side by side:
//! - `sessions`: every session summarised (a full scan);
//! - `audit_session`: the timeline of one session (through the session index);
//! - `show`: one run with its done, registration, template;
//! - `replay_until_half` / `replay_until_head`: the registry fold as of a seq;
//! - `drift_all`: every prompt run re-expanded (and it asserts no engine regression).

use std::time::Duration;

use cmdlog_replay::{AuditFilter, audit, drift, sessions, show, state_at};
use cmdlog_store::{Log, LogConfig};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "shared/engine_log.rs"]
mod engine_log;

const EVENTS: u64 = 100_000;
const SESSIONS: usize = 200;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let started = std::time::Instant::now();
    let today = engine_log::build(dir.path(), EVENTS, SESSIONS);
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
