//! A static, self-contained HTML report of a session (or the whole log), for sharing
//! an incident: a session's conversation (`report_conversation.rs`), a timeline of
//! runs with duration bars and outcome colours, and the registry as of the first
//! and the last event. No scripts, no external resources.

use std::fmt::Write as _;

use cmdlog_common::time::utc;
use cmdlog_engine::event::Outcome;
use cmdlog_engine::{Mode, Seq};
use cmdlog_store::Log;

use crate::audit::{AuditError, AuditFilter, AuditRow, audit};
use crate::html::escape_html;
use crate::registry_view::RegistryView;
use crate::sessions::sessions;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #ddd;vertical-align:top}\
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}\
code{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}\
.ok{color:#137333}.err{color:#b3261e;font-weight:600}.int{color:#9a6700;font-weight:600}.open{color:#666}\
.bar{height:10px;border-radius:2px;min-width:2px}.bar.ok{background:#34a853}.bar.err{background:#ea4335}.bar.int,.bar.open{background:#fbbc04}\
.meta{color:#555}.shadowed{color:#888}";

fn outcome_cell(row: &AuditRow) -> (&'static str, String) {
    match &row.outcome {
        None => ("open", "no done (in flight, or its process died)".into()),
        Some(Outcome::Error {
            text,
            interrupted: true,
        }) => ("int", format!("interrupted: {text}")),
        Some(Outcome::Error { text, .. }) => ("err", format!("error: {text}")),
        Some(Outcome::Success { text, prompt, .. }) => (
            "ok",
            prompt
                .as_deref()
                .or(text.as_deref())
                .unwrap_or("success")
                .to_string(),
        ),
    }
}

fn registry_table(out: &mut String, view: &RegistryView) {
    out.push_str("<table><tr><th>command</th><th>seq</th><th>provider</th><th>status</th><th>description</th></tr>");
    for c in &view.commands {
        let status = match (&c.shadowed_by, &c.why) {
            (Some(by), Some(why)) => format!("shadowed by seq {by}: {why}"),
            _ => "active".to_string(),
        };
        let class = if c.shadowed_by.is_some() {
            " class=\"shadowed\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class}><td><code>/{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape_html(&c.name),
            c.registration,
            escape_html(&c.provider),
            escape_html(&status),
            escape_html(&c.description)
        );
    }
    out.push_str("</table>");
}

/// The whole log's sessions, a subagent's under the session that delegated
/// to it.
fn sessions_table(out: &mut String, log: &Log) -> Result<(), AuditError> {
    let list = sessions(log, |_| {})?;
    out.push_str("<h2>Sessions</h2><table><tr><th>session</th><th>first</th><th>last</th><th>runs</th><th>errors</th><th>agents</th></tr>");
    for (depth, s) in crate::sessions::as_tree(&list) {
        let agents: Vec<&str> = s.agents.iter().map(String::as_str).collect();
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape_html(&s.tree_id(depth)),
            escape_html(&s.notes()),
            utc(s.first_at),
            utc(s.last_at),
            s.runs,
            s.errors,
            escape_html(&agents.join(", "))
        );
    }
    out.push_str("</table>");
    Ok(())
}

/// A session's subagents, each its own conversation nested under the session
/// that delegated to it, with the call that started it; and, for a
/// subagent's session, the session it works for.
fn subagents(out: &mut String, log: &Log, session: &str) -> Result<(), AuditError> {
    let list = sessions(log, |_| {})?;
    if let Some(me) = list.iter().find(|s| s.id == session)
        && let Some(parent) = &me.parent
    {
        let _ = write!(
            out,
            "<p class=\"meta\">a subagent of session {}{}</p>",
            escape_html(parent),
            escape_html(&me.notes())
        );
    }
    for child in list
        .iter()
        .filter(|s| s.parent.as_deref() == Some(session) && s.id != session)
    {
        let _ = write!(
            out,
            "<section class=\"subagent\"><h2>Subagent {}{}</h2>",
            escape_html(&child.id),
            escape_html(&child.notes())
        );
        crate::report_conversation::render(
            out,
            &crate::conversation::conversation(log, &child.id)?,
        );
        out.push_str("</section>");
    }
    Ok(())
}

/// Renders the report of `session` (or of the whole log) as one HTML document.
pub fn render_report(log: &Log, session: Option<&str>) -> Result<String, AuditError> {
    let filter = AuditFilter {
        session: session.map(str::to_string),
        ..AuditFilter::default()
    };
    let rows = audit(log, &filter, |_| {})?;
    let (first, last): (Seq, Seq) = match session {
        Some(s) => {
            let seqs = log.stream_seqs(s, 0)?;
            (
                seqs.first().copied().unwrap_or(0),
                seqs.last().copied().unwrap_or(0),
            )
        }
        None => (1.min(log.head().seq), log.head().seq),
    };
    let title = match session {
        Some(s) => format!("cmdlog report — session {s}"),
        None => "cmdlog report — whole log".to_string(),
    };
    let head = log.head();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}{}</style></head><body><h1>{}</h1>",
        escape_html(&title),
        crate::report_conversation::STYLE,
        escape_html(&title)
    );
    let errors = rows.iter().filter(|r| r.is_error()).count();
    let _ = write!(
        out,
        "<p class=\"meta\">events {first}–{last} of a log whose head is seq {} (hash <code>{}</code>); {} runs, {errors} settled as errors.</p>",
        head.seq,
        head.hash.to_hex(),
        rows.len()
    );
    match session {
        None => sessions_table(&mut out, log)?,
        Some(s) => {
            crate::report_conversation::render(
                &mut out,
                &crate::conversation::conversation(log, s)?,
            );
            subagents(&mut out, log, s)?;
        }
    }
    out.push_str("<h2>Timeline of runs</h2><table><tr><th>time (UTC)</th><th>seq</th><th>session</th><th>command</th><th>outcome</th><th>duration</th></tr>");
    let longest = rows
        .iter()
        .filter_map(|r| r.elapsed_us)
        .max()
        .unwrap_or(1)
        .max(1);
    for row in &rows {
        let (class, outcome) = outcome_cell(row);
        let input = match &row.input {
            Some(i) => format!("/{}{i}", row.command),
            None => format!("/{} (input not recorded)", row.command),
        };
        let attachments = if row.attachments.is_empty() {
            String::new()
        } else {
            format!(
                "<br><span class=\"meta\">attachments: {}</span>",
                escape_html(&row.attachments.join(", "))
            )
        };
        let (width, label) = match row.elapsed_us {
            Some(us) => (
                (us as f64 / longest as f64 * 100.0).max(1.0),
                format!("{:.1} ms", us as f64 / 1000.0),
            ),
            None => (100.0, "—".to_string()),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code>{attachments}</td><td class=\"{class}\"><code>{}</code></td><td><div class=\"bar {class}\" style=\"width:{width:.1}%\"></div>{label}</td></tr>",
            utc(row.at),
            row.seq,
            escape_html(row.session.as_deref().unwrap_or("-")),
            escape_html(&input),
            escape_html(&outcome)
        );
    }
    out.push_str("</table>");
    for (label, seq) in [("first", first), ("last", last)] {
        let state = crate::state_at(log, seq).map_err(|e| match e {
            cmdlog_engine::EngineOpenError::Read(r) => AuditError::Read(r),
            cmdlog_engine::EngineOpenError::Decode(d) => AuditError::Decode(d),
            other => AuditError::Read(cmdlog_store::ReadError::Storage {
                message: other.to_string(),
            }),
        })?;
        let view = RegistryView::new(&state, "main", Mode::NonInteractive);
        let _ = write!(
            out,
            "<h2>Registry as of the {label} event (seq {seq}; agent main, non_interactive)</h2>"
        );
        registry_table(&mut out, &view);
    }
    out.push_str("</body></html>\n");
    Ok(out)
}
