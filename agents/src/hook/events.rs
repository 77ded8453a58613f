//! One planner per hook event, and the table that names them: Claude Code's and
//! Qwen Code's names (`UserPromptSubmit`, `PreToolUse`, …), Codex's (the same
//! names, its own fields, and `Interrupt`), Gemini CLI's (`BeforeAgent`,
//! `BeforeTool`, `AfterTool`, `AfterAgent`). An event the table does not name
//! is kept whole as `agent/event` ([`kept`]). A new hook event is a function
//! here and a row in [`PLANNERS`].

use cmdlog_engine::EventData;
use cmdlog_engine::event::{
    AgentEvent, Delivery, ModelSwitched, Outcome, Parent, PermissionResolved, SessionCreated,
    SessionEnded, SessionPrompt,
};
use serde_json::{Value, json};

use super::{
    Expansion, Planning, agent_run, permission_request, rest_of, split_line, tool_call_id,
    with_input,
};
use crate::kind::{text, tool_kind};
use crate::plan::{PlannedData, Settling, Tie};
use crate::updates;

/// What plans one hook event's payload.
pub(crate) type Planner = fn(&mut Planning);

/// Each hook event cmdlog maps, by the names the agents send it under.
pub(crate) const PLANNERS: &[(&[&str], Planner)] = &[
    (&["UserPromptSubmit", "BeforeAgent"], prompt_submitted),
    (&["UserPromptExpansion"], prompt_expanded),
    (&["PreToolUse", "BeforeTool"], tool_started),
    (&["PostToolUse", "AfterTool"], tool_finished),
    (&["PostToolUseFailure"], tool_failed),
    (&["PostToolBatch"], tool_batch),
    (&["PermissionRequest"], permission_asked),
    (&["PermissionDenied"], permission_denied),
    (&["Stop", "AfterAgent"], turn_ended),
    (&["Interrupt"], turn_interrupted),
    (&["SessionEnd"], session_ended),
    (&["StopFailure"], turn_failed),
    (&["Notification"], notified),
    (&["SubagentStart"], subagent_started),
    (&["SubagentStop"], subagent_stopped),
    (&["PostModelSwitch"], model_switched),
];

fn ready(d: EventData) -> PlannedData {
    PlannedData::Ready(d)
}

fn update(u: Value) -> PlannedData {
    PlannedData::Ready(EventData::SessionUpdate(u))
}

/// A prompt, as the agent sends it to the model.
fn prompt_submitted(p: &mut Planning) {
    let payload = p.payload;
    let prompt = text(payload, "prompt").unwrap_or("").to_string();
    let submitted = text(payload, "submitted_prompt").filter(|s| !s.is_empty());
    if crate::transcripts::agents_own(&prompt) {
        // Claude Code's own words in the user's place (a subagent's
        // `<task-notification>`): shown, not a prompt anyone typed.
        return kept(p);
    }
    if prompt.is_empty() && submitted.is_none() {
        // Qwen Code sends one after each tool result: nothing was prompted.
        p.items.push(ready(EventData::AgentEvent(AgentEvent {
            agent: p.agent.name().into(),
            event: p.event.into(),
            data: Value::Object(rest_of(payload, &[])),
            bookkeeping: true,
        })));
        return;
    }
    // Qwen Code names the line typed beside its expansion: a slash command is a
    // run, unless its UserPromptExpansion hook recorded it already.
    if let Some(line) = submitted.filter(|s| s.trim_start().starts_with('/') && *s != prompt) {
        let (name, raw_input) = split_line(line);
        let run_index = p.items.len();
        p.items.push(ready(agent_run(&name, &raw_input, None)));
        p.items.push(PlannedData::DoneOf {
            run_index,
            outcome: Outcome::Success {
                text: None,
                prompt: Some(prompt.clone()),
                source_event_seq: None,
            },
            agent_check: None,
        });
        p.ties.push((run_index, Tie::FallbackRun));
        p.expansion = Some(Expansion {
            name,
            raw_input,
            prompt: Some(prompt.clone()),
            done_index: run_index + 1,
        });
    }
    if submitted.is_some_and(|s| s.trim_start().starts_with('/')) {
        p.ties.push((p.items.len(), Tie::FromLatestRun));
    } else {
        p.settle_open(Settling::NextPrompt);
    }
    p.items.push(ready(EventData::SessionPrompt(SessionPrompt {
        text: prompt,
        delivery: Delivery::Idle,
        from_run: None,
        injections: Vec::new(),
        client_id: None,
        prompt_id: text(payload, "prompt_id")
            .or_else(|| text(payload, "turn_id"))
            .map(str::to_string),
        blocks: Vec::new(),
    })));
}

/// A slash command the agent expanded: a run and its settling, the agent's
/// expansion as the outcome when the payload carries it.
fn prompt_expanded(p: &mut Planning) {
    let payload = p.payload;
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
    let run_index = p.items.len();
    if let Some(id) = text(payload, "prompt_id").filter(|id| !id.is_empty()) {
        p.named.push((run_index, format!("command:{id}")));
    }
    p.items
        .push(ready(agent_run(&name, &raw_input, p.run_release.clone())));
    p.items.push(PlannedData::DoneOf {
        run_index,
        outcome: Outcome::Success {
            // Where it came from in the agent (`plugin`, `skill`, …).
            text: text(payload, "command_source").map(|s| format!("source: {s}")),
            prompt: expanded.clone(),
            source_event_seq: None,
        },
        agent_check: None,
    });
    p.expansion = Some(Expansion {
        name,
        raw_input,
        prompt: expanded,
        done_index: run_index + 1,
    });
}

fn tool_started(p: &mut Planning) {
    let tool = text(p.payload, "tool_name").unwrap_or("tool");
    p.ties.push((p.items.len(), Tie::OpensCall));
    p.items.push(update(updates::call(
        &tool_call_id(p.payload).into(),
        &tool.into(),
        &tool_kind(tool).into(),
        p.payload.get("tool_input").unwrap_or(&Value::Null),
    )));
}

fn tool_finished(p: &mut Planning) {
    let failed = p
        .payload
        .pointer("/tool_response/error")
        .is_some_and(|e| !e.is_null());
    let mut call = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_call_id(p.payload),
        "status": if failed { "failed" } else { "completed" },
        "rawOutput": p.payload.get("tool_response").cloned().unwrap_or(Value::Null),
    });
    with_input(&mut call, p.payload);
    p.ties.push((p.items.len(), Tie::Granted));
    p.items.push(update(call));
}

fn tool_failed(p: &mut Planning) {
    let mut call = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_call_id(p.payload),
        "status": "failed",
        "rawOutput": {"error": p.payload.get("error").cloned().unwrap_or(Value::Null)},
    });
    with_input(&mut call, p.payload);
    p.ties.push((p.items.len(), Tie::Granted));
    p.items.push(update(call));
}

/// Every call of the batch, settled where nothing settled it yet: a call that
/// was denied or blocked gets no PostToolUse. Without a status (Claude Code
/// gives none) such a call did not run.
fn tool_batch(p: &mut Planning) {
    for call in p.payload["tool_calls"].as_array().into_iter().flatten() {
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
        // The agent's own word for how the call ended, where it gave one
        // (Qwen Code: `cancelled` when the user refused it in the dialog;
        // Claude Code gives none, and the status above is cmdlog's).
        if let Some(status) = call["status"].as_str() {
            settled["_meta"]["status"] = status.into();
        }
        with_input(&mut settled, call);
        p.ties.push((p.items.len(), Tie::SettleIfOpen));
        p.items.push(update(settled));
    }
}

fn permission_asked(p: &mut Planning) {
    // Claude Code 2.1.332 and Codex name no call: tied to the pending one.
    if text(p.payload, "tool_use_id")
        .or_else(|| text(p.payload, "tool_call_id"))
        .is_none()
    {
        p.ties.push((p.items.len(), Tie::FindCall));
    }
    p.items
        .push(ready(EventData::PermissionRequested(permission_request(
            p.payload, "ask",
        ))));
}

/// Denied without asking anyone: the request and its answer.
fn permission_denied(p: &mut Planning) {
    let request = permission_request(p.payload, "denied");
    let request_id = request.request_id.clone();
    p.items.push(ready(EventData::PermissionRequested(request)));
    p.items.push(ready(EventData::PermissionResolved(PermissionResolved {
        request_id,
        decision: json!({"outcome": "selected", "optionId": "reject", "reason": p.payload.get("reason")}),
        ..Default::default()
    })));
}

/// The turn ended: the agent's last message, then the end.
fn turn_ended(p: &mut Planning) {
    let last = text(p.payload, "last_assistant_message")
        .or_else(|| text(p.payload, "prompt_response"))
        .filter(|m| !m.is_empty());
    if let Some(message) = last {
        p.items.push(update(updates::message(message)));
    }
    p.settle_open(Settling::TurnEnd);
    p.items.push(update(updates::turn_complete("end_turn")));
}

/// Codex: the user interrupted the turn (no Stop follows).
fn turn_interrupted(p: &mut Planning) {
    p.settle_open(Settling::Interrupted);
    p.items.push(update(updates::turn_complete("cancelled")));
}

/// The agent ended its session (and may resume it): why, and the rest of what
/// it said.
fn session_ended(p: &mut Planning) {
    let details = rest_of(p.payload, &["reason"]);
    p.settle_open(Settling::SessionEnd);
    p.named
        .push((p.items.len(), crate::facts::SESSION_END.to_string()));
    p.items.push(ready(EventData::SessionEnded(SessionEnded {
        reason: text(p.payload, "reason").map(str::to_string),
        details: (!details.is_empty()).then_some(Value::Object(details)),
    })));
}

fn turn_failed(p: &mut Planning) {
    p.settle_open(Settling::TurnEnd);
    p.items.push(update(json!({
        "sessionUpdate": "turn_error",
        "message": p.payload.get("error").map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }).unwrap_or_else(|| "the turn failed".into()),
        "code": p.payload.get("error_details").cloned().unwrap_or(Value::Null),
    })));
}

/// Gemini CLI's dialog for a call (`ToolPermission`) is its only word that it
/// asked: a permission request for the call it just announced (`BeforeTool`
/// comes before the dialog). Other notifications are kept as they came.
fn notified(p: &mut Planning) {
    if p.agent != crate::kind::AgentKind::Gemini
        || text(p.payload, "notification_type") != Some("ToolPermission")
    {
        return kept(p);
    }
    let details = p.payload.get("details").cloned().unwrap_or(Value::Null);
    let mut request = permission_request(p.payload, "ask");
    let id = request.tool_call.as_ref().map(|c| c["toolCallId"].clone());
    request.tool_call = Some(json!({
        "toolCallId": id,
        "title": details["title"].as_str().unwrap_or("tool"),
        "rawInput": details,
    }));
    p.ties.push((p.items.len(), Tie::LatestCall));
    p.items.push(ready(EventData::PermissionRequested(request)));
}

/// A subagent started (the parent's payload, naming it `agent_id`): the
/// parent keeps its word, and the subagent's session begins, naming the
/// parent and (tied to the parent's pending call) the call that started it.
fn subagent_started(p: &mut Planning) {
    kept(p);
    let Some(child) = text(p.payload, "agent_id").filter(|a| !a.is_empty()) else {
        return;
    };
    let parent = text(p.payload, "session_id").unwrap_or("");
    let at = p.items.len();
    p.elsewhere.push((at, child.to_string()));
    p.ties.push((at, Tie::SubagentCall));
    p.named.push((at, format!("subagent:{child}")));
    p.items
        .push(ready(EventData::SessionCreated(SessionCreated {
            mode: None,
            parent: Some(Parent {
                session: crate::kind::session_key(p.agent, parent),
                tool_call_id: None,
                agent_type: text(p.payload, "agent_type").map(str::to_string),
            }),
        })));
}

/// A subagent stopped: the parent keeps its word; the subagent's session
/// ends with its last message.
fn subagent_stopped(p: &mut Planning) {
    kept(p);
    let Some(child) = text(p.payload, "agent_id").filter(|a| !a.is_empty()) else {
        return;
    };
    // The subagent's turn answers the prompt of its parent's turn (its
    // transcript names that prompt's id).
    let turn = match p.agent {
        // Qwen Code's subagent transcript names no prompt: its turn is named
        // by the subagent, on both sides.
        crate::kind::AgentKind::Qwen => Some(format!("subagent:{child}")),
        _ => text(p.payload, "prompt_id")
            .filter(|id| !id.is_empty())
            .map(str::to_string),
    };
    if let Some(message) = text(p.payload, "last_assistant_message").filter(|m| !m.is_empty()) {
        p.elsewhere.push((p.items.len(), child.to_string()));
        if let Some(id) = &turn {
            p.named.push((p.items.len(), format!("reply:{id}")));
        }
        p.items.push(update(updates::message(message)));
    }
    // Its turn ends: named by that prompt, else by the subagent's own last
    // prompt (Codex's child sends its UserPromptSubmit).
    p.elsewhere.push((p.items.len(), child.to_string()));
    if let Some(id) = &turn {
        p.named.push((p.items.len(), format!("turn_end:{id}")));
    }
    p.settle_open(Settling::TurnEnd);
    p.items.push(update(updates::turn_complete("end_turn")));
    p.elsewhere.push((p.items.len(), child.to_string()));
    p.settle_open(Settling::SessionEnd);
    p.named
        .push((p.items.len(), crate::facts::SESSION_END.to_string()));
    p.items.push(ready(EventData::SessionEnded(SessionEnded {
        reason: Some("subagent_stop".into()),
        details: p
            .payload
            .get("agent_transcript_path")
            .map(|t| json!({"agent_transcript_path": t})),
    })));
}

/// Claude Code switched the session's model (`/model`): the switch, from
/// the model it left (`from_model`) to the one it uses now (`to_model`).
fn model_switched(p: &mut Planning) {
    match text(p.payload, "to_model").filter(|m| !m.is_empty()) {
        Some(model) => p.items.push(ready(EventData::ModelSwitched(ModelSwitched {
            model: model.to_string(),
        }))),
        None => kept(p),
    }
}

/// Everything else — SessionStart, notifications, compaction, model calls —
/// kept as the agent gave it.
pub(crate) fn kept(p: &mut Planning) {
    p.items.push(ready(EventData::AgentEvent(AgentEvent {
        agent: p.agent.name().into(),
        event: p.event.into(),
        data: Value::Object(rest_of(p.payload, &[])),
        bookkeeping: false,
    })));
}
