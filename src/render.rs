//! Presentation helpers for the CLI: times and one-line event summaries.

use cmdlog_engine::{Event, EventData, Outcome};

/// `YYYY-MM-DD HH:MM:SS.mmm` UTC for unix milliseconds.
pub(crate) fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
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
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc(951_782_400_123), "2000-02-29 00:00:00.123");
        assert_eq!(utc(1_796_000_000_000), "2026-11-30 00:53:20.000");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(12), "12µs");
        assert_eq!(duration(1_500), "1.5ms");
        assert_eq!(duration(2_000_000), "2.00s");
    }
}
