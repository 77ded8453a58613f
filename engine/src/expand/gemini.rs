//! Gemini CLI and Qwen Code file commands (google-gemini/gemini-cli
//! `docs/cli/custom-commands.md`, `packages/cli/src/services/prompt-processors/`;
//! QwenLM/qwen-code `docs/users/features/commands.md`):
//!
//! - `{{args}}` is the arguments — Gemini collapses every run of whitespace to one
//!   space, Qwen keeps inner whitespace and trims the ends; inside a `!{…}` shell
//!   block they are shell-escaped as the agents pass them to the shell (cmdlog never
//!   runs the block: the escaped text shows what would have run);
//! - a template without `{{args}}` gets the whole command line (`/name args`) after
//!   a blank line, when arguments were given;
//! - Qwen Markdown commands also take `$ARGUMENTS` (its documentation's placeholder).

use super::{Bounded, ExpandError, ExpandInput};

/// The trimmed command line, as the agents' `invocation.raw`.
fn whole_line(input: &ExpandInput<'_>) -> String {
    format!("/{}{}", input.name, input.raw_input)
        .trim()
        .to_string()
}

pub(super) fn gemini_cli(
    template: &str,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let args = input
        .raw_input
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    substitute(template, &args, false, input, out)
}

pub(super) fn qwen(
    template: &str,
    input: &ExpandInput<'_>,
    markdown: bool,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let args = input.raw_input.trim();
    substitute(template, args, markdown, input, out)
}

fn substitute(
    template: &str,
    args: &str,
    dollar_arguments: bool,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let placeholders: &[&str] = if dollar_arguments {
        &["{{args}}", "$ARGUMENTS"]
    } else {
        &["{{args}}"]
    };
    if !placeholders.iter().any(|p| template.contains(p)) {
        out.push(template)?;
        if !args.is_empty() {
            out.push("\n\n")?;
            out.push(&whole_line(input))?;
        }
        return Ok(());
    }
    let escaped = shell_quote(args);
    let mut depth = 0usize;
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(p) = placeholders.iter().find(|p| rest.starts_with(**p)) {
            out.push(if depth > 0 { &escaped } else { args })?;
            rest = &rest[p.len()..];
            continue;
        }
        if rest.starts_with("!{") {
            depth += 1;
            out.push("!{")?;
            rest = &rest[2..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        match c {
            '{' if depth > 0 => depth += 1,
            '}' if depth > 0 => depth -= 1,
            _ => {}
        }
        out.push_char(c)?;
        rest = &rest[c.len_utf8()..];
    }
    Ok(())
}

/// The `shell-quote` package's `quote` of one word, as Gemini CLI escapes `{{args}}`
/// inside `!{…}` for bash.
fn shell_quote(word: &str) -> String {
    if word.is_empty() {
        return String::new();
    }
    let has_space = word.chars().any(char::is_whitespace);
    if (word.contains('"') || has_space) && !word.contains('\'') {
        return format!("'{}'", word.replace('\\', "\\\\"));
    }
    if word.contains('"') || word.contains('\'') || has_space {
        let mut out = String::from("\"");
        for c in word.chars() {
            if matches!(c, '"' | '\\' | '$' | '`' | '!') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        return out;
    }
    let mut out = String::new();
    for c in word.chars() {
        if "#!\"$&'()*,:;<=>?@[\\]^`{|}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn run(dialect: &str, template: &str, name: &str, raw: &str) -> String {
        let vars = BTreeMap::new();
        let input = ExpandInput {
            name,
            raw_input: raw,
            arguments: &[],
            variables: &vars,
        };
        let mut out = Bounded::new(1 << 20);
        match dialect {
            "gemini" => gemini_cli(template, &input, &mut out),
            "qwen" => qwen(template, &input, false, &mut out),
            _ => qwen(template, &input, true, &mut out),
        }
        .unwrap();
        out.into_string()
    }

    #[test]
    fn gemini_worked_examples() {
        assert_eq!(
            run(
                "gemini",
                "Fix: {{args}}",
                "fix",
                "   the  \"button\"\n  bug  "
            ),
            "Fix: the \"button\" bug"
        );
        assert_eq!(
            run("gemini", "Parse it.", "cl", " 1.2.0  added \"x\""),
            "Parse it.\n\n/cl 1.2.0  added \"x\""
        );
        assert_eq!(run("gemini", "Parse it.", "cl", "   "), "Parse it.");
        assert_eq!(
            run(
                "gemini",
                "Find `{{args}}`:\n!{grep -r {{args}} .}",
                "g",
                " It's complicated"
            ),
            "Find `It's complicated`:\n!{grep -r \"It's complicated\" .}"
        );
        assert_eq!(
            run("gemini", "!{echo {{args}}}", "e", " a b"),
            "!{echo 'a b'}"
        );
        assert_eq!(
            run("gemini", "Review @{a.md}", "r", " now"),
            "Review @{a.md}\n\n/r now"
        );
    }

    #[test]
    fn qwen_keeps_inner_whitespace_and_reads_dollar_arguments_in_markdown() {
        assert_eq!(
            run(
                "qwen",
                "Review {{args}} now.",
                "review",
                "   a.ts\n  b.ts  "
            ),
            "Review a.ts\n  b.ts now."
        );
        assert_eq!(
            run("qwen-md", "Review $ARGUMENTS.", "rc", " src/"),
            "Review src/."
        );
        assert_eq!(
            run("qwen", "Review $ARGUMENTS.", "rc", " src/"),
            "Review $ARGUMENTS.\n\n/rc src/"
        );
    }
}
