//! The hub (`docs/hub.md`) on a real three-node JetStream cluster on loopback
//! (`nats-server` from `$CMDLOG_NATS_SERVER`, `target/nats-server/bin` or PATH):
//!
//! - push of one log to a three-replica stream, beside the same push to a
//!   one-replica stream on the same cluster, beside a plain `async-nats` loop
//!   publishing the same payloads to a three-replica stream with the same
//!   acknowledgement policy (atomic batches of 1,000, each commit's
//!   acknowledgement awaited before the next);
//! - `cmdlog hub audit --json` (the release binary) over many logs (100 ×
//!   10,000 events by default) and over as many logs ten times smaller: time,
//!   and the process's peak resident memory (`VmHWM`, read from `/proc` as it
//!   runs), whose ratio says whether its memory follows the hub's size.
//!
//! Pushes run `cmdlog push` (the release binary), with HOME in a temp folder.
//!
//! `cargo bench --bench hub` (CMDLOG_HUB_EVENTS for the pushed log, 100,000,
//! pushed CMDLOG_HUB_ROUNDS times each way, 3; CMDLOG_HUB_PUSH_ONLY=1 for that alone;
//! CMDLOG_HUB_AUDIT_LOGS, 100, and CMDLOG_HUB_AUDIT_EVENTS, 10,000 each).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use cmdlog_engine::event::{
    AgentEvent, CommandDone, CommandRun, InvocationSource, NewEvent, Outcome,
};
use cmdlog_engine::{EventData, Mode};
use cmdlog_hub::{HubOptions, init};
use cmdlog_store::{Log, LogConfig, NewRecord, Record};
use cmdlog_test_support::nats::NatsCluster;
use serde_json::json;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Hook-shaped events of a few hundred bytes each; one in ten is a `/review`
/// run and the next its done, so an audit has rows to fold and merge.
fn fill(path: &Path, n: usize, tag: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = Log::open(path, LogConfig::default()).unwrap();
    // Event k is appended at seq `head + k + 1`: a done (k) names the run
    // appended just before it (k - 1).
    let head = log.head().seq;
    let mut i = 0;
    while i < n {
        let end = (i + 5000).min(n);
        let mut records = Vec::new();
        for k in i..end {
            let data = match k % 10 {
                0 => EventData::CommandRun(CommandRun {
                    registration: 1,
                    name: "review".into(),
                    mode: Mode::NonInteractive,
                    source: InvocationSource::User,
                    raw_input: Some(format!("src/m{k}.rs")),
                    attachments: vec![],
                    injections: vec![],
                    release: None,
                }),
                1 => EventData::CommandDone(CommandDone {
                    run: head + k as u64,
                    outcome: Outcome::text("looks fine"),
                    elapsed_us: 1200,
                    agent_check: None,
                }),
                _ => EventData::AgentEvent(AgentEvent {
                    agent: "claude-code".into(),
                    event: "PostToolUse".into(),
                    data: json!({"tool_name": "Read", "tool_input": {"file_path": format!("/home/u/src/app/src/m{k}.rs")},
                        "tool_response": "fn main() { println!(\"hello\"); }\n".repeat(4)}),
                    bookkeeping: false,
                }),
            };
            let event = NewEvent {
                at: 1_790_000_000_000 + k as u64 * 7,
                observed: None,
                session: Some(format!("s-{tag}-{}", k / 500)),
                agent: Some("claude-code".into()),
                data,
            };
            records.push(NewRecord::new(event.encode()).stream(format!("s-{tag}-{}", k / 500)));
        }
        log.append(records).unwrap();
        i = end;
    }
}

/// `cmdlog push` itself (the release binary; its HOME, where it keeps its push
/// marks and the log's key, a folder of the bench's): every record of the log to
/// the hub. Returns the time it took.
fn push_log(urls: &str, stream: &str, log_path: &Path, home: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args([
            "--log",
            log_path.to_str().unwrap(),
            "push",
            urls,
            "--stream",
            stream,
        ])
        .args(["--patience", "120"])
        .env("HOME", home)
        .current_dir(home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// The plain loop: the same payloads to a stream of `replicas`, atomic batches
/// of 1,000, each commit awaited; with `headers`, each message also carries
/// cmdlog's four (seq, chain hash, session, host), to tell their bytes' cost
/// from the rest of push's.
async fn plain_publish(
    urls: &str,
    name: &str,
    records: &[Record],
    replicas: usize,
    headers: bool,
) -> Duration {
    let servers: Vec<async_nats::ServerAddr> =
        urls.split(',').map(|u| u.parse().unwrap()).collect();
    let client = async_nats::connect(servers).await.unwrap();
    let js = jetstream::new(client.clone());
    js.create_stream(stream::Config {
        name: name.to_string(),
        subjects: vec![format!("plain.{name}.*")],
        storage: stream::StorageType::File,
        deny_delete: true,
        deny_purge: true,
        allow_direct: true,
        allow_atomic_publish: true,
        num_replicas: replicas,
        ..Default::default()
    })
    .await
    .unwrap();
    let started = Instant::now();
    for (b, batch) in records.chunks(1000).enumerate() {
        let id = format!("plain-{b}");
        let last = batch.len() - 1;
        for (i, record) in batch.iter().enumerate() {
            let payload = &record.bytes;
            let mut map = HeaderMap::new();
            if headers {
                map.insert("Cmdlog-Seq", record.seq.to_string().as_str());
                map.insert("Cmdlog-Hash", record.hash.to_hex().as_str());
                if let Some(key) = &record.stream {
                    map.insert("Cmdlog-Stream", key.as_str());
                }
                map.insert("Cmdlog-Host", "bench");
            }
            let mut headers = map;
            headers.insert("Nats-Batch-Id", id.as_str());
            headers.insert("Nats-Batch-Sequence", (i + 1).to_string().as_str());
            let bytes = bytes::Bytes::copy_from_slice(payload);
            if i < last {
                client
                    .publish_with_headers(format!("plain.{name}.log"), headers, bytes)
                    .await
                    .unwrap();
            } else {
                headers.insert("Nats-Batch-Commit", "1");
                let reply = client
                    .request_with_headers(format!("plain.{name}.log"), headers, bytes)
                    .await
                    .unwrap();
                assert!(!String::from_utf8_lossy(&reply.payload).contains("error"));
            }
        }
    }
    started.elapsed()
}

/// Makes stream `name` with `replicas` on the cluster, as `hub init` does,
/// waiting out the cluster's first leader election.
async fn init_stream(urls: &str, name: &str, replicas: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let made = async {
            let hub = HubOptions::from_env(urls, name).connect().await?;
            init(&hub, replicas).await
        }
        .await;
        match made {
            Ok(_) => return,
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for the cluster: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("hub init {name}: {e}"),
        }
    }
}

/// The peak resident memory of process `pid` so far (kB), from `/proc`.
fn peak_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `cmdlog hub audit --json` over `logs` logs of `events` each on stream `name`
/// (pushed first): (time, runs shown, its peak resident memory in kB).
fn audit_many(
    rt: &tokio::runtime::Runtime,
    urls: &str,
    name: &str,
    logs: usize,
    events: usize,
) -> (Duration, usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(init_stream(urls, name, 3));
    for l in 0..logs {
        let path = dir.path().join(format!("{l}/.cmdlog/log.redb"));
        fill(&path, events, &format!("{name}-{l}"));
        push_log(urls, name, &path, dir.path());
    }
    let out = dir.path().join("audit.jsonl");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["hub", "audit", urls, "--stream", name, "--json"])
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_kb(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    let rows = std::fs::read_to_string(&out).unwrap().lines().count();
    (took, rows, peak)
}

fn main() {
    let Some(cluster) = NatsCluster::start("hub bench") else {
        println!("hub bench not run: no nats-server (see the header of benches/hub.rs)");
        return;
    };
    let urls = cluster.urls();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Push: one log, to three replicas, to one, and the plain loop to three.
    let events = env_or("CMDLOG_HUB_EVENTS", 100_000);
    let ws = tempfile::tempdir().unwrap();
    let log_path = ws.path().join(".cmdlog/log.redb");
    fill(&log_path, events, "big");
    {
        let log = Log::open(&log_path, LogConfig::default()).unwrap();
        cmdlog_engine::identity::ensure_identity(&log).unwrap();
    }
    let records: Vec<Record> = {
        let log = Log::open_read_only(&log_path, LogConfig::default()).unwrap();
        let mut out = Vec::with_capacity(events);
        log.scan(1, log.head().seq, |r| {
            out.push(r);
            true
        })
        .unwrap();
        out
    };
    let mb = records.iter().map(|r| r.bytes.len()).sum::<usize>() as f64 / 1e6;
    let n = records.len() as f64;
    // Rounds, each to fresh streams, the order turned each round; the ratios
    // are taken per round and their medians read.
    let rounds = env_or("CMDLOG_HUB_ROUNDS", 3);
    let mut times: Vec<[Duration; 4]> = Vec::new();
    for round in 0..rounds {
        let (r3, r1) = (format!("R3_{round}"), format!("R1_{round}"));
        let (plain, headed) = (format!("P{round}"), format!("H{round}"));
        let mut took = [Duration::ZERO; 4];
        rt.block_on(async {
            init_stream(&urls, &r3, 3).await;
            init_stream(&urls, &r1, 1).await;
            for side in (0..4).map(|k| (k + round) % 4) {
                took[side] = match side {
                    0 => push_log(&urls, &r3, &log_path, ws.path()),
                    1 => push_log(&urls, &r1, &log_path, ws.path()),
                    2 => plain_publish(&urls, &plain, &records, 3, false).await,
                    _ => plain_publish(&urls, &headed, &records, 3, true).await,
                };
            }
        });
        times.push(took);
    }
    // What a record costs on the hub's disk, per replica.
    rt.block_on(async {
        let hub = HubOptions::from_env(&urls, "R3_0").connect().await.unwrap();
        for name in ["R3_0", "P0", "H0"] {
            let mut stream = hub.js.get_stream(name).await.unwrap();
            let state = stream.info().await.unwrap().state.clone();
            println!(
                "stream {name}: {} messages, {} bytes stored per replica, {:.0} bytes a message",
                state.messages,
                state.bytes,
                state.bytes as f64 / state.messages.max(1) as f64
            );
        }
    });
    let rate = |d: Duration| n / d.as_secs_f64();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!();
    println!(
        "| push of a {}-event log ({mb:.0} MB of records), three-node cluster | push, 3 replicas | push, 1 replica | plain loop, 3 replicas | plain + cmdlog's headers, 3 replicas | 3 ÷ 1 replica | push ÷ plain | push ÷ plain + headers |",
        records.len()
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (round, [r3, r1, plain, headed]) in times.iter().enumerate() {
        println!(
            "| round {} | {:.0}/s ({:.2} s) | {:.0}/s | {:.0}/s | {:.0}/s | {:.2}× | {:.2}× | {:.2}× |",
            round + 1,
            rate(*r3),
            r3.as_secs_f64(),
            rate(*r1),
            rate(*plain),
            rate(*headed),
            rate(*r3) / rate(*r1),
            rate(*r3) / rate(*plain),
            rate(*r3) / rate(*headed)
        );
    }
    println!(
        "| median | | | | | **{:.2}×** | **{:.2}×** | **{:.2}×** |",
        median(times.iter().map(|t| rate(t[0]) / rate(t[1])).collect()),
        median(times.iter().map(|t| rate(t[0]) / rate(t[2])).collect()),
        median(times.iter().map(|t| rate(t[0]) / rate(t[3])).collect())
    );

    if std::env::var_os("CMDLOG_HUB_PUSH_ONLY").is_some() {
        return;
    }
    // hub audit: many logs, and as many ten times smaller.
    let logs = env_or("CMDLOG_HUB_AUDIT_LOGS", 100);
    let each = env_or("CMDLOG_HUB_AUDIT_EVENTS", 10_000);
    let (big_took, big_rows, big_peak) = audit_many(&rt, &urls, "AUDITBIG", logs, each);
    let (small_took, small_rows, small_peak) =
        audit_many(&rt, &urls, "AUDITSMALL", logs, each / 10);
    println!();
    println!(
        "| `cmdlog hub audit --json`, 3 replicas | events | runs | time | events/s | peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    for (what, n, took, rows, peak) in [
        (
            format!("{logs} logs × {each} events"),
            logs * each,
            big_took,
            big_rows,
            big_peak,
        ),
        (
            format!("{logs} logs × {} events", each / 10),
            logs * each / 10,
            small_took,
            small_rows,
            small_peak,
        ),
    ] {
        println!(
            "| {what} | {n} | {rows} | {:.2} s | {:.0} | {:.1} MB |",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64(),
            peak as f64 / 1024.0
        );
    }
    println!(
        "| peak RSS, 10× the events ÷ 1× | {:.2}x | | | | |",
        big_peak as f64 / small_peak.max(1) as f64
    );
    drop(cluster);
}
