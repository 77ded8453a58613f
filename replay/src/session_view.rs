//! One session rebuilt from its events (seed 003's reducer plus command runs).

use serde::Serialize;

use cmdlog_engine::event::{Delivery, InvocationSource, Outcome};
use cmdlog_engine::{Event, EventData, Mode, Seq};

/// One command run and how it settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunView {
    /// Seq of the run (the command id).
    pub seq: Seq,
    /// When it started, unix ms (the agent's time for a run an agent reported).
    pub at: u64,
    /// The command.
    pub name: String,
    /// The mode.
    pub mode: Mode,
    /// Who invoked it.
    pub source: InvocationSource,
    /// The registration that ran.
    pub registration: Seq,
    /// The raw input, unless not recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// Admission seqs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Seq>,
    /// Seq of its done, if settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<Seq>,
    /// Its outcome, if settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Handler time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_us: Option<u64>,
}

/// A tool call's lifecycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallView {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its last status.
    pub status: String,
}

/// A permission request and its resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionView {
    /// The request id.
    pub request_id: String,
    /// Seq of the request.
    pub requested: Seq,
    /// The options it offered, as given.
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub options: serde_json::Value,
    /// Seq and decision of the resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<(Seq, serde_json::Value)>,
}

/// A session as of a seq.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct SessionView {
    /// The id.
    pub id: String,
    /// Seq of its creation.
    pub created: Option<Seq>,
    /// The agent at creation.
    pub agent: Option<String>,
    /// Its mode.
    pub mode: Option<Mode>,
    /// The current model.
    pub model: Option<String>,
    /// `closed`, `died` or (by the agent, until it resumes the session) `ended`,
    /// with seq and reason.
    pub ended: Option<(Seq, String, Option<String>)>,
    /// Command runs in order.
    pub runs: Vec<RunView>,
    /// Prompts delivered: seq, text, delivery, run it came from.
    pub prompts: Vec<(Seq, String, Delivery, Option<Seq>)>,
    /// Assistant text, concatenated from message chunks.
    pub assistant_text: String,
    /// Thoughts, concatenated from thought chunks.
    pub thoughts: String,
    /// Tool calls.
    pub tool_calls: Vec<ToolCallView>,
    /// Permission requests.
    pub permissions: Vec<PermissionView>,
    /// Turns completed.
    pub turns: u64,
    /// Events folded.
    pub events: u64,
    /// First and last event time, unix ms.
    pub span_ms: Option<(u64, u64)>,
}

fn chunk_text(update: &serde_json::Value) -> &str {
    update
        .pointer("/content/text")
        .and_then(|v| v.as_str())
        .unwrap_or("")
}

impl SessionView {
    /// An empty view of session `id`.
    pub fn new(id: &str) -> Self {
        SessionView {
            id: id.into(),
            ..SessionView::default()
        }
    }

    /// Folds one event of this session; others and unknown types are skipped.
    pub fn apply(&mut self, event: &Event) {
        if event.session.as_deref() != Some(self.id.as_str()) {
            return;
        }
        self.counted(event);
        match &event.data {
            EventData::SessionCreated(c) => {
                self.created.get_or_insert(event.seq);
                self.mode = self.mode.or(c.mode);
                if self.agent.is_none() {
                    self.agent = event.agent.clone();
                }
            }
            EventData::SessionClosed(e) => {
                self.ended
                    .get_or_insert((event.seq, "closed".into(), e.reason.clone()));
            }
            EventData::SessionDied(e) => {
                self.ended
                    .get_or_insert((event.seq, "died".into(), e.reason.clone()));
            }
            // The agent ended the session (a later prompt or run resumed it: above).
            EventData::SessionEnded(e)
                if self.ended.as_ref().is_none_or(|(_, how, _)| how == "ended") =>
            {
                self.ended = Some((event.seq, "ended".into(), e.reason.clone()));
            }
            EventData::ModelSwitched(m) => self.model = Some(m.model.clone()),
            EventData::CommandRun(r) => self.runs.push(RunView {
                seq: event.seq,
                at: event.time(),
                name: r.name.clone(),
                mode: r.mode,
                source: r.source,
                registration: r.registration,
                raw_input: r.raw_input.clone(),
                attachments: r.attachments.clone(),
                done: None,
                outcome: None,
                elapsed_us: None,
            }),
            EventData::CommandDone(d) => {
                if let Some(run) = self.runs.iter_mut().rev().find(|r| r.seq == d.run)
                    && run.done.is_none()
                {
                    run.done = Some(event.seq);
                    run.outcome = Some(d.outcome.clone());
                    run.elapsed_us = Some(d.elapsed_us);
                }
            }
            EventData::SessionPrompt(p) => {
                self.prompts
                    .push((event.seq, p.text.clone(), p.delivery, p.from_run))
            }
            EventData::SessionUpdate(update) => self.update(update),
            EventData::PermissionRequested(p) => self.permissions.push(PermissionView {
                request_id: p.request_id.clone(),
                requested: event.seq,
                options: p.options.clone(),
                resolved: None,
            }),
            EventData::PermissionResolved(p) => {
                if let Some(view) = self
                    .permissions
                    .iter_mut()
                    .find(|v| v.request_id == p.request_id && v.resolved.is_none())
                {
                    view.resolved = Some((event.seq, p.decision.clone()));
                }
            }
            // Not part of what a client shows of the session.
            EventData::SessionEnded(_)
            | EventData::Registered(_)
            | EventData::Unregistered(_)
            | EventData::DiscoveryWarning(_)
            | EventData::AttachmentAdmitted(_)
            | EventData::PermissionAlreadyResolved(_)
            | EventData::ModelSwitchFailed(_)
            | EventData::ModeSet(_)
            | EventData::SessionCancelled(_)
            | EventData::WalDiscarded(_)
            | EventData::AcpMessage(_)
            | EventData::AgentEvent(_)
            | EventData::AgentObserved(_)
            | EventData::ModelRequest(_)
            | EventData::Redacted(_)
            | EventData::LogIdentity(_)
            | EventData::ImportCheckpoint(_)
            | EventData::Unknown(_) => {}
        }
    }

    /// Counts the event into the session's span, and resumes a session the
    /// agent ended when a prompt or a run follows.
    fn counted(&mut self, event: &Event) {
        self.events += 1;
        self.span_ms = Some(match self.span_ms {
            None => (event.time(), event.time()),
            Some((first, last)) => (first.min(event.time()), last.max(event.time())),
        });
        if matches!(
            event.data,
            EventData::SessionPrompt(_) | EventData::CommandRun(_)
        ) && self
            .ended
            .as_ref()
            .is_some_and(|(_, how, _)| how == "ended")
        {
            self.ended = None;
        }
    }

    /// An ACP update: the agent's text and thoughts, its tool calls, a turn's end.
    fn update(&mut self, update: &serde_json::Value) {
        match update.get("sessionUpdate").and_then(|v| v.as_str()) {
            Some("agent_message_chunk") => self.assistant_text.push_str(chunk_text(update)),
            Some("agent_thought_chunk") => self.thoughts.push_str(chunk_text(update)),
            Some("tool_call") => self.tool_calls.push(ToolCallView {
                id: str_field(update, "toolCallId"),
                title: str_field(update, "title"),
                status: update
                    .get("status")
                    .and_then(|v| v.as_str())
                    .unwrap_or("pending")
                    .into(),
            }),
            Some("tool_call_update") => {
                let id = str_field(update, "toolCallId");
                if let Some(call) = self.tool_calls.iter_mut().find(|c| c.id == id)
                    && let Some(status) = update.get("status").and_then(|v| v.as_str())
                {
                    call.status = status.into();
                }
            }
            Some("turn_complete") => self.turns += 1,
            _ => {}
        }
    }

    /// Rebuilds session `id` from the log up to `until`.
    pub fn load(
        log: &cmdlog_store::Log,
        id: &str,
        until: Seq,
    ) -> Result<SessionView, cmdlog_engine::EngineOpenError> {
        let mut view = SessionView::new(id);
        for record in log.stream(id, 0)? {
            if record.seq > until {
                break;
            }
            view.apply(&Event::decode(record.seq, &record.bytes)?);
        }
        Ok(view)
    }
}

fn str_field(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}
