//! The verbs of the `cmdlog` binary, one module each (its clap arguments beside its
//! body, entered through `exec`), and what they share: the failure type with its exit
//! code, the log's paths, and the mode flag.

pub(crate) mod acp;
pub(crate) mod attach;
pub(crate) mod audit;
pub(crate) mod blob;
pub(crate) mod checkpoint;
pub(crate) mod clone;
pub(crate) mod commands;
pub(crate) mod drift;
mod error;
pub(crate) mod export;
pub(crate) mod gc;
pub(crate) mod hook;
pub(crate) mod hooks;
pub(crate) mod hub;
pub(crate) mod import;
pub(crate) mod import_agent;
pub(crate) mod key;
pub(crate) mod log;
pub(crate) mod open;
pub(crate) mod otel;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod prompt;
pub(crate) mod prove;
pub(crate) mod push;
pub(crate) mod recover;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod search;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod show;
pub(crate) mod tiles;
pub(crate) mod ui;
pub(crate) mod verify;
pub(crate) mod witness;

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

pub(crate) use error::{CliError, Kind, hub_failure, store_failure};

/// The exit code of a command that settled as an error, or of a verify that
/// found violations: the verb ran, and says so.
pub(crate) const SETTLED_ERROR: u8 = 1;

/// An open failure; a lock held by `cmdlog serve` names the daemon and how to reach it.
pub(crate) fn open_failure(e: cmdlog_store::OpenError) -> CliError {
    if let cmdlog_store::OpenError::Locked { path } = &e
        && let Some(daemon) = cmdlog_agents::DaemonFile::read(path)
    {
        return CliError::io(format!(
            "{} is held by cmdlog serve (pid {}, {})",
            path.display(),
            daemon.pid,
            crate::render::clean(&daemon.url),
        ))
        .hint(format!(
            "other verbs read and append through it; this one needs the log to itself, or it did not answer: stop it first (its HTTP API: docs/http.md, {})",
            crate::render::clean(&daemon.url)
        ));
    }
    store_failure(e)
}

/// What a verb ends with: its exit code, or a failure to print.
pub(crate) type VerbResult = Result<u8, CliError>;

/// Where the verbs work: the workspace and its log.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) workspace: PathBuf,
    pub(crate) log: PathBuf,
}

impl Paths {
    /// `--workspace` (default: the current folder) and `--log` (default:
    /// `<workspace>/.cmdlog/log.redb`).
    pub(crate) fn new(workspace: Option<PathBuf>, log: Option<PathBuf>) -> Result<Paths, CliError> {
        let workspace = match workspace {
            Some(w) => w,
            None => std::env::current_dir()
                .map_err(|e| CliError::usage(format!("cannot read the current folder: {e}")))?,
        };
        let log = log.unwrap_or_else(|| workspace.join(".cmdlog").join("log.redb"));
        Ok(Paths { workspace, log })
    }
}

pub(crate) use cmdlog_common::time::now_ms;
