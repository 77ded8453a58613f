//! Claude Code's session transcripts: `~/.claude/projects/<project>/<session>.jsonl`,
//! one JSON object per line with `type` (`user`, `assistant`, `system`, `summary`,
//! …), `uuid`, `sessionId`, `timestamp` and a `message` in Anthropic's Messages
//! shape. A slash command is a `user` line whose whole text is the
//! `<command-name>` markup; a prompt command's expansion follows on an `isMeta`
//! user line, a built-in's output in `<local-command-stdout>`.

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;
use serde_json::value::RawValue;

use super::lenient::{Flag, Raw, RawStr, Seed, Shape, Str, TextOrList, decode, lenient_map};
use super::transcript::{JsonLines, Subagent, Transcript};
use crate::updates::Update;
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::AgentKind;
use cmdlog_engine::event::Decider;

/// Whether a user line's text is Claude Code's own, not typed: the notice of
/// an interruption (`[Request interrupted by user…]`), a background task's
/// (a subagent's) `<task-notification>`.
pub(crate) fn agents_own(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("[Request interrupted by user") || text.starts_with("<task-notification>")
}

fn at_of(line: &Line<'_>) -> Option<u64> {
    line.timestamp.as_deref().and_then(parse_time)
}

/// The text between `<tag>` and `</tag>`.
fn tag<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&close)? + start;
    Some(&body[start..end])
}

/// One line: the fields the reader uses, decoded in one pass (see [`lenient`]).
#[derive(Default)]
struct Line<'a> {
    /// Whether the line is a JSON object at all.
    object: bool,
    kind: Str<'a>,
    uuid: Str<'a>,
    session_id: Str<'a>,
    timestamp: Str<'a>,
    is_meta: Flag,
    is_sidechain: Flag,
    message: Message<'a>,
    /// A top-level `content` (system lines).
    content: Str<'a>,
    /// The Claude Code release that wrote the line.
    version: Str<'a>,
    /// How the session was started (`cli`, `sdk-cli` for `-p`, …).
    entrypoint: Str<'a>,
    /// The prompt the line belongs to (user lines): the hooks' `prompt_id`
    /// and the telemetry's `prompt.id`.
    prompt_id: Str<'a>,
    /// The subagent that wrote the line (a subagent's own transcript).
    agent_id: Str<'a>,
    /// What the tool returned (a tool result line): the object the hooks'
    /// `PostToolUse` carries as `tool_response`.
    tool_use_result: Option<&'a RawValue>,
    /// Who allowed or refused the call (a tool result line):
    /// `{decision, source, …}`.
    permission_decision: Option<&'a RawValue>,
}

impl<'a> Shape<'a> for Line<'a> {
    fn map<A: MapAccess<'a>>(mut map: A) -> Result<Self, A::Error> {
        let mut line = Line {
            object: true,
            ..Line::default()
        };
        while let Some(key) = map.next_key::<Str<'a>>()? {
            match key.as_deref().unwrap_or("") {
                "type" => line.kind = map.next_value()?,
                "uuid" => line.uuid = map.next_value()?,
                "sessionId" => line.session_id = map.next_value()?,
                "timestamp" => line.timestamp = map.next_value()?,
                "entrypoint" => line.entrypoint = map.next_value()?,
                "promptId" => line.prompt_id = map.next_value()?,
                "agentId" => line.agent_id = map.next_value()?,
                "toolUseResult" => line.tool_use_result = map.next_value()?,
                "permissionDecision" => line.permission_decision = map.next_value()?,
                "isMeta" => line.is_meta = map.next_value()?,
                "isSidechain" => line.is_sidechain = map.next_value()?,
                "message" => line.message = map.next_value_seed(Seed::<Message<'a>>::new())?,
                "content" => line.content = map.next_value()?,
                "version" => line.version = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(line)
    }
}

lenient_map! {
    /// A line's `message` (Anthropic's Messages shape).
    struct Message<'a> {
        content: Content<'a> = "content",
        stop_reason: Str<'a> = "stop_reason",
    }
}

/// A message's content: a string or content blocks.
type Content<'a> = TextOrList<'a, Block<'a>>;

lenient_map! {
    /// A content block of any type.
    struct Block<'a> {
        kind: Str<'a> = "type",
        text: RawStr<'a> = "text",
        thinking: RawStr<'a> = "thinking",
        id: Str<'a> = "id",
        name: Str<'a> = "name",
        input: Raw<'a> = "input",
        tool_use_id: Str<'a> = "tool_use_id",
        is_error: Flag = "is_error",
        content: Raw<'a> = "content",
    }
}

impl Block<'_> {
    fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }
}

impl<'a> Content<'a> {
    fn blocks(&self) -> &[Block<'a>] {
        match self {
            TextOrList::List(blocks) => blocks,
            _ => &[],
        }
    }

    /// The text: the string, or the text blocks joined.
    fn text(&self) -> Option<String> {
        match self {
            TextOrList::Text(text) => Some(text.to_string()),
            TextOrList::List(blocks) => {
                let texts: Vec<Cow<'_, str>> = blocks
                    .iter()
                    .filter(|b| b.is("text"))
                    .filter_map(|b| b.text.text())
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n"))
            }
            TextOrList::Other => None,
        }
    }
}

/// Whether a body is only command markup (a typed slash command), and the line.
fn command_line(body: &str) -> Option<String> {
    let trimmed = body.trim();
    if !trimmed.starts_with('<') {
        return None;
    }
    let name = tag(trimmed, "command-name")?.trim();
    let args = tag(trimmed, "command-args").unwrap_or("").trim();
    let name = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    };
    Some(if args.is_empty() {
        name
    } else {
        format!("{name} {args}")
    })
}

/// The empty JSON string, for a text block without text.
fn empty_text() -> &'static RawValue {
    // A valid JSON string token, checked by the tests.
    static EMPTY: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| RawValue::from_string("\"\"".into()).expect("valid JSON"))
}

/// An assistant line: its text, thoughts and tool calls, and the turn's end
/// when its stop reason ends one.
fn assistant(t: &mut Transcript, key: &str, at: Option<u64>, message: &Message<'_>) {
    for (i, b) in message.content.blocks().iter().enumerate() {
        let k = format!("{key}/{i}");
        match b.kind.as_deref() {
            Some("text") => t.update_raw(k, at, Update::message(b.text.0.unwrap_or(empty_text()))),
            Some("thinking") => {
                t.update_raw(k, at, Update::thought(b.thinking.0.unwrap_or(empty_text())))
            }
            Some("tool_use") => {
                let call = Update::tool_call(
                    b.id.as_deref().unwrap_or(""),
                    b.name.as_deref().unwrap_or("tool"),
                    b.input.unwrap_or(RawValue::NULL),
                );
                t.update_raw(k, at, call);
            }
            _ => {}
        }
    }
    let stop = message.stop_reason.as_deref();
    if matches!(
        stop,
        Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
    ) {
        let reason = match stop {
            Some("max_tokens") => "max_tokens",
            Some("refusal") => "refusal",
            _ => "end_turn",
        };
        t.update(
            format!("{key}/end"),
            at,
            serde_json::json!({"sessionUpdate": "turn_complete", "stopReason": reason}),
        );
    }
}

/// The tool results of a user line, if it holds any: each call's settling.
/// One result whose tool returned an object (`toolUseResult`) is settled with
/// that object, as the hooks' `PostToolUse` has it; else with its content.
fn results(t: &mut Transcript, line: &Line<'_>, key: &str, at: Option<u64>) -> bool {
    let results: Vec<_> = line
        .message
        .content
        .blocks()
        .iter()
        .filter(|b| b.is("tool_result"))
        .collect();
    let returned = line
        .tool_use_result
        .filter(|r| r.get().starts_with('{'))
        .filter(|_| results.len() == 1);
    let decided = line
        .permission_decision
        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
        .filter(|_| results.len() == 1);
    for (i, r) in results.iter().enumerate() {
        let id = r.tool_use_id.as_deref().unwrap_or("");
        let output = returned.or(r.content).unwrap_or(RawValue::NULL);
        match &decided {
            // Who allowed or refused it, kept on its settling.
            Some(decision) => {
                let output = serde_json::from_str(output.get()).unwrap_or_default();
                let mut done = crate::updates::tool_done(id, r.is_error.0, output);
                done["_meta"]["permission"] = permission(decision);
                t.update(format!("{key}/{i}"), at, done);
            }
            None => t.update_raw(
                format!("{key}/{i}"),
                at,
                Update::tool_done(id, r.is_error.0, output),
            ),
        }
    }
    !results.is_empty()
}

/// Claude Code's `permissionDecision` (`{decision, source, …}`) as recorded:
/// as written, with who decided in cmdlog's words (`decidedBy`: `user` for
/// the dialog's answers, `rule` for the settings' rules, `hook`,
/// `classifier` for auto mode's reviewer).
fn permission(decision: &Value) -> Value {
    let by = match decision["source"].as_str().unwrap_or("") {
        s if s.starts_with("user") => Some(Decider::User),
        "config" | "rule" | "mode" => Some(Decider::Rule),
        "hook" => Some(Decider::Hook),
        s if s.contains("classifier") || s == "auto" => Some(Decider::Classifier),
        _ => None,
    };
    let mut out = decision.clone();
    if let (Some(by), Some(fields)) = (by, out.as_object_mut()) {
        fields.insert("decidedBy".into(), by.name().into());
    }
    out
}

pub(crate) fn read(bytes: Vec<u8>, subagent: Option<Subagent>) -> Transcript {
    let mut t = Transcript::default();
    let mut began = subagent.is_none();
    let mut last_at: Option<u64> = None;
    let mut lines = JsonLines::new(bytes);
    // A typed command waits for what follows: its expansion or its output.
    let mut open_command: Option<OpenCommand> = None;
    // Whether the conversation went on since the session's last end.
    let mut said_since_end = false;
    while let Some((number, bytes)) = lines.next_line(&mut t) {
        let line: Line<'_> = match decode(bytes) {
            Ok(line) => line,
            Err(_) => {
                t.malformed.push(number);
                continue;
            }
        };
        // The whole line, for what is kept as it is.
        let whole = || serde_json::from_slice::<Value>(bytes).unwrap_or_default();
        if !line.object {
            if let Some((ckey, cat, cline, pid)) = open_command.take() {
                let from = t.items.len();
                t.run(ckey, cat, &cline, None, None);
                t.with_prompt_id(from, pid.as_deref());
            }
            let key = format!("line {number}");
            t.other(AgentKind::ClaudeCode, key, None, "unknown", whole());
            continue;
        }
        if !began {
            // The subagent's own session, begun with where it came from.
            began = true;
            if let (Some(sub), Some(id)) = (&subagent, line.agent_id.as_deref()) {
                t.session = Some(id.to_string());
                t.begin_subagent(id, &sub.parent, &sub.meta, at_of(&line));
            }
        }
        if t.session.is_none() {
            t.session = line.session_id.as_deref().map(str::to_string);
        }
        if let Some(version) = line.version.as_deref() {
            t.release = Some(version.to_string());
        }
        if t.mode.is_none() {
            t.mode = line
                .entrypoint
                .as_deref()
                .and_then(crate::headless::claude_entrypoint_mode);
        }
        let key = line
            .uuid
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {number}"));
        // A line without a time (Claude Code's bookkeeping) happened when the
        // line before it did, not when it was imported.
        let at = line.timestamp.as_deref().and_then(parse_time).or(last_at);
        last_at = at;
        let kind = line.kind.as_deref().unwrap_or("");
        said_since_end |= matches!(kind, "user" | "assistant");
        let meta = line.is_meta.0;
        let message = &line.message;
        // The text of the line, read only where it decides something.
        let body = || {
            message
                .content
                .text()
                .or_else(|| line.content.as_deref().map(str::to_string))
        };
        if let Some(open) = open_command.take()
            && settle_command(&mut t, open, kind, meta, body())
        {
            continue;
        }
        if line.is_sidechain.0 && subagent.is_none() {
            t.other(AgentKind::ClaudeCode, key, at, "sidechain", whole());
            continue;
        }
        match kind {
            "user" | "system" => {
                let body = body();
                if let Some(command) = body.as_deref().and_then(command_line) {
                    open_command = Some((
                        key,
                        at,
                        command,
                        line.prompt_id.as_deref().map(str::to_string),
                    ));
                    continue;
                }
                if results(&mut t, &line, &key, at) {
                } else if kind == "user" && !meta && body.as_deref().is_some_and(agents_own) {
                    // Claude Code's own words in the user's place: an
                    // interruption, a background task's notice.
                    t.noted(AgentKind::ClaudeCode, key, at, "user/notice", whole());
                } else if kind == "user"
                    && !meta
                    && let Some(b) = body.filter(|b| !b.trim_start().starts_with("<local-command"))
                {
                    let from = t.items.len();
                    t.prompt(key, at, b);
                    t.with_prompt_id(from, line.prompt_id.as_deref());
                } else {
                    t.other(AgentKind::ClaudeCode, key, at, kind, whole());
                }
            }
            "assistant" => assistant(&mut t, &key, at, message),
            "cost-state" => {
                t.other(AgentKind::ClaudeCode, key.clone(), at, kind, whole());
                if std::mem::take(&mut said_since_end) {
                    ended(&mut t, &key, at);
                }
            }
            other => t.other(
                AgentKind::ClaudeCode,
                key,
                at,
                if other.is_empty() { "unknown" } else { other },
                whole(),
            ),
        }
    }
    if let Some(open) = open_command.take() {
        settle_command(&mut t, open, "", false, None);
    }
    t
}

/// A typed command waiting for what follows: its key, time, line, prompt id.
type OpenCommand = (String, Option<u64>, String, Option<String>);

/// Settles a typed command by the line that follows it (`kind`, `meta`,
/// `body`): its expansion (a prompt command: the line was submitted as the
/// user's prompt, the hooks' UserPromptSubmit, then expanded), its output, or
/// anything else (nothing). Whether the line was the command's.
fn settle_command(
    t: &mut Transcript,
    (key, at, line, prompt_id): OpenCommand,
    kind: &str,
    meta: bool,
    body: Option<String>,
) -> bool {
    let from = t.items.len();
    let stdout = body.as_deref().and_then(|b| tag(b, "local-command-stdout"));
    let taken = if kind == "user" && meta && stdout.is_none() && body.is_some() {
        t.prompt(format!("{key}#prompt"), at, line.clone());
        t.run(key, at, &line, body, None);
        true
    } else if let Some(out) = stdout {
        t.run(key, at, &line, None, Some(out.to_string()));
        true
    } else {
        t.run(key, at, &line, None, None);
        false
    };
    t.with_prompt_id(from, prompt_id.as_deref());
    taken
}

/// The session's end, where Claude Code saved its costs (it does when a
/// session ends: exit, `/clear`; more than once at one exit, so only a save
/// with something said since the last counts): the transcript's word for the
/// end the hooks' `SessionEnd` reports, joined by their order.
fn ended(t: &mut Transcript, key: &str, at: Option<u64>) {
    t.push(
        format!("{key}#ended"),
        at,
        cmdlog_engine::EventData::SessionEnded(Default::default()),
    );
    t.name_last(Some(crate::facts::SESSION_END.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_markup_is_read_in_either_order() {
        assert_eq!(
            command_line("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n<command-args>src/lib.rs</command-args>").as_deref(),
            Some("/review src/lib.rs")
        );
        assert_eq!(
            command_line("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>").as_deref(),
            Some("/model opus")
        );
        assert_eq!(
            command_line("please look at <command-name>x</command-name>"),
            None
        );
    }

    /// Each item as the JSON its event's data encodes to.
    fn items(text: &str) -> (Transcript, Vec<(String, Value)>) {
        let t = read(text.as_bytes().to_vec(), None);
        let out = t
            .items
            .iter()
            .map(|i| {
                let data = match &i.data {
                    crate::plan::PlannedData::Ready(d) => serde_json::to_value(d).unwrap(),
                    crate::plan::PlannedData::Update(u) => serde_json::to_value(u).unwrap(),
                    crate::plan::PlannedData::DoneOf { outcome, .. } => {
                        serde_json::to_value(outcome).unwrap()
                    }
                };
                (i.key.clone(), data)
            })
            .collect();
        (t, out)
    }

    #[test]
    fn lines_read_in_one_pass_keep_their_large_fields_as_written() {
        let text = concat!(
            r#"{"type":"assistant","uuid":"a1","sessionId":"s1","timestamp":"2026-08-01T10:00:00Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm\u00e9"},{"type":"text","text":"line\tone\n"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls \"x\""}}],"stop_reason":"tool_use"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u1","isMeta":"yes","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"no such file"}]}]}}"#,
            "\n",
            "[1, 2]\n",
            "{not json\n",
            "\n",
            r#"{"type":"user","uuid":"u2","isMeta":1,"message":{"role":"user","content":"plain \"prompt\""}}"#,
            "\n",
            r#"{"type":"summary","summary":"x","leafUuid":"u2"}"#,
            "\n",
        );
        let (t, items) = items(text);
        assert_eq!(t.session.as_deref(), Some("s1"));
        assert_eq!(t.lines, 7);
        assert_eq!(t.malformed, [4]);
        let find = |key: &str| {
            items
                .iter()
                .find(|(k, _)| k == key)
                .unwrap_or_else(|| panic!("no item {key} in {items:?}"))
                .1
                .clone()
        };
        assert_eq!(
            find("a1/0"),
            serde_json::json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmé"}})
        );
        assert_eq!(find("a1/1")["content"]["text"], "line\tone\n");
        assert_eq!(
            find("a1/2"),
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash",
                "kind": "execute", "status": "pending", "rawInput": {"command": "ls \"x\""}})
        );
        assert_eq!(
            find("u1/0"),
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed",
                "rawOutput": [{"type": "text", "text": "no such file"}]})
        );
        assert_eq!(find("line 3")["event"], "unknown");
        assert_eq!(find("line 3")["data"], serde_json::json!([1, 2]));
        // `isMeta` of another type reads as false: a prompt.
        assert_eq!(find("u2")["text"], "plain \"prompt\"");
        assert_eq!(find("line 7")["event"], "summary");
    }
}
