//! Discovery cost for 2,000 command files spread over every provider.
//!
//! `cargo bench --bench discovery` measures, side by side:
//! - `discover/2000_files`: walking, reading and parsing every file (no log);
//! - `sync/first_2000`: the first sync into an empty log (2,000+ registrations and
//!   their template blobs in one atomic append);
//! - `discover_and_sync/unchanged_2000`: what every `cmdlog run` pays when no file
//!   changed (discover, diff, append nothing).

use std::path::Path;
use std::time::Duration;

use cmdlog_engine::discovery::{DiscoveryConfig, discover};
use cmdlog_engine::{Engine, EngineConfig};
use cmdlog_store::{Log, LogConfig};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const FILES: usize = 2000;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Spreads `FILES` command files over the providers' folders.
fn fixture(home: &Path, ws: &Path) {
    let md = |i: usize| {
        format!(
            "---\ndescription: Command number {i}\nargument-hint: <target>\n---\nDo task {i} on $1 with care: $ARGUMENTS\n"
        )
    };
    let toml = |i: usize| {
        format!(
            "description = \"Command {i}\"\nprompt = \"\"\"Do task {i} for {{{{args}}}}\"\"\"\n"
        )
    };
    let dirs: [(&Path, &str, usize, bool); 8] = [
        (ws, ".cmdlog/commands", 200, false),
        (home, ".claude/commands", 300, false),
        (ws, ".claude/commands", 300, false),
        (home, "plugins/tools/commands", 200, false),
        (home, ".codex/prompts", 300, false),
        (ws, ".gemini/commands", 200, true),
        (home, ".qwen/commands", 200, true),
        (ws, ".opencode/command", 300, false),
    ];
    let mut n = 0;
    for (base, dir, count, is_toml) in dirs {
        for i in 0..count {
            if is_toml {
                write(
                    &base.join(dir).join(format!("group{}/cmd{n}.toml", i % 10)),
                    &toml(n),
                );
            } else {
                write(&base.join(dir).join(format!("cmd{n}.md")), &md(n));
            }
            n += 1;
        }
    }
    assert_eq!(n, FILES);
    write(
        &home.join(".claude/plugins/installed_plugins.json"),
        r#"{"version":2,"plugins":{"tools@bench":[{"installPath":"~/plugins/tools"}]}}"#,
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    fixture(home.path(), ws.path());
    let config = DiscoveryConfig::new(home.path(), ws.path());
    let found = discover(&config).unwrap();
    assert!(
        found.commands.len() >= FILES,
        "{} found",
        found.commands.len()
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);

    let mut group = c.benchmark_group("discovery");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(FILES as u64));
    group.bench_function("discover/2000_files", |b| {
        b.iter(|| discover(&config).unwrap())
    });

    let rt = runtime();
    group.bench_function("sync/first_2000", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
                let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
                let engine = rt
                    .block_on(Engine::open(log, EngineConfig::default()))
                    .unwrap();
                (dir, engine)
            },
            |(dir, engine)| {
                let report = rt.block_on(engine.sync(&found)).unwrap();
                assert_eq!(report.added, found.commands.len());
                (dir, engine)
            },
            BatchSize::PerIteration,
        )
    });

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let engine = rt
        .block_on(Engine::open(log, EngineConfig::default()))
        .unwrap();
    rt.block_on(engine.sync(&found)).unwrap();
    group.bench_function("discover_and_sync/unchanged_2000", |b| {
        b.iter(|| {
            let report = rt
                .block_on(engine.sync(&discover(&config).unwrap()))
                .unwrap();
            assert!(!report.changed_registry());
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
