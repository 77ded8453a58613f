//! Claude Code's session transcripts: `~/.claude/projects/<project>/<session>.jsonl`,
//! one JSON object per line with `type` (`user`, `assistant`, `system`, `summary`,
//! …), `uuid`, `sessionId`, `timestamp` and a `message` in Anthropic's Messages
//! shape. A slash command is a `user` line whose whole text is the
//! `<command-name>` markup; a prompt command's expansion follows on an `isMeta`
//! user line, a built-in's output in `<local-command-stdout>`.

use std::path::Path;

use serde_json::Value;

use super::{JsonLines, Transcript, chunk, tool_call, tool_done};
use crate::agents::{AgentKind, parse_time, text};

/// The text between `<tag>` and `</tag>`.
fn tag<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&close)? + start;
    Some(&body[start..end])
}

/// The text of a message's content: a string, or its text blocks joined.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
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

pub(crate) fn read(path: &Path) -> std::io::Result<Transcript> {
    let mut t = Transcript::default();
    let mut lines = JsonLines::open(path)?;
    // A typed command waits for what follows: its expansion or its output.
    let mut open_command: Option<(String, Option<u64>, String)> = None;
    while let Some(item) = lines.next(&mut t) {
        let (number, mut v) = item?;
        if t.session.is_none() {
            t.session = text(&v, "sessionId").map(str::to_string);
        }
        let key = text(&v, "uuid")
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {number}"));
        let at = text(&v, "timestamp").and_then(parse_time);
        let kind = text(&v, "type").unwrap_or("").to_string();
        let kind = kind.as_str();
        let meta = v["isMeta"].as_bool().unwrap_or(false);
        let body = content_text(&v["message"]["content"])
            .or_else(|| v["content"].as_str().map(str::to_string));
        // What settles an open command: the expansion, the output, or anything else.
        if let Some((ckey, cat, cline)) = open_command.take() {
            let stdout = body.as_deref().and_then(|b| tag(b, "local-command-stdout"));
            if kind == "user" && meta && stdout.is_none() && body.is_some() {
                t.run(ckey, cat, &cline, body.clone(), None);
                continue;
            }
            if let Some(out) = stdout {
                t.run(ckey, cat, &cline, None, Some(out.to_string()));
                continue;
            }
            t.run(ckey, cat, &cline, None, None);
        }
        if v["isSidechain"].as_bool().unwrap_or(false) {
            t.other(AgentKind::ClaudeCode, key, at, "sidechain", v);
            continue;
        }
        match kind {
            "user" | "system" => {
                if let Some(line) = body.as_deref().and_then(command_line) {
                    open_command = Some((key, at, line));
                    continue;
                }
                let has_results = v["message"]["content"]
                    .as_array()
                    .is_some_and(|bs| bs.iter().any(|b| b["type"] == "tool_result"));
                if has_results {
                    let blocks = match v["message"]["content"].take() {
                        Value::Array(bs) => bs,
                        _ => Vec::new(),
                    };
                    for (i, mut r) in blocks
                        .into_iter()
                        .filter(|b| b["type"] == "tool_result")
                        .enumerate()
                    {
                        let id = r["tool_use_id"].as_str().unwrap_or("").to_string();
                        let failed = r["is_error"].as_bool().unwrap_or(false);
                        t.update(
                            format!("{key}/{i}"),
                            at,
                            tool_done(&id, failed, r["content"].take()),
                        );
                    }
                } else if kind == "user"
                    && !meta
                    && let Some(b) = body.filter(|b| !b.trim_start().starts_with("<local-command"))
                {
                    t.prompt(key, at, b);
                } else {
                    t.other(AgentKind::ClaudeCode, key, at, kind, v);
                }
            }
            "assistant" => {
                let stop = v["message"]["stop_reason"].as_str().map(str::to_string);
                let blocks = match v["message"]["content"].take() {
                    Value::Array(bs) => bs,
                    _ => Vec::new(),
                };
                for (i, mut b) in blocks.into_iter().enumerate() {
                    let k = format!("{key}/{i}");
                    match b["type"].as_str() {
                        Some("text") => t.update(
                            k,
                            at,
                            chunk("agent_message_chunk", b["text"].as_str().unwrap_or("")),
                        ),
                        Some("thinking") => t.update(
                            k,
                            at,
                            chunk("agent_thought_chunk", b["thinking"].as_str().unwrap_or("")),
                        ),
                        Some("tool_use") => {
                            let input = b["input"].take();
                            let call = tool_call(
                                b["id"].as_str().unwrap_or(""),
                                b["name"].as_str().unwrap_or("tool"),
                                input,
                            );
                            t.update(k, at, call);
                        }
                        _ => {}
                    }
                }
                if matches!(
                    stop.as_deref(),
                    Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
                ) {
                    let reason = match stop.as_deref() {
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
            other => t.other(
                AgentKind::ClaudeCode,
                key,
                at,
                if other.is_empty() { "unknown" } else { other },
                v,
            ),
        }
    }
    if let Some((ckey, cat, cline)) = open_command.take() {
        t.run(ckey, cat, &cline, None, None);
    }
    Ok(t)
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
}
