//! How outside text is held for a page: control and bidirectional
//! characters shown visibly, as every terminal output of cmdlog shows them
//! (the template then escapes HTML's own characters).

/// `text` as a page shows it.
pub(crate) fn shown(text: &str) -> String {
    cmdlog_common::terminal::clean(text).into_owned()
}

/// A time as the pages show it (UTC).
pub(crate) fn time(ms: u64) -> String {
    cmdlog_common::time::utc(ms)
}

/// `text` as a piece of a URL path or query: every byte but unreserved ones
/// percent-encoded (RFC 3986), so an id with `/`, `?` or `#` stays one piece.
pub(crate) fn url_piece(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

use crate::limits::FOLD_LINES;

/// A block of outside text as a page shows it: its lines, and whether it is
/// long enough to be folded (past [`FOLD_LINES`] lines).
pub(crate) struct Block {
    /// What it is (`input`, `output`, `thought`…).
    pub(crate) label: String,
    /// The text, shown.
    pub(crate) text: String,
    /// How many lines it has.
    pub(crate) lines: usize,
    /// Whether the page folds it (a `<details>` the reader opens).
    pub(crate) folded: bool,
}

impl Block {
    /// A block shown whole, however long.
    pub(crate) fn open(label: &str, text: &str) -> Block {
        Block {
            folded: false,
            ..Block::new(label, text, false)
        }
    }

    pub(crate) fn new(label: &str, text: &str, always_fold: bool) -> Block {
        let lines = text.lines().count().max(1);
        Block {
            label: shown(label),
            text: shown(text),
            lines,
            folded: always_fold || lines > FOLD_LINES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_is_shown_visibly_and_ids_stay_one_url_piece() {
        assert_eq!(shown("a\u{202e}b\u{1b}[2J"), "a\\u{202e}b\\u{1b}[2J");
        assert_eq!(url_piece("s-1/../x?y#z é"), "s-1%2F..%2Fx%3Fy%23z%20%C3%A9");
        let b = Block::new("output", &"x\n".repeat(9), false);
        assert!(b.folded && b.lines == 9);
        assert!(!Block::new("input", "one line", false).folded);
    }
}
