//! `POST /v1/logs`: the daemon as an OTLP/HTTP logs endpoint, answering each
//! case as the OTLP specification says (the statuses, the bodies, in the
//! request's encoding), behind the daemon's token.

use std::io::{Read, Write};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::http;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use serde_json::Value;

const TOKEN: &str = "otlp-test-token";
const SESSION: &str = "5b0e3c7d-0000-4111-8222-933344445555";

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

/// Claude Code's `user_prompt`, as its exporter builds it.
fn prompt_request(
    prompt: &str,
    prompt_id: &str,
    session: Option<&str>,
) -> ExportLogsServiceRequest {
    let mut attributes = vec![
        kv("event.name", "user_prompt"),
        kv("prompt.id", prompt_id),
        kv("prompt", prompt),
    ];
    if let Some(s) = session {
        attributes.push(kv("session.id", s));
    }
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "claude-code")],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: vec![LogRecord {
                    time_unix_nano: 1_790_000_000_000_000_000,
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(
                            "claude_code.user_prompt".into(),
                        )),
                    }),
                    attributes,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// POSTs `body` to `/v1/logs`: status, content type, body bytes.
fn send(
    url: &str,
    token: Option<&str>,
    content_type: &str,
    gzip: bool,
    body: Vec<u8>,
) -> (u16, String, Vec<u8>) {
    let body = if gzip {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&body).unwrap();
        z.finish().unwrap()
    } else {
        body
    };
    let mut request = http()
        .post(format!("{url}/v1/logs"))
        .header("content-type", content_type);
    if gzip {
        request = request.header("content-encoding", "gzip");
    }
    if let Some(t) = token {
        request = request.header("authorization", format!("Bearer {t}"));
    }
    let mut res = request.send(&body[..]).unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut bytes = vec![];
    res.body_mut()
        .with_config()
        .limit(1 << 20)
        .reader()
        .read_to_end(&mut bytes)
        .unwrap();
    (status, ct, bytes)
}

#[test]
fn the_daemon_answers_otlp_as_the_spec_says() {
    let w = Workspace::new();
    let d = w.serve(&["--token", TOKEN]);
    let u = &d.url;
    let pb = |r: &ExportLogsServiceRequest| r.encode_to_vec();
    let first = prompt_request("first prompt", "p-1", Some(SESSION));

    // Behind the token, like every route that writes.
    assert_eq!(
        send(u, None, "application/x-protobuf", false, pb(&first)).0,
        401
    );

    // Protobuf, gzip: full success is an empty ExportLogsServiceResponse.
    let (status, ct, body) = send(u, Some(TOKEN), "application/x-protobuf", true, pb(&first));
    assert_eq!((status, ct.as_str()), (200, "application/x-protobuf"));
    assert_eq!(
        ExportLogsServiceResponse::decode(&body[..]).unwrap(),
        Default::default()
    );

    // JSON (the spec's mapping), a parameter on the media type: `{}`.
    let second =
        serde_json::to_vec(&prompt_request("second prompt", "p-2", Some(SESSION))).unwrap();
    let (status, ct, body) = send(
        u,
        Some(TOKEN),
        "application/json; charset=utf-8",
        false,
        second,
    );
    assert_eq!(
        (status, ct.as_str(), &body[..]),
        (200, "application/json", &b"{}"[..])
    );

    // A record without a session: taken as a partial success, named.
    let orphan = serde_json::to_vec(&prompt_request("lost", "p-3", None)).unwrap();
    let (status, _, body) = send(u, Some(TOKEN), "application/json", false, orphan);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        answer["partialSuccess"]["rejectedLogRecords"], 1,
        "{answer}"
    );
    assert!(
        answer["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("session.id")
    );

    // Not a request: 400 with a google.rpc.Status, never retried.
    let (status, ct, body) = send(
        u,
        Some(TOKEN),
        "application/json",
        false,
        b"{\"resourceLogs\": 3}".to_vec(),
    );
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, ct.as_str()), (400, "application/json"));
    assert_eq!(answer["code"], 3, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("ExportLogsServiceRequest")
    );
    let (status, ct, _) = send(
        u,
        Some(TOKEN),
        "application/x-protobuf",
        false,
        vec![0x0a, 0xff, 0xff],
    );
    assert_eq!((status, ct.as_str()), (400, "application/x-protobuf"));
    let (status, _, _) = send(
        u,
        Some(TOKEN),
        "application/x-protobuf",
        true,
        b"not gzip".to_vec(),
    );
    assert_eq!(status, 400);

    // Another media type: 415; past the size limit: 413.
    assert_eq!(
        send(u, Some(TOKEN), "text/plain", false, b"x".to_vec()).0,
        415
    );
    let huge = vec![b' '; cmdlog_agents::OTLP_BODY_BYTES_MAX + 1];
    assert_eq!(send(u, Some(TOKEN), "application/json", false, huge).0, 413);

    // Metrics and traces (Gemini CLI and Qwen Code send all three signals to
    // one endpoint): taken, behind the token, nothing recorded.
    for signal in ["metrics", "traces"] {
        let url = format!("{u}/v1/{signal}");
        let res = http()
            .post(&url)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .send(&b"{\"resourceMetrics\":[]}"[..])
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{signal}");
        let res = http()
            .post(&url)
            .header("content-type", "application/json")
            .send(&b"{}"[..])
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{signal}");
    }

    // The same request again (an exporter's retry): nothing twice.
    assert_eq!(
        send(u, Some(TOKEN), "application/x-protobuf", false, pb(&first)).0,
        200
    );
    drop(d);

    let o = w.run(&["log", "--json", "--session", SESSION]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let events: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let prompts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["first prompt", "second prompt"]);
    assert!(events.iter().all(|e| e["agent"] == "claude-code"));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "session/created")
            .count(),
        1
    );
    // Found by its words and its source (the daemon indexed it as it went).
    let found = w.ok(&["search", "--json", "source:telemetry type:prompt prompt"]);
    let found: Vec<Value> = found
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|h| h["session"] == SESSION), "{found:?}");
    assert_eq!(
        w.run(&["search", "source:hook prompt"]).status.code(),
        Some(3)
    );
    let o = w.run(&["verify"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn maximum_size_requests_of_empty_records_are_refused_before_they_take_memory() {
    let w = Workspace::new();
    let d = w.serve(&["--token", TOKEN]);
    let url = d.url.clone();
    // Just under the body limit: eight million empty records.
    let bomb =
        cmdlog_test_support::otlp::empty_records((cmdlog_agents::OTLP_BODY_BYTES_MAX - 64) / 2);
    assert!(bomb.len() <= cmdlog_agents::OTLP_BODY_BYTES_MAX);
    let sent: Vec<_> = (0..3)
        .map(|_| {
            let (url, bomb) = (url.clone(), bomb.clone());
            std::thread::spawn(move || {
                send(&url, Some(TOKEN), "application/x-protobuf", false, bomb)
            })
        })
        .collect();
    for handle in sent {
        let (status, _, body) = handle.join().unwrap();
        assert_eq!(status, 413);
        let message = String::from_utf8_lossy(&body).into_owned();
        assert!(message.contains("log records"), "{message}");
    }
    // Before the bounds one such request took the daemon to 1.5 GB, three to 3.1.
    let peak = cmdlog_test_support::otlp::peak_mib(d.child.id());
    assert!(peak < 300.0, "the daemon peaked at {peak:.0} MiB");
    // A request within the bounds is still taken.
    let (status, _, _) = send(
        &url,
        Some(TOKEN),
        "application/x-protobuf",
        false,
        prompt_request("after the bombs", "p-after", Some(SESSION)).encode_to_vec(),
    );
    assert_eq!(status, 200);
}

#[test]
fn a_hook_that_states_a_prompt_differently_from_the_telemetry_is_kept_and_flagged() {
    let w = Workspace::new();
    let d = w.serve(&["--token", TOKEN]);
    let (status, _, _) = send(
        &d.url,
        Some(TOKEN),
        "application/x-protobuf",
        false,
        prompt_request("telemetry's prompt A", "p-conflict", Some(SESSION)).encode_to_vec(),
    );
    assert_eq!(status, 200);
    let mut hook = w
        .cmd(&["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(
            serde_json::json!({
                "hook_event_name": "UserPromptSubmit",
                "session_id": SESSION,
                "prompt_id": "p-conflict",
                "prompt": "REAL prompt B",
                "cwd": w.ws.path(),
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
    assert!(hook.wait().unwrap().success());
    drop(d);
    // The hook's text is in the log, beside the telemetry's.
    w.ok(&["export", "-o", "all.jsonl"]);
    let all = std::fs::read_to_string(w.ws.path().join("all.jsonl")).unwrap();
    assert!(all.contains("REAL prompt B") && all.contains("telemetry's prompt A"));
    let verify = w.ok(&["verify"]);
    assert!(
        verify.contains("ok: no violations")
            && verify.contains("conflict: seq")
            && verify.contains("claude-code hook states prompt:p-conflict differently"),
        "{verify}"
    );
    let audit = w.ok(&["audit"]);
    assert!(
        audit.contains("states prompt:p-conflict differently"),
        "{audit}"
    );
    let sessions = w.ok(&["sessions"]);
    assert!(
        sessions.contains("stated differently by two capture paths"),
        "{sessions}"
    );
    let listed = w.json(&["sessions", "--json"]);
    let session = listed[0]["id"].as_str().unwrap().to_string();
    assert_eq!(listed[0]["conflicts"], 1);
    let html = w.ws.path().join("report.html");
    w.ok(&[
        "report",
        "--session",
        &session,
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("conflict") && page.contains("REAL prompt B"),
        "the report shows it"
    );
}

/// Gemini CLI's `slash_command` event, at agent time `nanos`.
fn gemini_slash_command(command: &str, nanos: u64) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "gemini-cli")],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: vec![LogRecord {
                    time_unix_nano: nanos,
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(
                            "gemini_cli.slash_command".into(),
                        )),
                    }),
                    attributes: vec![
                        kv("event.name", "gemini_cli.slash_command"),
                        kv("session.id", SESSION),
                        kv("command", command),
                        kv("status", "success"),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[test]
fn back_dated_telemetry_is_still_audited_and_its_text_reaches_no_report_raw() {
    let w = Workspace::new();
    let d = w.serve(&["--token", TOKEN]);
    // The agent's clock says 1970; the name carries ESC, BEL and U+202E.
    let name = "x\u{1b}[2J\u{7}\u{202e}evil";
    let (status, _, _) = send(
        &d.url,
        Some(TOKEN),
        "application/x-protobuf",
        false,
        gemini_slash_command(name, 1_000_000_000).encode_to_vec(),
    );
    assert_eq!(status, 200);
    drop(d);
    let audit = w.ok(&["audit", "--since", "24h"]);
    assert!(audit.contains("/x"), "a back-dated run is hidden: {audit}");
    let html = w.ws.path().join("whole.html");
    w.ok(&["report", "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("evil"), "the run is in the report");
    assert!(
        !page.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "raw controls in the whole-log report"
    );
}
