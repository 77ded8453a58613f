//! One hook payload → the events it means. Each agent's documented payload
//! (`docs/agents.md` cites them): Claude Code's and Qwen Code's hook events
//! (`UserPromptSubmit`, `UserPromptExpansion`, `PreToolUse`, …), Codex's (the same
//! names, its own fields), Gemini CLI's (`BeforeAgent`, `BeforeTool`, …). A field
//! that is missing is left out, never an error; an event cmdlog has no typed
//! mapping for is kept whole as `agent/event`.

use cmdlog_engine::{
    AgentEvent, CommandRun, Delivery, Dialect, EventData, InvocationSource, KnownRelease, Mode,
    Observed, Outcome, PermissionRequested, PermissionResolved, SessionEnded, SessionPrompt,
    run_release,
};
use serde_json::{Map, Value, json};

use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, session_key, text, tool_kind};
use crate::plan::{Planned, PlannedData, Tie};

/// What one payload becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookPlan {
    /// The session's log key (`None` for a payload without a session id).
    pub session: Option<String>,
    /// The folder the agent worked in.
    pub cwd: Option<String>,
    /// The events, in order.
    pub events: Vec<Planned>,
    /// A slash command the agent expanded: what the agreement check compares.
    pub expansion: Option<Expansion>,
}

/// A slash command the agent expanded itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expansion {
    pub name: String,
    /// The text after the name, as typed.
    pub raw_input: String,
    /// The agent's expansion, when the payload carries it.
    pub prompt: Option<String>,
    /// Where its `command/done` is in the plan.
    pub done_index: usize,
}

/// What holds for some of a plan's events, by their index.
type ByIndex<T> = Vec<(usize, T)>;

/// The fields every payload shares; the rest is the event's own.
const COMMON: [&str; 6] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
    "permission_mode",
];

/// Maps one hook payload of `agent`; `delivery` (the payload's delivery id)
/// becomes the events' `observed.key`.
pub(crate) fn plan(
    agent: AgentKind,
    payload: &Value,
    delivery: Option<&str>,
    release: Option<&str>,
) -> HookPlan {
    // The rules a Claude Code run was expanded by: its announced release's.
    let run_release = (agent == AgentKind::ClaudeCode)
        .then(|| {
            let known: Vec<KnownRelease> = release
                .map(|version| KnownRelease {
                    agent: agent.name().into(),
                    version: version.into(),
                    from: "AI_AGENT".into(),
                })
                .into_iter()
                .collect();
            run_release(Dialect::Claude, &known)
        })
        .flatten();
    let event = text(payload, "hook_event_name").unwrap_or("unknown");
    let session = text(payload, "session_id")
        .filter(|s| !s.is_empty())
        .map(|s| session_key(agent, s));
    let observed = Some(Observed {
        source: format!("{} hook", agent.name()),
        key: delivery.map(str::to_string),
        at: text(payload, "timestamp").and_then(parse_time),
        fact: None,
    });
    let mut items: Vec<PlannedData> = Vec::new();
    let mut expansion = None;
    // Events tied to what the session holds (`tie.rs`), by index in `items`.
    let mut ties: Vec<(usize, Tie)> = Vec::new();
    // Facts the data does not name (`facts.rs`), by index in `items`.
    let mut named: Vec<(usize, String)> = Vec::new();
    let ready = |d: EventData| PlannedData::Ready(d);
    let update = |u: Value| PlannedData::Ready(EventData::SessionUpdate(u));
    match event {
        // A prompt, as the agent sends it to the model.
        "UserPromptSubmit" | "BeforeAgent" => {
            let prompt = text(payload, "prompt").unwrap_or("").to_string();
            let submitted = text(payload, "submitted_prompt").filter(|s| !s.is_empty());
            if prompt.is_empty() && submitted.is_none() {
                // Qwen Code sends one after each tool result: nothing was prompted.
                items.push(ready(EventData::AgentEvent(AgentEvent {
                    agent: agent.name().into(),
                    event: event.into(),
                    data: Value::Object(rest_of(payload, &[])),
                    bookkeeping: true,
                })));
                return finish(payload, session, observed, items, None, (ties, named));
            }
            // Qwen Code names the line typed beside its expansion: a slash command
            // is a run, unless its UserPromptExpansion hook recorded it already.
            if let Some(line) =
                submitted.filter(|s| s.trim_start().starts_with('/') && *s != prompt)
            {
                let (name, raw_input) = split_line(line);
                let run_index = items.len();
                items.push(ready(agent_run(&name, &raw_input, None)));
                items.push(PlannedData::DoneOf {
                    run_index,
                    outcome: Outcome::Success {
                        text: None,
                        prompt: Some(prompt.clone()),
                        source_event_seq: None,
                    },
                    agent_check: None,
                });
                ties.push((run_index, Tie::FallbackRun));
                expansion = Some(Expansion {
                    name,
                    raw_input,
                    prompt: Some(prompt.clone()),
                    done_index: run_index + 1,
                });
            }
            if submitted.is_some_and(|s| s.trim_start().starts_with('/')) {
                ties.push((items.len(), Tie::FromLatestRun));
            }
            items.push(ready(EventData::SessionPrompt(SessionPrompt {
                text: prompt,
                delivery: Delivery::Idle,
                from_run: None,
                injections: Vec::new(),
                prompt_id: text(payload, "prompt_id")
                    .or_else(|| text(payload, "turn_id"))
                    .map(str::to_string),
                blocks: Vec::new(),
            })));
        }
        // A slash command the agent expanded: a run and its settling, the agent's
        // expansion as the outcome when the payload carries it.
        "UserPromptExpansion" => {
            let name = text(payload, "command_name")
                .unwrap_or("")
                .trim_start_matches('/')
                .to_string();
            let args = text(payload, "command_args").unwrap_or("");
            let raw_input = if args.is_empty() {
                String::new()
            } else {
                format!(" {args}")
            };
            let prompt = text(payload, "prompt").map(str::to_string);
            // Claude Code sends the line as typed; Qwen Code the expansion.
            let typed = prompt.as_deref().is_some_and(|p| {
                let p = p.trim_start();
                p.strip_prefix('/')
                    .and_then(|rest| rest.strip_prefix(name.as_str()))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
            });
            let expanded = prompt.filter(|_| !typed);
            let run_index = items.len();
            if let Some(id) = text(payload, "prompt_id").filter(|id| !id.is_empty()) {
                named.push((run_index, format!("command:{id}")));
            }
            items.push(ready(agent_run(&name, &raw_input, run_release.clone())));
            items.push(PlannedData::DoneOf {
                run_index,
                outcome: Outcome::Success {
                    // Where it came from in the agent (`plugin`, `skill`, …).
                    text: text(payload, "command_source").map(|s| format!("source: {s}")),
                    prompt: expanded.clone(),
                    source_event_seq: None,
                },
                agent_check: None,
            });
            expansion = Some(Expansion {
                name,
                raw_input,
                prompt: expanded,
                done_index: run_index + 1,
            });
        }
        "PreToolUse" | "BeforeTool" => {
            let tool = text(payload, "tool_name").unwrap_or("tool");
            items.push(update(json!({
                "sessionUpdate": "tool_call",
                "toolCallId": tool_call_id(payload),
                "title": tool,
                "kind": tool_kind(tool),
                "status": "pending",
                "rawInput": payload.get("tool_input").cloned().unwrap_or(Value::Null),
            })));
        }
        "PostToolUse" | "AfterTool" => {
            let failed = payload
                .pointer("/tool_response/error")
                .is_some_and(|e| !e.is_null());
            let mut call = json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id(payload),
                "status": if failed { "failed" } else { "completed" },
                "rawOutput": payload.get("tool_response").cloned().unwrap_or(Value::Null),
            });
            with_input(&mut call, payload);
            items.push(update(call));
        }
        "PostToolUseFailure" => {
            let mut call = json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id(payload),
                "status": "failed",
                "rawOutput": {"error": payload.get("error").cloned().unwrap_or(Value::Null)},
            });
            with_input(&mut call, payload);
            items.push(update(call));
        }
        // Every call of the batch, settled where nothing settled it yet: a call
        // that was denied or blocked gets no PostToolUse. Without a status
        // (Claude Code gives none) such a call did not run.
        "PostToolBatch" => {
            for call in payload["tool_calls"].as_array().into_iter().flatten() {
                let failed = !matches!(
                    call["status"]
                        .as_str()
                        .or(call["execution_status"].as_str()),
                    Some("success" | "completed")
                );
                let mut settled = json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_call_id(call),
                    "status": if failed { "failed" } else { "completed" },
                    "rawOutput": call.get("tool_response").cloned().unwrap_or(Value::Null),
                });
                with_input(&mut settled, call);
                ties.push((items.len(), Tie::SettleIfOpen));
                items.push(update(settled));
            }
        }
        "PermissionRequest" => {
            // Claude Code 2.1.332 and Codex name no call: tied to the pending one.
            if text(payload, "tool_use_id")
                .or_else(|| text(payload, "tool_call_id"))
                .is_none()
            {
                ties.push((items.len(), Tie::FindCall));
            }
            items.push(ready(EventData::PermissionRequested(permission_request(
                payload, "ask",
            ))));
        }
        // Denied without asking anyone: the request and its answer.
        "PermissionDenied" => {
            let request = permission_request(payload, "denied");
            let request_id = request.request_id.clone();
            items.push(ready(EventData::PermissionRequested(request)));
            items.push(ready(EventData::PermissionResolved(PermissionResolved {
                request_id,
                decision: json!({"outcome": "selected", "optionId": "reject", "reason": payload.get("reason")}),
                ..Default::default()
            })));
        }
        // The turn ended: the agent's last message, then the end.
        "Stop" | "AfterAgent" => {
            let last = text(payload, "last_assistant_message")
                .or_else(|| text(payload, "prompt_response"))
                .filter(|m| !m.is_empty());
            if let Some(message) = last {
                items.push(update(json!({
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": message},
                })));
            }
            items.push(update(json!({
                "sessionUpdate": "turn_complete",
                "stopReason": "end_turn",
            })));
        }
        // Codex: the user interrupted the turn (no Stop follows).
        "Interrupt" => {
            items.push(update(json!({
                "sessionUpdate": "turn_complete",
                "stopReason": "cancelled",
            })));
        }
        // The agent ended its session (and may resume it): why, and the rest of
        // what it said.
        "SessionEnd" => {
            let details = rest_of(payload, &["reason"]);
            items.push(ready(EventData::SessionEnded(SessionEnded {
                reason: text(payload, "reason").map(str::to_string),
                details: (!details.is_empty()).then_some(Value::Object(details)),
            })));
        }
        "StopFailure" => {
            items.push(update(json!({
                "sessionUpdate": "turn_error",
                "message": payload.get("error").map(|e| match e {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }).unwrap_or_else(|| "the turn failed".into()),
                "code": payload.get("error_details").cloned().unwrap_or(Value::Null),
            })));
        }
        // Everything else — SessionStart, notifications, compaction, model calls —
        // kept as the agent gave it.
        other => {
            items.push(ready(EventData::AgentEvent(AgentEvent {
                agent: agent.name().into(),
                event: other.into(),
                data: Value::Object(rest_of(payload, &[])),
                bookkeeping: false,
            })));
        }
    }
    finish(payload, session, observed, items, expansion, (ties, named))
}

fn finish(
    payload: &Value,
    session: Option<String>,
    observed: Option<Observed>,
    items: Vec<PlannedData>,
    expansion: Option<Expansion>,
    (ties, named): (ByIndex<Tie>, ByIndex<String>),
) -> HookPlan {
    HookPlan {
        session: session.clone(),
        cwd: text(payload, "cwd").map(str::to_string),
        events: items
            .into_iter()
            .enumerate()
            .map(|(i, data)| Planned {
                session: session.clone(),
                observed: observed.clone().map(|o| Observed {
                    fact: named
                        .iter()
                        .find(|(at, _)| *at == i)
                        .map(|(_, fact)| fact.clone())
                        .or_else(|| crate::facts::of_data(&data)),
                    ..o
                }),
                data,
                tie: ties.iter().find(|(at, _)| *at == i).map(|(_, tie)| *tie),
            })
            .collect(),
        expansion,
    }
}

/// A slash line's command name and the text after it (`/review a b` →
/// `review`, ` a b`).
fn split_line(line: &str) -> (String, String) {
    let body = line.trim().trim_start_matches('/');
    match body.find(char::is_whitespace) {
        Some(i) => (body[..i].to_string(), body[i..].to_string()),
        None => (body.to_string(), String::new()),
    }
}

/// Adds the tool and the input that ran (after any other hook's `updatedInput`)
/// to a tool call update, when the payload carries them: a `PostToolUse` without
/// a `PreToolUse` before it still says what ran.
fn with_input(update: &mut Value, payload: &Value) {
    if let Some(tool) = text(payload, "tool_name") {
        update["title"] = json!(tool);
        update["kind"] = json!(tool_kind(tool));
    }
    if let Some(input) = payload.get("tool_input").filter(|i| !i.is_null()) {
        update["rawInput"] = input.clone();
    }
}

/// The payload's fields but the common ones and `also`.
fn rest_of(payload: &Value, also: &[&str]) -> Map<String, Value> {
    payload
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !COMMON.contains(&k.as_str()) && !also.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool call's id: the agent's, or (Gemini gives none) one derived from the
/// tool and its input, the same before and after the call.
fn tool_call_id(payload: &Value) -> String {
    // Qwen Code gives both: a `tool_use_id` of its hooks' own in Pre/PostToolUse
    // and the model's `tool_call_id`, the one its other events and transcript use.
    if let Some(id) = text(payload, "tool_call_id")
        .filter(|id| !id.is_empty())
        .or_else(|| text(payload, "tool_use_id"))
        .filter(|id| !id.is_empty())
    {
        return id.to_string();
    }
    let basis = format!(
        "{}\n{}",
        text(payload, "tool_name").unwrap_or(""),
        payload.get("tool_input").cloned().unwrap_or(Value::Null)
    );
    let mut hex = cmdlog_store::BlobHash::of(basis.as_bytes()).to_hex();
    hex.truncate(16);
    format!("tool-{hex}")
}

/// A permission request for a tool call, offering allow and reject.
fn permission_request(payload: &Value, kind: &str) -> PermissionRequested {
    let call = tool_call_id(payload);
    PermissionRequested {
        request_id: format!("{kind}-{call}"),
        options: json!([
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]),
        tool_call: Some(json!({
            "toolCallId": call,
            "title": text(payload, "tool_name").unwrap_or("tool"),
            "kind": tool_kind(text(payload, "tool_name").unwrap_or("")),
            "rawInput": payload.get("tool_input").cloned().unwrap_or(Value::Null),
        })),
    }
}

/// A command run an agent reported: its name and the input after it, the mode
/// interactive until the batch learns the session's ([`crate::Batch`]).
fn agent_run(name: &str, raw_input: &str, release: Option<cmdlog_engine::RunRelease>) -> EventData {
    EventData::CommandRun(CommandRun {
        registration: 0,
        name: name.to_string(),
        mode: Mode::Interactive,
        source: InvocationSource::Agent,
        raw_input: Some(raw_input.to_string()),
        attachments: Vec::new(),
        injections: Vec::new(),
        release,
    })
}
