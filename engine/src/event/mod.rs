//! Event schema v1 (`docs/events.md` is the normative copy): the envelope and
//! its decoding here; the data of each type in `registry.rs`, `runs.rs` and
//! `session.rs`.
//!
//! A stored record is the JSON of `{at, type, session?, agent?, data}`; the
//! seq is the store's key and is not repeated in the bytes. Decoding looks at
//! `type` first and decodes `data` only for known types: an unknown type
//! becomes [`EventData::Unknown`] and every fold skips it.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub use cmdlog_store::Seq;

mod registry;
mod runs;
mod session;
mod summary;

pub use registry::{
    DiscoveryWarning, Origin, ProviderRef, Registered, Scope, UnregisterReason, Unregistered,
};
pub use runs::{
    AgentCheck, AttachmentAdmitted, AttachmentKind, CommandDone, CommandRun, InvocationSource,
    Outcome, RunRelease,
};
pub use session::{
    AcpDirection, AcpMessage, AgentEvent, AgentObserved, Decider, Delivery, IDENTITY_STREAM,
    IMPORT_STREAM, ImportCheckpoint, LogIdentity, ModeSet, ModelRequest, ModelSwitchFailed,
    ModelSwitched, Parent, PermissionRequested, PermissionResolved, Redacted, SessionCancelled,
    SessionCreated, SessionEnded, SessionPrompt, WalDiscarded,
};

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
    /// The fact it states, named by the agents' own join keys within its
    /// session (`prompt:<prompt id>`, `tool_call:<tool use id>`, …): the same
    /// fact from another capture path (hook, telemetry, transcript) is recorded
    /// as `agent/observed` of this event, not a second time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
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
    /// `session/ended`: the agent ended the session (it may resume it later).
    SessionEnded(SessionEnded),
    /// `session/prompt`
    SessionPrompt(SessionPrompt),
    /// `session/update`: an ACP-shaped payload kept as given.
    SessionUpdate(serde_json::Value),
    /// `permission/requested`
    PermissionRequested(PermissionRequested),
    /// `permission/resolved`
    PermissionResolved(PermissionResolved),
    /// `permission/already_resolved`: a vote came for a request already answered;
    /// `decision` is the answer that stands.
    PermissionAlreadyResolved(PermissionResolved),
    /// `session/model_switched`
    ModelSwitched(ModelSwitched),
    /// `session/model_switch_failed`
    ModelSwitchFailed(ModelSwitchFailed),
    /// `session/mode_set`
    ModeSet(ModeSet),
    /// `session/cancelled`
    SessionCancelled(SessionCancelled),
    /// `log/wal_discarded`: `cmdlog recover --discard-damaged-wal` dropped the tail of
    /// a damaged write-ahead log.
    WalDiscarded(WalDiscarded),
    /// `acp/message`
    AcpMessage(AcpMessage),
    /// `agent/event`
    AgentEvent(AgentEvent),
    /// `agent/observed`: a fact already in the log, seen by another source.
    AgentObserved(AgentObserved),
    /// `agent/model_request`
    ModelRequest(ModelRequest),
    /// `log/redacted`
    Redacted(Redacted),
    /// `log/identity`
    LogIdentity(LogIdentity),
    /// `import/checkpoint`
    ImportCheckpoint(ImportCheckpoint),
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
            EventData::SessionEnded(_) => "session/ended",
            EventData::SessionPrompt(_) => "session/prompt",
            EventData::SessionUpdate(_) => "session/update",
            EventData::PermissionRequested(_) => "permission/requested",
            EventData::PermissionResolved(_) => "permission/resolved",
            EventData::PermissionAlreadyResolved(_) => "permission/already_resolved",
            EventData::ModelSwitched(_) => "session/model_switched",
            EventData::ModelSwitchFailed(_) => "session/model_switch_failed",
            EventData::ModeSet(_) => "session/mode_set",
            EventData::SessionCancelled(_) => "session/cancelled",
            EventData::WalDiscarded(_) => "log/wal_discarded",
            EventData::AcpMessage(_) => "acp/message",
            EventData::AgentEvent(_) => "agent/event",
            EventData::AgentObserved(_) => "agent/observed",
            EventData::ModelRequest(_) => "agent/model_request",
            EventData::Redacted(_) => "log/redacted",
            EventData::LogIdentity(_) => "log/identity",
            EventData::ImportCheckpoint(_) => "import/checkpoint",
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
            "session/ended" => EventData::SessionEnded(de(data)?),
            "session/prompt" => EventData::SessionPrompt(de(data)?),
            "session/update" => EventData::SessionUpdate(de(data)?),
            "permission/requested" => EventData::PermissionRequested(de(data)?),
            "permission/resolved" => EventData::PermissionResolved(de(data)?),
            "permission/already_resolved" => EventData::PermissionAlreadyResolved(de(data)?),
            "session/model_switched" => EventData::ModelSwitched(de(data)?),
            "session/model_switch_failed" => EventData::ModelSwitchFailed(de(data)?),
            "session/mode_set" => EventData::ModeSet(de(data)?),
            "session/cancelled" => EventData::SessionCancelled(de(data)?),
            "log/wal_discarded" => EventData::WalDiscarded(de(data)?),
            "acp/message" => EventData::AcpMessage(de(data)?),
            "agent/event" => EventData::AgentEvent(de(data)?),
            "agent/observed" => EventData::AgentObserved(de(data)?),
            "agent/model_request" => EventData::ModelRequest(de(data)?),
            "log/redacted" => EventData::Redacted(de(data)?),
            "log/identity" => EventData::LogIdentity(de(data)?),
            "import/checkpoint" => EventData::ImportCheckpoint(de(data)?),
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
struct EnvelopeOut<'a, D: Serialize + ?Sized = EventData> {
    at: u64,
    #[serde(rename = "type")]
    type_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed: Option<&'a Observed>,
    data: &'a D,
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
        encode_envelope(&EnvelopeOut {
            at: self.at,
            type_name: self.data.type_name(),
            session: self.session.as_deref(),
            agent: self.agent.as_deref(),
            observed: self.observed.as_ref(),
            data: &self.data,
        })
    }

    /// The store record: bytes plus its stream key ([`stream_key`]).
    pub fn to_record(&self) -> cmdlog_store::NewRecord {
        cmdlog_store::NewRecord {
            stream: stream_key(self.data.type_name(), self.session.as_deref()),
            bytes: self.encode(),
        }
    }
}

/// The stream key an event of `type_name` in `session` is stored under: its
/// session's, except the log identity's own ([`IDENTITY_STREAM`]) and import
/// checkpoints' ([`IMPORT_STREAM`]), so that they are found without a scan. Every writer of records and the verifier agree on it.
pub fn stream_key(type_name: &str, session: Option<&str>) -> Option<String> {
    debug_assert!(
        session.is_none_or(|s| !s.is_empty() && s.len() <= crate::limits::ID_BYTES_MAX),
        "a session id was checked before its events are built"
    );
    match type_name {
        "log/identity" => Some(IDENTITY_STREAM.to_string()),
        "import/checkpoint" => Some(IMPORT_STREAM.to_string()),
        _ => session.map(str::to_string),
    }
}

/// An envelope serialized into a scratch buffer kept per thread and copied out
/// at its exact size: one copy, where growing a fresh vector copies a large
/// event several times over.
fn encode_envelope<D: Serialize + ?Sized>(envelope: &EnvelopeOut<'_, D>) -> Vec<u8> {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut buf = scratch.borrow_mut();
        buf.clear();
        serde_json::to_writer(&mut *buf, envelope)
            .expect("events serialize: no maps with non-string keys");
        let out = buf.to_vec();
        if buf.capacity() > 1 << 22 {
            *buf = Vec::new();
        }
        out
    })
}

/// A `session/update` event built from borrowed parts, its update any value
/// that serializes to JSON (an importer's update holding JSON text read from a
/// transcript, appended without being decoded and encoded again). Any JSON
/// value is a valid update, so the record decodes as [`EventData::SessionUpdate`].
#[derive(Debug, Clone, Copy)]
pub struct SessionUpdateRef<'a, U: ?Sized> {
    /// When it was appended, unix ms.
    pub at: u64,
    /// Its session.
    pub session: Option<&'a str>,
    /// The agent that sent it.
    pub agent: Option<&'a str>,
    /// Where it was observed before it was appended.
    pub observed: Option<&'a Observed>,
    /// The ACP session update.
    pub update: &'a U,
}

impl<U: Serialize + ?Sized> SessionUpdateRef<'_, U> {
    /// The record bytes the store keeps.
    pub fn encode(&self) -> Vec<u8> {
        encode_envelope(&EnvelopeOut {
            at: self.at,
            type_name: "session/update",
            session: self.session,
            agent: self.agent,
            observed: self.observed,
            data: self.update,
        })
    }

    /// The store record: bytes plus the session as stream key.
    pub fn to_record(&self) -> cmdlog_store::NewRecord {
        cmdlog_store::NewRecord {
            stream: stream_key("session/update", self.session),
            bytes: self.encode(),
        }
    }
}

impl Event {
    /// When it happened: the agent's own time for what was observed in an agent
    /// (a hook payload's or a transcript's timestamp), else when cmdlog appended
    /// it. Views show this; `at` stays the append time.
    pub fn time(&self) -> u64 {
        self.observed.as_ref().and_then(|o| o.at).unwrap_or(self.at)
    }

    /// Whether it is an agent's bookkeeping, which the views leave out unless
    /// asked (see [`AgentEvent::bookkeeping`]).
    pub fn is_bookkeeping(&self) -> bool {
        matches!(&self.data, EventData::AgentEvent(a) if a.bookkeeping)
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Mode;

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
            release: None,
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
            parent: None,
        }));
        round_trip(EventData::SessionCreated(SessionCreated {
            mode: None,
            parent: Some(Parent {
                session: "p".into(),
                tool_call_id: Some("toolu_1".into()),
                agent_type: Some("general-purpose".into()),
            }),
        }));
        round_trip(EventData::SessionClosed(SessionEnded::default()));
        round_trip(EventData::SessionEnded(SessionEnded {
            reason: Some("prompt_input_exit".into()),
            details: Some(serde_json::json!({"exit_code": 0})),
        }));
        round_trip(EventData::ModelSwitched(ModelSwitched {
            model: "m".into(),
        }));
        round_trip(EventData::ModeSet(ModeSet {
            mode: "yolo".into(),
            previous: Some("default".into()),
            client_id: Some("webui_1".into()),
        }));
        round_trip(EventData::PermissionAlreadyResolved(PermissionResolved {
            request_id: "r-1".into(),
            decision: serde_json::json!({"outcome": "selected", "optionId": "allow"}),
            ..Default::default()
        }));
        round_trip(EventData::ModelSwitchFailed(ModelSwitchFailed {
            model: "nope".into(),
            error: serde_json::json!({"code": -32603, "message": "Internal error"}),
        }));
        round_trip(EventData::SessionUpdate(
            serde_json::json!({"sessionUpdate": "agent_message_chunk"}),
        ));
        round_trip(EventData::SessionPrompt(SessionPrompt {
            injections: Vec::new(),
            text: "t".into(),
            delivery: Delivery::FollowUp,
            from_run: Some(2),
            client_id: None,
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
