//! Presentation helpers for the CLI: the terminal sanitiser, times and one-line
//! event summaries.
//!
//! **Invariant:** text from outside (command files, agents, HTTP bodies, file names)
//! reaches a terminal only through [`clean`], directly or through a [`Human`]
//! writer: no escape sequence of theirs is ever interpreted. `--json` output is
//! exact instead (JSON escapes C0 controls itself).

pub(crate) use cmdlog_common::terminal::clean;

pub(crate) use cmdlog_common::terminal::Human;

pub(crate) use cmdlog_common::time::micros as duration;
pub(crate) use cmdlog_common::time::utc;

/// `log ID (host HOST)`, the host's text made safe for a terminal.
pub(crate) fn identity(identity: &cmdlog_engine::event::LogIdentity) -> String {
    format!(
        "log {} (host {})",
        clean(&identity.id),
        clean(&identity.host)
    )
}
