//! OTLP ingest beside plain protobuf decoding of the same requests, in one run
//! (`cargo bench --bench otel`): Claude Code's telemetry as its exporter sends
//! it (batches of up to 512 log records: prompts, tool decisions and results,
//! model requests, hook timings), decoded only, and ingested (decoded, mapped,
//! folded against what the session holds, appended durably to a redb log).
//! Events per second each, alternating rounds, and the ratio. Bar: ≥ 0.5×.
//!
//! `CMDLOG_OTEL_REQUESTS` (default 200) requests of `CMDLOG_OTEL_BATCH`
//! (default 512) records, over 8 sessions.
//!
//! Then the daemon's memory (`cmdlog serve`, its peak resident size): 16
//! exporters at once sending requests of the largest size cmdlog takes (8,192
//! records, nearly 16 MiB), then 16 at once sending 16 MiB of empty records (8
//! million each, refused before they are decoded). `CMDLOG_OTEL_MEMORY=0` skips it.

use std::time::Instant;

use cmdlog_agents::otel;
use cmdlog_store::{Log, LogConfig};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn s(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn i(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
        ..Default::default()
    }
}

/// The `n`th record of a session: the mix a Claude Code turn sends.
fn record(session: &str, n: i64) -> LogRecord {
    let prompt = format!("prompt-{}", n / 10);
    let call = format!("toolu_{n:08}");
    let (name, mut attrs) = match n % 10 {
        0 => (
            "user_prompt",
            vec![
                s("prompt", "refactor the parser and run the tests"),
                s("prompt_length", "37"),
            ],
        ),
        1 | 5 => (
            "tool_decision",
            vec![
                s("tool_name", "Bash"),
                s("tool_use_id", call),
                s("decision", "accept"),
                s("source", "config"),
            ],
        ),
        2 | 6 => (
            "tool_result",
            vec![
                s("tool_name", "Bash"),
                s("tool_use_id", format!("toolu_{:08}", n - 1)),
                s("success", "true"),
                s("duration_ms", "41"),
                s(
                    "tool_input",
                    r#"{"command":"cargo test -p parser","description":"Run the tests"}"#,
                ),
            ],
        ),
        3 | 7 => (
            "api_request",
            vec![
                s("model", "claude-opus-5-5"),
                i("input_tokens", 12_000),
                i("output_tokens", 600),
                i("cache_read_tokens", 10_000),
                i("duration_ms", 2_100),
                s("request_id", format!("req_{n}")),
            ],
        ),
        _ => (
            "hook_execution_complete",
            vec![
                s("hook_event", "PostToolUse"),
                s("num_hooks", "1"),
                s("duration_ms", "9"),
            ],
        ),
    };
    attrs.extend([
        s("event.name", name),
        s("event.timestamp", "2026-12-02T10:00:00.000Z"),
        i("event.sequence", n),
        s("session.id", session),
        s("prompt.id", prompt),
        s(
            "user.id",
            "716a1ba286f6b036fa105b189391e9e7aeaa59b149ed429c463c309346074131",
        ),
        s("terminal.type", "xterm-256color"),
    ]);
    LogRecord {
        time_unix_nano: 1_796_000_000_000_000_000 + n as u64 * 1_000_000,
        observed_time_unix_nano: 1_796_000_000_000_000_000 + n as u64 * 1_000_000,
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(format!("claude_code.{name}"))),
        }),
        attributes: attrs,
        ..Default::default()
    }
}

fn requests(count: usize, batch: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|r| {
            let session = format!("5b0e3c7d-0000-4111-8222-9333444455{:02}", r % 8);
            let first = (r / 8 * batch) as i64;
            ExportLogsServiceRequest {
                resource_logs: vec![ResourceLogs {
                    resource: Some(Resource {
                        attributes: vec![
                            s("service.name", "claude-code"),
                            s("service.version", "2.1.332"),
                        ],
                        ..Default::default()
                    }),
                    scope_logs: vec![ScopeLogs {
                        log_records: (0..batch as i64)
                            .map(|k| record(&session, first + k))
                            .collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            }
            .encode_to_vec()
        })
        .collect()
}

fn decode_only(bodies: &[Vec<u8>]) -> (usize, f64) {
    let started = Instant::now();
    let mut records = 0;
    for body in bodies {
        let request = otel::decode(otel::Encoding::Protobuf, None, body).unwrap();
        records += otel::records(&request);
    }
    (records, started.elapsed().as_secs_f64())
}

fn ingest(bodies: &[Vec<u8>]) -> (usize, f64) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let config = if std::env::var_os("CMDLOG_OTEL_BUFFERED").is_some() {
        LogConfig {
            durability: cmdlog_store::Durability::Buffered,
            ..LogConfig::default()
        }
    } else {
        LogConfig::default()
    };
    let log = Log::open(dir.path().join("log.redb"), config).unwrap();
    let started = Instant::now();
    let mut records = 0;
    // The daemon's: what each session states, kept between requests.
    let mut cache = cmdlog_agents::FactCache::default();
    for body in bodies {
        let request = otel::decode(otel::Encoding::Protobuf, None, body).unwrap();
        let report = otel::ingest(&log, &request, false, 1_796_000_000_000, &mut cache).unwrap();
        records += report.accepted as usize;
    }
    (records, started.elapsed().as_secs_f64())
}

/// Decoded and mapped, not appended: where ingest's time goes.
fn map_only(bodies: &[Vec<u8>]) -> (usize, f64) {
    let started = Instant::now();
    let mut records = 0;
    for body in bodies {
        let request = otel::decode(otel::Encoding::Protobuf, None, body).unwrap();
        records += otel::records(&request);
        std::hint::black_box(otel::Telemetry::read(&request, false));
    }
    (records, started.elapsed().as_secs_f64())
}

/// Sends `body` from `exporters` threads at once, `rounds` times each; the
/// statuses seen.
fn flood(url: &str, body: &[u8], exporters: usize, rounds: usize) -> Vec<u16> {
    let url = format!("{url}/v1/logs");
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..exporters)
            .map(|_| {
                let url = url.clone();
                scope.spawn(move || {
                    let agent = cmdlog_test_support::daemon::http();
                    (0..rounds)
                        .map(|_| {
                            match agent
                                .post(&url)
                                .header("content-type", "application/x-protobuf")
                                .send(body)
                            {
                                Ok(res) => res.status().as_u16(),
                                Err(ureq::Error::StatusCode(code)) => code,
                                Err(_) => 0,
                            }
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

fn memory() {
    let w = cmdlog_test_support::Workspace::new();
    let daemon = w.serve(&[]);
    let pid = daemon.child.id();
    let started = cmdlog_test_support::otlp::peak_mib(pid);
    // The largest request taken: 8,192 records of about 2 KiB each.
    let mut big = ExportLogsServiceRequest::default();
    let session = "7d1c0e2a-0000-4000-8000-00000000beef";
    let mut records: Vec<LogRecord> = (0..cmdlog_agents::OTLP_RECORDS_MAX as i64)
        .map(|n| record(session, n))
        .collect();
    for r in &mut records {
        r.attributes.push(s("padding", "p".repeat(1500)));
    }
    big.resource_logs.push(ResourceLogs {
        resource: Some(Resource {
            attributes: vec![s("service.name", "claude-code")],
            ..Default::default()
        }),
        scope_logs: vec![ScopeLogs {
            log_records: records,
            ..Default::default()
        }],
        ..Default::default()
    });
    let big = big.encode_to_vec();
    assert!(
        big.len() <= cmdlog_agents::OTLP_BODY_BYTES_MAX,
        "{}",
        big.len()
    );
    let exporters = 16;
    let statuses = flood(&daemon.url, &big, exporters, 2);
    let after_big = cmdlog_test_support::otlp::peak_mib(pid);
    let taken = statuses.iter().filter(|&&s| s == 200).count();
    let bomb =
        cmdlog_test_support::otlp::empty_records((cmdlog_agents::OTLP_BODY_BYTES_MAX - 64) / 2);
    let refused = flood(&daemon.url, &bomb, exporters, 2);
    let after_bombs = cmdlog_test_support::otlp::peak_mib(pid);
    println!();
    println!(
        "daemon memory (peak resident, VmHWM), {exporters} exporters at once, 2 requests each:"
    );
    println!("| phase | request | answers | peak MiB |");
    println!("|---|---|---|---|");
    println!("| started | - | - | {started:.0} |");
    let mut others: Vec<u16> = statuses.iter().copied().filter(|&s| s != 200).collect();
    others.sort_unstable();
    others.dedup();
    println!(
        "| largest taken | {} records, {:.1} MiB | {taken} of {} took 200 (others: {others:?}; 503 is retried by the exporters) | {after_big:.0} |",
        cmdlog_agents::OTLP_RECORDS_MAX,
        big.len() as f64 / (1 << 20) as f64,
        statuses.len()
    );
    println!(
        "| empty records | {:.1} MiB, 8 M records | {} of {} refused 413 | {after_bombs:.0} |",
        bomb.len() as f64 / (1 << 20) as f64,
        refused.iter().filter(|&&s| s == 413).count(),
        refused.len()
    );
}

fn main() {
    if std::env::var("CMDLOG_OTEL_MEMORY").as_deref() == Ok("only") {
        memory();
        return;
    }
    let count = env_usize("CMDLOG_OTEL_REQUESTS", 200);
    let batch = env_usize("CMDLOG_OTEL_BATCH", 512);
    let bodies = requests(count, batch);
    if std::env::var_os("CMDLOG_OTEL_INGEST_ONLY").is_some() {
        // For a profiler: the ingest alone.
        let (m, s) = ingest(&bodies);
        println!("ingest: {:.0} records/s", m as f64 / s);
        return;
    }
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "{count} requests of {batch} records ({:.1} MiB of protobuf), 8 sessions",
        bytes as f64 / (1 << 20) as f64
    );
    println!(
        "| round | decode only (records/s) | decode + map (records/s) | ingest (records/s) | ingest ÷ decode |"
    );
    println!("|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for round in 1..=5 {
        let (n, decode_s) = decode_only(&bodies);
        let (_, map_s) = map_only(&bodies);
        let (m, ingest_s) = ingest(&bodies);
        assert_eq!(n, m);
        let (d, p, g) = (n as f64 / decode_s, n as f64 / map_s, m as f64 / ingest_s);
        ratios.push(g / d);
        println!("| {round} | {d:.0} | {p:.0} | {g:.0} | {:.3}x |", g / d);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!(
        "median ingest ÷ decode: **{median:.3}x** (bar ≥ 0.5x: {})",
        if median >= 0.5 { "met" } else { "NOT met" }
    );
    if std::env::var("CMDLOG_OTEL_MEMORY").as_deref() != Ok("0") {
        memory();
    }
}
