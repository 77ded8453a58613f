//! HTML text: what the report writes of text from outside.

/// Escapes text from outside for HTML content and attribute values: controls and
/// bidirectional overrides shown visibly (`\u{1b}`, as every terminal output
/// does: `cmdlog_common::terminal::clean`), then HTML's special characters.
pub fn escape_html(text: &str) -> String {
    let text = cmdlog_common::terminal::clean(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape_html("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        // A telemetry command name with ESC, BEL and U+202E: all visible.
        let shown = escape_html("/x\u{1b}[2J\u{7}\u{202e}evil");
        assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{shown}");
        assert!(
            shown.contains("\\u{1b}") && shown.contains("\\u{202e}"),
            "{shown}"
        );
    }
}
