//! Codex custom prompts (openai/codex `docs/prompts.md`; `codex-rs/tui/src/
//! bottom_pane/prompt_args.rs` `expand_custom_prompt`):
//!
//! - a prompt with named placeholders (`$FILE`: `$` and an upper-case letter, then
//!   upper-case letters, digits or `_`; `$ARGUMENTS` excepted) takes only
//!   `KEY=value` arguments, every name required; `$1`…`$9` stay as written;
//! - otherwise `$1`…`$9` are the shell words (missing: empty) and `$ARGUMENTS` all
//!   of them joined by one space;
//! - `$$` is kept as written and shields what follows;
//! - arguments of a prompt with no placeholder are dropped.

use super::args::{ShellWords, shell_words};
use super::{Bounded, ExpandError, ExpandInput};

const WORDS: ShellWords = ShellWords {
    comments: true,
    operators: false,
    stop_at_unterminated: true,
};

/// `$NAME` at the start of `at` (just after a `$`): its length.
fn named_at(at: &str) -> Option<usize> {
    let first = at.chars().next()?;
    if !first.is_ascii_uppercase() {
        return None;
    }
    Some(
        at.bytes()
            .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
            .count(),
    )
}

/// The named placeholders of `body`, in order of first appearance.
pub(super) fn named_placeholders(body: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
            continue;
        }
        match named_at(after) {
            Some(len) => {
                let name = &after[..len];
                if name != "ARGUMENTS" && !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
                rest = &after[len..];
            }
            None => rest = after,
        }
    }
    names
}

pub(super) fn expand(
    template: &str,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let words = shell_words(input.raw_input, WORDS);
    let names = named_placeholders(template);
    let command = format!("/{}", input.name);
    if !names.is_empty() {
        let mut values: Vec<(String, String)> = Vec::new();
        for word in &words {
            let Some((key, value)) = word.split_once('=') else {
                return Err(ExpandError::Usage(format!(
                    "Could not parse {command}: expected key=value but found '{word}'. Wrap values in double quotes if they contain spaces."
                )));
            };
            if key.is_empty() {
                return Err(ExpandError::Usage(format!(
                    "Could not parse {command}: expected a name before '=' in '{word}'."
                )));
            }
            values.retain(|(k, _)| k != key);
            values.push((key.to_string(), value.to_string()));
        }
        let missing: Vec<&str> = names
            .iter()
            .filter(|n| !values.iter().any(|(k, _)| k == *n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(ExpandError::Usage(format!(
                "Missing required args for {command}: {}. Provide as key=value (quote values with spaces).",
                missing.join(", ")
            )));
        }
        let mut rest = template;
        while let Some(i) = rest.find('$') {
            out.push(&rest[..i])?;
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix('$') {
                out.push("$$")?;
                rest = tail;
                continue;
            }
            match named_at(after) {
                Some(len) => {
                    let name = &after[..len];
                    match values.iter().find(|(k, _)| k == name) {
                        Some((_, v)) => out.push(v)?,
                        None => {
                            out.push("$")?;
                            out.push(name)?;
                        }
                    }
                    rest = &after[len..];
                }
                None => {
                    out.push("$")?;
                    rest = after;
                }
            }
        }
        return out.push(rest);
    }
    let all = words.join(" ");
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push(&rest[..i])?;
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push("$$")?;
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push(&all)?;
            rest = tail;
        } else if let Some(d @ b'1'..=b'9') = after.bytes().next() {
            if let Some(w) = words.get((d - b'1') as usize) {
                out.push(w)?;
            }
            rest = &after[1..];
        } else {
            out.push("$")?;
            rest = after;
        }
    }
    out.push(rest)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn run(template: &str, raw: &str) -> Result<String, ExpandError> {
        let vars = BTreeMap::new();
        let input = ExpandInput {
            name: "prompts:r",
            raw_input: raw,
            arguments: &[],
            variables: &vars,
            release: None,
        };
        let mut out = Bounded::new(1 << 20);
        expand(template, &input, &mut out).map(|()| out.into_string())
    }

    #[test]
    fn the_worked_examples() {
        assert_eq!(
            run(
                "Review PR #$1 with priority $2 and assign to $3",
                " 456 high"
            )
            .unwrap(),
            "Review PR #456 with priority high and assign to "
        );
        assert_eq!(
            run(
                "Fix issue #$ARGUMENTS following our standards.",
                " 123 high-priority"
            )
            .unwrap(),
            "Fix issue #123 high-priority following our standards."
        );
        assert_eq!(run("Fix issue $1", " #42").unwrap(), "Fix issue ");
        assert_eq!(
            run("Open $1", r#" "docs/My File.md" extra"#).unwrap(),
            "Open docs/My File.md"
        );
        assert_eq!(
            run("Cost $$1 and $10 and $ARGUMENTS!", " a b").unwrap(),
            "Cost $$1 and a0 and a b!"
        );
        assert_eq!(
            run("No placeholders here", " a b c").unwrap(),
            "No placeholders here"
        );
        assert_eq!(
            run("Review $USER changes on $BRANCH", " USER=Alice BRANCH=main").unwrap(),
            "Review Alice changes on main"
        );
        assert_eq!(
            run(
                "Pair $USER with $BRANCH",
                r#" USER="Alice Smith" BRANCH=dev-main"#
            )
            .unwrap(),
            "Pair Alice Smith with dev-main"
        );
        assert_eq!(
            run("Review $USER changes on $BRANCH", " USER=Alice")
                .unwrap_err()
                .to_string(),
            "Missing required args for /prompts:r: BRANCH. Provide as key=value (quote values with spaces)."
        );
        assert!(
            run("Review $USER changes", " USER=Alice stray")
                .unwrap_err()
                .to_string()
                .contains("expected key=value but found 'stray'")
        );
        assert_eq!(
            run(
                "Hi $USER, $1 and $ARGUMENTS and $$HOME",
                " USER=bob EXTRA=1"
            )
            .unwrap(),
            "Hi bob, $1 and $ARGUMENTS and $$HOME"
        );
        assert_eq!(
            run("Use $FOO_bar and $X", " FOO_=1 X=a=b").unwrap(),
            "Use 1bar and a=b"
        );
        assert_eq!(run("Hi $user", " a b").unwrap(), "Hi $user");
    }
}
