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

use std::io::BufRead;
use std::path::Path;

use serde_json::{Value, json};

use super::transcript::Transcript;
use crate::updates::{chunk, tool_call, tool_done};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

/// A message's text: a string, or the `text` of its parts (`thought` parts
/// when `thoughts`, the others otherwise).
fn message_text(content: &Value, thoughts: bool) -> String {
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

/// Whether a `user` record holds only tool results (`functionResponse` parts).
fn only_tool_results(content: &Value) -> bool {
    content.as_array().is_some_and(|parts| {
        !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some())
    })
}

/// Gemini's own text in the user's turn, which it skips itself on resume.
fn is_preamble(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("<session_context>") || text.starts_with("<hook_context>")
}

/// `messages` after a `$set` of all of them: the records read earlier, where
/// they are kept, as they were (the rewrite drops their `displayContent`,
/// thoughts and times); the new ones as given.
fn replace_all(messages: &mut Vec<Value>, all: &[Value]) {
    let mut next = Vec::with_capacity(all.len());
    for m in all {
        let earlier = m["id"]
            .as_str()
            .and_then(|id| messages.iter().position(|e| e["id"] == id));
        match earlier {
            Some(i) => next.push(std::mem::take(&mut messages[i])),
            None => next.push(m.clone()),
        }
    }
    *messages = next;
}

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    // The messages as they stand at the end of the file, in order.
    let mut messages: Vec<Value> = Vec::new();
    if path.extension().is_some_and(|e| e == "json") {
        let text_in = std::fs::read_to_string(path)?;
        t.lines = text_in.lines().count();
        match serde_json::from_str::<Value>(&text_in) {
            Ok(doc) => {
                t.session = text(&doc, "sessionId").map(str::to_string);
                messages = doc["messages"].as_array().cloned().unwrap_or_default();
            }
            Err(e) => t.malformed.push(e.line()),
        }
    } else {
        let file = std::fs::File::open(path)?;
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line?;
            t.lines += 1;
            if line.trim().is_empty() {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                t.malformed.push(n + 1);
                continue;
            };
            if let Some(set) = v.get("$set") {
                if let Some(all) = set["messages"].as_array() {
                    replace_all(&mut messages, all);
                }
                continue;
            }
            if let Some(id) = v.get("$rewindTo").and_then(Value::as_str) {
                if let Some(i) = messages.iter().position(|m| m["id"] == id) {
                    messages.truncate(i);
                }
                continue;
            }
            if v.get("type").is_none() {
                // The metadata line.
                if t.session.is_none() {
                    t.session = text(&v, "sessionId").map(str::to_string);
                }
                continue;
            }
            match messages
                .iter_mut()
                .find(|m| m["id"] == v["id"] && !v["id"].is_null())
            {
                Some(earlier) => *earlier = v,
                None => messages.push(v),
            }
        }
    }
    for (i, m) in messages.iter().enumerate() {
        let key = text(m, "id")
            .map(str::to_string)
            .unwrap_or_else(|| format!("message {i}"));
        let at = text(m, "timestamp").and_then(parse_time);
        let content = message_text(&m["content"], false);
        match text(m, "type").unwrap_or("") {
            "user" if only_tool_results(&m["content"]) => {}
            "user" if is_preamble(&content) => {
                t.other(AgentKind::Gemini, key, at, "session_context", m.clone());
            }
            "user" => {
                let typed = match &m["displayContent"] {
                    Value::Null => None,
                    shown => Some(message_text(shown, false)),
                };
                match typed.filter(|d| d.trim_start().starts_with('/')) {
                    Some(typed) => t.run(key, at, &typed, Some(content), None),
                    None => t.prompt(key, at, content),
                }
            }
            "gemini" => {
                let rewritten_thoughts = message_text(&m["content"], true);
                if !rewritten_thoughts.is_empty() {
                    t.update(
                        format!("{key}/thought"),
                        at,
                        chunk("agent_thought_chunk", &rewritten_thoughts),
                    );
                }
                for (j, thought) in m["thoughts"].as_array().into_iter().flatten().enumerate() {
                    let said = format!(
                        "{}: {}",
                        text(thought, "subject").unwrap_or(""),
                        text(thought, "description").unwrap_or("")
                    );
                    t.update(
                        format!("{key}/thought{j}"),
                        at,
                        chunk("agent_thought_chunk", &said),
                    );
                }
                if !content.is_empty() {
                    t.update(key.clone(), at, chunk("agent_message_chunk", &content));
                }
                for (j, call) in m["toolCalls"].as_array().into_iter().flatten().enumerate() {
                    let id = text(call, "id").unwrap_or("");
                    t.update(
                        format!("{key}/call{j}"),
                        at,
                        tool_call(
                            id,
                            text(call, "name").unwrap_or("tool"),
                            call["args"].clone(),
                        ),
                    );
                    if let Some(status) =
                        text(call, "status").filter(|s| *s != "executing" && *s != "scheduled")
                    {
                        t.update(
                            format!("{key}/result{j}"),
                            text(call, "timestamp").and_then(parse_time).or(at),
                            tool_done(
                                id,
                                status == "error" || status == "cancelled",
                                call.get("result").cloned().unwrap_or(json!(null)),
                            ),
                        );
                    }
                }
                // A reply with no tool call to run is the end of the turn.
                if m["toolCalls"].as_array().is_none_or(Vec::is_empty) {
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
                m.clone(),
            ),
        }
    }
    Ok(t)
}

/// Largest chat file read for [`last_reply`].
const CHAT_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// The text of the last `gemini` record of the chat at `path`: Gemini CLI 0.61's
/// `AfterAgent` hook gives a reply streamed in several chunks with the later
/// chunks repeated (`prompt_response`), while its chat has the reply as given.
/// `path` comes from a payload: it is read only when it is one of Gemini's chat
/// files under `gemini_tmp` (`~/.gemini/tmp`), a regular file of this user within
/// the size limit, opened without following a link.
pub(crate) fn last_reply(path: &Path, gemini_tmp: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let root = std::fs::canonicalize(gemini_tmp).ok()?;
    let name = real.file_name()?.to_str()?;
    let in_chats = real
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "chats");
    if !real.starts_with(&root) || !in_chats || !name.starts_with("session-") || real != path {
        return None;
    }
    let bytes = cmdlog_common::private_fs::read_untrusted(
        &real,
        cmdlog_common::private_fs::Expect {
            bytes_max: CHAT_BYTES_MAX,
            private: false,
        },
    )
    .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line).ok()?;
        (v["type"] == "gemini" && v["toolCalls"].as_array().is_none_or(Vec::is_empty))
            .then(|| message_text(&v["content"], false))
            .filter(|t| !t.is_empty())
    })
}
