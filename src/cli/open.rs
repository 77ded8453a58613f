//! Opening the log, the engine and sessions for the verbs.

use std::path::PathBuf;

use cmdlog_engine::discovery::{Discovery, DiscoveryConfig, discover, unknown_command_hints};
use cmdlog_engine::{Engine, Lifetime, Mode, SessionError, WorkspaceOpenError, valid_id};
use cmdlog_store::{Log, LogConfig, OpenError};

use super::{CliError, Paths, VerbResult, open_failure, store_failure};
use crate::render;
use cmdlog_common::ids::new_session_id;

/// Refuses a missing log: read verbs never create one.
pub(crate) fn require_log(paths: &Paths) -> Result<(), CliError> {
    // Named before "no log": the log may have been moved away through a link.
    cmdlog_store::check_own_folder(&paths.log).map_err(open_failure)?;
    if paths.log.exists() {
        return Ok(());
    }
    Err(CliError::not_found(format!(
        "no log at {}; run a command first (cmdlog run /help) or pass --log",
        paths.log.display()
    )))
}

/// Opens a log that must already exist, read-only. A log a crash left needing
/// recovery is recovered by a writable open; where it cannot be written (read-only
/// media, no permission) it is recovered in memory and the files stay as they are.
pub(crate) fn open_existing(paths: &Paths) -> Result<Log, CliError> {
    require_log(paths)?;
    match Log::open_read_only(&paths.log, LogConfig::default()) {
        Err(OpenError::NeedsRecovery { .. }) => match Log::open(&paths.log, LogConfig::default()) {
            Err(OpenError::Io { source, .. }) if cannot_write(&source) => {
                eprintln!(
                    "cmdlog: note: {} needs crash recovery and cannot be written here ({source}); reading it recovered in memory, the files stay as they are",
                    render::clean(&paths.log.display().to_string())
                );
                Log::open_recovered_in_memory(&paths.log, LogConfig::default())
                    .map_err(open_failure)
            }
            other => other.map_err(open_failure),
        },
        other => other.map_err(open_failure),
    }
}

/// Whether an open failed because the file or its folder cannot be written.
fn cannot_write(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Opens a log that must already exist, for writing (gc): writable, or through
/// the process that holds it, which appends in its own group commit.
pub(crate) fn open_existing_writable(paths: &Paths) -> Result<Log, CliError> {
    require_log(paths)?;
    Log::open_or_through_holder(&paths.log, LogConfig::default()).map_err(open_failure)
}

/// Refuses a session with no events, pointing at `cmdlog sessions`.
pub(crate) fn require_session(log: &Log, session: &str) -> Result<(), CliError> {
    if log
        .stream_seqs(session, 0)
        .map_err(store_failure)?
        .is_empty()
    {
        return Err(CliError::not_found(format!(
            "no events for session {session:?}; `cmdlog sessions` lists them"
        )));
    }
    Ok(())
}

/// The user's home folder: `$HOME`.
pub(crate) fn home() -> Result<PathBuf, CliError> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            CliError::usage(
                "HOME is not set; cmdlog reads ~/.claude, ~/.codex and the like from it",
            )
        })
}

/// Opens the log for writing, the engine with the workspace's receipt resolver, and
/// syncs `discovery` into the log (printing new warnings).
pub(crate) async fn open_engine(
    paths: &Paths,
    discovery: &cmdlog_engine::discovery::Discovery,
    lifetime: Lifetime,
) -> Result<Engine, CliError> {
    let (engine, report) =
        cmdlog_engine::open_workspace(&paths.log, &paths.workspace, discovery, lifetime)
            .await
            .map_err(|e| match e {
                WorkspaceOpenError::Open(e) => open_failure(e),
                e => store_failure(e),
            })?;
    for w in &report.warnings {
        eprintln!(
            "cmdlog: warning: {}: {}",
            render::clean(&w.path),
            render::clean(&w.message)
        );
    }
    Ok(engine)
}

/// What the verbs that run lines work with: the engine, and the discovery pass it
/// was synced with (for hints when a line names no command).
pub(crate) struct Opened {
    pub(crate) engine: Engine,
    pub(crate) config: DiscoveryConfig,
    pub(crate) discovery: Discovery,
}

impl Opened {
    /// Prints, on stderr, why `/name` may have named no command (see
    /// `unknown_command_hints`); whether there was anything to say.
    pub(crate) fn explain_unknown(&self, name: &str) -> bool {
        let hints = unknown_command_hints(&self.config, &self.discovery, name);
        for hint in &hints {
            eprintln!("cmdlog: hint: {}", render::clean(hint));
        }
        !hints.is_empty()
    }
}

/// Says on stderr which injections a run's expansion holds that cmdlog never runs.
pub(crate) fn note_injections(name: &str, injections: &[String]) {
    if injections.is_empty() {
        return;
    }
    eprintln!(
        "cmdlog: note: /{} holds {} injection(s) its agent would run or read, which cmdlog never does; they stay in the prompt as text: {}",
        render::clean(name),
        injections.len(),
        render::clean(&injections.join(", "))
    );
}

/// Opens the engine, syncs command-file discovery into the log, then runs `f`.
pub(crate) fn with_engine(
    paths: &Paths,
    lifetime: Lifetime,
    f: impl AsyncFnOnce(&Opened) -> VerbResult,
) -> VerbResult {
    let config = DiscoveryConfig::from_env(home()?, &paths.workspace);
    let discovery = discover(&config).map_err(|e| CliError::usage(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io(format!("cannot start the runtime: {e}")))?;
    let result = runtime.block_on(async {
        let engine = open_engine(paths, &discovery, lifetime).await?;
        f(&Opened {
            engine,
            config,
            discovery,
        })
        .await
    });
    // Not waiting for blocking reads still under way: `cmdlog acp` whose agent
    // exited while the editor keeps its stdin open would wait on that read for
    // good. The engine, and the log with it, closed inside `block_on`.
    runtime.shutdown_background();
    result
}

/// The session to use: the one named (created on first use) or a new one, whose id
/// is printed on stderr.
pub(crate) async fn open_session(
    engine: &Engine,
    session: Option<String>,
    agent: &str,
    mode: Mode,
) -> Result<String, CliError> {
    if !valid_id(agent) {
        return Err(CliError::usage(format!(
            "invalid agent id {agent:?}: use letters, digits, . _ : -"
        )));
    }
    let session = match session {
        Some(s) => s,
        None => {
            let s = new_session_id();
            eprintln!("session: {s}");
            s
        }
    };
    engine
        .ensure_session(&session, agent, mode)
        .await
        .map_err(|e| match e {
            SessionError::InvalidId { .. } => CliError::usage(e.to_string()),
            SessionError::Ended { .. } | SessionError::Unknown { .. } => {
                CliError::not_found(e.to_string())
            }
            other => store_failure(other),
        })?;
    Ok(session)
}
