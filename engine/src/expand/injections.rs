//! The injections an agent would act on in an expanded prompt — shell commands it
//! would run, files it would read or attach — which cmdlog never acts on. Found so
//! that every run and prompt holding one can say so.
//!
//! - Claude Code: `` !`cmd` `` at the start of a line or after whitespace, fenced
//!   ```` ```! ```` blocks, and `@path` file references;
//! - OpenCode: `` !`cmd` `` anywhere, and `@path` references;
//! - Gemini CLI and Qwen Code: `!{…}` and `@{…}` (balanced braces).

use crate::command::Dialect;

use crate::limits::SNIPPET_CHARS_MAX;

/// The injections in `text` that `dialect`'s agent would run or read, as written
/// (cut to 80 characters), in order.
pub fn injections(text: &str, dialect: Dialect) -> Vec<String> {
    let found = match dialect {
        Dialect::Claude => {
            let mut f = fenced_blocks(text);
            f.extend(inline_commands(text, true));
            f.extend(at_paths(text));
            f
        }
        Dialect::OpenCode => {
            let mut f = inline_commands(text, false);
            f.extend(at_paths(text));
            f
        }
        Dialect::GeminiCli | Dialect::QwenToml | Dialect::QwenMarkdown | Dialect::Gemini => {
            let mut f = braced(text, "!{");
            f.extend(braced(text, "@{"));
            f
        }
        Dialect::Codex | Dialect::Markdown => Vec::new(),
    };
    let mut found = found;
    found.sort_by_key(|(at, _)| *at);
    found
        .into_iter()
        .map(|(_, snippet)| {
            if snippet.chars().count() > SNIPPET_CHARS_MAX {
                format!(
                    "{}…",
                    snippet
                        .chars()
                        .take(SNIPPET_CHARS_MAX - 1)
                        .collect::<String>()
                )
            } else {
                snippet
            }
        })
        .collect()
}

/// `` !`…` ``, only at the start of a line or after whitespace when `bounded`.
fn inline_commands(text: &str, bounded: bool) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("!`") {
        let at = from + i;
        let before_ok = !bounded
            || text[..at]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace);
        let body = &text[at + 2..];
        match body.find('`') {
            Some(end) if end > 0 && before_ok => {
                out.push((at, text[at..at + 2 + end + 1].to_string()));
                from = at + 2 + end + 1;
            }
            _ => from = at + 2,
        }
    }
    out
}

/// Fenced blocks opened with ```` ```! ````.
fn fenced_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("```!") {
        let at = from + i;
        let end = text[at + 4..]
            .find("```")
            .map_or(text.len(), |e| at + 4 + e + 3);
        out.push((at, text[at..end].to_string()));
        from = end;
    }
    out
}

/// `@path` at the start of a line or after whitespace, where the reference looks
/// like a path (it has a `/` or a `.` inside): `@alice` is a name, `@src/a.rs` a file.
fn at_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('@') {
        if !text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
        {
            continue;
        }
        let rest = &text[at + 1..];
        let token = match rest.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => &rest[..end + 2],
                None => continue,
            },
            None => {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == ',' || c == '`')
                    .unwrap_or(rest.len());
                rest[..end].trim_end_matches(['.', ')', ';', ':'])
            }
        };
        let inner = token.trim_matches('"');
        if inner.contains('/') || inner.trim_start_matches('.').contains('.') {
            out.push((at, format!("@{token}")));
        }
    }
    out
}

/// `!{…}` or `@{…}` with balanced braces (an unclosed one runs to the end).
fn braced(text: &str, open: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(open) {
        let at = from + i;
        let mut depth = 0usize;
        let mut end = text.len();
        for (j, c) in text[at + 1..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1 + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((at, text[at..end].to_string()));
        from = end.max(at + open.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_agent_would_run_or_read() {
        assert_eq!(
            injections(
                "Status:\n!`git status` and KEY=!`x`\n```!\nls\n```\nsee @src/a.rs, not @alice",
                Dialect::Claude
            ),
            ["!`git status`", "```!\nls\n```", "@src/a.rs"]
        );
        assert_eq!(
            injections("Recent: KEY=!`git log -1` @README.md", Dialect::OpenCode),
            ["!`git log -1`", "@README.md"]
        );
        assert_eq!(
            injections(
                "Diff: !{git diff {{args}}} and @{docs/a.md}",
                Dialect::GeminiCli
            ),
            ["!{git diff {{args}}}", "@{docs/a.md}"]
        );
        assert!(injections("!{x} !`y` @a/b", Dialect::Codex).is_empty());
        assert!(injections("email me@example.com", Dialect::Claude).is_empty());
    }
}
