//! Claude Code's substitutions (code.claude.com/docs/en/skills, "Available string
//! substitutions"; CHANGELOG 2.1.19, 2.1.163, 2.1.210, 2.1.233; and what the
//! releases 2.1.197 and 2.1.332 sent a model server of ours, `docs/dialects.md`):
//!
//! - `$ARGUMENTS` is the argument text as typed (quotes and inner whitespace kept,
//!   the ends trimmed);
//! - `$ARGUMENTS[N]` and `$N` are 0-based shell-style words (`$0` is the first);
//!   one with no such argument stays as written (since 2.1.210; before, it was
//!   empty text and counted as a substitution);
//! - named arguments (`arguments:` frontmatter) are `$name`, empty when missing;
//! - `\$…` is a literal `$…`;
//! - when arguments were given and nothing was substituted, the text gets
//!   `\n\nARGUMENTS: <arguments>`;
//! - `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}`, `${CLAUDE_SKILL_DIR}` are the
//!   values recorded at registration;
//! - `$@`, `${@:N}` and `{{args}}` are not placeholders.

use super::args::{ShellWords, shell_words};
use super::{Bounded, ExpandError, ExpandInput};

/// The argument text as Claude Code passes it: everything after the name, with
/// the whitespace at both ends removed.
pub(super) fn arguments(raw_input: &str) -> &str {
    raw_input.trim()
}

/// The first release that keeps a `$N` with no argument as written.
const KEEPS_MISSING: super::Version = (2, 1, 210);

/// Which rules apply for `release` (the current ones when it is unknown).
pub(super) fn rules(release: Option<super::Version>) -> &'static str {
    match release {
        Some(v) if v < KEEPS_MISSING => "Claude Code before 2.1.210",
        _ => "Claude Code 2.1.210 and later",
    }
}

const WORDS: ShellWords = ShellWords {
    comments: true,
    operators: true,
    stop_at_unterminated: false,
};

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A placeholder at the start of `at` (just after a `$`): its length and value.
/// `None` value: a placeholder with no argument, kept as written.
enum Found {
    Arg(usize, Option<String>),
    Variable(usize, String),
    Nothing,
}

pub(super) fn expand(
    template: &str,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let args = arguments(input.raw_input);
    let words = shell_words(args, WORDS);
    // Before 2.1.210 a placeholder with no argument was empty text, and counted.
    let empty_when_missing = input.release.is_some_and(|v| v < KEEPS_MISSING);
    let mut names: Vec<&str> = input
        .arguments
        .iter()
        .map(String::as_str)
        .filter(|n| !n.is_empty() && !n.chars().all(|c| c.is_ascii_digit()))
        .collect();
    // The longest name first, so `$issue_id` is not read as `$issue`.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let find = |after: &str| -> Found {
        for name in &names {
            if let Some(rest) = after.strip_prefix(name)
                && !rest.starts_with('[')
                && !rest.chars().next().is_some_and(is_word_char)
            {
                let index = input.arguments.iter().position(|a| a == name).unwrap_or(0);
                return Found::Arg(
                    name.len(),
                    Some(words.get(index).cloned().unwrap_or_default()),
                );
            }
        }
        if let Some(rest) = after.strip_prefix("ARGUMENTS[") {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && rest.as_bytes().get(digits) == Some(&b']') {
                let value = rest[..digits]
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| words.get(n).cloned());
                return Found::Arg("ARGUMENTS[".len() + digits + 1, value);
            }
        }
        if after.starts_with("ARGUMENTS") {
            return Found::Arg("ARGUMENTS".len(), Some(args.to_string()));
        }
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && !after[digits..].chars().next().is_some_and(is_word_char) {
            let value = after[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|n| words.get(n).cloned());
            return Found::Arg(digits, value);
        }
        if let Some(rest) = after.strip_prefix('{')
            && let Some(close) = rest.find('}')
            && let Some(value) = input.variables.get(&rest[..close])
        {
            return Found::Variable(close + 2, value.clone());
        }
        Found::Nothing
    };
    let mut substituted = false;
    let mut rest = template;
    while let Some(i) = rest.find(['$', '\\']) {
        out.push(&rest[..i])?;
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("\\$") {
            // An escaped placeholder is the placeholder's text; other backslashes stay.
            match find(after) {
                Found::Arg(len, _) => {
                    out.push("$")?;
                    out.push(&after[..len])?;
                    rest = &after[len..];
                }
                _ => {
                    out.push("\\")?;
                    rest = &rest[1..];
                }
            }
            continue;
        }
        // Two backslashes escape nothing: both stay, and what follows is read.
        if let Some(after) = rest.strip_prefix("\\\\") {
            out.push("\\\\")?;
            rest = after;
            continue;
        }
        if rest.starts_with('\\') {
            out.push("\\")?;
            rest = &rest[1..];
            continue;
        }
        let after = &rest[1..];
        match find(after) {
            Found::Arg(len, Some(value)) => {
                out.push(&value)?;
                substituted = true;
                rest = &after[len..];
            }
            Found::Arg(len, None) if empty_when_missing => {
                substituted = true;
                rest = &after[len..];
            }
            Found::Arg(len, None) => {
                out.push(&rest[..1 + len])?;
                rest = &after[len..];
            }
            Found::Variable(len, value) => {
                out.push(&value)?;
                rest = &after[len..];
            }
            Found::Nothing => {
                out.push("$")?;
                rest = after;
            }
        }
    }
    out.push(rest)?;
    if !substituted && !args.is_empty() {
        out.push("\n\nARGUMENTS: ")?;
        out.push(args)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn run(template: &str, raw: &str, names: &[&str], vars: &[(&str, &str)]) -> String {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let input = ExpandInput {
            name: "x",
            raw_input: raw,
            arguments: &names,
            variables: &vars,
            release: None,
        };
        let mut out = Bounded::new(1 << 20);
        expand(template, &input, &mut out).unwrap();
        out.into_string()
    }

    fn at(release: crate::expand::Version, template: &str, raw: &str) -> String {
        let vars = BTreeMap::new();
        let input = ExpandInput {
            name: "x",
            raw_input: raw,
            arguments: &[],
            variables: &vars,
            release: Some(release),
        };
        let mut out = Bounded::new(1 << 20);
        expand(template, &input, &mut out).unwrap();
        out.into_string()
    }

    /// What Claude Code 2.1.197 and 2.1.332 sent the model for these bodies
    /// (`docs/dialects.md`).
    #[test]
    fn each_release_by_its_own_rules() {
        let body = "R: ARGUMENTS=[$ARGUMENTS] one=[$1] two=[$2] p150=[$150] a0=[$ARGUMENTS[0]] zero=[$0]\n";
        assert_eq!(
            at((2, 1, 197), body, " a b"),
            "R: ARGUMENTS=[a b] one=[b] two=[] p150=[] a0=[a] zero=[a]\n"
        );
        assert_eq!(
            at((2, 1, 332), body, " a b"),
            "R: ARGUMENTS=[a b] one=[b] two=[$2] p150=[$150] a0=[a] zero=[a]\n"
        );
        let numbered = "Only numbered: $1 and $2\n";
        assert_eq!(at((2, 1, 197), numbered, " a"), "Only numbered:  and \n");
        assert_eq!(
            at((2, 1, 332), numbered, " a"),
            "Only numbered: $1 and $2\n\n\nARGUMENTS: a"
        );
        assert_eq!(rules(Some((2, 1, 197))), "Claude Code before 2.1.210");
        assert_eq!(rules(None), "Claude Code 2.1.210 and later");
        for release in [(2, 1, 197), (2, 1, 332)] {
            assert_eq!(
                at(release, "dbl=[x\\\\$0 y] args=[$ARGUMENTS_x]", " a"),
                "dbl=[x\\\\a y] args=[a_x]",
                "two backslashes escape nothing"
            );
            assert_eq!(
                at(release, "W: [$ARGUMENTS]", "    a    b   "),
                "W: [a    b]",
                "the arguments are trimmed at both ends"
            );
        }
    }

    #[test]
    fn the_documented_examples() {
        assert_eq!(
            run("Fix issue $ARGUMENTS now", " 123 high", &[], &[]),
            "Fix issue 123 high now"
        );
        assert_eq!(
            run("Fix issue $ARGUMENTS now", "", &[], &[]),
            "Fix issue  now"
        );
        assert_eq!(
            run("Review the code.", " src/a.rs", &[], &[]),
            "Review the code.\n\nARGUMENTS: src/a.rs"
        );
        assert_eq!(run("Review the code.", "", &[], &[]), "Review the code.");
        assert_eq!(
            run("Say $ARGUMENTS", r#" "a  b"  c"#, &[], &[]),
            r#"Say "a  b"  c"#
        );
        assert_eq!(
            run("A=$0 B=$1", r#" "hello world" second"#, &[], &[]),
            "A=hello world B=second"
        );
        assert_eq!(
            run("PR #$1 prio $2 to $3", " 123 high alice", &[], &[]),
            "PR #high prio alice to $3"
        );
        assert_eq!(
            run("First $ARGUMENTS[0], all: $ARGUMENTS", " a b", &[], &[]),
            "First a, all: a b"
        );
        assert_eq!(
            run("Fix $issue on $branch", " 42", &["issue", "branch"], &[]),
            "Fix 42 on "
        );
        assert_eq!(
            run("Costs \\$1.00 for $0", " item", &[], &[]),
            "Costs $1.00 for item"
        );
        assert_eq!(
            run("v$1abc $2_x", " a b c", &[], &[]),
            "v$1abc $2_x\n\nARGUMENTS: a b c"
        );
        assert_eq!(
            run("echo \"$@\" ${@:2} {{args}}", " a b", &[], &[]),
            "echo \"$@\" ${@:2} {{args}}\n\nARGUMENTS: a b"
        );
        assert_eq!(
            run(
                "${CLAUDE_PLUGIN_ROOT}/s.sh $0",
                " f",
                &[],
                &[("CLAUDE_PLUGIN_ROOT", "/p/1.0")]
            ),
            "/p/1.0/s.sh f"
        );
    }

    #[test]
    fn real_text_with_dollars_survives() {
        assert_eq!(
            run("$150/hour = $36,000", " x", &[], &[]),
            "$150/hour = $36,000\n\nARGUMENTS: x"
        );
        assert_eq!(
            run("awk '{print $1}'", " only", &[], &[]),
            "awk '{print $1}'\n\nARGUMENTS: only"
        );
        assert_eq!(run("a\\b \\n", "", &[], &[]), "a\\b \\n");
    }

    #[test]
    fn arguments_keep_lines_and_quotes() {
        let trace = " failed:\n  at a.rs:1\n  at \"b.rs\":2  ";
        assert_eq!(
            run("Trace:\n$ARGUMENTS", trace, &[], &[]),
            "Trace:\nfailed:\n  at a.rs:1\n  at \"b.rs\":2"
        );
    }
}
