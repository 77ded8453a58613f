//! Qwen Code's chats: `<runtime dir>/projects/<project>/chats/<session>.jsonl`,
//! one `ChatRecord` per line: `uuid`, `sessionId`, `timestamp`, `type` (`user`,
//! `assistant`, `tool_result`, `system` with a `subtype`) and a Gemini-style
//! `message` (`parts`: text, thought, functionCall, functionResponse).
//!
//! A slash command typed in the interactive UI is a `system` record of subtype
//! `slash_command`: `invocation` (the `rawCommand`, and `sentToModel`), then
//! `result` (what it showed), then — when it was sent to the model — the next
//! `user` record is its expansion. Qwen Code 0.24 writes no such record in
//! headless runs (`-p`): there the expansion is an ordinary prompt, and only the
//! hooks (`UserPromptSubmit.submitted_prompt`) name the command.
//!
//! Not every `user` record is the user's: records with a `subtype` come from
//! Qwen's scheduler (`cron`, `notification`, `goal_runtime`) and are kept as
//! such; `mid_turn_user_message` is a prompt typed while a turn ran. Context a
//! hook added (`<qwen:user-prompt-submit-context>`) is not part of the prompt.
//! An `assistant` record without a function call ends the turn.

use std::collections::HashMap;

use cmdlog_engine::EventData;
use cmdlog_engine::event::{Decider, Delivery};

use crate::plan::PlannedData;
use serde::de::MapAccess;
use serde_json::Value;
use serde_json::value::RawValue;

use super::lenient::{
    Bool, Flag, List, Raw, RawStr, Seed, Shape, Str, decode, fields, lenient_map,
};
use super::transcript::{JsonLines, Subagent, Transcript};
use crate::updates::{Text, Update};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::AgentKind;

/// One `ChatRecord`: the fields the reader uses, decoded in one pass (see
/// [`super::lenient`]); what is kept as it is comes from the line again.
#[derive(Default)]
struct Record<'a> {
    uuid: Str<'a>,
    session_id: Str<'a>,
    timestamp: Str<'a>,
    kind: Str<'a>,
    subtype: Str<'a>,
    system_payload: SystemPayload<'a>,
    parts: List<Part<'a>>,
    tool_call_result: ToolCallResult<'a>,
    /// The subagent that wrote it (a subagent's own transcript).
    agent_id: Str<'a>,
}

impl<'a> Shape<'a> for Record<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut r = Record::default();
        fields(map, |key, map| {
            match key {
                "uuid" => r.uuid = map.next_value()?,
                "sessionId" => r.session_id = map.next_value()?,
                "agentId" => r.agent_id = map.next_value()?,
                "timestamp" => r.timestamp = map.next_value()?,
                "type" => r.kind = map.next_value()?,
                "subtype" => r.subtype = map.next_value()?,
                "systemPayload" => r.system_payload = map.next_value_seed(Seed::new())?,
                "message" => r.parts = map.next_value_seed(Seed::<Message<'a>>::new())?.parts,
                "toolCallResult" => r.tool_call_result = map.next_value_seed(Seed::new())?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(r)
    }
}

lenient_map! {
    /// A record's `message` (Gemini's shape): its parts.
    struct Message<'a> {
        parts: List<Part<'a>> = "parts",
    }
}

lenient_map! {
    /// A `system` record's `systemPayload` (and a `user` record's display text).
    struct SystemPayload<'a> {
        phase: Str<'a> = "phase",
        raw_command: Str<'a> = "rawCommand",
        sent_to_model: Bool = "sentToModel",
        hidden_invocation: Bool = "hiddenInvocation",
        display_text: Str<'a> = "displayText",
    }
}

/// A part: text (or a thought), a function call, a function response.
#[derive(Default)]
struct Part<'a> {
    text: RawStr<'a>,
    thought: Flag,
    function_call: Option<FunctionCall<'a>>,
    response_id: Str<'a>,
}

impl<'a> Shape<'a> for Part<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut part = Part::default();
        fields(map, |key, map| {
            match key {
                "text" => part.text = map.next_value()?,
                "thought" => part.thought = map.next_value()?,
                "functionCall" => part.function_call = Some(map.next_value_seed(Seed::new())?),
                "functionResponse" => {
                    part.response_id = map.next_value_seed(Seed::<FunctionCall<'a>>::new())?.id
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(part)
    }
}

lenient_map! {
    /// A `functionCall` (or the id of a `functionResponse`).
    struct FunctionCall<'a> {
        id: Str<'a> = "id",
        name: Str<'a> = "name",
        args: Raw<'a> = "args",
    }
}

/// A `tool_result` record's `toolCallResult`.
#[derive(Default)]
struct ToolCallResult<'a> {
    call_id: Str<'a>,
    status: Str<'a>,
    /// `resultDisplay`, where the key is there (`null` included).
    result_display: Option<&'a RawValue>,
}

impl<'a> Shape<'a> for ToolCallResult<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut r = ToolCallResult::default();
        fields(map, |key, map| {
            match key {
                "callId" => r.call_id = map.next_value()?,
                "status" => r.status = map.next_value()?,
                "resultDisplay" => {
                    r.result_display = Some(map.next_value::<Raw<'a>>()?.unwrap_or(RawValue::NULL))
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(r)
    }
}

/// A slash command whose invocation was read and whose settling was not yet.
struct OpenCommand {
    key: String,
    at: Option<u64>,
    line: String,
    /// Whether its expansion goes to the model (then the next `user` record).
    sent_to_model: bool,
    /// Whether it opens a dialog (`hiddenInvocation`: `/model`): its first
    /// `result` shows nothing, and a second one, after the user chose, what it
    /// did.
    dialog: bool,
    /// What its `result` record showed.
    output: Option<Shown>,
}

/// What a command's `result` showed, and whether it was an error.
struct Shown {
    text: String,
    error: bool,
}

impl OpenCommand {
    fn settle(self, t: &mut Transcript, prompt: Option<String>) {
        let name = self.line.trim().trim_start_matches('/');
        let name = name.split_whitespace().next().unwrap_or("").to_string();
        let outcome = match self.output {
            Some(Shown { text, error: true }) => cmdlog_engine::event::Outcome::error(text),
            shown => cmdlog_engine::event::Outcome::Success {
                text: shown.map(|s| s.text),
                prompt,
                source_event_seq: None,
            },
        };
        let switched = match &outcome {
            cmdlog_engine::event::Outcome::Success {
                text: Some(text), ..
            } if name == "model" => switched_to(text),
            _ => None,
        };
        t.run_as(self.key.clone(), self.at, &self.line, outcome);
        // `/model` chose a model: the session's switch, a fact of its own.
        if let Some(model) = switched {
            t.push(
                format!("{}#switch", self.key),
                self.at,
                cmdlog_engine::EventData::ModelSwitched(cmdlog_engine::event::ModelSwitched {
                    model,
                }),
            );
        }
    }
}

/// The model a `/model` result says is in use now (`Using model: NAME`).
fn switched_to(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Using model:"))
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

/// The `result` record's items as text: their `text`, or (an item that shows
/// something else, `/about`'s system info) the item as JSON; an error when an
/// item is one.
fn result_output(payload: &Value) -> Option<Shown> {
    let items = payload["outputHistoryItems"].as_array()?;
    let shown: Vec<String> = items
        .iter()
        .map(|i| match i["text"].as_str() {
            Some(text) => text.to_string(),
            None => i.to_string(),
        })
        .collect();
    let error = items.iter().any(|i| i["type"] == "error");
    (!shown.is_empty()).then(|| Shown {
        text: shown.join("\n"),
        error,
    })
}

/// What the user said in a `user` record: what the UI showed when Qwen kept it
/// (`systemPayload.displayText`), else its text parts but a hook's context.
fn user_text(r: &Record<'_>) -> String {
    if let Some(shown) = r.system_payload.display_text.as_deref() {
        return shown.to_string();
    }
    r.parts
        .iter()
        .filter(|p| !p.thought.0)
        .filter_map(|p| p.text.text())
        .filter(|s| {
            !s.trim_start()
                .starts_with("<qwen:user-prompt-submit-context>")
        })
        .collect()
}

/// A `tool_result` record: its call settled, with what the UI showed
/// (`resultDisplay`) or else the parts as written.
fn tool_result(
    t: &mut Transcript,
    r: &Record<'_>,
    key: String,
    at: Option<u64>,
    message: impl FnOnce() -> Value,
) {
    let result = &r.tool_call_result;
    let id = result
        .call_id
        .as_deref()
        .or_else(|| r.parts.iter().find_map(|p| p.response_id.as_deref()))
        .unwrap_or("");
    let failed = matches!(result.status.as_deref(), Some("error" | "cancelled"));
    match result.result_display {
        Some(shown) => t.update_raw(key, at, Update::tool_done(id, failed, shown)),
        None => {
            // The parts as written (none when they are not a list).
            let parts = match message().get_mut("parts").map(Value::take) {
                Some(parts @ Value::Array(_)) => parts,
                _ => Value::Array(Vec::new()),
            };
            t.update(key, at, crate::updates::tool_done(id, failed, parts));
        }
    }
}

/// A subagent's session, begun with where it came from (its `.meta.json`:
/// `parentSessionId`, `toolUseId`, `agentType`). Its one turn is named by the
/// subagent (`subagent:<id>`), as its hooks' `SubagentStop` names it: no
/// record of its own says the prompt's id.
fn begin_subagent(t: &mut Transcript, first: &Record<'_>, sub: &Subagent) {
    let Some(id) = first.agent_id.as_deref() else {
        return;
    };
    let at = first.timestamp.as_deref().and_then(parse_time);
    t.session = Some(id.to_string());
    let parent = sub.meta["parentSessionId"].as_str().unwrap_or(&sub.parent);
    t.begin_subagent(id, parent, &sub.meta, at);
    t.turn_of = Some(format!("subagent:{id}"));
}

/// What the model said in an `assistant` record: its text and thoughts, its
/// calls; a reply without a call ends the turn.
fn said(t: &mut Transcript, r: &Record<'_>, key: &str, at: Option<u64>) {
    let mut called = false;
    for (i, p) in r.parts.iter().enumerate() {
        let k = format!("{key}/{i}");
        if let Some(text) = p.text.0 {
            let text = Text::Raw(text.to_owned());
            let update = if p.thought.0 {
                Update::thought_of(text)
            } else {
                Update::message_of(text)
            };
            t.update_raw(k, at, update);
        } else if let Some(call) = &p.function_call {
            called = true;
            t.update_raw(
                k,
                at,
                Update::tool_call(
                    call.id.as_deref().unwrap_or(""),
                    call.name.as_deref().unwrap_or("tool"),
                    call.args.unwrap_or(RawValue::NULL),
                ),
            );
        }
    }
    if !called {
        t.update(
            format!("{key}/end"),
            at,
            crate::updates::turn_complete("end_turn"),
        );
    }
}

pub(crate) fn read(bytes: Vec<u8>, subagent: Option<Subagent>) -> Transcript {
    let mut t = Transcript::default();
    let mut subagent = subagent;
    let mut lines = JsonLines::new(bytes);
    let mut open: Option<OpenCommand> = None;
    // Where the items of the last prompt (or the run it expanded) begin.
    let mut prompt_from: Option<usize> = None;
    // Each call's permission decision, by its id.
    let mut decisions: HashMap<String, String> = HashMap::new();
    while let Some((number, bytes)) = lines.next_line(&mut t) {
        let r: Record<'_> = match decode(bytes) {
            Ok(r) => r,
            Err(_) => {
                t.malformed.push(number);
                continue;
            }
        };
        // The record as written, for what is kept as it is.
        let whole = || serde_json::from_slice::<Value>(bytes).unwrap_or_default();
        let field = |name: &str| {
            serde_json::from_slice::<Value>(bytes)
                .ok()
                .and_then(|mut v| v.get_mut(name).map(Value::take))
                .unwrap_or_default()
        };
        if let Some(sub) = subagent.take() {
            begin_subagent(&mut t, &r, &sub);
        }
        if t.session.is_none() {
            t.session = r.session_id.owned();
        }
        let key = r.uuid.owned().unwrap_or_else(|| format!("line {number}"));
        let at = r.timestamp.as_deref().and_then(parse_time);
        let kind = r.kind.as_deref().unwrap_or("");
        let subtype = r.subtype.as_deref();
        let payload = &r.system_payload;
        let phase = payload.phase.as_deref();
        if (kind, subtype) == ("system", Some("ui_telemetry"))
            && let Some((id, decision)) = decision_of(&field("systemPayload"))
        {
            decisions.insert(id, decision);
        }
        // The line after a prompt that names its id (`<session>########<n>`):
        // the hooks' `prompt_id` for the same prompt.
        if (kind, subtype) == ("system", Some("file_history_snapshot"))
            && let Some(from) = prompt_from.take()
        {
            let snapshot = field("systemPayload");
            t.with_prompt_id(
                from,
                snapshot
                    .pointer("/snapshots/0/promptId")
                    .and_then(Value::as_str),
            );
        }
        let before = t.items.len();
        if kind == "user" && matches!(subtype, None | Some("mid_turn_user_message")) {
            prompt_from = Some(before);
        }
        if let Some(mut command) = open.take() {
            match (kind, subtype, phase) {
                // The expansion the model received.
                // Sent as the user's prompt (the hooks' UserPromptSubmit):
                // the run, then the prompt it expanded to.
                ("user", None, _) => {
                    command.settle(&mut t, Some(user_text(&r)));
                    t.prompt(key, at, user_text(&r));
                    continue;
                }
                ("system", Some("slash_command"), Some("result"))
                    if payload.raw_command.as_deref() == Some(command.line.as_str()) =>
                {
                    command.output = result_output(&field("systemPayload"));
                    if command.sent_to_model || (command.dialog && command.output.is_none()) {
                        open = Some(command);
                    } else {
                        command.settle(&mut t, None);
                    }
                    continue;
                }
                // Qwen's own records between the command and its expansion,
                // or while its dialog is open.
                ("system", sub, _)
                    if sub != Some("slash_command")
                        && (command.sent_to_model || command.dialog) =>
                {
                    open = Some(command);
                }
                _ => command.settle(&mut t, None),
            }
        }
        match (kind, subtype) {
            ("system", Some("slash_command")) => match (phase, payload.raw_command.as_deref()) {
                (Some("invocation") | None, Some(raw)) => {
                    open = Some(OpenCommand {
                        key,
                        at,
                        line: raw.to_string(),
                        sent_to_model: payload.sent_to_model.0.unwrap_or(true),
                        dialog: payload.hidden_invocation.0.unwrap_or(false),
                        output: None,
                    })
                }
                _ => t.other(
                    AgentKind::Qwen,
                    key,
                    at,
                    "slash_command",
                    field("systemPayload"),
                ),
            },
            ("user", None) => t.prompt(key, at, user_text(&r)),
            ("user", Some("mid_turn_user_message")) => {
                t.prompt_as(key, at, user_text(&r), Delivery::Steer);
            }
            // Sent to the model as the user's turn by Qwen itself.
            ("user", Some(sub)) => {
                let event = format!("user/{sub}");
                t.noted(AgentKind::Qwen, key, at, &event, whole());
            }
            ("assistant", _) => said(&mut t, &r, &key, at),
            ("tool_result", _) => tool_result(&mut t, &r, key, at, || field("message")),
            (other, sub) => {
                let event = match sub {
                    Some(sub) => format!("{other}/{sub}"),
                    None => other.to_string(),
                };
                t.other(AgentKind::Qwen, key, at, &event, whole());
            }
        }
    }
    if let Some(command) = open.take() {
        command.settle(&mut t, None);
    }
    with_decisions(&mut t, &decisions);
    t
}

/// A call's permission decision, from a `ui_telemetry` record's payload.
fn decision_of(payload: &Value) -> Option<(String, String)> {
    let event = &payload["uiEvent"];
    if event["event.name"] != "qwen-code.tool_call" {
        return None;
    }
    Some((
        event["call_id"].as_str()?.to_string(),
        event["decision"].as_str()?.to_string(),
    ))
}

/// Who allowed or refused each call (the `ui_telemetry` record of its
/// `qwen-code.tool_call`: `decision` — `accept` or `reject` in the dialog,
/// `auto_accept` without asking), kept on the call's settling as
/// `_meta.permission` (`decidedBy: user` for the dialog's answers).
fn with_decisions(t: &mut Transcript, decisions: &HashMap<String, String>) {
    if decisions.is_empty() {
        return;
    }
    for item in &mut t.items {
        let update = match &item.data {
            PlannedData::Update(u @ Update::ToolCallUpdate { .. }) => serde_json::to_value(u).ok(),
            PlannedData::Ready(EventData::SessionUpdate(u))
                if u["sessionUpdate"] == "tool_call_update" =>
            {
                Some(u.clone())
            }
            _ => None,
        };
        let Some(mut update) = update else { continue };
        let Some(decision) = update["toolCallId"]
            .as_str()
            .and_then(|id| decisions.get(id))
        else {
            continue;
        };
        let mut permission = serde_json::Map::new();
        permission.insert("decision".into(), decision.as_str().into());
        if matches!(decision.as_str(), "accept" | "reject") {
            permission.insert("decidedBy".into(), Decider::User.name().into());
        }
        update["_meta"]["permission"] = Value::Object(permission);
        item.data = PlannedData::Ready(EventData::SessionUpdate(update));
    }
}
