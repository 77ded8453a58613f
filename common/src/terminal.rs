//! The terminal sanitiser.
//!
//! **Invariant:** text from outside (command files, agents, HTTP bodies, file
//! names, hub messages) reaches a terminal only through [`clean`]: no escape
//! sequence of theirs is ever interpreted. `--json` output is exact instead (JSON
//! escapes C0 controls itself).

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `c` must not reach a terminal as itself: C0 controls but newline and
/// tab, DEL, C1 controls (U+0080–U+009F, which some terminals obey as escapes), and
/// the Unicode bidirectional overrides and isolates (which reorder what is shown).
fn hazardous(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every hazardous character shown visibly as `\u{1b}`; borrowed
/// unchanged when it has none. Newlines and tabs are kept.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hazardous) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hazardous(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer for text meant for people: everything written through it is passed
/// through [`clean`]; colour, which cmdlog adds itself, goes through [`Human::paint`].
/// With `raw` it passes bytes as they are (for `--json` output).
pub struct Human<W: Write> {
    inner: W,
    raw: bool,
}

impl Human<io::StdoutLock<'static>> {
    /// Standard output, cleaned unless `json`.
    pub fn stdout(json: bool) -> Self {
        Human::new(io::stdout().lock(), json)
    }
}

impl<W: Write> Human<W> {
    /// Cleans what is written to `inner` (unless `raw`).
    pub fn new(inner: W, raw: bool) -> Self {
        Human { inner, raw }
    }

    /// The writer underneath.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// `text` (cleaned) in SGR colour `code` when `on`.
    pub fn paint(&mut self, on: bool, code: &str, text: &str) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(clean("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(clean("plain"), Cow::Borrowed(_)));
        assert_eq!(
            clean("a\x1b]0;title\x07b\x1b[2Jc\u{9b}31md\u{202e}e\r"),
            "a\\u{1b}]0;title\\u{7}b\\u{1b}[2Jc\\u{9b}31md\\u{202e}e\\u{d}"
        );
    }

    #[test]
    fn a_human_writer_shows_escapes_and_paints_only_its_own() {
        let mut out = Human::new(Vec::new(), false);
        let hostile = "\x1b]52;c;Zm9v\x07";
        write!(out, "x{hostile}y").unwrap();
        out.paint(true, "31", "\x1b[8mhidden").unwrap();
        assert_eq!(
            String::from_utf8(out.into_inner()).unwrap(),
            "x\\u{1b}]52;c;Zm9v\\u{7}y\x1b[31m\\u{1b}[8mhidden\x1b[0m"
        );
    }
}
