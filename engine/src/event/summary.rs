//! One line per event and per outcome, as the log and audit tables show them:
//! what an event says, cut to its first line. The text is the event's own,
//! unescaped: a terminal that shows it escapes it.

use super::{Event, EventData, Outcome};

impl Event {
    /// A short, one-line description of what the event says.
    pub fn summary(&self) -> String {
        summary(self)
    }
}

impl Outcome {
    /// `success: first line`, `interrupted: text` or `error: text`.
    pub fn line(&self) -> String {
        outcome_line(self)
    }
}

/// A short, one-line description of what `event` says (`cmdlog log`'s last
/// column). Every type is named: a new one says what it shows.
pub(crate) fn summary(event: &Event) -> String {
    match &event.data {
        EventData::Registered(r) => format!(
            "/{} by {} (priority {}, {})",
            r.command.name, r.provider.id, r.provider.priority, r.command.source_label
        ),
        EventData::Unregistered(u) => format!(
            "registration {} ({})",
            u.registration,
            serde_json::to_value(u.reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        ),
        EventData::CommandRun(r) => format!(
            "/{}{}{}",
            r.name,
            r.raw_input.as_deref().unwrap_or(" (input not recorded)"),
            match r.attachments.len() {
                0 => String::new(),
                n => format!("  [{n} attachment{}]", if n == 1 { "" } else { "s" }),
            }
        ),
        EventData::AttachmentAdmitted(a) => format!(
            "{} ({}, {} bytes) blob {}",
            a.name,
            a.media_type,
            a.size,
            &a.blob[..a.blob.len().min(12)]
        ),
        EventData::CommandDone(d) => format!(
            "run {} {} in {}",
            d.run,
            outcome_line(&d.outcome),
            cmdlog_common::time::micros(d.elapsed_us)
        ),
        EventData::SessionCreated(c) => match c.mode {
            Some(mode) => format!("mode {mode}"),
            None => String::new(),
        },
        EventData::ModelSwitched(m) => m.model.clone(),
        EventData::ModeSet(m) => match &m.previous {
            Some(previous) => format!("{previous} -> {}", m.mode),
            None => m.mode.clone(),
        },
        EventData::ModelSwitchFailed(m) => format!(
            "{} refused: {}",
            m.model,
            m.error["message"].as_str().unwrap_or("?")
        ),
        EventData::SessionClosed(e) | EventData::SessionDied(e) | EventData::SessionEnded(e) => {
            e.reason.clone().unwrap_or_default()
        }
        EventData::DiscoveryWarning(w) => format!("{}: {}", w.path, w.message),
        EventData::SessionPrompt(p) => first_line(&p.text, 60),
        EventData::SessionUpdate(u) => {
            let kind = u["sessionUpdate"].as_str().unwrap_or("?");
            let detail = u["content"]["text"]
                .as_str()
                .or_else(|| u["title"].as_str())
                .or_else(|| u["status"].as_str())
                .or_else(|| u["stopReason"].as_str())
                .or_else(|| u["message"].as_str())
                .unwrap_or("");
            format!("{kind} {}", first_line(detail, 50))
                .trim_end()
                .to_string()
        }
        EventData::AgentEvent(a) => format!("{} {}", a.agent, a.event),
        EventData::AgentObserved(o) => o.summary(),
        EventData::ModelRequest(m) => m.summary(),
        EventData::ImportCheckpoint(c) => format!("{} {} ({} bytes)", c.source, c.file, c.bytes),
        EventData::Redacted(r) => format!(
            "{} secret(s) redacted from {} ({})",
            r.count,
            r.source,
            r.kinds.join(", ")
        ),
        EventData::AcpMessage(m) => {
            let what = m.message["method"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("answer to {}", m.message["id"]));
            format!("{:?} {what}", m.direction)
        }
        EventData::PermissionRequested(p) => p.request_id.clone(),
        EventData::PermissionResolved(p) | EventData::PermissionAlreadyResolved(p) => {
            format!("{} {}", p.request_id, p.decision)
        }
        // Said by their type alone.
        EventData::SessionCancelled(_)
        | EventData::WalDiscarded(_)
        | EventData::LogIdentity(_)
        | EventData::Unknown(_) => String::new(),
    }
}

/// `success: first line` or `error: text`.
pub(crate) fn outcome_line(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Success { text, prompt, .. } => {
            let body = prompt.as_deref().or(text.as_deref()).unwrap_or("");
            format!("success: {}", first_line(body, 50))
        }
        Outcome::Error {
            text,
            interrupted: true,
        } => format!("interrupted: {}", first_line(text, 50)),
        Outcome::Error { text, .. } => format!("error: {}", first_line(text, 50)),
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max {
        format!("{}...", line.chars().take(max).collect::<String>())
    } else if text.lines().nth(1).is_some() {
        format!("{line} ...")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_lines_are_one_short_line() {
        assert_eq!(outcome_line(&Outcome::text("done")), "success: done");
        assert_eq!(
            outcome_line(&Outcome::error("two\nlines")),
            "error: two ..."
        );
        let long = "x".repeat(80);
        assert_eq!(
            outcome_line(&Outcome::error(&long)),
            format!("error: {}...", "x".repeat(50))
        );
        let interrupted = Outcome::Error {
            text: "gone".into(),
            interrupted: true,
        };
        assert_eq!(outcome_line(&interrupted), "interrupted: gone");
    }
}
