//! Template expansion, one module per agent dialect, each following that agent's
//! documented rules (`docs/dialects.md` cites them). Substituted text is never
//! scanned again, and the output is bounded.
//!
//! Injections (shell commands, file references) are never executed: they stay in
//! the prompt as written, and [`injections`] names them so every caller can say so.

mod args;
mod claude;
mod codex;
mod gemini;
mod injections;
mod legacy;
mod opencode;

use std::collections::BTreeMap;

use crate::command::{CommandSpec, Dialect};

pub use injections::injections;

pub use crate::limits::EXPANSION_BYTES_MAX;

/// What an expansion needs besides the template.
#[derive(Debug, Clone, Copy)]
pub struct ExpandInput<'a> {
    /// The command's name as registered (`prompts:review`), for dialects that put the
    /// whole line in the prompt or name it in an error.
    pub name: &'a str,
    /// The exact text after the name, separator whitespace included.
    pub raw_input: &'a str,
    /// Named arguments (Claude `arguments`).
    pub arguments: &'a [String],
    /// Variables recorded at registration (`CLAUDE_PLUGIN_ROOT`, …).
    pub variables: &'a BTreeMap<String, String>,
    /// The agent's release (`major.minor.patch`) whose rules apply, where they
    /// changed between releases; `None`: the current rules.
    pub release: Option<Version>,
}

/// An agent release's version: `major.minor.patch`, compared in that order.
pub type Version = (u32, u32, u32);

/// Reads `2.1.332` (anything after the third number, `2.1.332 (Claude Code)`, is
/// ignored).
pub fn parse_version(text: &str) -> Option<Version> {
    let mut parts = text.trim().splitn(3, '.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let patch = rest[..digits].parse().ok()?;
    Some((major, minor, patch))
}

/// Which rules of its agent a dialect expands by, for `release` (`None`: not
/// known, so the current rules are assumed): `None` for the dialects whose rules
/// did not change between the releases cmdlog knows.
pub fn release_rules(dialect: Dialect, release: Option<Version>) -> Option<&'static str> {
    match dialect {
        Dialect::Claude => Some(claude::rules(release)),
        _ => None,
    }
}

impl<'a> ExpandInput<'a> {
    /// The input of a run of `command` with `raw_input`.
    pub fn new(command: &'a CommandSpec, raw_input: &'a str) -> Self {
        ExpandInput {
            name: command.name.as_str(),
            raw_input,
            arguments: &command.arguments,
            variables: &command.variables,
            release: None,
        }
    }

    /// The same input, expanded by the rules of `release`.
    pub fn at_release(self, release: Option<Version>) -> Self {
        ExpandInput { release, ..self }
    }
}

/// An expansion that cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// The agent refuses these arguments (Codex: a named argument is missing), with
    /// the agent's own message.
    #[error("{0}")]
    Usage(String),
    /// The expansion would exceed [`EXPANSION_BYTES_MAX`].
    #[error("it expands to more than {max} bytes; shorten its arguments or its template")]
    TooLarge {
        /// The limit.
        max: usize,
    },
}

/// Expands `template` for a run in `dialect`.
pub fn expand(
    template: &str,
    dialect: Dialect,
    input: &ExpandInput<'_>,
) -> Result<String, ExpandError> {
    let mut out = Bounded::new(EXPANSION_BYTES_MAX);
    match dialect {
        // The legacy dialects are short, fixed rules: bound their output after.
        Dialect::Markdown => out.push(&legacy::markdown(template, input.raw_input))?,
        Dialect::Gemini => out.push(&legacy::gemini(template, input.raw_input))?,
        Dialect::Claude => claude::expand(template, input, &mut out)?,
        Dialect::Codex => codex::expand(template, input, &mut out)?,
        Dialect::GeminiCli => gemini::gemini_cli(template, input, &mut out)?,
        Dialect::QwenToml | Dialect::QwenMarkdown => gemini::qwen(template, input, &mut out)?,
        Dialect::OpenCode => opencode::expand(template, input, &mut out)?,
    }
    Ok(out.into_string())
}

/// The argument hint a dialect derives when a file gives none: Codex's named
/// placeholders as `KEY=value` pairs.
pub fn derived_hint(template: &str, dialect: Dialect) -> Option<String> {
    match dialect {
        Dialect::Codex => {
            let names = codex::named_placeholders(template);
            (!names.is_empty()).then(|| {
                names
                    .iter()
                    .map(|n| format!("{n}=…"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }
        _ => None,
    }
}

/// A string that refuses to grow past a limit, so that no template and input can
/// make an expansion take unbounded memory.
pub(crate) struct Bounded {
    out: String,
    max: usize,
}

impl Bounded {
    pub(crate) fn new(max: usize) -> Self {
        Bounded {
            out: String::new(),
            max,
        }
    }

    pub(crate) fn push(&mut self, text: &str) -> Result<(), ExpandError> {
        if self.out.len() + text.len() > self.max {
            return Err(ExpandError::TooLarge { max: self.max });
        }
        self.out.push_str(text);
        Ok(())
    }

    pub(crate) fn push_char(&mut self, c: char) -> Result<(), ExpandError> {
        let mut buf = [0u8; 4];
        self.push(c.encode_utf8(&mut buf))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.out
    }

    pub(crate) fn into_string(self) -> String {
        self.out
    }

    /// Replaces the text built so far (a dialect that trims its result).
    pub(crate) fn replace(&mut self, text: String) {
        self.out = text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_are_bounded_whatever_the_dialect() {
        let template = "$ARGUMENTS {{args}} $1 $0 ".repeat(300);
        let raw = format!(" {}", "y".repeat(100_000));
        let vars = BTreeMap::new();
        let input = ExpandInput {
            name: "big",
            raw_input: &raw,
            arguments: &[],
            variables: &vars,
            release: None,
        };
        for dialect in [
            Dialect::Markdown,
            Dialect::Gemini,
            Dialect::Claude,
            Dialect::Codex,
            Dialect::GeminiCli,
            Dialect::QwenToml,
            Dialect::QwenMarkdown,
            Dialect::OpenCode,
        ] {
            assert_eq!(
                expand(&template, dialect, &input),
                Err(ExpandError::TooLarge {
                    max: EXPANSION_BYTES_MAX
                }),
                "{dialect:?}"
            );
        }
    }
}
