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

use crate::limits::{BLOB_PARTS_MAX, FOLD_LINES};

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
    /// The values it names as stored in blobs, each a blob page's path
    /// piece (`H1+H2`): the page links them, loaded on demand.
    pub(crate) blobs: Vec<String>,
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
            blobs: blob_refs(text),
        }
    }
}

/// The blobs a piece of text names, each group of parts (`H1+H2`) as a path
/// piece of the blob page: a 64-digit hex run right after `blob`, and the
/// runs that follow it separated only by ` + `, quotes, commas and spaces.
pub(crate) fn blob_refs(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut groups: Vec<String> = Vec::new();
    let mut i = 0;
    // Where the last run ended, when a group is open.
    let mut open: Option<usize> = None;
    while i < bytes.len() {
        if !bytes[i].is_ascii_hexdigit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i - start != 64 {
            continue;
        }
        let run = &text[start..i];
        let joined = open.is_some_and(|end| {
            text[end..start]
                .bytes()
                .all(|b| matches!(b, b' ' | b'+' | b'"' | b',' | b'\n' | b'\t'))
        });
        let named = bytes[start.saturating_sub(16)..start]
            .windows(4)
            .any(|w| w == b"blob");
        match groups.last_mut() {
            Some(group) if joined && group.matches('+').count() + 1 < BLOB_PARTS_MAX => {
                group.push('+');
                group.push_str(run);
                open = Some(i);
            }
            _ if named => {
                groups.push(run.to_ascii_lowercase());
                open = Some(i);
            }
            _ => open = None,
        }
    }
    groups.dedup();
    groups
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

    #[test]
    fn the_blobs_an_event_names_are_found_and_nothing_else() {
        let (a, b) = ("a".repeat(64), "0123456789abcdef".repeat(4));
        let marker = format!("[cmdlog: 40000000 bytes stored as blob {a} + {b}]");
        assert_eq!(blob_refs(&marker), vec![format!("{a}+{b}")]);
        let acp = format!(
            "{{\n  \"cmdlog\": \"value stored as a blob\",\n  \"blob\": \"{b}\",\n  \"bytes\": 9\n}}"
        );
        assert_eq!(blob_refs(&acp), vec![b.clone()]);
        let listed = format!("\"blobs\": [\n    \"{a}\",\n    \"{b}\"\n  ]");
        assert_eq!(blob_refs(&listed), vec![format!("{a}+{b}")]);
        // A hash that is not named a blob (a commit, a chain hash) is no link.
        assert!(blob_refs(&format!("commit {a} and hash: {b}")).is_empty());
        assert!(blob_refs(&format!("blob {}", "a".repeat(63))).is_empty());
    }
}
