//! The conversation section of the HTML report: each entry of a session's
//! conversation as a block — who said it, when, and what — text from outside
//! shown visibly where it holds control or bidirectional characters, then
//! escaped; thoughts folded.

use std::fmt::Write as _;

use cmdlog_common::terminal::clean;
use cmdlog_engine::event::Outcome;

use crate::conversation::Entry;
use crate::html::escape_html;
use crate::limits::REPORT_ENTRY_BYTES_MAX;

/// The report's style for the conversation.
pub(crate) const STYLE: &str = ".conv{border-left:3px solid #ddd;padding:4px 10px;margin:6px 0}\
.conv pre{margin:2px 0;white-space:pre-wrap;word-break:break-word;font:13px/1.4 ui-monospace,monospace}\
.conv .who{font-size:12px;color:#555}.user{border-color:#1a73e8}.agent{border-color:#34a853}\
.tool{border-color:#9334e6}.perm{border-color:#fbbc04}.run{border-color:#666}.end{border-color:#ccc;color:#555}\
.conflict{border-color:#d93025;background:#fce8e6}";

/// Text from outside, made safe to show: controls and bidirectional overrides
/// visible, HTML escaped, cut at [`REPORT_ENTRY_BYTES_MAX`] bytes with a note.
fn shown(text: &str) -> String {
    let clean = clean(text);
    if clean.len() <= REPORT_ENTRY_BYTES_MAX {
        return escape_html(&clean);
    }
    let mut end = REPORT_ENTRY_BYTES_MAX;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} bytes more; the whole text is in the log)",
        escape_html(&clean[..end]),
        clean.len() - end
    )
}

fn block(out: &mut String, class: &str, who: &str, body: &str) {
    let _ = write!(
        out,
        "<div class=\"conv {class}\"><div class=\"who\">{who}</div>{body}</div>"
    );
}

/// Appends the conversation section.
pub(crate) fn render(out: &mut String, entries: &[Entry]) {
    out.push_str("<h2>Conversation</h2>");
    if entries.is_empty() {
        out.push_str("<p class=\"meta\">no prompts or messages recorded.</p>");
        return;
    }
    for entry in entries {
        match entry {
            Entry::Prompt { seq, at, text } => block(
                out,
                "user",
                &format!("prompt · seq {seq} · {}", cmdlog_common::time::utc(*at)),
                &format!("<pre>{}</pre>", shown(text)),
            ),
            Entry::Message { seq, text } => block(
                out,
                "agent",
                &format!("agent · seq {seq}"),
                &format!("<pre>{}</pre>", shown(text)),
            ),
            Entry::Thought { seq, text } => block(
                out,
                "agent",
                &format!("agent's thought · seq {seq}"),
                &format!(
                    "<details><summary>thought ({} characters)</summary><pre>{}</pre></details>",
                    text.chars().count(),
                    shown(text)
                ),
            ),
            Entry::ToolCall {
                seq,
                id,
                title,
                status,
                input,
                output,
            } => {
                let mut body = format!("<pre>{}</pre>", shown(title));
                if let Some(input) = input {
                    let text = serde_json::to_string_pretty(input).unwrap_or_default();
                    let _ = write!(
                        body,
                        "<div class=\"who\">input</div><pre>{}</pre>",
                        shown(&text)
                    );
                }
                if let Some(output) = output {
                    let _ = write!(
                        body,
                        "<div class=\"who\">output</div><pre>{}</pre>",
                        shown(output)
                    );
                }
                block(
                    out,
                    "tool",
                    &format!("tool call {} · {} · seq {seq}", shown(id), shown(status)),
                    &body,
                );
            }
            Entry::Permission { .. } => permission(out, entry),
            Entry::Setting { seq, .. } => block(
                out,
                "end",
                &format!("session setting · seq {seq}"),
                &format!(
                    "<div>{}</div>",
                    shown(&crate::conversation::setting_text(entry))
                ),
            ),
            Entry::Run { seq, line, outcome } => run(out, *seq, line, outcome.as_ref()),
            Entry::Conflict {
                seq,
                of,
                source,
                fact,
                fields,
            } => {
                let said: String = fields
                    .iter()
                    .map(|(k, v)| format!("<div>{}:</div><pre>{}</pre>", shown(k), shown(v)))
                    .collect();
                block(
                    out,
                    "conflict",
                    &format!(
                        "conflict · seq {seq} · {} states {} differently from seq {of}",
                        shown(source),
                        shown(fact)
                    ),
                    &said,
                );
            }
            Entry::TurnEnd { seq, how, error } => block(
                out,
                "end",
                &format!(
                    "turn {} · seq {seq}",
                    if *error { "failed" } else { "ended" }
                ),
                &format!("<div>{}</div>", shown(how)),
            ),
        }
    }
}

/// A permission question: what it was about, the options, the answer and who gave it.
fn permission(out: &mut String, entry: &Entry) {
    let Entry::Permission {
        seq,
        about,
        options,
        ..
    } = entry
    else {
        return;
    };
    let answer = shown(&crate::conversation::permission_answer(entry));
    block(
        out,
        "perm",
        &format!("permission asked · seq {seq}"),
        &format!(
            "<pre>{}</pre><div>options: {} — {answer}</div>",
            shown(about.as_deref().unwrap_or("(no tool call named)")),
            shown(&options.join(", "))
        ),
    );
}

/// A command run and how it settled.
fn run(out: &mut String, seq: u64, line: &str, outcome: Option<&Outcome>) {
    let settled = match outcome {
        None => "not settled".to_string(),
        Some(Outcome::Success {
            prompt: Some(_), ..
        }) => "expanded (the prompt below)".to_string(),
        Some(Outcome::Success { text, .. }) => match text {
            Some(t) => format!("answered: {}", shown(t)),
            None => "done".to_string(),
        },
        Some(Outcome::Error { text, .. }) => format!("error: {}", shown(text)),
    };
    block(
        out,
        "run",
        &format!("command run · seq {seq}"),
        &format!("<pre>{}</pre><div>{settled}</div>", shown(line)),
    );
}
