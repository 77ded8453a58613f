//! cmdlog's engine: the event schema, the command model, the registry fold,
//! modes, parsing, expansion, and the execution lifecycle over a
//! [`cmdlog_store::Log`].
//!
//! A short tour:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use cmdlog_engine::event::Outcome;
//! use cmdlog_engine::{Engine, EngineConfig, ExecuteRequest, Mode};
//! use cmdlog_store::{Log, LogConfig};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
//! let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
//! engine.ensure_session("s1", "main", Mode::NonInteractive).await.unwrap();
//!
//! let run = engine
//!     .execute(ExecuteRequest::new("s1", "main", Mode::NonInteractive, "/model gpt-5"))
//!     .await
//!     .unwrap()
//!     .expect("/model resolves");
//! assert!(matches!(run.outcome, Outcome::Success { .. }));
//! assert_eq!(engine.session("s1").unwrap().model.as_deref(), Some("gpt-5"));
//! # });
//! ```
//!
//! The crate's root names what an embedder holds: the [`Engine`], its
//! configuration and errors, the command model, the registry and the log's
//! state. The rest is in modules of its own: the event schema
//! ([`event`]: every type the log holds; [`Event`] and [`EventData`] are
//! also at the root), [`discovery`] of command files, [`expand`]ing a
//! prompt command's template, [`attachments`], the log's [`identity`],
//! [`parse`]ing a slash line and the [`prompt`] pipeline.
//!
//! The live [`LogState`] is the same fold that replay runs over the log: the
//! store's commit hook applies each committed record in seq order before its
//! appender is acknowledged.

pub mod attachments;
mod clock;
mod command;
pub mod discovery;
mod engine;
pub mod event;
pub mod expand;
pub mod identity;
mod limits;
pub mod parse;
pub mod prompt;
mod registry;
mod state;
mod sync;
mod workspace;

pub use clock::{Clock, FixedClock, SystemClock};

pub use command::{
    CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Dialect, InputDescriptor,
    InvalidName, Mode, NAME_BYTES_MAX,
};

pub use engine::{
    BUILTIN_PRIORITY, BUILTIN_PROVIDER, CommandHandler, CommandResult, Disposer, Engine,
    EngineConfig, EngineOpenError, ExecuteError, ExecuteRequest, Execution, HandlerError,
    HandlerFuture, Invocation, KnownRelease, NewRegistration, OUTCOME_BYTES_MAX, ObserverId,
    RegisterError, ResolverHandle, SessionError, api_provider, command_name, fold_log,
    fold_log_with, load_snapshot, render_help, run_release, valid_id,
};

pub use event::{Event, EventData, Seq};

pub use limits::ID_BYTES_MAX;

pub use registry::{Candidate, Registration, Registry, RegistryAnomaly};

pub use state::{LogState, OpenRun, SessionState};

pub use sync::{SyncError, SyncReport};

pub use tokio_util::sync::CancellationToken;
pub use workspace::{Lifetime, WorkspaceOpenError, open_workspace};
