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
//!   input.
//!
//! The session's last events in the log are read once per payload ([`LOOK_BACK`]).

use std::collections::{HashMap, HashSet};

use cmdlog_engine::event::{AgentEvent, PermissionResolved};
use cmdlog_engine::{Event, EventData, Seq};
use cmdlog_store::{Log, ReadError};
use serde_json::{Value, json};

use crate::append::Batch;
use crate::plan::{Planned, PlannedData, Tie};

/// How many of a session's last events are read to tie a payload to it.
const LOOK_BACK: usize = 64;

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
        match data {
            EventData::CommandRun(_) => self.last_run = Some(seq),
            EventData::SessionPrompt(_) => self.last_run = None,
            EventData::SessionUpdate(update) => {
                let id = update["toolCallId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                match update["sessionUpdate"].as_str() {
                    Some("tool_call") => {
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
        for i in 0..self.events.len() {
            let Some(session) = self.events[i].session.clone() else {
                continue;
            };
            if !tails.contains_key(&session) {
                tails.insert(session.clone(), SessionTail::read(log, &session)?);
            }
            let tail = tails.get_mut(&session).expect("read above");
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
                    if let Some(request) = tail.open_requests.get(&id) {
                        // The call was held for permission and never ran.
                        added.push((
                            i,
                            Planned {
                                session: Some(session.clone()),
                                observed: planned.observed.clone(),
                                tie: None,
                                data: PlannedData::Ready(EventData::PermissionResolved(
                                    PermissionResolved {
                                        request_id: request.clone(),
                                        decision: json!({"outcome": "selected", "optionId": "reject",
                                            "reason": "the call did not run", "response": u["rawOutput"].clone()}),
                                        ..Default::default()
                                    },
                                )),
                            },
                        ));
                    }
                }
                (Some(Tie::FindCall), PlannedData::Ready(EventData::PermissionRequested(r))) => {
                    let call = r.tool_call.clone().unwrap_or(Value::Null);
                    let found = tail.pending.iter().rev().find(|(_, tool, input)| {
                        *tool == call["title"] && *input == call["rawInput"]
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
        self.rebuild(&dropped, added);
        Ok(())
    }

    /// The events without the `dropped` ones, each of `added` after the event at
    /// its index; `DoneOf` indices follow.
    fn rebuild(&mut self, dropped: &[bool], mut added: Vec<(usize, Planned)>) {
        added.reverse();
        let mut new_index = Vec::with_capacity(self.events.len());
        let mut kept: Vec<Planned> = Vec::with_capacity(self.events.len() + added.len());
        for (i, p) in std::mem::take(&mut self.events).into_iter().enumerate() {
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
