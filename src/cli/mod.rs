//! The verbs of the `cmdlog` binary, one module each (its clap arguments beside its
//! body, entered through `exec`), and what they share: the failure type with its exit
//! code, the log's paths, and the mode flag.

pub(crate) mod acp;
pub(crate) mod attach;
pub(crate) mod audit;
pub(crate) mod blob;
pub(crate) mod clone;
pub(crate) mod commands;
pub(crate) mod drift;
pub(crate) mod export;
pub(crate) mod gc;
pub(crate) mod hook;
pub(crate) mod hooks;
pub(crate) mod hub;
pub(crate) mod import;
pub(crate) mod import_agent;
pub(crate) mod log;
pub(crate) mod open;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod prompt;
pub(crate) mod push;
pub(crate) mod recover;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod show;
pub(crate) mod verify;

use std::io;
use std::path::PathBuf;

use clap::ValueEnum;
use cmdlog_engine::Mode;

/// `--mode`: an execution mode.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ModeArg {
    Interactive,
    #[value(name = "non_interactive", alias = "non-interactive")]
    NonInteractive,
    Acp,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Interactive => Mode::Interactive,
            ModeArg::NonInteractive => Mode::NonInteractive,
            ModeArg::Acp => Mode::Acp,
        }
    }
}

/// A failure with its exit code.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// A command settled as an error, or verify found violations.
pub(crate) const SETTLED_ERROR: u8 = 1;
/// The invocation was wrong.
pub(crate) const USAGE: u8 = 2;
/// An unknown command, session, seq or file.
pub(crate) const NOT_FOUND: u8 = 3;
/// The log or the disk failed.
pub(crate) const STORE: u8 = 4;
/// The hub could not be reached, or refused something other than a fork.
pub(crate) const HUB: u8 = 5;

pub(crate) fn hub_failure(e: impl std::fmt::Display) -> Failure {
    Failure::new(HUB, e.to_string())
}

pub(crate) fn store_failure(e: impl std::fmt::Display) -> Failure {
    Failure::new(STORE, e.to_string())
}

/// An open failure; a lock held by `cmdlog serve` names the daemon and how to reach it.
pub(crate) fn open_failure(e: cmdlog_store::OpenError) -> Failure {
    if let cmdlog_store::OpenError::Locked { path } = &e
        && let Some(daemon) = cmdlog_agents::DaemonFile::read(path)
    {
        return Failure::new(
            STORE,
            format!(
                "{} is held by cmdlog serve (pid {}, {}): use its HTTP API (docs/http.md), e.g. curl {}/session/ID/events, or stop it first",
                path.display(),
                daemon.pid,
                crate::render::clean(&daemon.url),
                crate::render::clean(&daemon.url)
            ),
        );
    }
    store_failure(e)
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::new(STORE, format!("cannot write output: {e}"))
    }
}

/// What a verb ends with: its exit code, or a failure to print.
pub(crate) type VerbResult = Result<u8, Failure>;

/// Where the verbs work: the workspace and its log.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) workspace: PathBuf,
    pub(crate) log: PathBuf,
}

impl Paths {
    /// `--workspace` (default: the current folder) and `--log` (default:
    /// `<workspace>/.cmdlog/log.redb`).
    pub(crate) fn new(workspace: Option<PathBuf>, log: Option<PathBuf>) -> Result<Paths, Failure> {
        let workspace = match workspace {
            Some(w) => w,
            None => std::env::current_dir()
                .map_err(|e| Failure::new(USAGE, format!("cannot read the current folder: {e}")))?,
        };
        let log = log.unwrap_or_else(|| workspace.join(".cmdlog").join("log.redb"));
        Ok(Paths { workspace, log })
    }
}

/// The wall clock in unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
