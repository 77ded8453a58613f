//! The bundled fallback templates: built into the binary, registered at the lowest
//! priority so that any file command of the same name shadows them.

use crate::command::{CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Dialect};
use crate::event::Origin;
use crate::event::ProviderRef;

use super::Discovered;

/// Below every file provider.
pub(crate) const PRIORITY: i32 = -1000;

/// A bundled template.
#[derive(Debug, Clone, Copy)]
pub struct Bundled {
    /// Its name.
    pub name: &'static str,
    /// One-line summary.
    pub description: &'static str,
    /// Argument hint.
    pub argument_hint: &'static str,
    /// The template (Markdown dialect).
    pub template: &'static str,
}

/// The bundled templates.
pub const BUNDLED: [Bundled; 4] = [
    Bundled {
        name: "review",
        description: "Review code changes for bugs, risks and missing tests",
        argument_hint: "[path or ref]",
        template: "Review the changes in $ARGUMENTS (the working tree if nothing is named).\n\
For each problem give the file and line, why it matters, and a concrete fix.\n\
Look for: bugs and edge cases, error handling, concurrency, security, performance,\n\
and tests that are missing or do not assert what the code relies on.\n\
End with a short verdict: ready, ready after small fixes, or needs work.",
    },
    Bundled {
        name: "explain",
        description: "Explain how a piece of code works",
        argument_hint: "<path or symbol>",
        template: "Explain how $ARGUMENTS works.\n\
Start with its purpose in one paragraph, then walk through the control flow and the\n\
data it touches, then list the invariants it relies on and where they are enforced.\n\
Quote the lines you refer to with their file and line numbers.",
    },
    Bundled {
        name: "commit-message",
        description: "Write a commit message for the staged changes",
        argument_hint: "[context]",
        template: "Write a commit message for the staged changes. $ARGUMENTS\n\
Subject: imperative, at most 72 characters, no trailing period.\n\
Body: why the change is needed and what it does, wrapped at 72 columns; mention\n\
anything a reviewer should check and any follow-up left out.",
    },
    Bundled {
        name: "fix-tests",
        description: "Find and fix the cause of failing tests",
        argument_hint: "[test name or command]",
        template: "Run $ARGUMENTS (the project's test command if nothing is named) and read the failures.\n\
Find the root cause of each failure before changing anything; fix the code, not the\n\
assertion, unless the test is wrong, and say which and why. Re-run the tests to confirm.",
    },
];

pub(crate) fn discovered(b: &Bundled, provider: ProviderRef) -> Discovered {
    let mut command = CommandSpec::new(
        CommandName::new(b.name).expect("bundled names are valid"),
        CommandSource::BundledSkill,
        CommandKind::Skill,
    );
    command.command_type = Some(CommandType::Prompt);
    command.dialect = Some(Dialect::Markdown);
    command.description = b.description.into();
    command.argument_hint = Some(b.argument_hint.into());
    command.model_invocable = true;
    Discovered {
        provider,
        origin: Origin {
            path: format!("bundled:{}", b.name),
            content_hash: blake3::hash(b.template.as_bytes()).to_hex().to_string(),
        },
        command,
        template: b.template.into(),
    }
}
