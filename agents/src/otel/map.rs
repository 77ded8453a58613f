//! One OpenTelemetry log record of an agent → the event it means
//! (`docs/agents.md`, "Telemetry", cites each agent's event names and
//! attributes as the pinned releases send them). The agent is known by its
//! event names' prefix (`claude_code.`, `gemini_cli.`, `qwen-code.`, `codex.`),
//! else by the resource's `service.name`; the session by `session.id`
//! (Codex: `conversation.id`). A record cmdlog has no typed mapping for is kept
//! whole as `agent/event` (the agent's bookkeeping).

use cmdlog_engine::{
    AgentEvent, CommandRun, Delivery, EventData, InvocationSource, Mode, ModelRequest, Outcome,
    SessionPrompt,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use serde_json::{Map, Value, json};

use crate::kind::{AgentKind, tool_kind};
use crate::plan::PlannedData;

/// A record's attributes as JSON values (the OTLP value kinds mapped to
/// JSON's: integers as numbers, bytes as hex).
pub(crate) type Attributes = Map<String, Value>;

/// A record's attributes as JSON, with the resource's service name and
/// session id where the record has none (Gemini CLI puts `session.id` on both).
pub(crate) fn attributes(resource: &[KeyValue], record: &[KeyValue]) -> Attributes {
    let mut out = Map::new();
    for kv in record {
        out.insert(kv.key.clone(), value(kv.value.as_ref()));
    }
    for kv in resource {
        if matches!(
            kv.key.as_str(),
            "service.name" | "session.id" | "conversation.id"
        ) && !out.contains_key(&kv.key)
        {
            out.insert(kv.key.clone(), value(kv.value.as_ref()));
        }
    }
    out
}

/// An OTLP value as JSON.
pub(crate) fn value(v: Option<&AnyValue>) -> Value {
    use any_value::Value as V;
    match v.and_then(|v| v.value.as_ref()) {
        None => Value::Null,
        Some(V::StringValue(s)) => Value::String(s.clone()),
        Some(V::BoolValue(b)) => Value::Bool(*b),
        Some(V::IntValue(i)) => json!(i),
        Some(V::DoubleValue(d)) => json!(d),
        Some(V::BytesValue(b)) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
        Some(V::ArrayValue(a)) => Value::Array(a.values.iter().map(|v| value(Some(v))).collect()),
        Some(V::KvlistValue(l)) => Value::Object(
            l.values
                .iter()
                .map(|kv| (kv.key.clone(), value(kv.value.as_ref())))
                .collect(),
        ),
        Some(V::StringValueStrindex(_)) => Value::Null,
    }
}

/// Which agent sent a record, and its name for the event without the prefix.
pub(crate) fn agent_and_name(body: &Value, attrs: &Attributes) -> Option<(AgentKind, String)> {
    let named = attrs
        .get("event.name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let body = body.as_str().filter(|b| !b.is_empty());
    for full in [named, body].into_iter().flatten() {
        for (prefix, agent) in [
            ("claude_code.", AgentKind::ClaudeCode),
            ("gemini_cli.", AgentKind::Gemini),
            ("qwen-code.", AgentKind::Qwen),
            ("codex.", AgentKind::Codex),
        ] {
            if let Some(name) = full.strip_prefix(prefix) {
                return Some((agent, name.to_string()));
            }
        }
    }
    let service = attrs.get("service.name").and_then(Value::as_str)?;
    let agent = match service {
        s if s.starts_with("claude-code") => AgentKind::ClaudeCode,
        "gemini-cli" => AgentKind::Gemini,
        "qwen-code" => AgentKind::Qwen,
        s if s.starts_with("codex") => AgentKind::Codex,
        _ => return None,
    };
    // Claude Code names the event `user_prompt` in `event.name` and
    // `claude_code.user_prompt` in the body; the others' short names.
    Some((agent, named.or(body)?.to_string()))
}

/// The agent's id of the session a record belongs to.
pub(crate) fn session_id(agent: AgentKind, attrs: &Attributes) -> Option<&str> {
    let key = match agent {
        AgentKind::Codex => "conversation.id",
        _ => "session.id",
    };
    attrs
        .get(key)
        .or_else(|| attrs.get("session.id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A string attribute.
fn text<'a>(attrs: &'a Attributes, key: &str) -> Option<&'a str> {
    attrs.get(key).and_then(Value::as_str)
}

/// A count or duration attribute (agents send them as numbers or as decimal
/// strings: Claude Code's `tool_result.duration_ms`, every Codex field).
fn count(attrs: &Attributes, key: &str) -> Option<u64> {
    match attrs.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A boolean attribute (`true`, or the string `"true"`).
fn flag(attrs: &Attributes, key: &str) -> Option<bool> {
    match attrs.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A JSON-text attribute (tool arguments) as its value, else as the text.
fn json_text(attrs: &Attributes, key: &str) -> Option<Value> {
    let v = attrs.get(key)?;
    Some(match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    })
}

/// The attributes every record of an agent carries, left out of what an
/// event keeps (they are the envelope's: session, time, sequence, name).
const ENVELOPE: [&str; 6] = [
    "event.name",
    "event.timestamp",
    "event.sequence",
    "session.id",
    "conversation.id",
    "service.name",
];

/// What a record means: its events (one, or a call and its settling), and the
/// fact of each where the agents' ids name one.
pub(crate) fn events(
    agent: AgentKind,
    name: &str,
    attrs: &Attributes,
) -> Vec<(PlannedData, Option<String>)> {
    let ready = |d: EventData| PlannedData::Ready(d);
    let prompt_id = text(attrs, "prompt.id").or_else(|| text(attrs, "prompt_id"));
    let call_id = text(attrs, "tool_use_id")
        .or_else(|| text(attrs, "call_id"))
        .filter(|id| !id.is_empty());
    let tool_name = text(attrs, "tool_name")
        .or_else(|| text(attrs, "function_name"))
        .unwrap_or("tool");
    let input = json_text(attrs, "tool_input")
        .or_else(|| json_text(attrs, "function_args"))
        .or_else(|| json_text(attrs, "arguments"));
    // What the telemetry says of a call beyond the call itself.
    let about_call = |keys: &[&str]| -> Value {
        let mut m = Map::new();
        for k in keys {
            if let Some(v) = attrs.get(*k) {
                m.insert((*k).to_string(), v.clone());
            }
        }
        json!({ "telemetry": m })
    };
    let tool_call = |id: &str| {
        let mut call = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": id,
            "title": tool_name,
            "kind": tool_kind(tool_name),
            "status": "pending",
            "_meta": about_call(&["decision", "source", "tool_source", "permission_mode"]),
        });
        if let Some(input) = &input {
            call["rawInput"] = input.clone();
        }
        call
    };
    let settled = |id: &str| {
        let success = flag(attrs, "success").unwrap_or_else(|| {
            !matches!(
                text(attrs, "status"),
                Some("error" | "failed" | "cancelled")
            )
        });
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "status": if success { "completed" } else { "failed" },
            "_meta": about_call(&[
                "duration_ms", "success", "decision", "source", "error", "error_type",
                "tool_result_size_bytes", "content_length", "decision_source", "decision_type",
            ]),
        });
        if let Some(output) = attrs.get("output") {
            update["rawOutput"] = output.clone();
        }
        update
    };
    match name {
        "user_prompt" => {
            let text = text(attrs, "prompt")
                .or_else(|| text(attrs, "prompt_text"))
                .unwrap_or("")
                .to_string();
            vec![(
                ready(EventData::SessionPrompt(SessionPrompt {
                    text,
                    delivery: Delivery::Idle,
                    from_run: None,
                    injections: Vec::new(),
                    prompt_id: prompt_id.map(str::to_string),
                    blocks: Vec::new(),
                })),
                crate::facts::prompt(prompt_id),
            )]
        }
        // Claude Code and Codex: the permission decision of a call, then its result.
        "tool_decision" if call_id.is_some() => {
            let id = call_id.unwrap_or_default();
            vec![(
                ready(EventData::SessionUpdate(tool_call(id))),
                crate::facts::tool("tool_call", id),
            )]
        }
        "tool_result" if call_id.is_some() => {
            let id = call_id.unwrap_or_default();
            let mut update = settled(id);
            update["title"] = json!(tool_name);
            if let Some(input) = &input {
                update["rawInput"] = input.clone();
            }
            vec![(
                ready(EventData::SessionUpdate(update)),
                crate::facts::tool("tool_result", id),
            )]
        }
        // Gemini CLI and Qwen Code: one record when a call ends. Gemini names no
        // call id: the call is cmdlog's, joined to nothing.
        "tool_call" => {
            let id = call_id.map(str::to_string).unwrap_or_else(|| {
                let basis = format!(
                    "{tool_name}\n{}\n{}\n{}",
                    input.clone().unwrap_or(Value::Null),
                    prompt_id.unwrap_or(""),
                    attrs.get("start_time").cloned().unwrap_or(Value::Null),
                );
                let mut hex = cmdlog_store::BlobHash::of(basis.as_bytes()).to_hex();
                hex.truncate(16);
                format!("tool-{hex}")
            });
            let joined = call_id.is_some();
            vec![
                (
                    ready(EventData::SessionUpdate(tool_call(&id))),
                    joined
                        .then(|| crate::facts::tool("tool_call", &id))
                        .flatten(),
                ),
                (
                    ready(EventData::SessionUpdate(settled(&id))),
                    joined
                        .then(|| crate::facts::tool("tool_result", &id))
                        .flatten(),
                ),
            ]
        }
        // A model request: Claude Code's `api_request`, Gemini CLI's and Qwen
        // Code's `api_response` (their `api_request` is the request going out,
        // without figures), Codex's `api_request`; and their errors.
        "api_request" | "api_response" | "api_error"
            if !(name == "api_request" && matches!(agent, AgentKind::Gemini | AgentKind::Qwen)) =>
        {
            let request = ModelRequest {
                model: text(attrs, "model")
                    .or_else(|| text(attrs, "model_name"))
                    .map(str::to_string),
                request_id: text(attrs, "request_id")
                    .or_else(|| text(attrs, "response_id"))
                    .map(str::to_string),
                input_tokens: count(attrs, "input_tokens")
                    .or_else(|| count(attrs, "input_token_count")),
                output_tokens: count(attrs, "output_tokens")
                    .or_else(|| count(attrs, "output_token_count")),
                cache_read_tokens: count(attrs, "cache_read_tokens")
                    .or_else(|| count(attrs, "cached_content_token_count")),
                cache_creation_tokens: count(attrs, "cache_creation_tokens"),
                cost_usd: attrs.get("cost_usd").and_then(|v| match v {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                }),
                duration_ms: count(attrs, "duration_ms"),
                error: text(attrs, "error")
                    .or_else(|| text(attrs, "error.message"))
                    .or_else(|| text(attrs, "error_message"))
                    .filter(|e| !e.is_empty())
                    .map(str::to_string),
                status_code: count(attrs, "status_code")
                    .or_else(|| count(attrs, "http.response.status_code"))
                    .filter(|_| name == "api_error" || agent == AgentKind::Codex),
            };
            vec![(ready(EventData::ModelRequest(request)), None)]
        }
        // Codex: the tokens of a response come on its `response.completed` SSE event.
        "sse_event" if text(attrs, "event.kind") == Some("response.completed") => {
            let request = ModelRequest {
                input_tokens: count(attrs, "input_token_count"),
                output_tokens: count(attrs, "output_token_count"),
                cache_read_tokens: count(attrs, "cached_token_count"),
                duration_ms: count(attrs, "duration_ms"),
                ..ModelRequest::default()
            };
            vec![(ready(EventData::ModelRequest(request)), None)]
        }
        // Gemini CLI and Qwen Code name the slash commands typed (Claude Code
        // puts them on `user_prompt`): a run, settled as the agent reports it.
        "slash_command" => {
            let command = text(attrs, "command").unwrap_or("").trim_start_matches('/');
            let sub = text(attrs, "subcommand").filter(|s| !s.is_empty());
            let raw_input = sub.map(|s| format!(" {s}")).unwrap_or_default();
            let status = text(attrs, "status");
            let outcome = match status {
                Some("error") => Outcome::Error {
                    text: "the agent reported an error".into(),
                    interrupted: false,
                },
                _ => Outcome::Success {
                    text: Some("source: telemetry".into()),
                    prompt: None,
                    source_event_seq: None,
                },
            };
            vec![
                (
                    ready(EventData::CommandRun(CommandRun {
                        registration: 0,
                        name: command.to_lowercase(),
                        mode: Mode::Interactive,
                        source: InvocationSource::Agent,
                        raw_input: Some(raw_input),
                        attachments: Vec::new(),
                        injections: Vec::new(),
                        release: None,
                    })),
                    None,
                ),
                (
                    PlannedData::DoneOf {
                        run_index: 0,
                        outcome,
                        agent_check: None,
                    },
                    None,
                ),
            ]
        }
        _ => {
            let data: Map<String, Value> = attrs
                .iter()
                .filter(|(k, _)| !ENVELOPE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            vec![(
                ready(EventData::AgentEvent(AgentEvent {
                    agent: agent.name().into(),
                    event: name.to_string(),
                    data: Value::Object(data),
                    bookkeeping: true,
                })),
                None,
            )]
        }
    }
}
