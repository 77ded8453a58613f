//! Presentation helpers for the CLI: the terminal sanitiser, times and one-line
//! event summaries.
//!
//! **Invariant:** text from outside (command files, agents, HTTP bodies, file names)
//! reaches a terminal only through [`clean`], directly or through a [`Human`]
//! writer: no escape sequence of theirs is ever interpreted. `--json` output is
//! exact instead (JSON escapes C0 controls itself).

use std::io::{self, Write};

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

pub(crate) use cmdlog_common::time::micros as duration;
pub(crate) use cmdlog_common::time::utc;

/// `log ID (host HOST)`, the host's text made safe for a terminal.
pub(crate) fn identity(identity: &cmdlog_engine::event::LogIdentity) -> String {
    format!(
        "log {} (host {})",
        clean(&identity.id),
        clean(&identity.host)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
