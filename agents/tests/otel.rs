//! Telemetry into a log beside hooks (`cmdlog_agents::otel`): the records'
//! events, each fact once, a retry taking nothing twice, records not taken
//! named, secrets redacted before they are written.

use cmdlog_agents::{FactCache, HookDelivery, otel, record_delivery};
use cmdlog_store::{Log, LogConfig};
use serde_json::{Value, json};

fn log() -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    (dir, log)
}

fn events(log: &Log) -> Vec<Value> {
    log.range(1, log.head().seq + 1)
        .unwrap()
        .into_iter()
        .map(|r| {
            let mut v: Value = serde_json::from_slice(&r.bytes).unwrap();
            v["seq"] = json!(r.seq);
            v
        })
        .collect()
}

fn attr(key: &str, value: Value) -> Value {
    let v = match value {
        Value::String(s) => json!({"stringValue": s}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() => json!({"intValue": n}),
        Value::Number(n) => json!({"doubleValue": n}),
        other => panic!("{other}"),
    };
    json!({"key": key, "value": v})
}

type Record<'a> = (&'a str, i64, Vec<(&'a str, Value)>);

/// A Claude Code request (OTLP JSON) of `records`: (name, sequence, attributes).
fn claude_request(records: &[Record<'_>]) -> Vec<u8> {
    let records: Vec<Value> = records
        .iter()
        .map(|(name, seq, attrs)| {
            let mut all = vec![
                attr("event.name", json!(name)),
                attr("session.id", json!(SESSION)),
                attr("event.sequence", json!(seq)),
            ];
            all.extend(attrs.iter().map(|(k, v)| attr(k, v.clone())));
            json!({
                "timeUnixNano": format!("{}", 1_790_000_000_000_000_000u64 + *seq as u64 * 1_000_000),
                "body": {"stringValue": format!("claude_code.{name}")},
                "attributes": all,
            })
        })
        .collect();
    json!({"resourceLogs": [{
        "resource": {"attributes": [attr("service.name", json!("claude-code"))]},
        "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code.events"}, "logRecords": records}],
    }]})
    .to_string()
    .into_bytes()
}

fn ingest(log: &Log, body: &[u8], redact: bool) -> otel::Ingested {
    let request = otel::decode(otel::Encoding::Json, None, body).unwrap();
    otel::ingest(
        log,
        &request,
        redact,
        1_790_000_100_000,
        &mut Default::default(),
    )
    .unwrap()
}

fn hook(log: &Log, payload: Value) {
    let mut delivery = HookDelivery::new(
        "claude-code",
        false,
        1_790_000_050_000,
        payload.to_string().into_bytes(),
    );
    delivery.delivery.clear();
    let mut facts = FactCache::default();
    record_delivery(log, &delivery, || None, None, &mut facts).unwrap();
}

const SESSION: &str = "7f0c8a52-1111-4222-8333-944455556666";
const PROMPT: &str = "0d5e7c1a-aaaa-4bbb-8ccc-dddd00001111";

#[test]
fn telemetry_after_hooks_is_folded_into_their_events() {
    let (_dir, log) = log();
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "list files", "prompt_id": PROMPT}),
    );
    hook(
        &log,
        json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_01"}),
    );
    hook(
        &log,
        json!({"hook_event_name": "PostToolUse", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_01", "tool_response": {"stdout": "a\n"}}),
    );
    let hooked = events(&log).len();
    let body = claude_request(&[
        (
            "user_prompt",
            4,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("prompt", json!("<REDACTED>")),
            ],
        ),
        (
            "tool_decision",
            5,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("tool_name", json!("Bash")),
                ("tool_use_id", json!("toolu_01")),
                ("decision", json!("accept")),
                ("source", json!("config")),
            ],
        ),
        (
            "api_request",
            6,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("model", json!("claude-x")),
                ("input_tokens", json!(120)),
                ("output_tokens", json!(30)),
                ("cost_usd", json!(0.0123)),
                ("duration_ms", json!(850)),
                ("request_id", json!("req_1")),
            ],
        ),
        (
            "tool_result",
            7,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("tool_name", json!("Bash")),
                ("tool_use_id", json!("toolu_01")),
                ("success", json!("true")),
                ("duration_ms", json!("41")),
            ],
        ),
        (
            "hook_execution_complete",
            8,
            vec![("hook_event", json!("Stop"))],
        ),
    ]);
    let report = ingest(&log, &body, false);
    assert_eq!(
        (report.accepted, report.rejected, report.duplicates),
        (5, 0, 0),
        "{report:?}"
    );
    assert_eq!(
        report.observed, 3,
        "prompt, call and result were the hooks' already"
    );
    let all = events(&log);
    let new = &all[hooked..];
    let kinds: Vec<&str> = new.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "agent/observed",
            "agent/observed",
            "agent/model_request",
            "agent/observed",
            "agent/event"
        ],
        "{new:#?}"
    );
    // One prompt, one call, one result in the session; the telemetry's
    // figures added to the hook's events, never replacing what they hold.
    let count = |t: &str, u: Option<&str>| {
        all.iter()
            .filter(|e| e["type"] == t && u.is_none_or(|u| e["data"]["sessionUpdate"] == u))
            .count()
    };
    assert_eq!(count("session/prompt", None), 1);
    assert_eq!(count("session/update", Some("tool_call")), 1);
    assert_eq!(count("session/update", Some("tool_call_update")), 1);
    let prompt_seq = all.iter().find(|e| e["type"] == "session/prompt").unwrap()["seq"].clone();
    assert_eq!(new[0]["data"]["of"], prompt_seq);
    assert_eq!(new[0]["data"]["fact"], format!("prompt:{PROMPT}"));
    assert!(
        new[0]["data"].get("adds").is_none(),
        "the hook's text stays: {}",
        new[0]
    );
    assert_eq!(new[0]["observed"]["source"], "claude-code telemetry");
    assert_eq!(new[0]["observed"]["at"], 1_790_000_000_004u64);
    assert_eq!(
        new[3]["data"]["adds"]["_meta"]["telemetry"]["duration_ms"],
        "41"
    );
    let request = &new[2]["data"];
    assert_eq!(request["input_tokens"], 120);
    assert_eq!(request["cost_usd"], 0.0123);
    assert_eq!(request["request_id"], "req_1");
    assert_eq!(new[4]["data"]["bookkeeping"], true);

    // The exporter sends the same request again (its answer was lost): nothing new.
    let again = ingest(&log, &body, false);
    assert_eq!(again.duplicates, 5, "{again:?}");
    assert_eq!(again.events, 0);
    assert_eq!(events(&log).len(), all.len());
    let report = cmdlog_replay::verify(&log, |_| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);

    // An agent/observed that names the wrong event is a finding of verify.
    let wrong = cmdlog_engine::event::NewEvent {
        at: 1,
        observed: None,
        session: Some(SESSION.into()),
        agent: Some("claude-code".into()),
        data: cmdlog_engine::EventData::AgentObserved(cmdlog_engine::event::AgentObserved {
            of: 1,
            fact: format!("prompt:{PROMPT}"),
            adds: Default::default(),
            differs: Default::default(),
        }),
    };
    log.append(vec![wrong.to_record()]).unwrap();
    let report = cmdlog_replay::verify(&log, |_| {}).unwrap();
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.message.contains("agent/observed names seq 1")),
        "{:?}",
        report.violations
    );
}

#[test]
fn telemetry_first_creates_the_session_and_hooks_fold_into_it() {
    let (_dir, log) = log();
    let body = claude_request(&[(
        "user_prompt",
        1,
        vec![("prompt.id", json!(PROMPT)), ("prompt", json!("hello"))],
    )]);
    let report = ingest(&log, &body, false);
    assert_eq!(
        report.events, 2,
        "session/created and the prompt: {report:?}"
    );
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "hello", "prompt_id": PROMPT}),
    );
    let all = events(&log);
    let types: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["session/created", "session/prompt", "agent/observed"],
        "{all:#?}"
    );
    assert_eq!(all[2]["observed"]["source"], "claude-code hook");
    assert_eq!(all[2]["data"]["of"], all[1]["seq"]);
}

#[test]
fn records_not_taken_are_counted_and_named() {
    let (_dir, log) = log();
    let body = json!({"resourceLogs": [{
        "resource": {"attributes": [attr("service.name", json!("some-service"))]},
        "scopeLogs": [{"logRecords": [
            {"timeUnixNano": "1", "body": {"stringValue": "GET /"}, "attributes": []},
            {"timeUnixNano": "2", "body": {"stringValue": "claude_code.user_prompt"}, "attributes": [attr("event.name", json!("user_prompt"))]},
        ]}],
    }]})
    .to_string();
    let report = ingest(&log, body.as_bytes(), false);
    assert_eq!((report.accepted, report.rejected), (0, 2));
    assert!(
        report
            .why_rejected
            .contains("1 record(s) not from an agent"),
        "{}",
        report.why_rejected
    );
    assert!(
        report
            .why_rejected
            .contains("1 record(s) without session.id"),
        "{}",
        report.why_rejected
    );
    assert_eq!(log.head().seq, 0, "nothing appended");
}

#[test]
fn secrets_in_telemetry_are_redacted_before_they_are_written() {
    let (_dir, log) = log();
    let secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
    let body = claude_request(&[(
        "tool_result",
        1,
        vec![
            ("tool_use_id", json!("toolu_9")),
            ("tool_name", json!("Bash")),
            ("success", json!("true")),
            (
                "tool_input",
                json!(format!(
                    "{{\"command\":\"curl -H 'x-api-key: {secret}' x\"}}"
                )),
            ),
        ],
    )]);
    let report = ingest(&log, &body, true);
    assert!(report.redacted >= 1, "{report:?}");
    let all = events(&log);
    let text = serde_json::to_string(&all).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(
        all.iter()
            .any(|e| e["type"] == "log/redacted" && e["data"]["source"] == "claude-code telemetry")
    );
}

#[test]
fn a_later_source_that_states_a_fact_differently_is_kept_and_the_conflict_marked() {
    let (_dir, log) = log();
    // The telemetry names the prompt first, with other text than the hook's.
    let body = claude_request(&[(
        "user_prompt",
        1,
        vec![
            ("prompt.id", json!(PROMPT)),
            ("prompt", json!("telemetry's prompt A")),
        ],
    )]);
    ingest(&log, &body, false);
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "REAL prompt B", "prompt_id": PROMPT}),
    );
    let all = events(&log);
    let observed = all.iter().find(|e| e["type"] == "agent/observed").unwrap();
    assert_eq!(
        observed["data"]["differs"]["text"], "REAL prompt B",
        "{all:#?}"
    );
    let prompt = all.iter().find(|e| e["type"] == "session/prompt").unwrap();
    assert_eq!(prompt["data"]["text"], "telemetry's prompt A");
    let report = cmdlog_replay::verify(&log, |_| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.conflicts.len(), 1, "{:?}", report.conflicts);
    let conflict = &report.conflicts[0];
    assert_eq!(conflict.fact, format!("prompt:{PROMPT}"));
    assert_eq!(conflict.source, "claude-code hook");
    assert_eq!(conflict.fields, ["text"]);
    assert_eq!(conflict.of, prompt["seq"].as_u64().unwrap());

    // The same text from both: no conflict.
    let (_dir2, log) = self::log();
    ingest(
        &log,
        &claude_request(&[(
            "user_prompt",
            1,
            vec![("prompt.id", json!(PROMPT)), ("prompt", json!("same"))],
        )]),
        false,
    );
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "same", "prompt_id": PROMPT}),
    );
    assert!(
        cmdlog_replay::verify(&log, |_| {})
            .unwrap()
            .conflicts
            .is_empty()
    );
}

#[test]
fn a_source_that_says_nothing_of_a_content_or_says_it_as_text_is_no_conflict() {
    // Telemetry without the prompt's text (the agent not told to log prompts),
    // then the hook with it: the hook's text is added, not a conflict.
    let (_dir, log) = log();
    ingest(
        &log,
        &claude_request(&[("user_prompt", 1, vec![("prompt.id", json!(PROMPT))])]),
        false,
    );
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "the text", "prompt_id": PROMPT}),
    );
    let all = events(&log);
    let observed = all.iter().find(|e| e["type"] == "agent/observed").unwrap();
    assert_eq!(observed["data"]["adds"]["text"], "the text", "{observed}");
    assert!(observed["data"].get("differs").is_none(), "{observed}");
    assert!(
        cmdlog_replay::verify(&log, |_| {})
            .unwrap()
            .conflicts
            .is_empty()
    );
}

/// The events of `type` (the log's `type` field) in order.
fn of_type<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_decision_in_telemetry_settles_a_refused_call_and_answers_its_request_saying_who() {
    let (_dir, log) = log();
    // Interactively, a call refused in Claude Code's dialog gets no hook after
    // its PermissionRequest: its telemetry's tool_decision says it.
    hook(
        &log,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": "touch it", "prompt_id": PROMPT}),
    );
    hook(
        &log,
        json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "touch a"}, "tool_use_id": "toolu_denied"}),
    );
    hook(
        &log,
        json!({"hook_event_name": "PermissionRequest", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "touch a"}}),
    );
    let body = claude_request(&[
        (
            "tool_decision",
            9,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("tool_name", json!("Bash")),
                ("tool_use_id", json!("toolu_denied")),
                ("decision", json!("reject")),
                ("source", json!("user_reject")),
            ],
        ),
        // A rule refused another call without asking anyone.
        (
            "tool_decision",
            10,
            vec![
                ("prompt.id", json!(PROMPT)),
                ("tool_name", json!("Bash")),
                ("tool_use_id", json!("toolu_ruled")),
                ("decision", json!("reject")),
                ("source", json!("config")),
            ],
        ),
    ]);
    ingest(&log, &body, false);
    // The same request again: an exporter's retry adds nothing.
    ingest(&log, &body, false);
    let all = events(&log);
    let settled: Vec<&Value> = of_type(&all, "session/update")
        .into_iter()
        .filter(|e| e["data"]["sessionUpdate"] == "tool_call_update")
        .collect();
    let of = |id: &str| -> Vec<&Value> {
        settled
            .iter()
            .copied()
            .filter(|e| e["data"]["toolCallId"] == id)
            .collect()
    };
    for id in ["toolu_denied", "toolu_ruled"] {
        let s = of(id);
        assert_eq!(s.len(), 1, "{id} settled once: {all:#?}");
        assert_eq!(s[0]["data"]["status"], "failed", "{id}: {:#}", s[0]);
        assert_eq!(s[0]["data"]["rawOutput"]["settled"], "denied", "{:#}", s[0]);
        assert_eq!(
            s[0]["data"]["rawOutput"]["by"], "claude-code telemetry",
            "{:#}",
            s[0]
        );
    }
    let answers = of_type(&all, "permission/resolved");
    assert_eq!(answers.len(), 1, "the one request answered once: {all:#?}");
    let answer = &answers[0]["data"];
    assert_eq!(answer["decided_by"], "user", "{answer:#}");
    assert_eq!(answer["decision"]["optionId"], "reject", "{answer:#}");
    assert_eq!(
        answer["decision"]["toolCallId"], "toolu_denied",
        "{answer:#}"
    );
    // Nothing is left open: verify would name it.
    let requests = of_type(&all, "permission/requested");
    assert_eq!(requests.len(), 1, "{all:#?}");
    assert_eq!(requests[0]["data"]["request_id"], answer["request_id"]);
}

#[test]
fn a_decision_allowed_in_telemetry_answers_the_open_request_with_the_rule_or_user() {
    let (_dir, log) = log();
    hook(
        &log,
        json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_ok"}),
    );
    hook(
        &log,
        json!({"hook_event_name": "PermissionRequest", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    let body = claude_request(&[(
        "tool_decision",
        3,
        vec![
            ("tool_name", json!("Bash")),
            ("tool_use_id", json!("toolu_ok")),
            ("decision", json!("accept")),
            ("source", json!("user_permanent")),
        ],
    )]);
    ingest(&log, &body, false);
    let all = events(&log);
    let answers = of_type(&all, "permission/resolved");
    assert_eq!(answers.len(), 1, "{all:#?}");
    assert_eq!(answers[0]["data"]["decided_by"], "user");
    assert_eq!(answers[0]["data"]["decision"]["optionId"], "allow");
    // Allowed: the call is not settled by the decision (its result will).
    assert!(
        !all.iter()
            .any(|e| e["data"]["sessionUpdate"] == "tool_call_update"),
        "{all:#?}"
    );
    // Its result then settles it, and the request answered stays answered once.
    hook(
        &log,
        json!({"hook_event_name": "PostToolUse", "session_id": SESSION, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_ok", "tool_response": {"stdout": "a\n"}}),
    );
    let all = events(&log);
    assert_eq!(of_type(&all, "permission/resolved").len(), 1, "{all:#?}");
}
