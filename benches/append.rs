//! Durable append rate of the store, side by side with the disk's own limit.
//!
//! `cargo bench --bench append` runs, in one go:
//! - `cmdlog/1_appender`: one thread, one record per durable append;
//! - `raw/write_fdatasync_1`: one `write` + `fdatasync` per record, the single-writer limit;
//! - `cmdlog/64_appenders`: 64 threads appending concurrently (group commit batches them);
//! - `raw/write_fdatasync_batch_64`: 64 `write`s then one `fdatasync`, the batched limit.
//!
//! Throughput is reported in records (events) per second. Files live under
//! `CARGO_TARGET_TMPDIR`, on the same disk as the build.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cmdlog_store::{Log, LogConfig, NewRecord};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A realistic `command/run` record (about 200 bytes).
fn record() -> NewRecord {
    NewRecord::new(
        br#"{"at":1796000000000,"type":"command/run","session":"s-3f2a9c1d7e4b","agent":"main","data":{"registration":12,"name":"review","mode":"non_interactive","source":"user","raw_input":" src/parser.rs please","attachments":[]}}"#
            .to_vec(),
    )
    .stream("s-3f2a9c1d7e4b")
}

fn bench_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

const APPENDERS: u64 = 64;

fn appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_append");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));

    let dir = bench_dir();
    let log = Arc::new(Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap());
    group.bench_function("cmdlog/1_appender", |b| {
        b.iter(|| log.append(vec![record()]).unwrap())
    });

    let raw = std::fs::File::create(dir.path().join("raw.bin")).unwrap();
    let bytes = record().bytes;
    let mut offset = 0u64;
    group.bench_function("raw/write_fdatasync_1", |b| {
        b.iter(|| {
            raw.write_all_at(&bytes, offset).unwrap();
            offset += bytes.len() as u64;
            raw.sync_data().unwrap();
        })
    });

    group.bench_function("cmdlog/64_appenders", |b| {
        b.iter_custom(|iters| {
            let per_thread = iters.div_ceil(APPENDERS);
            let start = Instant::now();
            let threads: Vec<_> = (0..APPENDERS)
                .map(|_| {
                    let log = Arc::clone(&log);
                    std::thread::spawn(move || {
                        for _ in 0..per_thread {
                            log.append(vec![record()]).unwrap();
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            // Scale to the number of records criterion asked for.
            start
                .elapsed()
                .mul_f64(iters as f64 / (per_thread * APPENDERS) as f64)
        })
    });

    let mut raw = std::fs::File::create(dir.path().join("raw-batched.bin")).unwrap();
    group.bench_function("raw/write_fdatasync_batch_64", |b| {
        b.iter_custom(|iters| {
            let batches = iters.div_ceil(APPENDERS);
            let start = Instant::now();
            for _ in 0..batches {
                for _ in 0..APPENDERS {
                    raw.write_all(&bytes).unwrap();
                }
                raw.sync_data().unwrap();
            }
            start
                .elapsed()
                .mul_f64(iters as f64 / (batches * APPENDERS) as f64)
        })
    });
    group.finish();
}

criterion_group!(benches, appends);
criterion_main!(benches);
