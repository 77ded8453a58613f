//! Qwen Code's chats: `~/.qwen/projects/<project>/chats/<session>.jsonl`, one
//! `ChatRecord` per line: `uuid`, `sessionId`, `timestamp`, `type` (`user`,
//! `assistant`, `tool_result`, `system` with a `subtype`) and a Gemini-style
//! `message` (`parts`: text, thought, functionCall, functionResponse). A slash
//! command is a `system` record of subtype `slash_command` whose `systemPayload`
//! holds the `rawCommand`; when it expanded, the next `user` record is the
//! expansion.

use std::path::Path;

use serde_json::Value;

use super::transcript::{JsonLines, Transcript};
use crate::updates::{chunk, tool_call, tool_done};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    let mut lines = JsonLines::open(path)?;
    let mut open_command: Option<(String, Option<u64>, String)> = None;
    while let Some(item) = lines.next(&mut t) {
        let (number, v) = item?;
        if t.session.is_none() {
            t.session = text(&v, "sessionId").map(str::to_string);
        }
        let key = text(&v, "uuid")
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {number}"));
        let at = text(&v, "timestamp").and_then(parse_time);
        let parts = v["message"]["parts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let said: String = parts
            .iter()
            .filter(|p| !p["thought"].as_bool().unwrap_or(false))
            .filter_map(|p| p["text"].as_str())
            .collect();
        let kind = text(&v, "type").unwrap_or("");
        if let Some((ckey, cat, cline)) = open_command.take() {
            if kind == "user" {
                t.run(ckey, cat, &cline, Some(said), None);
                continue;
            }
            // A command that answered in the UI settles with its result.
            if kind == "system"
                && text(&v, "subtype") == Some("slash_command")
                && text(&v["systemPayload"], "phase") == Some("result")
            {
                let output = v["systemPayload"]["outputHistoryItems"]
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|i| i["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .filter(|o| !o.is_empty());
                t.run(ckey, cat, &cline, None, output);
                continue;
            }
            t.run(ckey, cat, &cline, None, None);
        }
        match kind {
            "system" if text(&v, "subtype") == Some("slash_command") => {
                let payload = &v["systemPayload"];
                match (text(payload, "phase"), text(payload, "rawCommand")) {
                    (Some("invocation") | None, Some(raw)) => {
                        open_command = Some((key, at, raw.to_string()))
                    }
                    _ => t.other(AgentKind::Qwen, key, at, "slash_command", payload.clone()),
                }
            }
            "user" => t.prompt(key, at, said),
            "assistant" => {
                for (i, p) in parts.iter().enumerate() {
                    let k = format!("{key}/{i}");
                    if let Some(text_part) = p["text"].as_str() {
                        let kind = if p["thought"].as_bool().unwrap_or(false) {
                            "agent_thought_chunk"
                        } else {
                            "agent_message_chunk"
                        };
                        t.update(k, at, chunk(kind, text_part));
                    } else if let Some(call) = p.get("functionCall") {
                        t.update(
                            k,
                            at,
                            tool_call(
                                text(call, "id").unwrap_or(""),
                                text(call, "name").unwrap_or("tool"),
                                call["args"].clone(),
                            ),
                        );
                    }
                }
            }
            "tool_result" => {
                let result = &v["toolCallResult"];
                let id = text(result, "callId")
                    .or_else(|| {
                        parts
                            .iter()
                            .find_map(|p| p["functionResponse"]["id"].as_str())
                    })
                    .unwrap_or("");
                let failed = matches!(text(result, "status"), Some("error" | "cancelled"));
                let output = result
                    .get("resultDisplay")
                    .cloned()
                    .unwrap_or_else(|| Value::Array(parts.clone()));
                t.update(key, at, tool_done(id, failed, output));
            }
            other => {
                let event = match text(&v, "subtype") {
                    Some(sub) => format!("{other}/{sub}"),
                    None => other.to_string(),
                };
                t.other(AgentKind::Qwen, key, at, &event, v.clone());
            }
        }
    }
    if let Some((ckey, cat, cline)) = open_command.take() {
        t.run(ckey, cat, &cline, None, None);
    }
    Ok(t)
}
