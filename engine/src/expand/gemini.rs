//! Gemini CLI and Qwen Code file commands (google-gemini/gemini-cli
//! `docs/cli/custom-commands.md`, `packages/cli/src/services/prompt-processors/`;
//! QwenLM/qwen-code `docs/users/features/commands.md` and the same processors in
//! its release 0.24.4, run against a model of ours: `docs/dialects.md`):
//!
//! - `{{args}}` is the arguments — Gemini collapses every run of whitespace to one
//!   space, Qwen keeps inner whitespace and trims the ends; inside a `!{…}` shell
//!   block they are shell-escaped as the agents pass them to the shell (cmdlog never
//!   runs the block: the escaped text shows what would have run);
//! - a template without `{{args}}` gets the whole command line (`/name args`) after
//!   a blank line, when arguments were given;
//! - `$ARGUMENTS` is no placeholder in either agent's prompt text — Qwen Code
//!   leaves it as written, Markdown command or TOML — except inside a `!{…}` block,
//!   where Qwen puts the arguments (one pair of surrounding single quotes taken
//!   off; shell-escaped when they hold a shell operator).

use super::{Bounded, ExpandError, ExpandInput};

/// The trimmed command line, as the agents' `invocation.raw`.
fn whole_line(input: &ExpandInput<'_>) -> String {
    format!("/{}{}", input.name, input.raw_input)
        .trim()
        .to_string()
}

/// Where Gemini CLI and Qwen Code differ.
#[derive(Clone, Copy)]
struct Flavor {
    /// `$ARGUMENTS` inside `!{…}` is the arguments (Qwen).
    dollar_arguments_in_shell: bool,
    /// The bundled `shell-quote` escapes `~` (Qwen's newer copy).
    escape_tilde: bool,
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
    let flavor = Flavor {
        dollar_arguments_in_shell: false,
        escape_tilde: false,
    };
    substitute(template, &args, flavor, input, out)
}

/// Qwen Code, Markdown and TOML commands alike (a Markdown body is trimmed when
/// it is read; a TOML prompt is kept as written).
pub(super) fn qwen(
    template: &str,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let args = input.raw_input.trim();
    let flavor = Flavor {
        dollar_arguments_in_shell: true,
        escape_tilde: true,
    };
    substitute(template, args, flavor, input, out)
}

const ARGS: &str = "{{args}}";
const DOLLAR_ARGUMENTS: &str = "$ARGUMENTS";

fn substitute(
    template: &str,
    args: &str,
    flavor: Flavor,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let escaped = shell_quote(args, flavor.escape_tilde);
    // Qwen's `$ARGUMENTS` in a shell block: the arguments without one pair of
    // surrounding single quotes, unless they hold a shell operator.
    let unquoted = args
        .strip_prefix('\'')
        .and_then(|a| a.strip_suffix('\''))
        .unwrap_or(args);
    let in_shell = if is_safe_argument(unquoted) {
        unquoted
    } else {
        &escaped
    };
    let mut depth = 0usize;
    let mut rest = template;
    while !rest.is_empty() {
        if rest.starts_with(ARGS) {
            out.push(if depth > 0 { &escaped } else { args })?;
            rest = &rest[ARGS.len()..];
            continue;
        }
        if depth > 0 && flavor.dollar_arguments_in_shell && rest.starts_with(DOLLAR_ARGUMENTS) {
            out.push(in_shell)?;
            rest = &rest[DOLLAR_ARGUMENTS.len()..];
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
    if !template.contains(ARGS) && !args.is_empty() {
        out.push("\n\n")?;
        out.push(&whole_line(input))?;
    }
    Ok(())
}

/// Qwen Code's check of arguments put into a shell command unescaped: no command
/// substitution, separator, pipe, background or redirection.
fn is_safe_argument(args: &str) -> bool {
    let operators = ["$(", "`", "<(", ">(", ";", "|", "&&", " &", "& "];
    if operators.iter().any(|o| args.contains(o)) {
        return false;
    }
    let redirects = |op: char| {
        args.char_indices().any(|(i, c)| {
            c == op
                && (args[i + 1..].starts_with(char::is_whitespace)
                    || args[..i].ends_with(|p: char| p.is_ascii_digit()))
        })
    };
    !(redirects('>') || redirects('<'))
}

/// The `shell-quote` package's `quote` of one word, as both agents escape the
/// arguments for bash (`escape_tilde`: Qwen's newer copy also escapes `~`).
fn shell_quote(word: &str, escape_tilde: bool) -> String {
    if word.is_empty() {
        return "''".to_string();
    }
    let has_space = word.chars().any(char::is_whitespace);
    if (word.contains('"') || has_space || word.contains('\\')) && !word.contains('\'') {
        return format!("'{word}'");
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
    // Each special character is escaped; a drive letter and colon before one
    // (`C:`) is kept as it is.
    let special = |c: char| "#!\"$&'()*,:;<=>?@[\\]^`{|}".contains(c) || (escape_tilde && c == '~');
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_alphabetic()
            && chars.get(i + 1) == Some(&':')
            && chars.get(i + 2).is_some_and(|c| special(*c))
        {
            out.push(chars[i]);
            out.push(':');
            out.push('\\');
            out.push(chars[i + 2]);
            i += 3;
            continue;
        }
        if special(chars[i]) {
            out.push('\\');
        }
        out.push(chars[i]);
        i += 1;
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
            release: None,
        };
        let mut out = Bounded::new(1 << 20);
        match dialect {
            "gemini" => gemini_cli(template, &input, &mut out),
            _ => qwen(template, &input, &mut out),
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

    /// What Qwen Code 0.24.4 sent its model for these commands (run against a
    /// model server of ours; `docs/dialects.md`).
    #[test]
    fn qwen_leaves_dollar_arguments_as_written_outside_a_shell_block() {
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
            run(
                "qwen",
                "Review change $ARGUMENTS carefully.",
                "review",
                " main"
            ),
            "Review change $ARGUMENTS carefully.\n\n/review main"
        );
        assert_eq!(
            run(
                "qwen",
                "Check {{args}} and also $ARGUMENTS.",
                "withargs",
                "   a   b  "
            ),
            "Check a   b and also $ARGUMENTS."
        );
        assert_eq!(
            run("qwen", "TOML multi no placeholder.\n", "tnl", " a b"),
            "TOML multi no placeholder.\n\n\n/tnl a b"
        );
        assert_eq!(
            run(
                "qwen",
                "Shell: !{echo hi {{args}} $ARGUMENTS} end {{args}}",
                "shell",
                " it's x"
            ),
            "Shell: !{echo hi \"it's x\" it's x} end it's x"
        );
        // Arguments holding a shell operator are escaped for $ARGUMENTS too.
        assert_eq!(
            run("qwen", "!{grep $ARGUMENTS}", "g", " a; rm -rf /"),
            "!{grep 'a; rm -rf /'}\n\n/g a; rm -rf /",
            "no {{args}}: the line is appended too"
        );
    }

    #[test]
    fn the_shell_quoting_is_the_agents_bundled_shell_quote() {
        for (word, gemini, qwen) in [
            ("a\\b", "'a\\b'", "'a\\b'"),
            ("a b\\c", "'a b\\c'", "'a b\\c'"),
            ("~/x", "~/x", "\\~/x"),
            ("C:#x", "C:\\#x", "C:\\#x"),
            ("a:b", "a\\:b", "a\\:b"),
            ("", "''", "''"),
        ] {
            assert_eq!(shell_quote(word, false), gemini, "gemini {word:?}");
            assert_eq!(shell_quote(word, true), qwen, "qwen {word:?}");
        }
    }
}
