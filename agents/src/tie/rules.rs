//! What each tie does to its event, against the session's tail: one function
//! per [`Tie`], each saying what to add before or after the event, or to drop
//! it.

use cmdlog_engine::EventData;
use cmdlog_engine::event::{AgentEvent, Decider};
use serde_json::{Value, json};

use super::tail::{Decision, SessionTail, answer, not_run};
use super::{Origin, beside};
use crate::plan::{Planned, PlannedData, Settling, Tie};

/// What a tie does around its event.
#[derive(Default)]
pub(super) struct Placed {
    /// The event is left out.
    pub drop: bool,
    /// Events just before it.
    pub before: Vec<Planned>,
    /// Events just after it.
    pub after: Vec<Planned>,
}

/// Applies `tie` to `planned` (of `agent`), against `tail`.
pub(super) fn apply(
    tie: Tie,
    tail: &mut SessionTail,
    planned: &mut Planned,
    agent: &str,
) -> Placed {
    if tie == Tie::SettleOpen(Settling::SessionEnd) && tail.ended {
        return said_again(planned, agent, "SessionEnd");
    }
    let mut placed = Placed::default();
    let settling = match tie {
        Tie::SettleOpen(why) => Some(why),
        Tie::FromLatestRun => Some(Settling::NextPrompt),
        _ => None,
    };
    let like = Origin::of(planned);
    if let Some(why) = settling {
        placed.before = tail.settle_open(why, &like);
    }
    match (tie, &mut planned.data) {
        (Tie::FallbackRun, PlannedData::Ready(EventData::CommandRun(_))) => {
            placed.drop = tail.last_run.is_some();
        }
        (Tie::FromLatestRun, PlannedData::Ready(EventData::SessionPrompt(p))) => {
            if let Some(Some(seq)) = tail.last_run {
                p.from_run = Some(seq);
            }
        }
        (Tie::SettleIfOpen, PlannedData::Ready(EventData::SessionUpdate(u))) => {
            let settled_already = settle_if_open(tail, u, &like, &mut placed);
            if settled_already {
                return said_again(planned, agent, "PostToolBatch");
            }
        }
        (Tie::Granted, PlannedData::Ready(EventData::SessionUpdate(u))) => {
            granted(tail, u, &like, &mut placed);
        }
        (Tie::IfModelChanged, PlannedData::Ready(EventData::ModelSwitched(m))) => {
            match tail.model.as_deref() {
                Some(had) if had == m.model => placed.drop = true,
                Some(_) => {}
                // Not known yet: kept, as bookkeeping, for the payloads that
                // follow to compare with.
                None => {
                    let said = serde_json::to_value(&*m).unwrap_or_default();
                    bookkeeping(planned, agent, "model", said);
                }
            }
        }
        (Tie::OpensCall, PlannedData::Ready(EventData::SessionUpdate(u))) => {
            // Asked before the call opened (Qwen Code): the request named the
            // call by its tool and input.
            let id = u["toolCallId"].as_str().unwrap_or_default();
            let derived =
                crate::hook::derived_call_id(u["title"].as_str().unwrap_or("tool"), &u["rawInput"]);
            if id != derived
                && let Some(request) = tail.open_requests.get(&derived)
            {
                u["_meta"]["permissionRequest"] = request.as_str().into();
            }
        }
        (Tie::LatestCall, PlannedData::Ready(EventData::PermissionRequested(r))) => {
            if let Some((id, tool, input)) = tail.pending.last() {
                r.request_id = format!("ask-{id}");
                r.tool_call = Some(json!({
                    "toolCallId": id,
                    "title": tool,
                    "rawInput": input,
                    "asked": r.tool_call.as_ref().map(|c| c["rawInput"].clone()),
                }));
            }
        }
        (Tie::Decided, PlannedData::Ready(EventData::SessionUpdate(u))) => {
            decided(tail, u, &like, &mut placed);
        }
        (Tie::FindCall, PlannedData::Ready(EventData::PermissionRequested(r))) => {
            let call = r.tool_call.clone().unwrap_or(Value::Null);
            let found = tail.pending.iter().rev().find(|(_, tool, input)| {
                *tool == call["title"] && same_input(input, &call["rawInput"])
            });
            if let Some((id, _, _)) = found {
                r.request_id = format!("ask-{id}");
                if let Some(c) = r.tool_call.as_mut() {
                    c["toolCallId"] = id.as_str().into();
                }
            }
        }
        _ => {}
    }
    placed
}

/// A call its batch settles (`PostToolBatch`), unless something settled it
/// (then `true`: what the batch said is the agent's bookkeeping). A call it
/// is the first to name is announced before; a request open for it is
/// answered after: rejected, it did not run.
fn settle_if_open(tail: &mut SessionTail, u: &Value, like: &Origin, placed: &mut Placed) -> bool {
    let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
    if tail.settled.contains(&id) {
        return true;
    }
    if !tail.open_requests.contains_key(&id) && !tail.pending.iter().any(|(p, _, _)| *p == id) {
        placed.before.push(announced(like, u));
        place_request(tail, u, &id);
    }
    if let Some(request) = tail.open_requests.get(&id) {
        // The call was held for permission and never ran. Cancelled:
        // the user refused it in the dialog; else the agent's rules
        // did, without asking anyone (a headless run).
        let by = if u.pointer("/_meta/status").and_then(Value::as_str) == Some("cancelled") {
            Decider::User
        } else {
            Decider::Rule
        };
        let decision =
            Decision::reject(Some(&id), "the call did not run").with_response(&u["rawOutput"]);
        placed
            .after
            .push(answer(like, request.clone(), decision, by));
    }
    false
}

/// A call's result: a request open for it was granted. Asked in the agent's
/// dialog, then it ran: the user granted it (a rule or a hook would not have
/// asked).
fn granted(tail: &mut SessionTail, u: &Value, like: &Origin, placed: &mut Placed) {
    let id = u["toolCallId"].as_str().unwrap_or_default();
    if let Some(request_id) = tail.open_requests.remove(id) {
        let decision = Decision {
            option_id: Some("allow"),
            ..Decision::reject(Some(id), "the call ran after the agent asked")
        };
        placed
            .before
            .push(answer(like, request_id, decision, Decider::User));
    }
}

/// A call's decision from the agent's telemetry (`tool_decision`: Claude
/// Code's `decision` accept/reject with its `source`, Codex's
/// approved/approved_for_session/denied/abort with `config` or `user`): a
/// request still open for the call is answered, saying who decided; a call
/// refused that nothing settled yet is settled failed, as not run.
fn decided(tail: &mut SessionTail, u: &Value, like: &Origin, placed: &mut Placed) {
    let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
    let said = &u["_meta"]["telemetry"];
    let decision = said["decision"].as_str().unwrap_or_default();
    let allowed = matches!(
        decision,
        "accept" | "approved" | "approved_for_session" | "allow"
    );
    let by = decider(said["source"].as_str().unwrap_or_default());
    let reason = format!("the agent's telemetry: decision {decision}");
    if let Some(request) = tail.open_requests.remove(&id) {
        let answered = if allowed {
            Decision {
                option_id: Some("allow"),
                ..Decision::reject(Some(&id), &reason)
            }
        } else if decision == "abort" {
            Decision::cancelled(Some(&id), &reason)
        } else {
            Decision::reject(Some(&id), &reason)
        };
        placed.after.push(answer(like, request, answered, by));
    }
    if !allowed && !tail.settled.contains(&id) {
        let update = not_run(&id, "denied", &reason, like);
        let fact = crate::facts::of_data(&PlannedData::Ready(update.clone()));
        placed.after.push(beside(like, fact, update));
        tail.settled.insert(id);
    }
}

/// Who decided, from the `source` of a telemetry decision: the user in the
/// dialog (Claude Code's `user_temporary`, `user_permanent`, `user_reject`,
/// `user_abort`; Codex's `user`), the configured rules (`config`), a hook.
fn decider(source: &str) -> Decider {
    match source {
        "config" => Decider::Rule,
        "hook" => Decider::Hook,
        s if s == "user" || s.starts_with("user_") => Decider::User,
        _ => Decider::Other,
    }
}

/// What the agent said again (a call a batch settles that something settled
/// already; a session's end said twice: Gemini CLI fires `SessionEnd` more
/// than once per exit) is kept as its bookkeeping, stating no fact.
fn said_again(planned: &mut Planned, agent: &str, event: &str) -> Placed {
    let said = match &mut planned.data {
        PlannedData::Ready(EventData::SessionUpdate(u)) => {
            // A status the agent did not give is not kept as its word.
            if u.pointer("/_meta/status").is_none()
                && let Some(m) = u.as_object_mut()
            {
                m.remove("status");
            }
            std::mem::take(u)
        }
        PlannedData::Ready(EventData::SessionEnded(end)) => {
            serde_json::to_value(&*end).unwrap_or_default()
        }
        _ => Value::Null,
    };
    bookkeeping(planned, agent, event, said);
    Placed::default()
}

fn bookkeeping(planned: &mut Planned, agent: &str, event: &str, data: Value) {
    if let Some(o) = &mut planned.observed {
        o.fact = None;
    }
    planned.data = PlannedData::Ready(EventData::AgentEvent(AgentEvent {
        agent: agent.to_string(),
        event: event.into(),
        data,
        bookkeeping: true,
    }));
}

/// A call a batch settles that was never announced: the batch's word is all
/// there is of it, recorded before its settling.
fn announced(like: &Origin, u: &Value) -> Planned {
    let call = EventData::SessionUpdate(crate::updates::call(
        &u["toolCallId"],
        &u["title"],
        &u["kind"],
        &u["rawInput"],
    ));
    let fact = crate::facts::of_data(&PlannedData::Ready(call.clone()));
    beside(like, fact, call)
}

/// Qwen Code asks before its `PreToolUse`, naming no call, and a call denied
/// then reports only in its batch: the request asked for the same tool and
/// input (else the one request open for no call the session knows) is this
/// call's.
fn place_request(tail: &mut SessionTail, u: &Value, id: &str) {
    let derived =
        crate::hook::derived_call_id(u["title"].as_str().unwrap_or("tool"), &u["rawInput"]);
    let unplaced: Vec<&String> = tail
        .open_requests
        .keys()
        .filter(|c| c.starts_with("tool-"))
        .collect();
    let asked = if tail.open_requests.contains_key(&derived) {
        Some(derived)
    } else if let [only] = &unplaced[..] {
        Some((*only).clone())
    } else {
        None
    };
    if let Some(request) = asked.and_then(|a| tail.open_requests.remove(&a)) {
        tail.open_requests.insert(id.to_string(), request);
    }
}

/// Whether a permission request's input is the call's: the same, but for the
/// reason the agent gave for asking (Codex puts an escalation's justification
/// in the request's `tool_input.description`).
fn same_input(call: &Value, asked: &Value) -> bool {
    if call == asked {
        return true;
    }
    let (Some(call), Some(asked)) = (call.as_object(), asked.as_object()) else {
        return false;
    };
    let without = |m: &serde_json::Map<String, Value>| {
        let mut m = m.clone();
        m.remove("description");
        m.remove("justification");
        m
    };
    without(call) == without(asked)
}
