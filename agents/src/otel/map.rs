//! One OpenTelemetry log record of an agent → the event it means
//! (`docs/agents.md`, "Telemetry", cites each agent's event names and
//! attributes as the pinned releases send them). The agent is known by its
//! event names' prefix (`claude_code.`, `gemini_cli.`, `qwen-code.`, `codex.`),
//! else by the resource's `service.name`; the session by `session.id`
//! (Codex: `conversation.id`). A record cmdlog has no typed mapping for is kept
//! whole as `agent/event` (the agent's bookkeeping).

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use serde_json::{Map, Value, json};

use crate::kind::AgentKind;

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
pub(crate) fn text<'a>(attrs: &'a Attributes, key: &str) -> Option<&'a str> {
    attrs.get(key).and_then(Value::as_str)
}

/// A count or duration attribute (agents send them as numbers or as decimal
/// strings: Claude Code's `tool_result.duration_ms`, every Codex field).
pub(crate) fn count(attrs: &Attributes, key: &str) -> Option<u64> {
    match attrs.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A boolean attribute (`true`, or the string `"true"`).
pub(crate) fn flag(attrs: &Attributes, key: &str) -> Option<bool> {
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
pub(crate) fn json_text(attrs: &Attributes, key: &str) -> Option<Value> {
    let v = attrs.get(key)?;
    Some(match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    })
}
