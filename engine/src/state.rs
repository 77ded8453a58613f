//! `LogState`: the one fold over events that the live engine keeps and that
//! replay rebuilds. It holds the registry, the runs still waiting for a done,
//! and what each session needs to accept or refuse new events.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::command::Mode;
use crate::event::{Event, EventData, Seq};
use crate::registry::Registry;

/// A `command/run` without a `command/done` yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenRun {
    /// Its seq (the command id).
    pub seq: Seq,
    /// Its session.
    pub session: Option<String>,
    /// Its agent.
    pub agent: Option<String>,
    /// The command name.
    pub name: String,
}

/// What the fold knows of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionState {
    /// Seq of its `session/created`, if seen.
    pub created: Option<Seq>,
    /// Its mode, fixed at creation.
    pub mode: Option<Mode>,
    /// Its agent at creation.
    pub agent: Option<String>,
    /// The current model, from the last `session/model_switched`.
    pub model: Option<String>,
    /// Seq of its `session/closed` or `session/died`.
    pub ended: Option<Seq>,
    /// A prompt was delivered and its turn has not completed (no `turn_complete`
    /// update or `session/cancelled` since): new prompts need steer or follow-up.
    pub streaming: bool,
    /// The id of the prompt that started the turn under way, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_prompt: Option<String>,
    /// Its title, from the agent's last (Qwen Code's
    /// `qwen/notify/session/title-update`), as `qwen serve` names a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its first prompt as typed (its first `TITLE_CHARS_MAX` characters):
    /// what `qwen serve` names a session by until it has a title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
}

/// The fold over the whole log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogState {
    /// The registry.
    pub registry: Registry,
    /// Runs without a done.
    pub open_runs: BTreeMap<Seq, OpenRun>,
    /// Sessions by id.
    pub sessions: BTreeMap<String, SessionState>,
    /// (path, content hash, message) of every `discovery/warning` logged.
    pub warned: BTreeSet<(String, Option<String>, String)>,
    /// Seq of the last event folded.
    pub applied: Seq,
}

impl LogState {
    /// Folds one event. Total: an event that does not fit (an unregister of an unknown
    /// registration, a done without a run) leaves the state as it was; `verify` reports it.
    pub fn apply(&mut self, event: &Event) {
        debug_assert!(event.seq > self.applied, "events fold in seq order");
        self.applied = event.seq;
        match &event.data {
            EventData::Registered(r) => self.registry.apply_registered(event.seq, event.at, r),
            EventData::Unregistered(u) => {
                let _ = self
                    .registry
                    .apply_unregistered(event.seq, u.registration, u.reason);
            }
            EventData::CommandRun(run) => {
                self.open_runs.insert(
                    event.seq,
                    OpenRun {
                        seq: event.seq,
                        session: event.session.clone(),
                        agent: event.agent.clone(),
                        name: run.name.clone(),
                    },
                );
            }
            EventData::CommandDone(done) => {
                self.open_runs.remove(&done.run);
            }
            EventData::SessionCreated(created) => {
                if let Some(id) = &event.session {
                    let s = self.sessions.entry(id.clone()).or_default();
                    s.created.get_or_insert(event.seq);
                    s.mode = s.mode.or(created.mode);
                    if s.agent.is_none() {
                        s.agent = event.agent.clone();
                    }
                }
            }
            EventData::AcpMessage(m) => {
                if let (Some(id), Some((title, _))) = (&event.session, m.session_title()) {
                    self.sessions.entry(id.clone()).or_default().title = Some(title.to_string());
                }
            }
            EventData::ModelSwitched(m) => {
                if let Some(id) = &event.session {
                    self.sessions.entry(id.clone()).or_default().model = Some(m.model.clone());
                }
            }
            EventData::SessionClosed(_) | EventData::SessionDied(_) => {
                if let Some(id) = &event.session {
                    self.sessions
                        .entry(id.clone())
                        .or_default()
                        .ended
                        .get_or_insert(event.seq);
                }
            }
            EventData::DiscoveryWarning(w) => {
                self.warned
                    .insert((w.path.clone(), w.content_hash.clone(), w.message.clone()));
            }
            EventData::SessionPrompt(p) => self.prompted(event, p),
            EventData::SessionUpdate(update) => {
                if matches!(
                    update.get("sessionUpdate").and_then(|v| v.as_str()),
                    Some("turn_complete" | "turn_error")
                ) {
                    self.set_streaming(event, false);
                }
            }
            // The agent ended its session: no turn runs on, and the session stays
            // open (agents resume sessions).
            EventData::SessionCancelled(_) | EventData::SessionEnded(_) => {
                self.set_streaming(event, false)
            }
            EventData::AttachmentAdmitted(_)
            | EventData::ModelSwitchFailed(_)
            | EventData::ModeSet(_)
            | EventData::PermissionRequested(_)
            | EventData::PermissionResolved(_)
            | EventData::PermissionAlreadyResolved(_)
            | EventData::WalDiscarded(_)
            | EventData::AgentEvent(_)
            | EventData::AgentObserved(_)
            | EventData::ModelRequest(_)
            | EventData::Redacted(_)
            | EventData::LogIdentity(_)
            | EventData::ImportCheckpoint(_)
            | EventData::Unknown(_) => {}
        }
    }

    /// A prompt: the turn it starts, and the session's first prompt typed.
    fn prompted(&mut self, event: &Event, p: &crate::event::SessionPrompt) {
        if let Some(id) = &event.session {
            let s = self.sessions.entry(id.clone()).or_default();
            if !s.streaming {
                s.turn_prompt = p.prompt_id.clone();
            }
            // A command's expansion is not what the user typed.
            if s.first_prompt.is_none() && p.from_run.is_none() && !p.text.trim().is_empty() {
                s.first_prompt = Some(
                    p.text
                        .chars()
                        .take(crate::limits::TITLE_CHARS_MAX)
                        .collect(),
                );
            }
        }
        self.set_streaming(event, true)
    }

    fn set_streaming(&mut self, event: &Event, streaming: bool) {
        if let Some(id) = &event.session {
            let s = self.sessions.entry(id.clone()).or_default();
            s.streaming = streaming;
            if !streaming {
                s.turn_prompt = None;
            }
        }
    }
}
