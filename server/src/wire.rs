//! The `qwen serve` wire at the daemon's edge: which of a session's log events its
//! SSE stream shows, as which frame (`docs/http.md` has the table), and the
//! per-session event ids — 1, 2, 3… over the shown events, gapless, so a client's
//! `Last-Event-ID` names a place in the log through [`WireIndex`].
//!
//! The log keeps cmdlog's own schema; this module is the only place that knows
//! qwen's event names.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cmdlog_acp::{PermissionDecision, is_session_update_kind, permission_decision};
use cmdlog_common::time::now_ms;
use cmdlog_engine::event::{AcpDirection, AcpMessage, Outcome};
use cmdlog_engine::{Event, EventData};
use cmdlog_store::{Log, ReadError, Seq};
use serde_json::{Value, json};

/// The frame `event` of session `session` becomes: its wire type and `data`; `None`
/// for events only cmdlog's own clients see (`session/created`, attachments, raw
/// ACP messages, unknown types, and `session/cancelled`: the SDK's reducer has no
/// check for qwen's optional `prompt_cancelled` and counts it unrecognised, while
/// the cancelled turn's `turn_complete` says it all). Depends on the event alone, so every subscriber
/// and every restart numbers the same events the same way.
pub(crate) fn project(event: &Event, session: &str, runs: bool) -> Option<(&'static str, Value)> {
    let frame = match &event.data {
        // The daemon's echo of what went to the agent, marked as `qwen serve`
        // marks its own (`source: "bridge-echo"`).
        EventData::SessionPrompt(p) => (
            "session_update",
            json!({"sessionId": session, "update": {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": p.text},
                "_meta": {"serverTimestamp": event.at, "source": "bridge-echo"},
            }}),
        ),
        EventData::SessionUpdate(update) => update_frame(update, session)?,
        EventData::PermissionRequested(p) => (
            "permission_request",
            json!({
                "requestId": p.request_id,
                "sessionId": session,
                "toolCall": p.tool_call.clone().unwrap_or_else(|| json!({"toolCallId": p.request_id})),
                "options": permission_options(&p.options),
            }),
        ),
        // As `qwen serve` 0.24.4 has it: no `sessionId`, the voter when known.
        EventData::PermissionResolved(p) => {
            let mut data = json!({"requestId": p.request_id, "outcome": outcome(&p.decision)});
            if let Some(voter) = &p.voter {
                data["voterClientId"] = json!(voter);
            }
            ("permission_resolved", data)
        }
        EventData::PermissionAlreadyResolved(p) => (
            "permission_already_resolved",
            json!({"requestId": p.request_id, "sessionId": session, "outcome": outcome(&p.decision)}),
        ),
        EventData::ModelSwitched(m) => (
            "model_switched",
            json!({"sessionId": session, "modelId": m.model}),
        ),
        // As `qwen serve` says an approval mode set on a client's request.
        EventData::ModeSet(m) => (
            "approval_mode_changed",
            json!({"sessionId": session, "previous": m.previous, "next": m.mode, "persisted": false}),
        ),
        EventData::ModelSwitchFailed(m) => (
            "model_switch_failed",
            json!({"sessionId": session, "requestedModelId": m.model, "error": m.error["data"]["details"].as_str().or(m.error["message"].as_str()).unwrap_or("the agent refused")}),
        ),
        EventData::SessionClosed(e) => {
            let mut data = json!({"sessionId": session, "reason": e.reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("client_close")});
            if let Some(by) = e.details.as_ref().and_then(|d| d["closedBy"].as_str()) {
                data["closedBy"] = json!(by);
            }
            ("session_closed", data)
        }
        // With how the agent's process ended, as `qwen serve` says it.
        EventData::SessionDied(e) => {
            let mut data = json!({"sessionId": session, "reason": e.reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("the session died")});
            if let Some(details) = &e.details {
                for field in ["exitCode", "signalCode"] {
                    if let Some(v) = details.get(field) {
                        data[field] = v.clone();
                    }
                }
            }
            ("session_died", data)
        }
        // A command run is shown as ACP shows any action taken for the user: a
        // tool call, updated when the run settles — when cmdlog is the runtime.
        // In front of an agent (`runs` false) it is not: `qwen serve` shows a
        // slash line as the user's message and the agent's answer, no tool call,
        // and a client would draw an extra card (the run stays in the log, and in
        // `?cmdlog=1` streams as a `cmdlog_event`).
        EventData::CommandRun(run) if runs => (
            "session_update",
            json!({"sessionId": session, "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": run_call_id(event.seq),
                "title": format!("/{}{}", run.name, run.raw_input.as_deref().unwrap_or("")),
                "kind": "other",
                "status": "in_progress",
                "rawInput": {"command": run.name, "input": run.raw_input, "mode": run.mode},
            }}),
        ),
        EventData::CommandDone(done) if runs => (
            "session_update",
            json!({"sessionId": session, "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": run_call_id(done.run),
                "status": match done.outcome {
                    Outcome::Success { .. } => "completed",
                    Outcome::Error { .. } => "failed",
                },
                "rawOutput": done.outcome,
            }}),
        ),
        // A client cancelled a turn under way.
        EventData::SessionCancelled(c) if c.prompt_id.is_some() => {
            ("prompt_cancelled", json!({"sessionId": session}))
        }
        EventData::AcpMessage(m) if m.session_title().is_some() => title_frame(session, m)?,
        EventData::AcpMessage(m) => {
            let (suggestion, prompt_id) = prompt_suggestion(m)?;
            let mut data = json!({"sessionId": session, "suggestion": suggestion});
            if let Some(id) = prompt_id {
                data["promptId"] = json!(id);
            }
            ("followup_suggestion", data)
        }
        // Not shown on the wire: cmdlog's own records, a run in front of an
        // agent, a cancel of no turn, the agents' bookkeeping (in `?cmdlog=1`
        // streams they come as `cmdlog_event`s).
        EventData::CommandRun(_)
        | EventData::CommandDone(_)
        | EventData::SessionCancelled(_)
        | EventData::Registered(_)
        | EventData::Unregistered(_)
        | EventData::DiscoveryWarning(_)
        | EventData::AttachmentAdmitted(_)
        | EventData::SessionCreated(_)
        | EventData::SessionEnded(_)
        | EventData::WalDiscarded(_)
        | EventData::AgentEvent(_)
        | EventData::AgentObserved(_)
        | EventData::ModelRequest(_)
        | EventData::Redacted(_)
        | EventData::LogIdentity(_)
        | EventData::ImportCheckpoint(_)
        | EventData::Unknown(_) => return None,
    };
    Some(frame)
}

/// The frame of a session update: a turn's end or error as `qwen serve` sends
/// them, an ACP update as it came; cmdlog's own kinds none.
fn update_frame(update: &Value, session: &str) -> Option<(&'static str, Value)> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str)?;
    Some(match kind {
        "turn_complete" => {
            let mut data = json!({
                "sessionId": session,
                "stopReason": update.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn"),
            });
            if let Some(id) = update.get("promptId").and_then(Value::as_str) {
                data["promptId"] = json!(id);
            }
            for field in ["branchPoint", "promptCancelled"] {
                if let Some(v) = update.get(field).filter(|v| v.is_object()) {
                    data[field] = v.clone();
                }
            }
            ("turn_complete", data)
        }
        "turn_error" => {
            let mut data = json!({
                "sessionId": session,
                "message": update.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or("the turn failed"),
            });
            for field in ["promptId", "code"] {
                if let Some(v) = update.get(field).filter(|v| !v.is_null()) {
                    data[field] = v.clone();
                }
            }
            ("turn_error", data)
        }
        kind if is_session_update_kind(kind) => (
            "session_update",
            json!({"sessionId": session, "update": update}),
        ),
        _ => return None,
    })
}

/// The prompt a shown frame belongs to, for its envelope: a turn's end and a
/// cancelled turn's `prompt_cancelled`.
pub(crate) fn frame_prompt_id(event: &Event, kind: &str, data: &Value) -> Option<String> {
    match &event.data {
        EventData::SessionCancelled(c) => c.prompt_id.clone(),
        EventData::PermissionAlreadyResolved(p) => p.prompt_id.clone(),
        _ if kind == "turn_complete" || kind == "turn_error" => data
            .get("promptId")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

/// A permission's outcome as ACP says it: the option selected, or cancelled.
fn outcome(decision: &Value) -> Value {
    match permission_decision(decision) {
        Some(PermissionDecision::Selected(id)) => json!({"outcome": "selected", "optionId": id}),
        _ => json!({"outcome": "cancelled"}),
    }
}

/// The client whose request `event` records, for `originatorClientId`: the
/// sender of a prompt, the client that set a mode.
pub(crate) fn originator(event: &Event) -> Option<String> {
    match &event.data {
        EventData::SessionPrompt(p) => p.client_id.clone(),
        EventData::ModeSet(m) => m.client_id.clone(),
        _ => None,
    }
}

/// How an event moves its session's current turn, for the envelopes of the frames
/// in between: a prompt sent to the agent opens one (its id), a turn's end closes
/// it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnMark {
    Opens(String),
    Closes,
}

pub(crate) fn turn_mark(event: &Event) -> Option<TurnMark> {
    match &event.data {
        EventData::SessionPrompt(p) => p.prompt_id.clone().map(TurnMark::Opens),
        EventData::SessionUpdate(update) => matches!(
            update.get("sessionUpdate").and_then(Value::as_str),
            Some("turn_complete" | "turn_error")
        )
        .then_some(TurnMark::Closes),
        _ => None,
    }
}

/// Whether a frame of this type carries the prompt under way in its envelope, as
/// `qwen serve` 0.24.4 does: what the agent says and asks during a turn, the
/// user's own message, the permission answers and a model switch — not a
/// follow-up suggestion, a failed switch or a session's end.
pub(crate) fn in_turn(kind: &str) -> bool {
    matches!(
        kind,
        "session_update" | "permission_request" | "permission_resolved" | "model_switched"
    )
}

/// The most characters of a follow-up suggestion shown (as `qwen serve` 0.24.4
/// drops longer ones).
const SUGGESTION_CHARS_MAX: usize = 500;

/// Qwen Code's `qwen/notify/session/prompt-suggestion` (what the user might type
/// next, sent after a turn): its suggestion and the agent's prompt id, shown as
/// `qwen serve` shows it, a `followup_suggestion` frame.
fn prompt_suggestion(m: &AcpMessage) -> Option<(&str, Option<&str>)> {
    if m.direction != AcpDirection::FromAgent
        || m.message["method"] != "qwen/notify/session/prompt-suggestion"
    {
        return None;
    }
    let params = &m.message["params"];
    let suggestion = params["suggestion"]
        .as_str()
        .filter(|s| !s.trim().is_empty() && s.chars().count() <= SUGGESTION_CHARS_MAX)?;
    Some((suggestion, params["promptId"].as_str()))
}

/// The agent's title for `session` (Qwen Code's
/// `qwen/notify/session/title-update`), as `qwen serve` shows it: a
/// `session_metadata_updated` frame naming the session (`displayName`), which
/// the Web Shell lists it by.
fn title_frame(session: &str, m: &AcpMessage) -> Option<(&'static str, Value)> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Titled<'a> {
        session_id: &'a str,
        display_name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title_source: Option<&'a str>,
    }
    let (display_name, title_source) = m.session_title()?;
    let data = serde_json::to_value(Titled {
        session_id: session,
        display_name,
        title_source,
    })
    .ok()?;
    Some(("session_metadata_updated", data))
}

/// Whether `event` is shown on the wire (see [`project`]), without building it.
pub(crate) fn shown(event: &Event, runs: bool) -> bool {
    match &event.data {
        EventData::SessionUpdate(update) => update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .is_some_and(|k| {
                k == "turn_complete" || k == "turn_error" || is_session_update_kind(k)
            }),
        EventData::SessionPrompt(_)
        | EventData::PermissionRequested(_)
        | EventData::PermissionResolved(_)
        | EventData::PermissionAlreadyResolved(_)
        | EventData::ModelSwitched(_)
        | EventData::ModelSwitchFailed(_)
        | EventData::ModeSet(_)
        | EventData::SessionClosed(_)
        | EventData::SessionDied(_) => true,
        EventData::CommandRun(_) | EventData::CommandDone(_) => runs,
        EventData::AcpMessage(m) => prompt_suggestion(m).is_some() || m.session_title().is_some(),
        EventData::SessionCancelled(c) => c.prompt_id.is_some(),
        _ => false,
    }
}

/// Whether a frame type ends the session's streams.
pub(crate) fn terminal(kind: &str) -> bool {
    kind == "session_closed" || kind == "session_died"
}

fn run_call_id(run: Seq) -> String {
    format!("cmdlog-run-{run}")
}

/// ACP `PermissionOption`s for what a request recorded: objects as they are; the
/// plain option ids earlier versions accepted become options named by their id.
fn permission_options(options: &Value) -> Value {
    let Some(list) = options.as_array() else {
        return json!([]);
    };
    Value::Array(
        list.iter()
            .map(|o| match o {
                Value::String(id) => json!({
                    "optionId": id,
                    "name": id,
                    "kind": if id.starts_with("allow") || id == "yes" { "allow_once" } else { "reject_once" },
                }),
                other => other.clone(),
            })
            .collect(),
    )
}

/// The SSE `data:` of a frame: the envelope `{id?, v: 1, type, data, _meta}`,
/// `data` already serialised. `_meta.cmdlog` names the log record a frame came
/// from (`source`: seq, type, time), and with `record` holds the record itself
/// (for cmdlog's own clients).
/// What an envelope says besides its frame's type and `data`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Envelope<'a> {
    /// The prompt the frame belongs to (`promptId`).
    pub prompt_id: Option<&'a str>,
    /// The client whose request the frame echoes (`originatorClientId`).
    pub originator: Option<&'a str>,
    /// The log event it shows: seq, type and time.
    pub source: Option<(Seq, &'a str, u64)>,
    /// The log record itself, for cmdlog's own clients.
    pub record: Option<&'a str>,
}

pub(crate) fn envelope(id: Option<u64>, kind: &str, data: &str, about: Envelope<'_>) -> String {
    let Envelope {
        prompt_id,
        originator,
        source,
        record,
    } = about;
    use std::fmt::Write as _;
    let mut out = String::with_capacity(data.len() + 160 + record.map_or(0, str::len));
    out.push('{');
    if let Some(id) = id {
        let _ = write!(out, "\"id\":{id},");
    }
    let _ = write!(out, "\"v\":1,\"type\":{},", Value::from(kind));
    // The prompt a turn's frame belongs to, beside `type` (as `qwen serve` puts it).
    if let Some(prompt_id) = prompt_id {
        let _ = write!(out, "\"promptId\":{},", Value::from(prompt_id));
    }
    // As `qwen serve` marks the echo of a client's own prompt: the client that
    // drew it already shows it once.
    if let Some(originator) = originator {
        let _ = write!(out, "\"originatorClientId\":{},", Value::from(originator));
    }
    let _ = write!(
        out,
        "\"data\":{data},\"_meta\":{{\"serverTimestamp\":{}",
        source.map(|(_, _, at)| at).unwrap_or_else(now_ms)
    );
    if let Some((seq, type_name, _)) = source {
        let _ = write!(
            out,
            ",\"cmdlog\":{{\"seq\":{seq},\"type\":{}",
            Value::from(type_name)
        );
        if let Some(record) = record {
            let _ = write!(out, ",\"event\":{record}");
        }
        out.push('}');
    }
    out.push_str("}}");
    out
}

/// Per session, the seqs of its shown events in order: event id `n` is the `n`th.
/// Built from the session's stream on first use, extended as the log grows.
#[derive(Default)]
pub(crate) struct WireIndex {
    sessions: Mutex<HashMap<String, Arc<Mutex<Indexed>>>>,
    /// Whether command runs are shown (see [`project`]).
    runs: bool,
}

#[derive(Default)]
struct Indexed {
    /// The last seq of the session's stream looked at.
    through: Seq,
    /// The seqs of its shown events.
    shown: Vec<Seq>,
    /// Where its turns open (with their prompt id) and close, in seq order.
    turns: Vec<(Seq, Option<String>)>,
}

impl WireIndex {
    /// An empty index; `runs`: whether command runs are shown (see [`project`]).
    pub(crate) fn new(runs: bool) -> Self {
        WireIndex {
            sessions: Mutex::new(HashMap::new()),
            runs,
        }
    }

    /// Brings `session`'s index up to the log's head; runs on a blocking thread.
    fn current(&self, log: &Log, session: &str) -> Result<Arc<Mutex<Indexed>>, ReadError> {
        let entry = Arc::clone(
            self.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(session.to_string())
                .or_default(),
        );
        {
            let mut indexed = entry.lock().unwrap_or_else(|p| p.into_inner());
            let records = log.stream(session, indexed.through)?;
            for r in records {
                indexed.through = r.seq;
                let Ok(e) = Event::decode(r.seq, &r.bytes) else {
                    continue;
                };
                if shown(&e, self.runs) {
                    indexed.shown.push(r.seq);
                }
                match turn_mark(&e) {
                    Some(TurnMark::Opens(id)) => indexed.turns.push((r.seq, Some(id))),
                    Some(TurnMark::Closes) => indexed.turns.push((r.seq, None)),
                    None => {}
                }
            }
        }
        Ok(entry)
    }

    /// How many of `session`'s events up to `seq` are shown: the id of the last.
    pub(crate) fn count_through(
        &self,
        log: &Log,
        session: &str,
        seq: Seq,
    ) -> Result<u64, ReadError> {
        let entry = self.current(log, session)?;
        let indexed = entry.lock().unwrap_or_else(|p| p.into_inner());
        Ok(indexed.shown.partition_point(|&s| s <= seq) as u64)
    }

    /// The seq of `session`'s event with id `id` (`Some(0)` for id 0), or `None`
    /// past the last.
    pub(crate) fn seq_of(
        &self,
        log: &Log,
        session: &str,
        id: u64,
    ) -> Result<Option<Seq>, ReadError> {
        if id == 0 {
            return Ok(Some(0));
        }
        let entry = self.current(log, session)?;
        let indexed = entry.lock().unwrap_or_else(|p| p.into_inner());
        Ok(usize::try_from(id - 1)
            .ok()
            .and_then(|i| indexed.shown.get(i).copied()))
    }

    /// The prompt whose turn is under way in `session` just after `seq`.
    pub(crate) fn turn_after(
        &self,
        log: &Log,
        session: &str,
        seq: Seq,
    ) -> Result<Option<String>, ReadError> {
        let entry = self.current(log, session)?;
        let indexed = entry.lock().unwrap_or_else(|p| p.into_inner());
        let i = indexed.turns.partition_point(|(s, _)| *s <= seq);
        Ok(i.checked_sub(1).and_then(|i| indexed.turns[i].1.clone()))
    }

    /// Forgets every session: the log was reopened and may differ.
    pub(crate) fn clear(&self) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdlog_engine::Mode;
    use cmdlog_engine::event::{
        CommandDone, CommandRun, Delivery, InvocationSource, PermissionRequested,
        PermissionResolved, SessionEnded, SessionPrompt,
    };

    fn event(seq: Seq, data: EventData) -> Event {
        Event {
            observed: None,
            seq,
            at: 7,
            session: Some("s".into()),
            agent: Some("main".into()),
            data,
        }
    }

    #[test]
    fn every_session_event_maps_to_its_qwen_frame() {
        let prompt = event(
            2,
            EventData::SessionPrompt(SessionPrompt {
                text: "hi".into(),
                delivery: Delivery::Idle,
                from_run: None,
                injections: vec![],
                client_id: None,
                prompt_id: Some("p1".into()),
                blocks: vec![],
            }),
        );
        assert_eq!(
            project(&prompt, "s", true),
            Some((
                "session_update",
                json!({"sessionId": "s", "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}, "_meta": {"serverTimestamp": 7, "source": "bridge-echo"}}})
            ))
        );
        let done = event(
            3,
            EventData::SessionUpdate(
                json!({"sessionUpdate": "turn_complete", "stopReason": "cancelled", "promptId": "p1"}),
            ),
        );
        assert_eq!(
            project(&done, "s", true),
            Some((
                "turn_complete",
                json!({"sessionId": "s", "stopReason": "cancelled", "promptId": "p1"})
            ))
        );
        let asked = event(
            4,
            EventData::PermissionRequested(PermissionRequested {
                request_id: "r".into(),
                options: json!(["allow", "deny"]),
                tool_call: None,
            }),
        );
        let (kind, data) = project(&asked, "s", true).unwrap();
        assert_eq!(kind, "permission_request");
        assert_eq!(data["toolCall"], json!({"toolCallId": "r"}));
        assert_eq!(data["options"][1]["kind"], "reject_once");
        let voted = event(
            5,
            EventData::PermissionResolved(PermissionResolved {
                request_id: "r".into(),
                decision: json!("allow"),
                ..Default::default()
            }),
        );
        assert_eq!(
            project(&voted, "s", true).unwrap().1["outcome"],
            json!({"outcome": "selected", "optionId": "allow"})
        );
        let run = event(
            6,
            EventData::CommandRun(CommandRun {
                registration: 1,
                name: "help".into(),
                mode: Mode::Acp,
                source: InvocationSource::Api,
                raw_input: Some(" me".into()),
                attachments: vec![],
                injections: vec![],
                release: None,
            }),
        );
        let (kind, data) = project(&run, "s", true).unwrap();
        assert_eq!(
            (
                kind,
                &data["update"]["title"],
                &data["update"]["toolCallId"]
            ),
            ("session_update", &json!("/help me"), &json!("cmdlog-run-6"))
        );
        let settled = event(
            7,
            EventData::CommandDone(CommandDone {
                agent_check: None,
                run: 6,
                outcome: Outcome::error("no"),
                elapsed_us: 1,
            }),
        );
        assert_eq!(
            project(&settled, "s", true).unwrap().1["update"]["status"],
            "failed"
        );
        let closed = event(8, EventData::SessionClosed(SessionEnded::default()));
        assert_eq!(
            project(&closed, "s", true).unwrap().1["reason"],
            "client_close"
        );
        assert!(terminal(project(&closed, "s", true).unwrap().0));
        let created = event(1, EventData::SessionCreated(Default::default()));
        assert_eq!(project(&created, "s", true), None);
        // In front of an agent, runs are not shown: the agent's own output is.
        assert_eq!(project(&run, "s", false), None);
        assert_eq!(project(&settled, "s", false), None);
        for e in [prompt, done, asked, voted, run, settled, closed, created] {
            assert_eq!(shown(&e, true), project(&e, "s", true).is_some(), "{e:?}");
            assert_eq!(shown(&e, false), project(&e, "s", false).is_some(), "{e:?}");
        }
        let odd = event(
            9,
            EventData::SessionUpdate(json!({"sessionUpdate": "nonsense"})),
        );
        assert!(!shown(&odd, true) && project(&odd, "s", true).is_none());
    }

    #[test]
    fn envelopes_are_json_with_the_id_inside() {
        let about = Envelope {
            prompt_id: Some("p-1"),
            originator: Some("webui_1"),
            source: Some((9, "x/\"y", 5)),
            record: Some(r#"{"at":5}"#),
        };
        let frame = envelope(Some(4), "session_update", r#"{"a":1}"#, about);
        let v: Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(
            v,
            json!({"id": 4, "v": 1, "type": "session_update", "promptId": "p-1", "originatorClientId": "webui_1", "data": {"a": 1}, "_meta": {"serverTimestamp": 5, "cmdlog": {"seq": 9, "type": "x/\"y", "event": {"at": 5}}}})
        );
        let bare: Value = serde_json::from_str(&envelope(
            None,
            "replay_complete",
            "{}",
            Envelope::default(),
        ))
        .unwrap();
        assert!(bare.get("id").is_none() && bare["_meta"]["serverTimestamp"].is_u64());
    }
}
