//! Event schema v1 (`docs/events.md` is the normative copy).
//!
//! A stored record is the JSON of `{at, type, session?, agent?, data}`; the
//! seq is the store's key and is not repeated in the bytes. Decoding looks at
//! `type` first and decodes `data` only for known types: an unknown type
//! becomes [`EventData::Unknown`] and every fold skips it.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::command::{CommandSpec, Mode};

pub use cmdlog_store::Seq;

/// Where a registration applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every agent.
    Global,
    /// One agent; shadows a global registration of the same name for it.
    Agent(String),
}

#[derive(Serialize, Deserialize)]
struct ScopeRepr {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    global: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scope::Global => ScopeRepr {
                global: true,
                agent: None,
            },
            Scope::Agent(a) => ScopeRepr {
                global: false,
                agent: Some(a.clone()),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match ScopeRepr::deserialize(d)? {
            ScopeRepr { agent: Some(a), .. } => Ok(Scope::Agent(a)),
            ScopeRepr { global: true, .. } => Ok(Scope::Global),
            _ => Err(serde::de::Error::custom(
                r#"scope must be {"global":true} or {"agent":ID}"#,
            )),
        }
    }
}

impl Scope {
    /// Whether it applies to `agent`.
    pub fn applies_to(&self, agent: &str) -> bool {
        match self {
            Scope::Global => true,
            Scope::Agent(a) => a == agent,
        }
    }
}

/// Who provided a registration, and where it stands among the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRef {
    /// Provider id: `builtin`, `api`, `native`, `claude`, `codex`, …
    pub id: String,
    /// Higher wins.
    pub priority: i32,
    /// Where inside the provider it came from (`builtin`, `runtime`, `project`, `user`, …).
    pub level: String,
    /// Tie-break among providers of equal priority: lower (registered earlier) wins.
    pub order: u32,
    /// Tie-break inside a provider: lower (loaded earlier) wins.
    #[serde(default)]
    pub item: u32,
}

/// Where an event that happened outside cmdlog was observed: an agent's hook or
/// transcript. `at` is when it happened there; the event's own `at` stays the
/// time cmdlog appended it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// What reported it: `claude-code hook`, `codex transcript`, …
    pub source: String,
    /// What identifies it in its source (a transcript's file and line or item id):
    /// importing the same item again finds it and adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// When it happened in the source, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// One event as read from the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its seq (store-assigned).
    pub seq: Seq,
    /// When it happened, unix milliseconds (from the engine's clock).
    pub at: u64,
    /// Where it was observed, for what an agent did outside cmdlog.
    pub observed: Option<Observed>,
    /// The session it belongs to, also its stream key in the store.
    pub session: Option<String>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// What happened.
    pub data: EventData,
}

/// What happened, by event type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EventData {
    /// `registry/registered`
    Registered(Box<Registered>),
    /// `registry/unregistered`
    Unregistered(Unregistered),
    /// `discovery/warning`
    DiscoveryWarning(DiscoveryWarning),
    /// `attachment/admitted`
    AttachmentAdmitted(AttachmentAdmitted),
    /// `command/run`
    CommandRun(CommandRun),
    /// `command/done`
    CommandDone(CommandDone),
    /// `session/created`
    SessionCreated(SessionCreated),
    /// `session/closed`
    SessionClosed(SessionEnded),
    /// `session/died`
    SessionDied(SessionEnded),
    /// `session/prompt`
    SessionPrompt(SessionPrompt),
    /// `session/update`: an ACP-shaped payload kept as given.
    SessionUpdate(serde_json::Value),
    /// `permission/requested`
    PermissionRequested(PermissionRequested),
    /// `permission/resolved`
    PermissionResolved(PermissionResolved),
    /// `session/model_switched`
    ModelSwitched(ModelSwitched),
    /// `session/cancelled`
    SessionCancelled(SessionCancelled),
    /// `log/wal_discarded`: `cmdlog recover --discard-damaged-wal` dropped the tail of
    /// a damaged write-ahead log.
    WalDiscarded(WalDiscarded),
    /// `acp/message`
    AcpMessage(AcpMessage),
    /// `agent/event`
    AgentEvent(AgentEvent),
    /// `log/redacted`
    Redacted(Redacted),
    /// A type this version does not know: kept, skipped by every fold.
    Unknown(UnknownEvent),
}

/// An event of a type this version does not know.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct UnknownEvent {
    /// Its `type`.
    #[serde(skip)]
    pub type_name: String,
    /// Its `data`, as stored.
    pub data: serde_json::Value,
}

impl EventData {
    /// The event's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            EventData::Registered(_) => "registry/registered",
            EventData::Unregistered(_) => "registry/unregistered",
            EventData::DiscoveryWarning(_) => "discovery/warning",
            EventData::AttachmentAdmitted(_) => "attachment/admitted",
            EventData::CommandRun(_) => "command/run",
            EventData::CommandDone(_) => "command/done",
            EventData::SessionCreated(_) => "session/created",
            EventData::SessionClosed(_) => "session/closed",
            EventData::SessionDied(_) => "session/died",
            EventData::SessionPrompt(_) => "session/prompt",
            EventData::SessionUpdate(_) => "session/update",
            EventData::PermissionRequested(_) => "permission/requested",
            EventData::PermissionResolved(_) => "permission/resolved",
            EventData::ModelSwitched(_) => "session/model_switched",
            EventData::SessionCancelled(_) => "session/cancelled",
            EventData::WalDiscarded(_) => "log/wal_discarded",
            EventData::AcpMessage(_) => "acp/message",
            EventData::AgentEvent(_) => "agent/event",
            EventData::Redacted(_) => "log/redacted",
            EventData::Unknown(u) => &u.type_name,
        }
    }

    fn decode(type_name: &str, data: &str) -> Result<EventData, serde_json::Error> {
        use serde_json::from_str as de;
        Ok(match type_name {
            "registry/registered" => EventData::Registered(Box::new(de(data)?)),
            "registry/unregistered" => EventData::Unregistered(de(data)?),
            "discovery/warning" => EventData::DiscoveryWarning(de(data)?),
            "attachment/admitted" => EventData::AttachmentAdmitted(de(data)?),
            "command/run" => EventData::CommandRun(de(data)?),
            "command/done" => EventData::CommandDone(de(data)?),
            "session/created" => EventData::SessionCreated(de(data)?),
            "session/closed" => EventData::SessionClosed(de(data)?),
            "session/died" => EventData::SessionDied(de(data)?),
            "session/prompt" => EventData::SessionPrompt(de(data)?),
            "session/update" => EventData::SessionUpdate(de(data)?),
            "permission/requested" => EventData::PermissionRequested(de(data)?),
            "permission/resolved" => EventData::PermissionResolved(de(data)?),
            "session/model_switched" => EventData::ModelSwitched(de(data)?),
            "session/cancelled" => EventData::SessionCancelled(de(data)?),
            "log/wal_discarded" => EventData::WalDiscarded(de(data)?),
            "acp/message" => EventData::AcpMessage(de(data)?),
            "agent/event" => EventData::AgentEvent(de(data)?),
            "log/redacted" => EventData::Redacted(de(data)?),
            other => EventData::Unknown(UnknownEvent {
                type_name: other.to_string(),
                data: de(data)?,
            }),
        })
    }
}

/// An event not yet appended: everything but the seq.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// When, unix ms.
    pub at: u64,
    /// Where it was observed (see [`Observed`]).
    pub observed: Option<Observed>,
    /// Its session (and stream key).
    pub session: Option<String>,
    /// Its agent.
    pub agent: Option<String>,
    /// What happened.
    pub data: EventData,
}

#[derive(Serialize)]
struct EnvelopeOut<'a> {
    at: u64,
    #[serde(rename = "type")]
    type_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed: Option<&'a Observed>,
    data: &'a EventData,
}

#[derive(Deserialize)]
struct EnvelopeIn<'a> {
    at: u64,
    #[serde(rename = "type", borrow)]
    type_name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    observed: Option<Observed>,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// A record that is not a valid event.
#[derive(Debug, thiserror::Error)]
#[error("seq {seq} is not a valid cmdlog event: {message}")]
pub struct DecodeError {
    /// The record's seq.
    pub seq: Seq,
    /// What is wrong.
    pub message: String,
}

impl NewEvent {
    /// The record bytes the store keeps.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&EnvelopeOut {
            at: self.at,
            type_name: self.data.type_name(),
            session: self.session.as_deref(),
            agent: self.agent.as_deref(),
            observed: self.observed.as_ref(),
            data: &self.data,
        })
        .expect("events serialize: no maps with non-string keys")
    }

    /// The store record: bytes plus the session as stream key.
    pub fn to_record(&self) -> cmdlog_store::NewRecord {
        cmdlog_store::NewRecord {
            stream: self.session.clone(),
            bytes: self.encode(),
        }
    }
}

impl Event {
    /// Decodes the record stored at `seq`.
    pub fn decode(seq: Seq, bytes: &[u8]) -> Result<Event, DecodeError> {
        let err = |e: serde_json::Error| DecodeError {
            seq,
            message: e.to_string(),
        };
        let envelope: EnvelopeIn<'_> = serde_json::from_slice(bytes).map_err(err)?;
        let data = EventData::decode(&envelope.type_name, envelope.data.get()).map_err(|e| {
            DecodeError {
                seq,
                message: format!("{} data: {e}", envelope.type_name),
            }
        })?;
        Ok(Event {
            seq,
            at: envelope.at,
            observed: envelope.observed,
            session: envelope.session,
            agent: envelope.agent,
            data,
        })
    }

    /// The event as a JSON object `{seq, at, type, session?, agent?, data}` (the shape
    /// of `cmdlog log --json` and of exports).
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(EnvelopeOut {
            at: self.at,
            type_name: self.data.type_name(),
            session: self.session.as_deref(),
            agent: self.agent.as_deref(),
            observed: self.observed.as_ref(),
            data: &self.data,
        })
        .expect("events serialize");
        value
            .as_object_mut()
            .expect("an envelope is an object")
            .insert("seq".into(), self.seq.into());
        value
    }
}

/// `registry/registered`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registered {
    /// Global or agent-scoped.
    pub scope: Scope,
    /// Who provided it, and its precedence.
    pub provider: ProviderRef,
    /// The full command spec.
    pub command: CommandSpec,
    /// Blob hash of the template body (prompt commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Where a file command came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where a file command came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The file.
    pub path: String,
    /// BLAKE3 of the file's bytes.
    pub content_hash: String,
}

/// `registry/unregistered`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unregistered {
    /// Seq of the `registry/registered` event it ends.
    pub registration: Seq,
    /// Why.
    pub reason: UnregisterReason,
}

/// Why a registration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnregisterReason {
    /// Its disposer was called.
    Disposed,
    /// Its file is gone.
    FileRemoved,
    /// Its file changed (a new registration follows).
    FileChanged,
    /// It had an in-process handler and the process that registered it is gone: a log
    /// opened for writing ends such registrations (built-ins are registered again).
    OwnerExited,
}

/// `discovery/warning`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryWarning {
    /// The provider id.
    pub provider: String,
    /// The file or folder.
    pub path: String,
    /// BLAKE3 of the file's bytes when it was read: the warning is logged once per
    /// (file, content hash, message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// What is wrong and what was done instead.
    pub message: String,
}

/// `attachment/admitted`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentAdmitted {
    /// `image` or `file`.
    pub kind: AttachmentKind,
    /// Blob hash of the bytes.
    pub blob: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Display name.
    pub name: String,
}

/// The kind of an attachment block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// An image block.
    Image,
    /// A file block.
    File,
}

/// Who invoked a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum InvocationSource {
    /// A person typed it.
    #[default]
    User,
    /// The model called it as a tool.
    Model,
    /// A program called the API.
    Api,
    /// The agent ran it itself; cmdlog observed it through the agent's hook or
    /// transcript. Its `registration` is cmdlog's registration of the same
    /// command file when there is one, else 0.
    Agent,
}

/// `command/run`: its seq is the command id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// Seq of the registration that resolved.
    pub registration: Seq,
    /// The command name as resolved (lowercase).
    pub name: String,
    /// The execution mode.
    pub mode: Mode,
    /// Who invoked it.
    pub source: InvocationSource,
    /// The exact text after the name; absent when the command sets `record_input: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// Seqs of the `attachment/admitted` events appended with it.
    #[serde(default)]
    pub attachments: Vec<Seq>,
    /// Injections in its expansion that the command's agent would run or read and
    /// cmdlog did not (shell commands, file references), as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<String>,
}

/// `command/done`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandDone {
    /// Seq of its `command/run`.
    pub run: Seq,
    /// How it settled.
    pub outcome: Outcome,
    /// Handler time in microseconds.
    pub elapsed_us: u64,
    /// For a run the agent did itself: whether cmdlog's own expansion of the same
    /// command file agrees with the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_check: Option<AgentCheck>,
}

/// cmdlog's expansion of a command an agent expanded itself, compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCheck {
    /// The command file cmdlog resolved the same name to.
    pub path: String,
    /// Its content hash (BLAKE3 hex) when compared.
    pub content_hash: String,
    /// Whether cmdlog's expansion is byte for byte the agent's.
    pub identical: bool,
    /// cmdlog's expansion, when it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdlog_prompt: Option<String>,
}

/// How a command settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// It succeeded.
    Success {
        /// Text to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The prompt to send to the model (prompt commands).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// An earlier event that owns a richer presentation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source_event_seq: Option<Seq>,
    },
    /// It failed, was refused, was cancelled, or was interrupted by a crash.
    Error {
        /// What went wrong.
        text: String,
        /// Set when the process ended before it settled.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
}

impl Outcome {
    /// A success with text.
    pub fn text(text: impl Into<String>) -> Self {
        Outcome::Success {
            text: Some(text.into()),
            prompt: None,
            source_event_seq: None,
        }
    }

    /// An error.
    pub fn error(text: impl Into<String>) -> Self {
        Outcome::Error {
            text: text.into(),
            interrupted: false,
        }
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Outcome::Error { .. })
    }
}

/// `session/created`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionCreated {
    /// The session's mode, fixed at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
}

/// `session/closed`, `session/died`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionEnded {
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a prompt reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The session was idle: sent at once.
    Idle,
    /// Injected into the running turn.
    Steer,
    /// Queued after the running turn.
    FollowUp,
}

/// `session/prompt`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPrompt {
    /// The text delivered to the model.
    pub text: String,
    /// How.
    pub delivery: Delivery,
    /// The run whose expansion it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_run: Option<Seq>,
    /// Injections in the text that the command's agent would run or read and cmdlog
    /// did not, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<String>,
    /// The client's id for the prompt (`promptId` on the daemon's wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The prompt's ACP content blocks other than text (images, resources), as sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<serde_json::Value>,
}

/// `permission/requested`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequested {
    /// The request id.
    pub request_id: String,
    /// The options offered.
    #[serde(default)]
    pub options: serde_json::Value,
    /// The ACP `ToolCallUpdate` the request is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<serde_json::Value>,
}

/// `permission/resolved`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionResolved {
    /// The request id.
    pub request_id: String,
    /// The decision.
    pub decision: serde_json::Value,
}

/// `session/model_switched`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSwitched {
    /// The new model.
    pub model: String,
}

/// `session/cancelled`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionCancelled {
    /// The run cancelled, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Seq>,
}

/// `log/wal_discarded`: what a recovery dropped from a damaged write-ahead log, and
/// why. The events it held are gone; this says so in the log itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalDiscarded {
    /// The write-ahead log's path.
    pub wal: String,
    /// What was wrong with it.
    pub problem: String,
    /// The last seq kept from before the damage.
    pub kept_through: Seq,
    /// First and last seq of the dropped records that could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_seqs: Option<(Seq, Seq)>,
    /// Readable frames dropped.
    pub dropped_frames: u64,
}

/// `agent/event`: something an agent reported (a hook event, a transcript line)
/// that no typed event records, kept as the agent gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// The agent: `claude-code`, `codex`, `gemini`, `qwen`.
    pub agent: String,
    /// Its name for what happened (`SessionStart`, `Notification`, `summary`, …).
    pub event: String,
    /// What it said, as given (redacted when asked).
    #[serde(default)]
    pub data: serde_json::Value,
}

/// `log/redacted`: secrets were replaced before the events that follow it in the
/// same append were written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redacted {
    /// What was redacted: `claude-code hook`, `gemini transcript`, …
    pub source: String,
    /// How many secrets were replaced.
    pub count: u64,
    /// Which kinds (`api_key`, `bearer_token`, `url_password`, …).
    pub kinds: Vec<String>,
}

/// Which way an ACP message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcpDirection {
    /// From the client (or the daemon acting as one) to the agent.
    ToAgent,
    /// From the agent to the client.
    FromAgent,
}

/// `acp/message`: a JSON-RPC message of an ACP connection cmdlog bridged that no
/// typed event records (`initialize`, `session/new`, `fs/*`, errors, extensions),
/// as it crossed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcpMessage {
    /// Which way it went.
    pub direction: AcpDirection,
    /// The message.
    pub message: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: EventData) {
        let new = NewEvent {
            observed: None,
            at: 1_700_000_000_000,
            session: Some("s1".into()),
            agent: Some("main".into()),
            data,
        };
        let bytes = new.encode();
        let event = Event::decode(7, &bytes).unwrap();
        assert_eq!(event.data, new.data, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!((event.seq, event.at), (7, new.at));
        assert_eq!(event.session.as_deref(), Some("s1"));
    }

    #[test]
    fn every_type_round_trips() {
        round_trip(EventData::CommandRun(CommandRun {
            injections: Vec::new(),
            registration: 3,
            name: "help".into(),
            mode: Mode::NonInteractive,
            source: InvocationSource::User,
            raw_input: Some(" x".into()),
            attachments: vec![],
        }));
        round_trip(EventData::CommandDone(CommandDone {
            agent_check: None,
            run: 4,
            outcome: Outcome::Error {
                text: "boom".into(),
                interrupted: true,
            },
            elapsed_us: 12,
        }));
        round_trip(EventData::CommandDone(CommandDone {
            agent_check: None,
            run: 4,
            outcome: Outcome::text("ok"),
            elapsed_us: 0,
        }));
        round_trip(EventData::Unregistered(Unregistered {
            registration: 1,
            reason: UnregisterReason::OwnerExited,
        }));
        round_trip(EventData::SessionCreated(SessionCreated {
            mode: Some(Mode::Acp),
        }));
        round_trip(EventData::SessionClosed(SessionEnded::default()));
        round_trip(EventData::ModelSwitched(ModelSwitched {
            model: "m".into(),
        }));
        round_trip(EventData::SessionUpdate(
            serde_json::json!({"sessionUpdate": "agent_message_chunk"}),
        ));
        round_trip(EventData::SessionPrompt(SessionPrompt {
            injections: Vec::new(),
            text: "t".into(),
            delivery: Delivery::FollowUp,
            from_run: Some(2),
            prompt_id: Some("p-1".into()),
            blocks: vec![
                serde_json::json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            ],
        }));
        round_trip(EventData::AcpMessage(AcpMessage {
            direction: AcpDirection::FromAgent,
            message: serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        }));
    }

    #[test]
    fn the_record_is_the_documented_json() {
        let new = NewEvent {
            observed: None,
            at: 5,
            session: None,
            agent: None,
            data: EventData::CommandDone(CommandDone {
                agent_check: None,
                run: 2,
                outcome: Outcome::text("hi"),
                elapsed_us: 9,
            }),
        };
        assert_eq!(
            String::from_utf8(new.encode()).unwrap(),
            r#"{"at":5,"type":"command/done","data":{"run":2,"outcome":{"kind":"success","text":"hi"},"elapsed_us":9}}"#
        );
    }

    #[test]
    fn unknown_types_are_kept_not_fatal() {
        let bytes = br#"{"at":1,"type":"future/thing","data":{"x":[1,2]}}"#;
        let event = Event::decode(3, bytes).unwrap();
        assert_eq!(event.data.type_name(), "future/thing");
        let again = NewEvent {
            observed: None,
            at: 1,
            session: None,
            agent: None,
            data: event.data.clone(),
        };
        assert_eq!(again.encode(), bytes.to_vec());
    }

    #[test]
    fn malformed_records_name_their_seq() {
        let err = Event::decode(9, b"not json").unwrap_err();
        assert_eq!(err.seq, 9);
        let err = Event::decode(10, br#"{"at":1,"type":"command/done","data":{}}"#).unwrap_err();
        assert!(err.to_string().contains("command/done"), "{err}");
    }
}
