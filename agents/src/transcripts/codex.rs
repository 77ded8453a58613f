//! Codex's rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`,
//! one `{timestamp, type, payload}` per line. `event_msg` lines are what the user
//! saw (`user_message`, `agent_message`, `agent_reasoning`, `task_complete`);
//! `response_item` lines carry the tool calls and their outputs (`function_call`,
//! `function_call_output`, and the `custom_tool_call` pair). The model-facing
//! copies of messages in `response_item` repeat the `event_msg` ones and are
//! skipped. Custom prompts arrive already expanded: Codex records no command name.

use std::path::Path;

use serde_json::{Value, json};

use super::transcript::{JsonLines, Transcript};
use crate::updates::{chunk, tool_call, tool_done};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    let mut lines = JsonLines::open(path)?;
    while let Some(item) = lines.next(&mut t) {
        let (number, v) = item?;
        let key = format!("line {number}");
        let at = text(&v, "timestamp").and_then(parse_time);
        let payload = &v["payload"];
        let inner = text(payload, "type").unwrap_or("");
        match (text(&v, "type").unwrap_or(""), inner) {
            ("session_meta", _) => {
                t.session = text(payload, "id").map(str::to_string);
                t.other(AgentKind::Codex, key, at, "session_meta", payload.clone());
            }
            ("event_msg", "user_message") => {
                t.prompt(key, at, text(payload, "message").unwrap_or("").to_string());
            }
            ("event_msg", "agent_message") => {
                t.update(
                    key,
                    at,
                    chunk(
                        "agent_message_chunk",
                        text(payload, "message").unwrap_or(""),
                    ),
                );
            }
            ("event_msg", "agent_reasoning") => {
                t.update(
                    key,
                    at,
                    chunk("agent_thought_chunk", text(payload, "text").unwrap_or("")),
                );
            }
            ("event_msg", "task_complete") => {
                t.update(
                    key,
                    at,
                    json!({"sessionUpdate": "turn_complete", "stopReason": "end_turn"}),
                );
            }
            ("event_msg", "turn_aborted") => {
                t.update(
                    key,
                    at,
                    json!({"sessionUpdate": "turn_complete", "stopReason": "cancelled"}),
                );
            }
            ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
                let input = match payload["arguments"].as_str() {
                    Some(args) => {
                        serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.into()))
                    }
                    None => payload
                        .get("input")
                        .or_else(|| payload.get("action"))
                        .cloned()
                        .unwrap_or(Value::Null),
                };
                t.update(
                    key,
                    at,
                    tool_call(
                        text(payload, "call_id").unwrap_or(""),
                        text(payload, "name").unwrap_or(inner),
                        input,
                    ),
                );
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let output = payload.get("output").cloned().unwrap_or(Value::Null);
                let failed = output
                    .pointer("/metadata/exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|c| c != 0);
                t.update(
                    key,
                    at,
                    tool_done(text(payload, "call_id").unwrap_or(""), failed, output),
                );
            }
            // The model's copy of messages, reasoning, token counts, turn context:
            // repeats or bookkeeping.
            ("response_item", "message" | "reasoning")
            | ("event_msg", "token_count" | "exec_command_end" | "task_started")
            | ("turn_context", _) => {}
            (kind, inner) => {
                let event = if inner.is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind}/{inner}")
                };
                t.other(AgentKind::Codex, key, at, &event, payload.clone());
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
    Ok(t)
}
