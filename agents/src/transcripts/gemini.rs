//! Gemini CLI's chats: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`
//! (0.39 and later: a metadata line, then message records — the same `id` again
//! replaces the earlier record, `{"$set": …}` updates metadata and may replace
//! every message, `{"$rewindTo": id}` drops that message and the ones after), or
//! the older `session-*.json`, one document with `messages`. A message is `user`,
//! `gemini`, `info`, `error` or `warning`; a slash command's expansion is a
//! `user` record whose `displayContent` (parts, in 0.61; a string before) holds
//! the `/command` typed.
//!
//! Not every `user` record is a prompt: the `<session_context>` preamble Gemini
//! writes first (and `<hook_context>`) is its own, and a record holding only a
//! `functionResponse` repeats a tool result the `gemini` record already has. A
//! `$set` of every message (a resumed session) rewrites the records it keeps
//! without their `displayContent`, thoughts and times: the records read earlier
//! win. A `gemini` record without tool calls ends the turn.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde::de::{MapAccess, SeqAccess};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::lenient::{
    Flag, List, Raw, RawStr, Seed, Shape, Str, TextOrList, by_shape, decode, fields, lenient_map,
    present,
};
use super::transcript::{Subagent, Transcript};
use crate::updates::{Text, Update};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::AgentKind;

/// A message's text: a string, or the `text` of its parts (`thought` parts
/// when `thoughts`, the others otherwise).
pub(super) fn message_text(content: &Value, thoughts: bool) -> String {
    match content {
        Value::String(s) if !thoughts => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["thought"].as_bool().unwrap_or(false) == thoughts)
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Gemini's own text in the user's turn, which it skips itself on resume.
fn is_preamble(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("<session_context>") || text.starts_with("<hook_context>")
}

/// One record of a chat (a JSON-lines line, or a message of the older
/// document): the fields the reader uses, decoded in one pass (see
/// [`super::lenient`]), and its text for what is kept as it is.
#[derive(Default)]
struct Record<'a> {
    /// The record as written.
    json: &'a str,
    /// Whether it has a `type` (the metadata line has none).
    typed: bool,
    kind: Str<'a>,
    /// Its `id` as JSON text, to find the record it replaces.
    id: Raw<'a>,
    session_id: Str<'a>,
    timestamp: Str<'a>,
    content: Content<'a>,
    display_content: Content<'a>,
    thoughts: List<Thought<'a>>,
    tool_calls: List<ToolCall<'a>>,
    /// The model that wrote a reply.
    model: Str<'a>,
    /// A `$set`, and the messages it sets.
    set: Option<Set<'a>>,
    rewind_to: Str<'a>,
}

impl<'a> Shape<'a> for Record<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut r = Record::default();
        fields(map, |key, map| {
            match key {
                "type" => {
                    r.typed = true;
                    r.kind = map.next_value()?;
                }
                "id" => r.id = map.next_value()?,
                "sessionId" => r.session_id = map.next_value()?,
                "timestamp" => r.timestamp = map.next_value()?,
                "content" => r.content = map.next_value_seed(Seed::new())?,
                "displayContent" => r.display_content = map.next_value_seed(Seed::new())?,
                "thoughts" => r.thoughts = map.next_value()?,
                "toolCalls" => r.tool_calls = map.next_value()?,
                "model" => r.model = map.next_value()?,
                "$set" => r.set = Some(map.next_value_seed(Seed::new())?),
                "$rewindTo" => r.rewind_to = map.next_value()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(r)
    }
}

impl<'a> Record<'a> {
    /// Decodes a record from its JSON text.
    fn parse(json: &'a str) -> serde_json::Result<Record<'a>> {
        let mut record: Record<'a> = decode(json.as_bytes())?;
        record.json = json;
        Ok(record)
    }

    /// Its `id`, where it is a string.
    fn id_text(&self) -> Option<Cow<'a, str>> {
        RawStr(self.id).text().map(|t| Cow::Owned(t.into_owned()))
    }

    /// What finds the record an update replaces: its `id` (as JSON equality
    /// compares it: strings by their text, other values by theirs).
    fn id_key(&self) -> Option<String> {
        let raw = self.id?;
        Some(match RawStr(Some(raw)).text() {
            Some(text) => format!("s{text}"),
            None => format!("v{}", raw.get()),
        })
    }

    /// The record as a value, for what is kept as it is.
    fn value(&self) -> Value {
        serde_json::from_str(self.json).unwrap_or_default()
    }
}

/// A `$set`: the messages it sets, where it sets them.
#[derive(Default)]
struct Set<'a> {
    messages: Option<RawList<'a>>,
}

impl<'a> Shape<'a> for Set<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut set = Set::default();
        fields(map, |key, map| {
            if key != "messages" {
                return Ok(false);
            }
            let list: RawList<'a> = map.next_value_seed(Seed::new())?;
            set.messages = list.array.then_some(list);
            Ok(true)
        })?;
        Ok(set)
    }
}

/// An array's elements as JSON text.
#[derive(Default)]
struct RawList<'a> {
    array: bool,
    items: Vec<&'a RawValue>,
}

impl<'a> Shape<'a> for RawList<'a> {
    fn seq<A: SeqAccess<'a>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&'a RawValue>()? {
            items.push(item);
        }
        Ok(RawList { array: true, items })
    }
}

by_shape!(RawList);

lenient_map! {
    /// The older `session-*.json` document.
    struct Document<'a> {
        session_id: Str<'a> = "sessionId",
        messages: RawList<'a> = "messages",
    }
}

/// A message's `content` (or `displayContent`): a string or parts.
type Content<'a> = TextOrList<'a, Part<'a>>;

impl Content<'_> {
    /// The text: the string (unless `thoughts`), or the `text` of the parts
    /// whose `thought` is `thoughts` — the one part's as written.
    fn text(&self, thoughts: bool) -> Text {
        match self {
            TextOrList::Text(s) if !thoughts => Text::Plain(s.to_string()),
            TextOrList::List(parts) => {
                let chosen: Vec<&Part<'_>> = parts
                    .iter()
                    .filter(|p| p.thought.0 == thoughts && p.text.0.is_some())
                    .collect();
                match chosen[..] {
                    [only] => Text::Raw(only.text.0.expect("chosen for it").to_owned()),
                    _ => Text::Plain(chosen.iter().filter_map(|p| p.text.text()).collect()),
                }
            }
            _ => Text::Plain(String::new()),
        }
    }

    /// Whether it holds only tool results (`functionResponse` parts).
    fn only_tool_results(&self) -> bool {
        matches!(self, TextOrList::List(parts)
            if !parts.is_empty() && parts.iter().all(|p| p.function_response))
    }
}

/// A part of a message's content.
#[derive(Default)]
struct Part<'a> {
    text: RawStr<'a>,
    thought: Flag,
    function_response: bool,
}

impl<'a> Shape<'a> for Part<'a> {
    fn map<A: MapAccess<'a>>(map: A) -> Result<Self, A::Error> {
        let mut part = Part::default();
        fields(map, |key, map| {
            match key {
                "text" => part.text = map.next_value()?,
                "thought" => part.thought = map.next_value()?,
                "functionResponse" => part.function_response = present(map)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(part)
    }
}

lenient_map! {
    /// One of a `gemini` record's `thoughts`.
    struct Thought<'a> {
        subject: Str<'a> = "subject",
        description: Str<'a> = "description",
    }
}

lenient_map! {
    /// One of a `gemini` record's `toolCalls`.
    struct ToolCall<'a> {
        id: Str<'a> = "id",
        name: Str<'a> = "name",
        args: Raw<'a> = "args",
        status: Str<'a> = "status",
        timestamp: Str<'a> = "timestamp",
        result: Raw<'a> = "result",
    }
}

/// The messages of a chat as they stand, in order, found by id.
#[derive(Default)]
struct Messages<'a> {
    list: Vec<Record<'a>>,
    by_id: HashMap<String, usize>,
    /// The rewrites the chat went through (Gemini CLI 0.61 after a denied
    /// call or a cancelled request): how many copies each wrote, and when.
    rewrites: Vec<(usize, Option<String>)>,
}

impl<'a> Messages<'a> {
    /// A record added, or replacing the earlier record of its id.
    fn put(&mut self, record: Record<'a>) {
        let key = record
            .id_key()
            .filter(|_| record.id.is_some_and(|r| r.get() != "null"));
        match key.as_ref().and_then(|k| self.by_id.get(k)) {
            Some(&i) => self.list[i] = record,
            None => {
                if let Some(key) = key {
                    self.by_id.entry(key).or_insert(self.list.len());
                }
                self.list.push(record);
            }
        }
    }

    /// Where the first record with string id `id` is.
    fn position(&self, id: &str) -> Option<usize> {
        self.list
            .iter()
            .position(|m| m.id_text().as_deref() == Some(id))
    }

    fn reindex(&mut self) {
        self.by_id.clear();
        for (i, m) in self.list.iter().enumerate() {
            if let Some(key) = m
                .id_key()
                .filter(|_| m.id.is_some_and(|r| r.get() != "null"))
            {
                self.by_id.entry(key).or_insert(i);
            }
        }
    }

    /// `$rewindTo`: the record of `id` and those after it dropped.
    fn rewind_to(&mut self, id: &str) {
        if let Some(i) = self.position(id) {
            self.list.truncate(i);
            self.reindex();
        }
    }

    /// A `$set` of all the messages that names exactly the records appended
    /// last, after others, is a rewrite (Gemini CLI 0.61 after a denied call
    /// or a cancelled request): the whole history written again as new
    /// records, in the model's shape, stamped with the rewrite's time, the
    /// denied turn left out. What happened is the records before them: those
    /// are kept, the copies set aside (and counted). Returns whether it was.
    fn rewrite(&mut self, all: &[Record<'a>]) -> bool {
        let n = all.len();
        if n == 0 || self.list.len() <= n {
            return false;
        }
        let tail = &self.list[self.list.len() - n..];
        let copies = all
            .iter()
            .zip(tail)
            .all(|(set, put)| set.id_text().is_some() && set.id_text() == put.id_text());
        if !copies {
            return false;
        }
        let at = tail
            .first()
            .and_then(|r| r.timestamp.as_deref().map(str::to_string));
        self.list.truncate(self.list.len() - n);
        self.reindex();
        self.rewrites.push((n, at));
        true
    }

    /// The messages after a `$set` of all of them: the records read earlier,
    /// where they are kept, as they were (the rewrite drops their
    /// `displayContent`, thoughts and times); the new ones as given.
    fn replace_all(&mut self, all: Vec<Record<'a>>) {
        let mut next = Vec::with_capacity(all.len());
        for m in all {
            let earlier = m.id_text().and_then(|id| self.position(&id));
            match earlier {
                Some(i) => next.push(std::mem::take(&mut self.list[i])),
                None => next.push(m),
            }
        }
        self.list = next;
        self.reindex();
    }
}

pub(crate) fn read(path: &Path, bytes: Vec<u8>, subagent: Option<Subagent>) -> Transcript {
    let mut t = Transcript::default();
    let mut messages = Messages::default();
    if path.extension().is_some_and(|e| e == "json") {
        let text_in = String::from_utf8_lossy(&bytes);
        t.lines = text_in.lines().count();
        match decode::<Document<'_>>(text_in.as_bytes()) {
            Ok(doc) => {
                t.session = doc.session_id.owned();
                for raw in doc.messages.items {
                    if let Ok(record) = Record::parse(raw.get()) {
                        messages.list.push(record);
                    }
                }
            }
            Err(e) => t.malformed.push(e.line()),
        }
        return items(t, messages);
    }
    read_lines(&bytes, &mut t, &mut messages);
    if let (Some(sub), Some(id)) = (&subagent, t.session.clone()) {
        // A subagent's chat: its session begins where its first message does.
        let at = messages
            .list
            .first()
            .and_then(|m| m.timestamp.as_deref())
            .and_then(parse_time);
        t.begin_subagent(&id, &sub.parent, &sub.meta, at);
    }
    items(t, messages)
}

/// The records of a JSON-lines chat, applied in order.
fn read_lines<'a>(bytes: &'a [u8], t: &mut Transcript, messages: &mut Messages<'a>) {
    let mut number = 0;
    let mut rest = bytes;
    while !rest.is_empty() {
        let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..len];
        rest = rest.get(len + 1..).unwrap_or_default();
        number += 1;
        t.lines += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(record) = std::str::from_utf8(line)
            .ok()
            .and_then(|line| Record::parse(line).ok())
        else {
            t.malformed.push(number);
            continue;
        };
        if let Some(set) = record.set {
            if let Some(all) = set.messages {
                let all = all
                    .items
                    .into_iter()
                    .filter_map(|raw| Record::parse(raw.get()).ok())
                    .collect::<Vec<_>>();
                if !messages.rewrite(&all) {
                    messages.replace_all(all);
                }
            }
            continue;
        }
        if let Some(id) = record.rewind_to.as_deref() {
            messages.rewind_to(id);
            continue;
        }
        if !record.typed {
            // The metadata line.
            if t.session.is_none() {
                t.session = record.session_id.owned();
            }
            continue;
        }
        messages.put(record);
    }
}

/// A `user` record: Gemini's preamble (kept as it is), or a prompt — after
/// the run of the command it expanded, where one was typed (its expansion
/// went to the model, as the hooks' `BeforeAgent` records it).
fn user(t: &mut Transcript, m: &Record<'_>, key: String, at: Option<u64>) {
    let content = m.content.text(false).into_string();
    if is_preamble(&content) {
        t.other(AgentKind::Gemini, key, at, "session_context", m.value());
        return;
    }
    let typed = m.display_content.text(false).into_string();
    if typed.trim_start().starts_with('/') {
        t.run(key.clone(), at, &typed, Some(content.clone()), None);
    }
    t.prompt(key, at, content);
}

/// A reply by another model than the replies before it: the session's switch
/// (`/model` writes no record of its own). Returns the model now.
fn switched<'a>(
    t: &mut Transcript,
    had: Option<&'a str>,
    now: Option<&'a str>,
    key: &str,
    at: Option<u64>,
) -> Option<&'a str> {
    let Some(now) = now.filter(|m| !m.is_empty()) else {
        return had;
    };
    if had.is_some_and(|had| had != now) {
        t.push(
            format!("{key}#model"),
            at,
            cmdlog_engine::EventData::ModelSwitched(cmdlog_engine::event::ModelSwitched {
                model: now.to_string(),
            }),
        );
    }
    Some(now)
}

/// The transcript's items, from the messages as they stand.
fn items(mut t: Transcript, messages: Messages<'_>) -> Transcript {
    // The model of the replies so far: a reply by another is the session's
    // switch (`/model` writes no record of its own).
    let mut model: Option<&str> = None;
    for (i, m) in messages.list.iter().enumerate() {
        let key = m
            .id_text()
            .map(Cow::into_owned)
            .unwrap_or_else(|| format!("message {i}"));
        let at = m.timestamp.as_deref().and_then(parse_time);
        match m.kind.as_deref().unwrap_or("") {
            "user" if m.content.only_tool_results() => {}
            "user" => user(&mut t, m, key, at),
            "gemini" => {
                model = switched(&mut t, model, m.model.as_deref(), &key, at);
                let rewritten_thoughts = m.content.text(true);
                if !rewritten_thoughts.is_empty() {
                    t.update_raw(
                        format!("{key}/thought"),
                        at,
                        Update::thought_of(rewritten_thoughts),
                    );
                }
                for (j, thought) in m.thoughts.iter().enumerate() {
                    let said = format!(
                        "{}: {}",
                        thought.subject.as_deref().unwrap_or(""),
                        thought.description.as_deref().unwrap_or("")
                    );
                    t.update_raw(
                        format!("{key}/thought{j}"),
                        at,
                        Update::thought_of(Text::Plain(said)),
                    );
                }
                let content = m.content.text(false);
                if !content.is_empty() {
                    t.update_raw(key.clone(), at, Update::message_of(content));
                }
                for (j, call) in m.tool_calls.iter().enumerate() {
                    let id = call.id.as_deref().unwrap_or("");
                    t.update_raw(
                        format!("{key}/call{j}"),
                        at,
                        Update::tool_call(
                            id,
                            call.name.as_deref().unwrap_or("tool"),
                            call.args.unwrap_or(RawValue::NULL),
                        ),
                    );
                    if let Some(status) = call
                        .status
                        .as_deref()
                        .filter(|s| *s != "executing" && *s != "scheduled")
                    {
                        t.update_raw(
                            format!("{key}/result{j}"),
                            call.timestamp.as_deref().and_then(parse_time).or(at),
                            Update::tool_done(
                                id,
                                status == "error" || status == "cancelled",
                                call.result.unwrap_or(RawValue::NULL),
                            ),
                        );
                    }
                }
                // A reply with no tool call to run is the end of the turn.
                if m.tool_calls.is_empty() {
                    t.update(
                        format!("{key}/end"),
                        at,
                        json!({"sessionUpdate": "turn_complete", "stopReason": "end_turn"}),
                    );
                }
            }
            kind => t.other(
                AgentKind::Gemini,
                key,
                at,
                if kind.is_empty() { "message" } else { kind },
                m.value(),
            ),
        }
    }
    rewritten(&mut t, &messages.rewrites);
    t
}

/// Each rewrite of the chat, as what it is: the agent's bookkeeping, its
/// copies not read as what happened.
fn rewritten(t: &mut Transcript, rewrites: &[(usize, Option<String>)]) {
    for (i, (copies, at)) in rewrites.iter().enumerate() {
        t.other(
            AgentKind::Gemini,
            format!("rewrite {i}"),
            at.as_deref().and_then(parse_time),
            "chat_rewritten",
            Value::Object(serde_json::Map::from_iter([(
                "copies".to_string(),
                Value::from(*copies),
            )])),
        );
    }
}
