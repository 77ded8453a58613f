//! What one record means, by its event name: a prompt, a call's decision or
//! result (or both, for the agents that send one record when a call ends), a
//! model request, a slash command, and the rest kept as the agent's
//! bookkeeping (`agent/event`). Each name is a method of [`Record`]; the
//! attributes the agents name differently are read once, in [`Record::new`].

use cmdlog_engine::event::{
    AgentEvent, CommandRun, Delivery, InvocationSource, ModelRequest, Outcome, SessionPrompt,
};
use cmdlog_engine::{EventData, Mode};
use serde_json::{Map, Value, json};

use super::map::{Attributes, count, flag, json_text, text};
use crate::kind::{AgentKind, tool_kind};
use crate::plan::PlannedData;

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

/// An event planned, and the fact it states where the agents' ids name one.
type Meaning = (PlannedData, Option<String>);

/// What a record means: its events (one, or a call and its settling), and the
/// fact of each where the agents' ids name one.
pub(crate) fn events(agent: AgentKind, name: &str, attrs: &Attributes) -> Vec<Meaning> {
    let r = Record::new(agent, name, attrs);
    match name {
        "user_prompt" => r.prompt(),
        // Claude Code and Codex: the permission decision of a call, then its result.
        "tool_decision" if r.call_id.is_some() => r.decision(),
        "tool_result" if r.call_id.is_some() => r.result(),
        "tool_call" => r.call_ended(),
        "api_request" | "api_response" | "api_error"
            if !(name == "api_request" && matches!(agent, AgentKind::Gemini | AgentKind::Qwen)) =>
        {
            r.model_request()
        }
        // Codex: the tokens of a response come on its `response.completed` SSE event.
        "sse_event" if text(attrs, "event.kind") == Some("response.completed") => {
            r.response_completed()
        }
        "slash_command" => r.slash_command(),
        _ => r.kept(),
    }
}

/// How an event a record means is tied to its session: a call's decision
/// answers the call's request, and settles a refused call (`tie/rules.rs`).
pub(crate) fn tie(name: &str, data: &PlannedData) -> Option<crate::plan::Tie> {
    let call = matches!(data, PlannedData::Ready(EventData::SessionUpdate(u)) if u["sessionUpdate"] == "tool_call");
    (name == "tool_decision" && call).then_some(crate::plan::Tie::Decided)
}

/// One record, with what its agent names in several ways read once.
struct Record<'a> {
    agent: AgentKind,
    name: &'a str,
    attrs: &'a Attributes,
    prompt_id: Option<&'a str>,
    call_id: Option<&'a str>,
    tool_name: &'a str,
    input: Option<Value>,
}

fn ready(d: EventData) -> PlannedData {
    PlannedData::Ready(d)
}

impl<'a> Record<'a> {
    fn new(agent: AgentKind, name: &'a str, attrs: &'a Attributes) -> Self {
        Record {
            agent,
            name,
            attrs,
            prompt_id: text(attrs, "prompt.id").or_else(|| text(attrs, "prompt_id")),
            call_id: text(attrs, "tool_use_id")
                .or_else(|| text(attrs, "call_id"))
                .filter(|id| !id.is_empty()),
            tool_name: text(attrs, "tool_name")
                .or_else(|| text(attrs, "function_name"))
                .unwrap_or("tool"),
            input: json_text(attrs, "tool_input")
                .or_else(|| json_text(attrs, "function_args"))
                .or_else(|| json_text(attrs, "arguments")),
        }
    }

    /// What the telemetry says of a call beyond the call itself.
    fn about_call(&self, keys: &[&str]) -> Value {
        let mut m = Map::new();
        for k in keys {
            if let Some(v) = self.attrs.get(*k) {
                m.insert((*k).to_string(), v.clone());
            }
        }
        json!({ "telemetry": m })
    }

    fn tool_call(&self, id: &str) -> Value {
        let mut call = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": id,
            "title": self.tool_name,
            "kind": tool_kind(self.tool_name),
            "status": "pending",
            "_meta": self.about_call(&["decision", "source", "tool_source", "permission_mode"]),
        });
        if let Some(input) = &self.input {
            call["rawInput"] = input.clone();
        }
        call
    }

    fn settled(&self, id: &str) -> Value {
        let attrs = self.attrs;
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
            "_meta": self.about_call(&[
                "duration_ms", "success", "decision", "source", "error", "error_type",
                "tool_result_size_bytes", "content_length", "decision_source", "decision_type",
            ]),
        });
        if let Some(output) = attrs.get("output") {
            update["rawOutput"] = output.clone();
        }
        update
    }

    fn prompt(&self) -> Vec<Meaning> {
        let text = text(self.attrs, "prompt")
            .or_else(|| text(self.attrs, "prompt_text"))
            .unwrap_or("")
            .to_string();
        vec![(
            ready(EventData::SessionPrompt(SessionPrompt {
                text,
                delivery: Delivery::Idle,
                from_run: None,
                injections: Vec::new(),
                client_id: None,
                prompt_id: self.prompt_id.map(str::to_string),
                blocks: Vec::new(),
            })),
            crate::facts::prompt(self.prompt_id),
        )]
    }

    fn decision(&self) -> Vec<Meaning> {
        let id = self.call_id.unwrap_or_default();
        vec![(
            ready(EventData::SessionUpdate(self.tool_call(id))),
            crate::facts::tool("tool_call", id),
        )]
    }

    fn result(&self) -> Vec<Meaning> {
        let id = self.call_id.unwrap_or_default();
        let mut update = self.settled(id);
        update["title"] = json!(self.tool_name);
        if let Some(input) = &self.input {
            update["rawInput"] = input.clone();
        }
        vec![(
            ready(EventData::SessionUpdate(update)),
            crate::facts::tool("tool_result", id),
        )]
    }

    /// Gemini CLI and Qwen Code: one record when a call ends. Gemini names no
    /// call id: the call is cmdlog's, joined to nothing.
    fn call_ended(&self) -> Vec<Meaning> {
        let id = self.call_id.map(str::to_string).unwrap_or_else(|| {
            let basis = format!(
                "{}\n{}\n{}\n{}",
                self.tool_name,
                self.input.clone().unwrap_or(Value::Null),
                self.prompt_id.unwrap_or(""),
                self.attrs.get("start_time").cloned().unwrap_or(Value::Null),
            );
            let mut hex = cmdlog_store::BlobHash::of(basis.as_bytes()).to_hex();
            hex.truncate(16);
            format!("tool-{hex}")
        });
        let joined = self.call_id.is_some();
        let fact = |kind: &str| joined.then(|| crate::facts::tool(kind, &id)).flatten();
        vec![
            (
                ready(EventData::SessionUpdate(self.tool_call(&id))),
                fact("tool_call"),
            ),
            (
                ready(EventData::SessionUpdate(self.settled(&id))),
                fact("tool_result"),
            ),
        ]
    }

    /// A model request: Claude Code's `api_request`, Gemini CLI's and Qwen
    /// Code's `api_response` (their `api_request` is the request going out,
    /// without figures), Codex's `api_request`; and their errors.
    fn model_request(&self) -> Vec<Meaning> {
        let attrs = self.attrs;
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
                .filter(|_| self.name == "api_error" || self.agent == AgentKind::Codex),
        };
        vec![(ready(EventData::ModelRequest(request)), None)]
    }

    fn response_completed(&self) -> Vec<Meaning> {
        let attrs = self.attrs;
        let request = ModelRequest {
            input_tokens: count(attrs, "input_token_count"),
            output_tokens: count(attrs, "output_token_count"),
            cache_read_tokens: count(attrs, "cached_token_count"),
            duration_ms: count(attrs, "duration_ms"),
            ..ModelRequest::default()
        };
        vec![(ready(EventData::ModelRequest(request)), None)]
    }

    /// Gemini CLI and Qwen Code name the slash commands typed (Claude Code puts
    /// them on `user_prompt`): a run, settled as the agent reports it.
    fn slash_command(&self) -> Vec<Meaning> {
        let attrs = self.attrs;
        let command = text(attrs, "command").unwrap_or("").trim_start_matches('/');
        let sub = text(attrs, "subcommand").filter(|s| !s.is_empty());
        let raw_input = sub.map(|s| format!(" {s}")).unwrap_or_default();
        let outcome = match text(attrs, "status") {
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

    /// Anything else, kept as the agent's bookkeeping without its envelope.
    fn kept(&self) -> Vec<Meaning> {
        let data: Map<String, Value> = self
            .attrs
            .iter()
            .filter(|(k, _)| !ENVELOPE.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        vec![(
            ready(EventData::AgentEvent(AgentEvent {
                agent: self.agent.name().into(),
                event: self.name.to_string(),
                data: Value::Object(data),
                bookkeeping: true,
            })),
            None,
        )]
    }
}
