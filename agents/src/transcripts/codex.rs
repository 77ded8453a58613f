//! Codex's rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`,
//! one `{timestamp, ordinal?, type, payload}` per line.
//!
//! What the user saw is in `event_msg` lines. Codex 0.171 writes prompts,
//! replies, reasoning and shell runs as `item_completed` items (`UserMessage`,
//! `AgentMessage`, `Reasoning`, `CommandExecution`); releases before it wrote
//! `user_message`, `agent_message` and `agent_reasoning`, which are still read.
//! A turn ends with `task_complete` (with an `error` when it failed) or
//! `turn_aborted`. `response_item` lines carry the tool calls and their outputs
//! (`function_call`, `function_call_output`, the `custom_tool_call` pair); their
//! `message` items are the model-facing copies — the user's prompt again, and the
//! harness's own text (`<environment_context>`, instructions, `<skill>` bodies) —
//! and are not prompts. Codex has no custom prompts since 0.117: a slash line
//! reaches the model as typed. The rest (token usage, world state, settings
//! echoes) is kept as bookkeeping.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;

use serde::de::MapAccess;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::lenient::{List, Raw, RawStr, Shape, Str, decode, fields, lenient_map};
use super::transcript::{JsonLines, Transcript};
use crate::updates::{Text, Update};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

lenient_map! {
    /// One rollout line: the fields the reader uses, decoded in one pass (see
    /// [`super::lenient`]); what is kept as it is comes from the line again.
    struct Line<'a> {
        kind: Str<'a> = "type",
        timestamp: Str<'a> = "timestamp",
        payload: Payload<'a> = "payload",
    }
}

lenient_map! {
    /// A line's `payload`, the fields of every kind the reader types.
    struct Payload<'a> {
        kind: Str<'a> = "type",
        id: Str<'a> = "id",
        source: Str<'a> = "source",
        message: RawStr<'a> = "message",
        text: RawStr<'a> = "text",
        error: Raw<'a> = "error",
        call_id: Str<'a> = "call_id",
        turn_id: Str<'a> = "turn_id",
        model: Str<'a> = "model",
        name: Str<'a> = "name",
        arguments: RawStr<'a> = "arguments",
        input: Raw<'a> = "input",
        action: Raw<'a> = "action",
        output: Raw<'a> = "output",
        item: Item<'a> = "item",
    }
}

lenient_map! {
    /// An `item_completed`'s `item` (Codex 0.171).
    struct Item<'a> {
        kind: Str<'a> = "type",
        id: Str<'a> = "id",
        status: Str<'a> = "status",
        exit_code: Raw<'a> = "exit_code",
        content: List<Part<'a>> = "content",
        summary_text: List<Part<'a>> = "summary_text",
        raw_content: List<Part<'a>> = "raw_content",
        command: List<Str<'a>> = "command",
        aggregated_output: Raw<'a> = "aggregated_output",
    }
}

impl Item<'_> {
    /// The exit code, where it is an integer.
    fn exit_code(&self) -> Option<i64> {
        self.exit_code.and_then(|c| c.get().parse().ok())
    }
}

/// A part of an item's text: a string, or `{type, text}`.
#[derive(Default)]
struct Part<'a> {
    kind: Str<'a>,
    text: RawStr<'a>,
    string: Option<Cow<'a, str>>,
}

impl<'a> Shape<'a> for Part<'a> {
    fn string(v: Cow<'a, str>) -> Self {
        Part {
            string: Some(v),
            ..Part::default()
        }
    }
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut part = Part::default();
        fields(map, |key, map| {
            match key {
                "type" => part.kind = map.next_value()?,
                "text" => part.text = map.next_value()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(part)
    }
}

/// The text of `parts` of the given types (any type when `kinds` is empty):
/// the one part's text as written, or the parts' texts joined.
fn texts(parts: &[Part<'_>], kinds: &[&str]) -> Text {
    let chosen: Vec<&Part<'_>> = parts
        .iter()
        .filter(|p| kinds.is_empty() || kinds.contains(&p.kind.as_deref().unwrap_or("")))
        .filter(|p| p.string.is_some() || p.text.0.is_some())
        .collect();
    if let [only] = chosen[..]
        && let Some(raw) = only.text.0
    {
        return Text::Raw(raw.to_owned());
    }
    Text::Plain(
        chosen
            .iter()
            .filter_map(|p| p.string.clone().or_else(|| p.text.text()))
            .collect(),
    )
}

/// What a rollout's shell runs said, for the outputs that follow them.
#[derive(Default)]
struct Calls {
    /// Ids of the `function_call`s seen.
    called: HashSet<String>,
    /// Ids of the runs that failed (`CommandExecution` with a non-zero exit).
    failed: HashSet<String>,
}

/// A JSON string token of `text`, or the empty string's.
fn raw_or_empty(text: RawStr<'_>) -> Box<RawValue> {
    text.0
        .map(RawValue::to_owned)
        .unwrap_or_else(|| RawValue::from_string("\"\"".into()).expect("valid JSON"))
}

/// JSON text made from a value built here.
fn raw_of(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("a value serializes")
}

/// A spawned agent's thread names its parent's (`session_meta`
/// `parent_thread_id`): its session begins under it, as the hooks'
/// `SubagentStart` begins it, and under the parent's `spawn_agent` call that
/// names it (`spawner`).
fn spawned(t: &mut Transcript, path: &Path, meta: &Value, at: Option<u64>) {
    if let (Some(id), Some(parent)) = (t.session.clone(), meta["parent_thread_id"].as_str()) {
        let mut said = serde_json::Map::new();
        if let Some(role) = meta["agent_role"].as_str() {
            said.insert("agentType".into(), role.into());
        }
        if let Some(call) = spawner(path, parent, &id) {
            said.insert("toolUseId".into(), call.into());
        }
        t.begin_subagent(&id, parent, &Value::Object(said), at);
    }
}

/// The parent's `spawn_agent` call that started thread `child`: its rollout
/// (`rollout-…-<parent>.jsonl` beside the child's, read as an untrusted file
/// of at most `CHAT_BYTES_MAX`) completes the call naming the child among
/// its `receiver_thread_ids`.
fn spawner(path: &Path, parent: &str, child: &str) -> Option<String> {
    let suffix = format!("-{parent}.jsonl");
    let expect = cmdlog_common::private_fs::Expect {
        bytes_max: crate::limits::CHAT_BYTES_MAX,
        private: false,
    };
    for entry in std::fs::read_dir(path.parent()?).ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
        {
            continue;
        }
        let Ok(bytes) = cmdlog_common::private_fs::read_untrusted(&entry.path(), expect) else {
            continue;
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            if !(line.contains("\"receiver_thread_ids\"") && line.contains(child)) {
                continue;
            }
            let v: Value = serde_json::from_str(line).unwrap_or_default();
            let item = &v["payload"]["item"];
            let named = item["receiver_thread_ids"]
                .as_array()
                .is_some_and(|ids| ids.iter().any(|i| i == child));
            if named && item["tool"] == "spawn_agent" {
                return item["id"].as_str().map(str::to_string);
            }
        }
    }
    None
}

pub(crate) fn read(path: &Path, bytes: Vec<u8>) -> Transcript {
    let mut t = Transcript::default();
    let mut calls = Calls::default();
    // The model the turns ran on, as each turn's context says.
    let mut model: Option<String> = None;
    let mut lines = JsonLines::new(bytes);
    while let Some((number, bytes)) = lines.next_line(&mut t) {
        let line: Line<'_> = match decode(bytes) {
            Ok(line) => line,
            Err(_) => {
                t.malformed.push(number);
                continue;
            }
        };
        // The payload as written, for what is kept as it is.
        let whole = || {
            serde_json::from_slice::<Value>(bytes)
                .ok()
                .and_then(|mut v| v.get_mut("payload").map(Value::take))
                .unwrap_or_default()
        };
        let key = format!("line {number}");
        let at = line.timestamp.as_deref().and_then(parse_time);
        let payload = &line.payload;
        let inner = payload.kind.as_deref().unwrap_or("");
        match (line.kind.as_deref().unwrap_or(""), inner) {
            ("session_meta", _) => {
                t.session = payload.id.owned();
                t.mode = payload
                    .source
                    .as_deref()
                    .and_then(crate::headless::codex_source_mode);
                let meta = whole();
                spawned(&mut t, path, &meta, at);
                t.other(AgentKind::Codex, key, at, "session_meta", meta);
            }
            ("event_msg", "item_completed") => {
                let item = || whole().get_mut("item").map(Value::take).unwrap_or_default();
                let from = t.items.len();
                completed_item(&mut t, &mut calls, key, at, &payload.item, item);
                // A prompt's turn id is the hooks' `turn_id` for it.
                t.with_prompt_id(from, payload.turn_id.as_deref());
            }
            ("event_msg", "user_message") => {
                let message = payload.message.text().unwrap_or_default();
                t.prompt(key, at, message.into_owned());
            }
            ("event_msg", "agent_message") => {
                let message = raw_or_empty(payload.message);
                t.update_raw(key, at, Update::message_of(Text::Raw(message)));
            }
            ("event_msg", "agent_reasoning") => {
                let thought = raw_or_empty(payload.text);
                t.update_raw(key, at, Update::thought_of(Text::Raw(thought)));
            }
            ("event_msg", "task_complete" | "turn_complete") => {
                let end = match payload.error {
                    Some(error) => {
                        let error: Value = serde_json::from_str(error.get()).unwrap_or_default();
                        json!({
                            "sessionUpdate": "turn_error",
                            "message": text(&error, "message").unwrap_or("the turn failed"),
                            "code": error.get("codex_error_info").cloned().unwrap_or(Value::Null),
                        })
                    }
                    None => json!({"sessionUpdate": "turn_complete", "stopReason": "end_turn"}),
                };
                t.update(key, at, end);
            }
            ("event_msg", "turn_aborted") => {
                t.update(
                    key,
                    at,
                    json!({"sessionUpdate": "turn_complete", "stopReason": "cancelled"}),
                );
            }
            ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
                let id = payload.call_id.as_deref().unwrap_or("");
                calls.called.insert(id.to_string());
                let input: Box<RawValue> = match payload.arguments.0 {
                    // The arguments are JSON in a string; kept as the string when
                    // they are not.
                    Some(args) => payload
                        .arguments
                        .text()
                        .and_then(|text| serde_json::from_str::<Box<RawValue>>(&text).ok())
                        .unwrap_or_else(|| args.to_owned()),
                    None => payload
                        .input
                        .or(payload.action)
                        .unwrap_or(RawValue::NULL)
                        .to_owned(),
                };
                let name = payload.name.as_deref().unwrap_or(inner);
                match shell_call(id, name, &input) {
                    Some(call) => t.update(key, at, call),
                    None => t.update_raw(key, at, Update::tool_call(id, name, &input)),
                }
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let id = payload.call_id.as_deref().unwrap_or("");
                let output = payload.output.unwrap_or(RawValue::NULL);
                let failed = calls.failed.contains(id)
                    || exit_code(output).is_some_and(|c| c != 0)
                    || aborted(output);
                t.update_raw(key, at, Update::tool_done(id, failed, output));
            }
            // Each turn says its model: a new one is the session's switch
            // (`/model`), a fact of its own.
            ("turn_context", _) => turn_model(&mut t, &mut model, payload, key, at),
            // The model's copy of messages and reasoning (the prompt and reply are
            // read from the event_msg items above), and what repeats each turn.
            ("response_item", "message" | "reasoning")
            | ("event_msg", "token_count" | "exec_command_end" | "task_started") => {}
            (kind, inner) => {
                let event = if inner.is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind}/{inner}")
                };
                t.other(AgentKind::Codex, key, at, &event, whole());
            }
        }
    }
    if t.session.is_none() {
        // rollout-<time>-<uuid>.jsonl: the id is the last 36 characters.
        t.session = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.get(s.len().saturating_sub(36)..))
            .map(str::to_string);
    }
    t
}

/// Each turn says its model: a new one is the session's switch (`/model`), a
/// fact of its own, named by the turn as the hooks name it.
fn turn_model(
    t: &mut Transcript,
    model: &mut Option<String>,
    payload: &Payload<'_>,
    key: String,
    at: Option<u64>,
) {
    let Some(now) = payload.model.as_deref().filter(|m| !m.is_empty()) else {
        return;
    };
    if model.as_deref().is_some_and(|m| m != now) {
        t.push(
            format!("{key}#model"),
            at,
            cmdlog_engine::EventData::ModelSwitched(cmdlog_engine::event::ModelSwitched {
                model: now.to_string(),
            }),
        );
        t.name_last(payload.turn_id.as_deref().map(|id| format!("model:{id}")));
    }
    *model = Some(now.to_string());
}

/// One `item_completed` of Codex 0.171; `whole` gives it as written.
fn completed_item(
    t: &mut Transcript,
    calls: &mut Calls,
    key: String,
    at: Option<u64>,
    item: &Item<'_>,
    whole: impl FnOnce() -> Value,
) {
    match item.kind.as_deref().unwrap_or("") {
        "UserMessage" => t.prompt(key, at, texts(&item.content, &["text"]).into_string()),
        "AgentMessage" => {
            let message = texts(&item.content, &["Text", "text"]);
            t.update_raw(key, at, Update::message_of(message));
        }
        "Reasoning" => {
            let summary = texts(&item.summary_text, &[]);
            let thought = if summary.is_empty() {
                texts(&item.raw_content, &[])
            } else {
                summary
            };
            if !thought.is_empty() {
                t.update_raw(key, at, Update::thought_of(thought));
            }
        }
        "CommandExecution" => {
            let id = item.id.as_deref().unwrap_or("");
            let failed = item.status.as_deref() == Some("failed")
                || item.exit_code().is_some_and(|c| c != 0);
            if failed {
                calls.failed.insert(id.to_string());
            }
            // A run inside a code-mode cell has no function_call of its own: it is
            // the tool call, and its item is how it settled.
            if !calls.called.contains(id) {
                let command = item.command.last().and_then(Str::as_deref).unwrap_or("");
                let input = raw_of(&json!({"command": command}));
                t.update_raw(key.clone(), at, Update::tool_call(id, "Bash", &input));
                let output = format!(
                    "{{\"exit_code\":{},\"output\":{}}}",
                    item.exit_code.unwrap_or(RawValue::NULL).get(),
                    item.aggregated_output.unwrap_or(RawValue::NULL).get(),
                );
                let output = RawValue::from_string(output).expect("JSON texts joined as JSON");
                t.update_raw(
                    format!("{key}#done"),
                    at,
                    Update::tool_done(id, failed, &output),
                );
            }
        }
        other => {
            let event = format!("item_completed/{other}");
            t.other(AgentKind::Codex, key, at, &event, whole());
        }
    }
}

/// A shell command as Codex's hooks name it: the model calls `exec_command`
/// with `{cmd, justification?, sandbox_permissions?, …}`, the hooks report the
/// same call as `Bash` with `{command}`. The import says it the hooks' way
/// (one call, one name), the model's arguments kept in `_meta.arguments`.
fn shell_call(id: &str, name: &str, input: &RawValue) -> Option<Value> {
    if name != "exec_command" {
        return None;
    }
    let args: Value = serde_json::from_str(input.get()).ok()?;
    let command = args.get("cmd").filter(|c| c.is_string())?;
    let mut shown = serde_json::Map::new();
    shown.insert("command".into(), command.clone());
    let mut call = crate::updates::call(
        &id.into(),
        &"Bash".into(),
        &crate::kind::tool_kind("Bash").into(),
        &Value::Object(shown),
    );
    call["_meta"]["arguments"] = args;
    Some(call)
}

/// Whether a tool output says the user stopped the call (Codex ends it with
/// `aborted by user` when the approval dialog is refused or the turn
/// interrupted).
fn aborted(output: &RawValue) -> bool {
    RawStr(Some(output))
        .text()
        .is_some_and(|text| text.trim_end().ends_with("aborted by user"))
}

/// A shell run's exit code in a tool output: the older `{metadata: {exit_code}}`
/// or the `Process exited with code N` line of Codex 0.171's plain text.
fn exit_code(output: &RawValue) -> Option<i64> {
    let json = output.get();
    if json.starts_with('{') {
        let output: Value = serde_json::from_str(json).ok()?;
        return output
            .pointer("/metadata/exit_code")
            .and_then(Value::as_i64);
    }
    let token = RawStr(Some(output));
    let text = token.text()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse().ok())
}
