//! What a session already holds that a payload is tied to: its last events,
//! read once per payload, and what is open in it.

use std::collections::{HashMap, HashSet};

use cmdlog_engine::event::{Decider, PermissionResolved};
use cmdlog_engine::{Event, EventData, Seq};
use cmdlog_store::{Log, ReadError};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Origin, beside};
use crate::plan::{Planned, PlannedData, Settling};

/// How many of a session's last events are read to tie a payload to it.
pub(super) const LOOK_BACK: usize = 256;

/// What the session holds that ties depend on.
#[derive(Default)]
pub(super) struct SessionTail {
    /// The latest run since the last prompt: its seq in the log, or `None` for a
    /// run in this batch.
    pub(super) last_run: Option<Option<Seq>>,
    pub(super) settled: HashSet<String>,
    /// Calls not settled: id, tool, input.
    pub(super) pending: Vec<(String, Value, Value)>,
    /// Open permission requests: the call's id → the request's id.
    pub(super) open_requests: HashMap<String, String>,
    /// Whether the session's last word was its end.
    pub(super) ended: bool,
    /// The id of the session's last prompt, when the agent named it: the turn
    /// that ends next is its.
    pub(super) last_prompt: Option<String>,
    /// The latest call of a tool that starts a subagent.
    pub(super) last_delegation: Option<String>,
    /// The model the session runs on, as last said.
    pub(super) model: Option<String>,
    /// Whether the session holds any event (in the log, or planned before).
    pub(super) known: bool,
}

/// The tools that start a subagent: Claude Code's `Agent` (`Task` before it),
/// Qwen Code's `agent`, Codex's `spawn_agent`, Gemini CLI's `invoke_agent`.
const DELEGATING_TOOLS: &[&str] = &[
    "Agent",
    "Task",
    "agent",
    "task",
    "spawn_agent",
    "invoke_agent",
];

impl SessionTail {
    pub(super) fn read(log: &Log, session: &str) -> Result<SessionTail, ReadError> {
        let mut tail = SessionTail::default();
        let seqs = log.stream_seqs(session, 0)?;
        let from = seqs.len().saturating_sub(LOOK_BACK);
        for seq in &seqs[from..] {
            let Some(record) = log.get(*seq)? else {
                continue;
            };
            if let Ok(event) = Event::decode(record.seq, &record.bytes) {
                tail.see(&event.data, Some(event.seq));
            }
        }
        Ok(tail)
    }

    pub(super) fn see(&mut self, data: &EventData, seq: Option<Seq>) {
        self.known = true;
        self.ended = match data {
            EventData::SessionEnded(_) => true,
            EventData::AgentEvent(e) => self.ended && (e.bookkeeping || e.event != "SessionStart"),
            EventData::AgentObserved(_) | EventData::ImportCheckpoint(_) => self.ended,
            _ => false,
        };
        match data {
            EventData::CommandRun(_) => self.last_run = Some(seq),
            EventData::SessionPrompt(p) => {
                self.last_run = None;
                self.last_prompt = p.prompt_id.clone();
            }
            EventData::ModelSwitched(m) => self.model = Some(m.model.clone()),
            EventData::AgentEvent(e)
                if e.data["model"].is_string() && e.event != "UserPromptSubmit" =>
            {
                self.model = e.data["model"].as_str().map(str::to_string);
            }
            // A turn the agent began itself (Claude Code's notice that a
            // subagent finished): the turn that ends next is its.
            EventData::AgentEvent(e) if e.event == "UserPromptSubmit" => {
                self.last_prompt = e.data["prompt_id"].as_str().map(str::to_string);
            }
            EventData::SessionUpdate(update) => {
                let id = update["toolCallId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                match update["sessionUpdate"].as_str() {
                    Some("tool_call") => {
                        let derived = crate::hook::derived_call_id(
                            update["title"].as_str().unwrap_or("tool"),
                            &update["rawInput"],
                        );
                        if derived != id
                            && let Some(request) = self.open_requests.remove(&derived)
                        {
                            self.open_requests.insert(id.clone(), request);
                        }
                        if update["title"]
                            .as_str()
                            .is_some_and(|t| DELEGATING_TOOLS.contains(&t))
                        {
                            self.last_delegation = Some(id.clone());
                        }
                        self.pending
                            .push((id, update["title"].clone(), update["rawInput"].clone()))
                    }
                    Some("tool_call_update")
                        if matches!(update["status"].as_str(), Some("completed" | "failed")) =>
                    {
                        self.pending.retain(|(p, _, _)| *p != id);
                        self.settled.insert(id);
                    }
                    _ => {}
                }
            }
            EventData::PermissionRequested(request) => {
                if let Some(call) = request
                    .tool_call
                    .as_ref()
                    .and_then(|c| c["toolCallId"].as_str())
                {
                    self.open_requests
                        .insert(call.to_string(), request.request_id.clone());
                }
            }
            EventData::PermissionResolved(resolved) => {
                self.open_requests.retain(|_, r| *r != resolved.request_id);
            }
            _ => {}
        }
    }
}

impl SessionTail {
    /// The events that settle what is open before an event that shows it did
    /// not run (`why`); the tail then holds nothing open.
    pub(super) fn settle_open(&mut self, why: Settling, like: &Origin) -> Vec<Planned> {
        let mut out = Vec::new();
        for (id, tool, input) in std::mem::take(&mut self.pending) {
            let title = tool.as_str().unwrap_or("the call").to_string();
            let request = self.open_requests.remove(&id);
            let (settled, reason) = match (why, &request) {
                (Settling::Interrupted, _) => (
                    "interrupted",
                    format!("the turn was interrupted before {title} reported a result"),
                ),
                (_, Some(_)) => (
                    "denied",
                    format!(
                        "not run: its permission request was not granted before {} (denied or dismissed in the agent's dialog)",
                        why.words()
                    ),
                ),
                (_, None) => (
                    "unreported",
                    format!("the agent reported no result for it before {}", why.words()),
                ),
            };
            let update = not_run(&id, settled, &reason, like);
            let fact = crate::facts::of_data(&PlannedData::Ready(update.clone()))
                .or_else(|| crate::facts::said_result(&id, &tool, &input));
            out.push(beside(like, fact, update));
            self.settled.insert(id.clone());
            if let Some(request_id) = request {
                let decision = if why == Settling::Interrupted {
                    Decision::cancelled(Some(&id), &reason)
                } else {
                    Decision::reject(Some(&id), &reason)
                };
                out.push(answer(like, request_id, decision, Decider::User));
            }
        }
        // A request whose call was never seen is answered the same way.
        for (_, request_id) in std::mem::take(&mut self.open_requests) {
            let reason = format!("not granted before {}: its call never ran", why.words());
            out.push(answer(
                like,
                request_id,
                Decision::reject(None, &reason),
                Decider::User,
            ));
        }
        out
    }
}

/// The settling of call `id` as not run (`settled`: denied, interrupted,
/// unreported), why, and the source that showed it (`like`'s).
pub(super) fn not_run(id: &str, settled: &str, reason: &str, like: &Origin) -> EventData {
    let source = like.observed.as_ref().map(|o| o.source.clone());
    EventData::SessionUpdate(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "failed",
        "rawOutput": {"settled": settled, "reason": reason, "by": source},
    }))
}

/// An answer cmdlog gives a request from what followed it: the ACP outcome,
/// the call it was for, and why.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Decision<'a> {
    pub outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
    pub reason: &'a str,
    /// What the agent said of the call, where it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<&'a Value>,
}

impl<'a> Decision<'a> {
    /// Rejected (the call did not run).
    pub(super) fn reject(call: Option<&'a str>, reason: &'a str) -> Self {
        Decision {
            outcome: "selected",
            option_id: Some("reject"),
            tool_call_id: call,
            reason,
            response: None,
        }
    }

    /// Cancelled (the turn was interrupted while the request was open).
    pub(super) fn cancelled(call: Option<&'a str>, reason: &'a str) -> Self {
        Decision {
            outcome: "cancelled",
            option_id: None,
            ..Decision::reject(call, reason)
        }
    }

    /// With what the agent said of the call.
    pub(super) fn with_response(self, response: &'a Value) -> Self {
        Decision {
            response: Some(response).filter(|r| !r.is_null()),
            ..self
        }
    }
}

/// The answer to a permission request, beside `like`.
pub(super) fn answer(
    like: &Origin,
    request_id: String,
    decision: Decision<'_>,
    by: Decider,
) -> Planned {
    beside(
        like,
        None,
        EventData::PermissionResolved(PermissionResolved {
            request_id,
            decision: serde_json::to_value(decision).unwrap_or_default(),
            decided_by: Some(by),
            ..Default::default()
        }),
    )
}
