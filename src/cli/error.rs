//! The CLI's one error type. Every library error becomes a [`CliError`] with a
//! [`Kind`] — which alone decides the exit code — and, where it helps, a hint
//! that says the way out. `main` prints it (cleaned for the terminal) and exits.

use std::fmt::Display;
use std::io;

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Two histories disagree: a fork, a rollback, a log that is not what it
    /// should be (exit 1, like violations found).
    Conflict,
    /// Stored bytes do not hash to what they claim (exit 1).
    Damaged,
    /// The invocation was wrong (exit 2).
    Usage,
    /// An unknown command, session, seq, blob or file (exit 3).
    NotFound,
    /// The log, the disk or the output failed (exit 4).
    Io,
    /// The hub could not be reached, or refused something other than a fork
    /// (exit 5).
    Hub,
    /// Standard output was closed by its reader (`cmdlog log | head`): not an
    /// error, exit 0 with nothing said.
    ClosedOutput,
}

impl Kind {
    /// The exit code `docs/cli.md` promises for it.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Kind::ClosedOutput => 0,
            Kind::Conflict | Kind::Damaged => 1,
            Kind::Usage => 2,
            Kind::NotFound => 3,
            Kind::Io => 4,
            Kind::Hub => 5,
        }
    }
}

/// A failed verb: its kind, what happened, and the way out when there is one to say.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) kind: Kind,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

impl CliError {
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        CliError {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn usage(message: impl std::fmt::Display) -> Self {
        Self::new(Kind::Usage, message.to_string())
    }

    pub(crate) fn not_found(message: impl std::fmt::Display) -> Self {
        Self::new(Kind::NotFound, message.to_string())
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(Kind::Conflict, message)
    }

    pub(crate) fn damaged(message: impl Into<String>) -> Self {
        Self::new(Kind::Damaged, message)
    }

    pub(crate) fn io(message: impl Into<String>) -> Self {
        Self::new(Kind::Io, message)
    }

    pub(crate) fn hub(message: impl Into<String>) -> Self {
        Self::new(Kind::Hub, message)
    }

    /// Adds the way out.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return CliError::new(Kind::ClosedOutput, "");
        }
        CliError::io(format!("cannot write output: {e}"))
    }
}

impl From<cmdlog_hub::HubError> for CliError {
    fn from(e: cmdlog_hub::HubError) -> Self {
        hub_failure(e)
    }
}

/// A store or library failure (exit 4).
pub(crate) fn store_failure(e: impl Display) -> CliError {
    CliError::io(e.to_string())
}

/// A hub failure (exit 5).
pub(crate) fn hub_failure(e: impl Display) -> CliError {
    CliError::hub(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_known_by_its_kind_and_exits_quietly() {
        let closed = CliError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(closed.kind, Kind::ClosedOutput);
        assert_eq!(closed.kind.exit_code(), 0);
        // The text alone no longer decides it.
        let other = CliError::from(io::Error::other("Broken pipe"));
        assert_eq!(other.kind.exit_code(), 4);
        assert_eq!(CliError::usage("x").hint("y").hint.as_deref(), Some("y"));
    }
}
