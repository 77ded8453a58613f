//! Presentation helpers for the CLI: times and one-line event summaries.

use cmdlog_engine::{Event, EventData, Outcome};

/// `YYYY-MM-DD HH:MM:SS.mmm` UTC for unix milliseconds.
pub(crate) fn utc(ms: u64) -> String {
    cmdlog_replay::format_utc(ms)
}

/// A short, one-line description of what an event says.
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
            duration(d.elapsed_us)
        ),
        EventData::SessionCreated(c) => match c.mode {
            Some(mode) => format!("mode {mode}"),
            None => String::new(),
        },
        EventData::ModelSwitched(m) => m.model.clone(),
        EventData::DiscoveryWarning(w) => format!("{}: {}", w.path, w.message),
        EventData::SessionPrompt(p) => first_line(&p.text, 60),
        _ => String::new(),
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

/// `1.2ms`-style durations.
pub(crate) fn duration(us: u64) -> String {
    cmdlog_replay::format_duration(us)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdlog_engine::Outcome;

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
