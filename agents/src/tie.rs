//! A hook payload tied to what its session already holds. Each payload is one
//! process's view; some events can only be placed against the ones before them:
//!
//! - a run planned from a prompt that names a slash line (Qwen Code's
//!   `submitted_prompt`) is dropped when the session shows a run since its last
//!   prompt — the agent's own `UserPromptExpansion` recorded it;
//! - a prompt that is a run's expansion names that run (`from_run`);
//! - a tool call settled by a batch (`PostToolBatch`) is settled only if nothing
//!   settled it yet (else what the batch said is kept as bookkeeping) — a call
//!   that was denied or blocked gets no `PostToolUse` —
//!   and a permission request still open for it is then answered: rejected, the
//!   call did not run;
//! - a permission request that does not name its call (Claude Code 2.1.332 and
//!   Codex send none) is tied to the session's pending call of the same tool and
//!   input;
//! - a call's result answers a permission request still open for it: granted
//!   (the call ran), by the user (the agent asked in its dialog);
//! - the next prompt, a turn's end, an interruption and the session's end each
//!   settle what the session left open before them: a call that never reported
//!   a result did not run for the agent (interactively a call denied in the
//!   dialog gets no hook at all: no `PostToolUse`, `PostToolBatch`, `Stop` or
//!   `PermissionDenied`), so it is settled `failed`, saying why and what showed
//!   it, and its open request is answered — denied, by the user.
//!
//! The session's last events in the log are read once per payload ([`LOOK_BACK`]).

use std::collections::{HashMap, HashSet};

use cmdlog_engine::event::{AgentEvent, Decider, PermissionResolved};
use cmdlog_engine::{Event, EventData, Seq};
use cmdlog_store::{Log, ReadError};
use serde_json::{Value, json};

use crate::append::Batch;
use crate::plan::{Planned, PlannedData, Settling, Tie};

/// How many of a session's last events are read to tie a payload to it.
const LOOK_BACK: usize = 256;

/// What the session holds that ties depend on.
#[derive(Default)]
struct SessionTail {
    /// The latest run since the last prompt: its seq in the log, or `None` for a
    /// run in this batch.
    last_run: Option<Option<Seq>>,
    settled: HashSet<String>,
    /// Calls not settled: id, tool, input.
    pending: Vec<(String, Value, Value)>,
    /// Open permission requests: the call's id → the request's id.
    open_requests: HashMap<String, String>,
    /// Whether the session's last word was its end.
    ended: bool,
    /// The id of the session's last prompt, when the agent named it: the turn
    /// that ends next is its.
    last_prompt: Option<String>,
}

impl SessionTail {
    fn read(log: &Log, session: &str) -> Result<SessionTail, ReadError> {
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

    fn see(&mut self, data: &EventData, seq: Option<Seq>) {
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

impl SessionTail {
    /// The events that settle what is open before an event that shows it did
    /// not run (`why`); the tail then holds nothing open.
    fn settle_open(&mut self, why: Settling, like: &Planned) -> Vec<Planned> {
        let mut out = Vec::new();
        for (id, title, _) in std::mem::take(&mut self.pending) {
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
            let source = like.observed.as_ref().map(|o| o.source.clone());
            let update = json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": "failed",
                "rawOutput": {"settled": settled, "reason": reason, "by": source},
            });
            let fact = crate::facts::of_data(&PlannedData::Ready(EventData::SessionUpdate(
                update.clone(),
            )));
            out.push(Planned {
                session: like.session.clone(),
                observed: like
                    .observed
                    .clone()
                    .map(|o| cmdlog_engine::event::Observed { fact, ..o }),
                tie: None,
                data: PlannedData::Ready(EventData::SessionUpdate(update)),
            });
            self.settled.insert(id);
            if let Some(request_id) = request {
                let decision = if why == Settling::Interrupted {
                    json!({"outcome": "cancelled", "reason": reason})
                } else {
                    json!({"outcome": "selected", "optionId": "reject", "reason": reason})
                };
                out.push(Planned {
                    session: like.session.clone(),
                    observed: like
                        .observed
                        .clone()
                        .map(|o| cmdlog_engine::event::Observed { fact: None, ..o }),
                    tie: None,
                    data: PlannedData::Ready(EventData::PermissionResolved(PermissionResolved {
                        request_id,
                        decision,
                        decided_by: Some(Decider::User),
                        ..Default::default()
                    })),
                });
            }
        }
        // A request whose call was never seen is answered the same way.
        for (_, request_id) in std::mem::take(&mut self.open_requests) {
            out.push(Planned {
                session: like.session.clone(),
                observed: like.observed.clone().map(|o| cmdlog_engine::event::Observed { fact: None, ..o }),
                tie: None,
                data: PlannedData::Ready(EventData::PermissionResolved(PermissionResolved {
                    request_id,
                    decision: json!({"outcome": "selected", "optionId": "reject",
                        "reason": format!("not granted before {}: its call never ran", why.words())}),
                    decided_by: Some(Decider::User),
                    ..Default::default()
                })),
            });
        }
        out
    }
}

impl Batch {
    /// Applies the ties of this batch's events (see the module's comment) against
    /// `log`.
    pub(crate) fn tie(&mut self, log: &Log) -> Result<(), ReadError> {
        if self.events.iter().all(|p| p.tie.is_none()) {
            return Ok(());
        }
        let mut tails: HashMap<String, SessionTail> = HashMap::new();
        let mut dropped = vec![false; self.events.len()];
        let mut added: Vec<(usize, Planned)> = Vec::new();
        let mut before: Vec<(usize, Planned)> = Vec::new();
        for i in 0..self.events.len() {
            let Some(session) = self.events[i].session.clone() else {
                continue;
            };
            if !tails.contains_key(&session) {
                tails.insert(session.clone(), SessionTail::read(log, &session)?);
            }
            let tail = tails.get_mut(&session).expect("read above");
            let planned = &mut self.events[i];
            if planned.tie == Some(Tie::SettleOpen(Settling::SessionEnd)) && tail.ended {
                // Said again (Gemini CLI fires SessionEnd more than once per
                // exit): the session ended once; the repeat is bookkeeping.
                if let PlannedData::Ready(EventData::SessionEnded(end)) = &planned.data {
                    let said = json!({"reason": end.reason, "details": end.details});
                    planned.data = PlannedData::Ready(EventData::AgentEvent(AgentEvent {
                        agent: self.agent.clone(),
                        event: "SessionEnd".into(),
                        data: said,
                        bookkeeping: true,
                    }));
                }
                continue;
            }
            let settling = match planned.tie {
                Some(Tie::SettleOpen(why)) => Some(why),
                Some(Tie::FromLatestRun) => Some(Settling::NextPrompt),
                _ => None,
            };
            if let Some(why) = settling {
                let settled = tail.settle_open(why, planned);
                before.extend(settled.into_iter().map(|p| (i, p)));
            }
            if settling == Some(Settling::TurnEnd) {
                self.name_turn(i, tail.last_prompt.as_deref());
            }
            let planned = &mut self.events[i];
            match (planned.tie, &mut planned.data) {
                (Some(Tie::FallbackRun), PlannedData::Ready(EventData::CommandRun(_)))
                    if tail.last_run.is_some() =>
                {
                    dropped[i] = true;
                    continue;
                }
                (_, PlannedData::DoneOf { run_index, .. }) => {
                    dropped[i] = dropped[*run_index];
                    continue;
                }
                (Some(Tie::FromLatestRun), PlannedData::Ready(EventData::SessionPrompt(p))) => {
                    if let Some(Some(seq)) = tail.last_run {
                        p.from_run = Some(seq);
                    }
                }
                (Some(Tie::SettleIfOpen), PlannedData::Ready(EventData::SessionUpdate(u))) => {
                    let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
                    if tail.settled.contains(&id) {
                        // Settled already: what the batch said of it is kept, as
                        // the agent's bookkeeping.
                        let said = std::mem::take(u);
                        // It states no fact of its own: the settling it repeats
                        // is the event that settled the call.
                        if let Some(o) = &mut planned.observed {
                            o.fact = None;
                        }
                        planned.data = PlannedData::Ready(EventData::AgentEvent(AgentEvent {
                            agent: self.agent.clone(),
                            event: "PostToolBatch".into(),
                            data: said,
                            bookkeeping: true,
                        }));
                        continue;
                    }
                    // Qwen Code asks before its PreToolUse, naming no call, and a
                    // call denied then reports only here: the one request open
                    // for no call it knows is this call's.
                    if !tail.open_requests.contains_key(&id)
                        && !tail.pending.iter().any(|(p, _, _)| *p == id)
                    {
                        // Never announced: the batch's word is all there is of
                        // the call, which is recorded before its settling.
                        let call = json!({
                            "sessionUpdate": "tool_call",
                            "toolCallId": id,
                            "title": u["title"],
                            "kind": u["kind"],
                            "status": "pending",
                            "rawInput": u["rawInput"],
                        });
                        let fact = crate::facts::of_data(&PlannedData::Ready(
                            EventData::SessionUpdate(call.clone()),
                        ));
                        before.push((
                            i,
                            Planned {
                                session: Some(session.clone()),
                                observed: planned
                                    .observed
                                    .clone()
                                    .map(|o| cmdlog_engine::event::Observed { fact, ..o }),
                                tie: None,
                                data: PlannedData::Ready(EventData::SessionUpdate(call)),
                            },
                        ));
                        let derived = crate::hook::derived_call_id(
                            u["title"].as_str().unwrap_or("tool"),
                            &u["rawInput"],
                        );
                        let unplaced: Vec<String> = tail
                            .open_requests
                            .keys()
                            .filter(|c| c.starts_with("tool-"))
                            .cloned()
                            .collect();
                        let asked = if tail.open_requests.contains_key(&derived) {
                            Some(derived)
                        } else if let [only] = &unplaced[..] {
                            Some(only.clone())
                        } else {
                            None
                        };
                        if let Some(request) = asked.and_then(|a| tail.open_requests.remove(&a)) {
                            tail.open_requests.insert(id.clone(), request);
                        }
                    }
                    if let Some(request) = tail.open_requests.get(&id) {
                        // The call was held for permission and never ran.
                        added.push((
                            i,
                            Planned {
                                session: Some(session.clone()),
                                observed: planned.observed.clone().map(|o| {
                                    cmdlog_engine::event::Observed { fact: None, ..o }
                                }),
                                tie: None,
                                data: PlannedData::Ready(EventData::PermissionResolved(
                                    PermissionResolved {
                                        request_id: request.clone(),
                                        decision: json!({"outcome": "selected", "optionId": "reject",
                                            "reason": "the call did not run", "response": u["rawOutput"].clone()}),
                                        // Cancelled: the user refused it in the
                                        // dialog; else the agent's rules did
                                        // without asking anyone (a headless run).
                                        decided_by: Some(if u.pointer("/_meta/status") == Some(&json!("cancelled")) {
                                            Decider::User
                                        } else {
                                            Decider::Rule
                                        }),
                                        ..Default::default()
                                    },
                                )),
                            },
                        ));
                    }
                }
                (Some(Tie::Granted), PlannedData::Ready(EventData::SessionUpdate(u))) => {
                    let id = u["toolCallId"].as_str().unwrap_or_default();
                    if let Some(request_id) = tail.open_requests.remove(id) {
                        // Asked in the agent's dialog, then it ran: the user
                        // granted it (a rule or a hook would not have asked).
                        let decision = json!({"outcome": "selected", "optionId": "allow",
                            "reason": "the call ran after the agent asked"});
                        before.push((
                            i,
                            Planned {
                                session: Some(session.clone()),
                                observed: planned
                                    .observed
                                    .clone()
                                    .map(|o| cmdlog_engine::event::Observed { fact: None, ..o }),
                                tie: None,
                                data: PlannedData::Ready(EventData::PermissionResolved(
                                    PermissionResolved {
                                        request_id,
                                        decision,
                                        decided_by: Some(Decider::User),
                                        ..Default::default()
                                    },
                                )),
                            },
                        ));
                    }
                }
                (Some(Tie::OpensCall), PlannedData::Ready(EventData::SessionUpdate(u))) => {
                    // Asked before the call opened (Qwen Code): the request
                    // named the call by its tool and input.
                    let id = u["toolCallId"].as_str().unwrap_or_default();
                    let derived = crate::hook::derived_call_id(
                        u["title"].as_str().unwrap_or("tool"),
                        &u["rawInput"],
                    );
                    if id != derived
                        && let Some(request) = tail.open_requests.get(&derived)
                    {
                        u["_meta"] = json!({"permissionRequest": request});
                    }
                }
                (Some(Tie::LatestCall), PlannedData::Ready(EventData::PermissionRequested(r))) => {
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
                (Some(Tie::FindCall), PlannedData::Ready(EventData::PermissionRequested(r))) => {
                    let call = r.tool_call.clone().unwrap_or(Value::Null);
                    let found = tail.pending.iter().rev().find(|(_, tool, input)| {
                        *tool == call["title"] && same_input(input, &call["rawInput"])
                    });
                    if let Some((id, _, _)) = found {
                        r.request_id = format!("ask-{id}");
                        if let Some(c) = r.tool_call.as_mut() {
                            c["toolCallId"] = json!(id);
                        }
                    }
                }
                _ => {}
            }
            if let PlannedData::Ready(data) = &self.events[i].data {
                tail.see(data, None);
            }
            // An answer added after a settling is seen too.
            if let Some((_, answer)) = added.last().filter(|(at, _)| *at == i)
                && let PlannedData::Ready(data) = &answer.data
            {
                tail.see(data, None);
            }
        }
        self.rebuild(&dropped, before, added);
        Ok(())
    }

    /// Names the turn end at `i`, and the reply its payload gave just before
    /// it, by the prompt the turn answers (`turn_end:<prompt id>`,
    /// `reply:<prompt id>`): the join keys a transcript's turn uses too.
    fn name_turn(&mut self, i: usize, prompt: Option<&str>) {
        let Some(prompt) = prompt else { return };
        let key = self.events[i].observed.as_ref().and_then(|o| o.key.clone());
        let name = |p: &mut Planned, kind: &str| {
            if let Some(o) = p.observed.as_mut()
                && o.fact.is_none()
            {
                o.fact = crate::facts::tool(kind, prompt);
            }
        };
        name(&mut self.events[i], "turn_end");
        if let Some(before) = i.checked_sub(1).map(|b| &mut self.events[b])
            && before.observed.as_ref().and_then(|o| o.key.clone()) == key
            && matches!(&before.data, PlannedData::Ready(EventData::SessionUpdate(u)) if u["sessionUpdate"] == "agent_message_chunk")
        {
            name(before, "reply");
        }
    }

    /// The events without the `dropped` ones, each of `before` just before and
    /// each of `added` just after the event at its index; `DoneOf` indices
    /// follow.
    fn rebuild(
        &mut self,
        dropped: &[bool],
        mut before: Vec<(usize, Planned)>,
        mut added: Vec<(usize, Planned)>,
    ) {
        added.reverse();
        before.reverse();
        let mut new_index = Vec::with_capacity(self.events.len());
        let mut kept: Vec<Planned> =
            Vec::with_capacity(self.events.len() + added.len() + before.len());
        for (i, p) in std::mem::take(&mut self.events).into_iter().enumerate() {
            while before.last().is_some_and(|(at, _)| *at == i) {
                let (_, extra) = before.pop().expect("checked");
                if !dropped[i] {
                    kept.push(extra);
                }
            }
            new_index.push(kept.len());
            if !dropped[i] {
                kept.push(p);
            }
            while added.last().is_some_and(|(at, _)| *at == i) {
                let (_, extra) = added.pop().expect("checked");
                if !dropped[i] {
                    kept.push(extra);
                }
            }
        }
        for p in &mut kept {
            if let PlannedData::DoneOf { run_index, .. } = &mut p.data {
                *run_index = new_index[*run_index];
            }
        }
        self.events = kept;
    }
}
