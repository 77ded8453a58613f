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

use std::path::Path;

use cmdlog_engine::Delivery;
use serde_json::{Value, json};

use super::transcript::{JsonLines, Transcript};
use crate::updates::{chunk, tool_call, tool_done};
use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, text};

/// A slash command whose invocation was read and whose settling was not yet.
struct OpenCommand {
    key: String,
    at: Option<u64>,
    line: String,
    /// Whether its expansion goes to the model (then the next `user` record).
    sent_to_model: bool,
    /// What its `result` record showed.
    output: Option<String>,
}

impl OpenCommand {
    fn settle(self, t: &mut Transcript, prompt: Option<String>) {
        t.run(self.key, self.at, &self.line, prompt, self.output);
    }
}

/// The `result` record's items as text: their `text`, or (an item that shows
/// something else, `/about`'s system info) the item as JSON.
fn result_output(payload: &Value) -> Option<String> {
    let items = payload["outputHistoryItems"].as_array()?;
    let shown: Vec<String> = items
        .iter()
        .map(|i| match i["text"].as_str() {
            Some(text) => text.to_string(),
            None => i.to_string(),
        })
        .collect();
    (!shown.is_empty()).then(|| shown.join("\n"))
}

/// What the user said in a `user` record: what the UI showed when Qwen kept it
/// (`systemPayload.displayText`), else its text parts but a hook's context.
fn user_text(v: &Value, parts: &[Value]) -> String {
    if let Some(shown) = text(&v["systemPayload"], "displayText") {
        return shown.to_string();
    }
    parts
        .iter()
        .filter(|p| !p["thought"].as_bool().unwrap_or(false))
        .filter_map(|p| p["text"].as_str())
        .filter(|s| {
            !s.trim_start()
                .starts_with("<qwen:user-prompt-submit-context>")
        })
        .collect()
}

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    let mut lines = JsonLines::open(path)?;
    let mut open: Option<OpenCommand> = None;
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
        let kind = text(&v, "type").unwrap_or("");
        let subtype = text(&v, "subtype");
        let phase = text(&v["systemPayload"], "phase");
        if let Some(mut command) = open.take() {
            match (kind, subtype, phase) {
                // The expansion the model received.
                ("user", None, _) => {
                    command.settle(&mut t, Some(user_text(&v, &parts)));
                    continue;
                }
                ("system", Some("slash_command"), Some("result")) => {
                    command.output = result_output(&v["systemPayload"]);
                    if command.sent_to_model {
                        open = Some(command);
                    } else {
                        command.settle(&mut t, None);
                    }
                    continue;
                }
                // Qwen's own records between the command and its expansion.
                ("system", sub, _) if sub != Some("slash_command") && command.sent_to_model => {
                    open = Some(command);
                }
                _ => command.settle(&mut t, None),
            }
        }
        match (kind, subtype) {
            ("system", Some("slash_command")) => {
                let payload = &v["systemPayload"];
                match (phase, text(payload, "rawCommand")) {
                    (Some("invocation") | None, Some(raw)) => {
                        open = Some(OpenCommand {
                            key,
                            at,
                            line: raw.to_string(),
                            sent_to_model: payload["sentToModel"].as_bool().unwrap_or(true),
                            output: None,
                        })
                    }
                    _ => t.other(AgentKind::Qwen, key, at, "slash_command", payload.clone()),
                }
            }
            ("user", None) => t.prompt(key, at, user_text(&v, &parts)),
            ("user", Some("mid_turn_user_message")) => {
                t.prompt_as(key, at, user_text(&v, &parts), Delivery::Steer);
            }
            // Sent to the model as the user's turn by Qwen itself.
            ("user", Some(sub)) => {
                let event = format!("user/{sub}");
                t.noted(AgentKind::Qwen, key, at, &event, v.clone());
            }
            ("assistant", _) => {
                let mut called = false;
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
                        called = true;
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
                if !called {
                    t.update(
                        format!("{key}/end"),
                        at,
                        json!({"sessionUpdate": "turn_complete", "stopReason": "end_turn"}),
                    );
                }
            }
            ("tool_result", _) => {
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
            (other, sub) => {
                let event = match sub {
                    Some(sub) => format!("{other}/{sub}"),
                    None => other.to_string(),
                };
                t.other(AgentKind::Qwen, key, at, &event, v.clone());
            }
        }
    }
    if let Some(command) = open.take() {
        command.settle(&mut t, None);
    }
    Ok(t)
}
