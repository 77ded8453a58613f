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

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};

use super::transcript::{JsonLines, Transcript};
use crate::updates::{chunk, tool_call, tool_done};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

/// What a rollout's shell runs said, for the outputs that follow them.
#[derive(Default)]
struct Calls {
    /// Ids of the `function_call`s seen.
    called: HashSet<String>,
    /// Ids of the runs that failed (`CommandExecution` with a non-zero exit).
    failed: HashSet<String>,
}

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    let mut calls = Calls::default();
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
                t.mode = text(payload, "source").and_then(crate::headless::codex_source_mode);
                t.other(AgentKind::Codex, key, at, "session_meta", payload.clone());
            }
            ("event_msg", "item_completed") => {
                completed_item(&mut t, &mut calls, key, at, &payload["item"]);
            }
            ("event_msg", "user_message") => {
                t.prompt(key, at, text(payload, "message").unwrap_or("").to_string());
            }
            ("event_msg", "agent_message") => {
                let message = text(payload, "message").unwrap_or("");
                t.update(key, at, chunk("agent_message_chunk", message));
            }
            ("event_msg", "agent_reasoning") => {
                let thought = text(payload, "text").unwrap_or("");
                t.update(key, at, chunk("agent_thought_chunk", thought));
            }
            ("event_msg", "task_complete" | "turn_complete") => {
                let end = match payload.get("error").filter(|e| !e.is_null()) {
                    Some(error) => json!({
                        "sessionUpdate": "turn_error",
                        "message": text(error, "message").unwrap_or("the turn failed"),
                        "code": error.get("codex_error_info").cloned().unwrap_or(Value::Null),
                    }),
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
                let id = text(payload, "call_id").unwrap_or("");
                calls.called.insert(id.to_string());
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
                let name = text(payload, "name").unwrap_or(inner);
                t.update(key, at, tool_call(id, name, input));
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let id = text(payload, "call_id").unwrap_or("");
                let output = payload.get("output").cloned().unwrap_or(Value::Null);
                let failed =
                    calls.failed.contains(id) || exit_code(&output).is_some_and(|c| c != 0);
                t.update(key, at, tool_done(id, failed, output));
            }
            // The model's copy of messages and reasoning (the prompt and reply are
            // read from the event_msg items above), and what repeats each turn.
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

/// One `item_completed` of Codex 0.171.
fn completed_item(
    t: &mut Transcript,
    calls: &mut Calls,
    key: String,
    at: Option<u64>,
    item: &Value,
) {
    let texts = |field: &str, kind: &[&str]| -> String {
        item[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|part| kind.is_empty() || kind.contains(&text(part, "type").unwrap_or("")))
            .filter_map(|part| part.as_str().or_else(|| text(part, "text")))
            .collect::<Vec<_>>()
            .join("")
    };
    match text(item, "type").unwrap_or("") {
        "UserMessage" => t.prompt(key, at, texts("content", &["text"])),
        "AgentMessage" => {
            t.update(
                key,
                at,
                chunk("agent_message_chunk", &texts("content", &["Text", "text"])),
            );
        }
        "Reasoning" => {
            let summary = texts("summary_text", &[]);
            let thought = if summary.is_empty() {
                texts("raw_content", &[])
            } else {
                summary
            };
            if !thought.is_empty() {
                t.update(key, at, chunk("agent_thought_chunk", &thought));
            }
        }
        "CommandExecution" => {
            let id = text(item, "id").unwrap_or("");
            let failed = text(item, "status") == Some("failed")
                || item["exit_code"].as_i64().is_some_and(|c| c != 0);
            if failed {
                calls.failed.insert(id.to_string());
            }
            // A run inside a code-mode cell has no function_call of its own: it is
            // the tool call, and its item is how it settled.
            if !calls.called.contains(id) {
                let command = item["command"]
                    .as_array()
                    .and_then(|c| c.last())
                    .and_then(Value::as_str)
                    .unwrap_or("");
                t.update(
                    key.clone(),
                    at,
                    tool_call(id, "Bash", json!({"command": command})),
                );
                let output = json!({
                    "output": item.get("aggregated_output").cloned().unwrap_or(Value::Null),
                    "exit_code": item.get("exit_code").cloned().unwrap_or(Value::Null),
                });
                t.update(format!("{key}#done"), at, tool_done(id, failed, output));
            }
        }
        other => {
            let event = format!("item_completed/{other}");
            t.other(AgentKind::Codex, key, at, &event, item.clone());
        }
    }
}

/// A shell run's exit code in a tool output: the older `{metadata: {exit_code}}`
/// or the `Process exited with code N` line of Codex 0.171's plain text.
fn exit_code(output: &Value) -> Option<i64> {
    if let Some(code) = output
        .pointer("/metadata/exit_code")
        .and_then(Value::as_i64)
    {
        return Some(code);
    }
    let text = output.as_str()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse().ok())
}
