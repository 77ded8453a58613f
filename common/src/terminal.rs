//! The terminal sanitiser.
//!
//! **Invariant:** text from outside (command files, agents, HTTP bodies, file
//! names, hub messages) reaches a terminal only through [`clean`]: no escape
//! sequence of theirs is ever interpreted. `--json` output is exact instead (JSON
//! escapes C0 controls itself).

use std::borrow::Cow;

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
}
