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

mod rules;
mod tail;

use std::collections::HashMap;

use cmdlog_engine::EventData;
use cmdlog_engine::event::Observed;
use cmdlog_store::{Log, ReadError};

use crate::append::Batch;
use crate::plan::{Planned, PlannedData, Settling, Tie};
use tail::SessionTail;

/// Where a tied event comes from — its session and source — which the events
/// a tie adds beside it share (its data, which may be large, is not copied).
struct Origin {
    session: Option<String>,
    observed: Option<Observed>,
}

impl Origin {
    fn of(p: &Planned) -> Origin {
        Origin {
            session: p.session.clone(),
            observed: p.observed.clone(),
        }
    }
}

/// An event beside `like`: its session and source, stating `fact`.
fn beside(like: &Origin, fact: Option<String>, data: EventData) -> Planned {
    Planned {
        session: like.session.clone(),
        observed: like.observed.clone().map(|o| Observed { fact, ..o }),
        tie: None,
        data: PlannedData::Ready(data),
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
            if let PlannedData::DoneOf { run_index, .. } = self.events[i].data {
                dropped[i] = dropped[run_index];
                continue;
            }
            if self.events[i].tie == Some(Tie::SubagentCall) {
                if let Some(parent) = self.not_delegating(i, log, &mut tails)? {
                    // Its chat said a subagent runs, but no call of its parent
                    // runs one (it was cut short and wrote no summary): the
                    // payload is the parent's.
                    let key = self.events[i].observed.as_ref().and_then(|o| o.key.clone());
                    for p in &mut self.events[i + 1..] {
                        if p.session.as_deref() == Some(session.as_str())
                            && p.observed.as_ref().and_then(|o| o.key.clone()) == key
                        {
                            p.session = Some(parent.clone());
                        }
                    }
                    dropped[i] = true;
                    continue;
                }
                // Begun once: a subagent's session that holds events began.
                if tails[&session].known {
                    dropped[i] = true;
                    continue;
                }
                self.subagent_call(i, log, &mut tails)?;
            }
            let tail = tails.get_mut(&session).expect("read above");
            let Some(tie) = self.events[i].tie else {
                if let PlannedData::Ready(data) = &self.events[i].data {
                    tail.see(data, None);
                }
                continue;
            };
            let placed = rules::apply(tie, tail, &mut self.events[i], &self.agent);
            if matches!(
                tie,
                Tie::SettleOpen(Settling::TurnEnd | Settling::Interrupted)
            ) {
                let prompt = tail.last_prompt.clone();
                self.name_turn(i, prompt.as_deref());
            }
            let tail = tails.get_mut(&session).expect("read above");
            dropped[i] = placed.drop;
            for p in placed
                .before
                .iter()
                .chain(Some(&self.events[i]).filter(|_| !placed.drop))
                .chain(&placed.after)
            {
                if let PlannedData::Ready(data) = &p.data {
                    tail.see(data, None);
                }
            }
            before.extend(placed.before.into_iter().map(|p| (i, p)));
            added.extend(placed.after.into_iter().map(|p| (i, p)));
        }
        self.rebuild(&dropped, before, added);
        Ok(())
    }

    /// A subagent's session names the call that started it: its parent's
    /// latest call of a delegating tool.
    fn subagent_call(
        &mut self,
        i: usize,
        log: &Log,
        tails: &mut HashMap<String, SessionTail>,
    ) -> Result<(), ReadError> {
        if let PlannedData::Ready(EventData::SessionCreated(created)) = &mut self.events[i].data
            && let Some(parent) = created.parent.as_mut()
        {
            if !tails.contains_key(&parent.session) {
                let read = SessionTail::read(log, &parent.session)?;
                tails.insert(parent.session.clone(), read);
            }
            let tail = &tails[&parent.session];
            parent.tool_call_id = tail.last_delegation.clone();
            // The agent, where the payload did not name it: the delegating
            // call's input does (Gemini CLI's `agent_name`).
            if parent.agent_type.is_none() {
                let input = tail
                    .pending
                    .iter()
                    .find(|(id, _, _)| Some(id) == parent.tool_call_id.as_ref())
                    .map(|(_, _, input)| input);
                parent.agent_type = input
                    .and_then(|i| i["agent_name"].as_str())
                    .map(str::to_string);
            }
        }
        Ok(())
    }

    /// The parent session of the Gemini CLI subagent session begun at `i`
    /// when no delegating call of the parent is running: Gemini's payloads
    /// name no subagent, and a chat that says one runs is believed only while
    /// its parent's `invoke_agent` call is open (the other agents name their
    /// subagents in every payload).
    fn not_delegating(
        &self,
        i: usize,
        log: &Log,
        tails: &mut HashMap<String, SessionTail>,
    ) -> Result<Option<String>, ReadError> {
        let PlannedData::Ready(EventData::SessionCreated(created)) = &self.events[i].data else {
            return Ok(None);
        };
        let Some(parent) = created.parent.as_ref().map(|p| p.session.clone()) else {
            return Ok(None);
        };
        if self.agent != crate::kind::AgentKind::Gemini.name() {
            return Ok(None);
        }
        if !tails.contains_key(&parent) {
            tails.insert(parent.clone(), SessionTail::read(log, &parent)?);
        }
        let tail = &tails[&parent];
        let running = tail
            .last_delegation
            .as_ref()
            .is_some_and(|d| tail.pending.iter().any(|(id, _, _)| id == d));
        Ok((!running).then_some(parent))
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
