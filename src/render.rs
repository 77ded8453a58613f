//! Presentation helpers for the CLI: the terminal sanitiser, times and one-line
//! event summaries.
//!
//! **Invariant:** text from outside (command files, agents, HTTP bodies, file names)
//! reaches a terminal only through [`clean`], directly or through a [`Human`]
//! writer: no escape sequence of theirs is ever interpreted. `--json` output is
//! exact instead (JSON escapes C0 controls itself).

use std::io::{self, Write};

use cmdlog_engine::{Event, EventData, Outcome};

pub(crate) use cmdlog_common::terminal::clean;

/// A writer for text meant for people: everything written through it is passed
/// through [`clean`]; colour, which cmdlog adds itself, goes through [`Human::paint`].
/// With `raw` it passes bytes as they are (for `--json` output).
pub(crate) struct Human<W: Write> {
    inner: W,
    raw: bool,
}

impl Human<io::StdoutLock<'static>> {
    /// Standard output, cleaned unless `json`.
    pub(crate) fn stdout(json: bool) -> Self {
        Human::new(io::stdout().lock(), json)
    }
}

impl<W: Write> Human<W> {
    /// Cleans what is written to `inner` (unless `raw`).
    pub(crate) fn new(inner: W, raw: bool) -> Self {
        Human { inner, raw }
    }

    /// The writer underneath.
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }

    /// `text` (cleaned) in SGR colour `code` when `on`.
    pub(crate) fn paint(&mut self, on: bool, code: &str, text: &str) -> io::Result<()> {
        if on {
            write!(self.inner, "\x1b[{code}m")?;
        }
        self.inner.write_all(clean(text).as_bytes())?;
        if on {
            write!(self.inner, "\x1b[0m")?;
        }
        Ok(())
    }
}

impl<W: Write> Write for Human<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.raw {
            return self.inner.write(buf);
        }
        // `write!` hands over whole `str` pieces; other bytes are shown lossily.
        let text = String::from_utf8_lossy(buf);
        self.inner.write_all(clean(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) use cmdlog_common::time::utc;

/// `log ID (host HOST)`, the host's text made safe for a terminal.
pub(crate) fn identity(identity: &cmdlog_engine::LogIdentity) -> String {
    format!(
        "log {} (host {})",
        clean(&identity.id),
        clean(&identity.host)
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

pub(crate) use cmdlog_common::time::micros as duration;

#[cfg(test)]
mod tests {
    use super::*;
    use cmdlog_engine::Outcome;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        let mut out = Human::new(Vec::new(), false);
        let hostile = "\x1b]52;c;Zm9v\x07";
        write!(out, "x{hostile}y").unwrap();
        out.paint(true, "31", "\x1b[8mhidden").unwrap();
        assert_eq!(
            String::from_utf8(out.inner).unwrap(),
            "x\\u{1b}]52;c;Zm9v\\u{7}y\x1b[31m\\u{1b}[8mhidden\x1b[0m"
        );
    }

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
