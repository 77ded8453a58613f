//! cmdlog's engine: the event schema, the command model, the registry fold,
//! modes, parsing, expansion, and the execution lifecycle over a
//! [`cmdlog_store::Log`].
//!
//! A short tour:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use cmdlog_engine::{Engine, EngineConfig, ExecuteRequest, Mode, Outcome};
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
//! The live [`LogState`] is the same fold that replay runs over the log: the
//! store's commit hook applies each committed record in seq order before its
//! appender is acknowledged.

mod attachments;
mod clock;
mod command;
mod discovery;
mod engine;
mod event;
mod expand;
mod identity;
mod limits;
mod parse;
mod prompt;
mod registry;
mod state;
mod sync;
mod workspace;

pub use attachments::{
    AdmittedBlock, AttachmentLimits, FileReceiptResolver, ReceiptError, ResolvedFile,
    SubmittedAttachment, WorkspaceReceipts, sniff, with_attachments,
};
pub use clock::{Clock, FixedClock, SystemClock};
pub use command::{
    CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Dialect, InputDescriptor,
    InvalidName, Mode, NAME_BYTES_MAX,
};
pub use discovery::{
    BUNDLED, DESCRIPTION_CHARS_MAX, Discovered, Discovery, DiscoveryConfig, DiscoveryError,
    FrontmatterError, TomlCommandError, Warning, describe, discover, parse_frontmatter,
    parse_toml_command, unknown_command_hints, watch_roots,
};
pub use engine::{
    BUILTIN_PRIORITY, BUILTIN_PROVIDER, CommandHandler, CommandResult, Disposer, Engine,
    EngineConfig, EngineOpenError, ExecuteError, ExecuteRequest, Execution, HandlerError,
    HandlerFuture, Invocation, KnownRelease, NewRegistration, OUTCOME_BYTES_MAX, ObserverId,
    RegisterError, ResolverHandle, SessionError, api_provider, command_name, fold_log,
    fold_log_with, load_snapshot, render_help, run_release, valid_id,
};
pub use event::{
    AcpDirection, AcpMessage, AgentCheck, AgentEvent, AgentObserved, AttachmentAdmitted,
    AttachmentKind, CommandDone, CommandRun, DecodeError, Delivery, DiscoveryWarning, Event,
    EventData, IDENTITY_STREAM, IMPORT_STREAM, ImportCheckpoint, InvocationSource, LogIdentity,
    ModelRequest, ModelSwitchFailed, ModelSwitched, NewEvent, Observed, Origin, Outcome,
    PermissionRequested, PermissionResolved, ProviderRef, Redacted, Registered, RunRelease, Scope,
    Seq, SessionCancelled, SessionCreated, SessionEnded, SessionPrompt, SessionUpdateRef,
    UnknownEvent, UnregisterReason, Unregistered, WalDiscarded, stream_key,
};
pub use expand::{
    EXPANSION_BYTES_MAX, ExpandError, ExpandInput, Version, derived_hint, expand, injections,
    parse_version, release_rules,
};

pub use identity::{
    IdentityError, ensure_identity, ensure_identity_async, host_name, read_identity,
};
pub use limits::ID_BYTES_MAX;
pub use parse::{ParsedLine, parse_command_args, parse_line};
pub use prompt::{PromptError, PromptOutcome, PromptRequest, StreamingBehavior};
pub use registry::{Candidate, Registration, Registry, RegistryAnomaly};
pub use state::{LogState, OpenRun, SessionState};
pub use sync::{SyncError, SyncReport};
pub use tokio_util::sync::CancellationToken;
pub use workspace::{Lifetime, WorkspaceOpenError, open_workspace};
