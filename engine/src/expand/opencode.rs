//! OpenCode commands (opencode.ai/docs/commands; `packages/opencode/src/session/
//! prompt.ts` `command`):
//!
//! - `$1`, `$2`, … are the words (quotes stripped), missing ones empty, and the
//!   highest-numbered placeholder takes the rest of the words;
//! - `$ARGUMENTS` is the arguments as typed;
//! - a template with neither gets the arguments after a blank line;
//! - the result is trimmed.

use super::args::opencode_words;
use super::{Bounded, ExpandError, ExpandInput};

/// The arguments as OpenCode's prompt passes them: everything after the one space
/// that follows the name.
fn arguments(raw_input: &str) -> &str {
    raw_input
        .strip_prefix(' ')
        .or_else(|| raw_input.strip_prefix('\t'))
        .unwrap_or(raw_input)
}

/// `$N` at the start of `at` (just after a `$`): the number and its length.
fn number_at(at: &str) -> Option<(usize, usize)> {
    let digits = at.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| (at[..digits].parse::<usize>().unwrap_or(usize::MAX), digits))
}

pub(super) fn expand(
    template: &str,
    input: &ExpandInput<'_>,
    out: &mut Bounded,
) -> Result<(), ExpandError> {
    let args = arguments(input.raw_input);
    let words = opencode_words(args);
    let mut last = None::<usize>;
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        rest = &rest[i + 1..];
        if let Some((n, len)) = number_at(rest) {
            last = Some(last.map_or(n, |l| l.max(n)));
            rest = &rest[len..];
        }
    }
    let has_arguments = template.contains("$ARGUMENTS");
    if last.is_none() && !has_arguments {
        let mut text = template.to_string();
        if !args.trim().is_empty() {
            text.push_str("\n\n");
            text.push_str(args);
        }
        out.push(text.trim())?;
        return Ok(());
    }
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push(&rest[..i])?;
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push(args)?;
            rest = tail;
        } else if let Some((n, len)) = number_at(after) {
            if n >= 1 && n <= words.len() {
                if Some(n) == last {
                    out.push(&words[n - 1..].join(" "))?;
                } else {
                    out.push(&words[n - 1])?;
                }
            }
            rest = &after[len..];
        } else {
            out.push("$")?;
            rest = after;
        }
    }
    out.push(rest)?;
    let trimmed = out.as_str().trim().to_string();
    out.replace(trimmed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn run(template: &str, raw: &str) -> String {
        let vars = BTreeMap::new();
        let input = ExpandInput {
            name: "x",
            raw_input: raw,
            arguments: &[],
            variables: &vars,
            release: None,
        };
        let mut out = Bounded::new(1 << 20);
        expand(template, &input, &mut out).unwrap();
        out.into_string()
    }

    #[test]
    fn the_worked_examples() {
        assert_eq!(run("Review $1 then $2", " a b c d"), "Review a then b c d");
        assert_eq!(run("Review $1 then $2", " a"), "Review a then");
        assert_eq!(run("$1 $3", " a b"), "a");
        assert_eq!(run("$1 $3", " a b c d"), "a c d");
        assert_eq!(run("$2 and $2 and $1", " x y z"), "y z and y z and x");
        assert_eq!(run("$1|$ARGUMENTS", " 'a b' c"), "a b c|'a b' c");
        assert_eq!(
            run("Fix $ARGUMENTS", "   \"quoted  text\"   x "),
            "Fix   \"quoted  text\"   x"
        );
        assert_eq!(
            run("No placeholders", " foo bar"),
            "No placeholders\n\nfoo bar"
        );
        assert_eq!(run("No placeholders", "    "), "No placeholders");
        assert_eq!(run("cost $10", " a b c"), "cost");
        assert_eq!(run("Recent: !`git log -1`", ""), "Recent: !`git log -1`");
    }
}
