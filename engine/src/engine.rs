//! The live engine: registration, resolution, execution and sessions over one log.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use cmdlog_store::{AppendError, BlobError, BlobHash, Log, ReadError};
use tokio_util::sync::CancellationToken;

use crate::attachments::{self, AdmittedBlock, AttachmentLimits, FileReceiptResolver};
use crate::builtins;
use crate::clock::{Clock, SystemClock};
use crate::command::{CommandName, CommandSpec, Dialect, InvalidName, Mode};
use crate::event::{
    AttachmentAdmitted, CommandDone, CommandRun, DecodeError, Event, EventData, InvocationSource,
    NewEvent, Origin, Outcome, Registered, Seq, SessionCreated, SessionEnded, UnregisterReason,
    Unregistered,
};
use crate::expand::expand;
use crate::parse::parse_line;
use crate::registry::{ProviderRef, Registration, Scope};
use crate::state::{LogState, SessionState};

/// What a handler returns: the command's own verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandResult {
    /// It did its job.
    Success {
        /// Text to show.
        text: Option<String>,
        /// An earlier event that owns a richer presentation.
        source_event_seq: Option<Seq>,
    },
    /// It refused or failed in an expected way.
    Error {
        /// What went wrong.
        text: String,
    },
    /// It replaces the prompt text (the pipeline goes on with this text).
    Prompt {
        /// The replacement.
        text: String,
    },
}

impl CommandResult {
    /// A success with text.
    pub fn text(text: impl Into<String>) -> Self {
        CommandResult::Success {
            text: Some(text.into()),
            source_event_seq: None,
        }
    }
}

/// A handler failure (the Rust side of a thrown error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(pub String);

/// The future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<CommandResult, HandlerError>> + Send>>;

/// A command's handler. Any `Fn(Invocation) -> impl Future<Output = Result<CommandResult,
/// HandlerError>>` is one.
pub trait CommandHandler: Send + Sync + 'static {
    /// Runs one invocation.
    fn call(&self, invocation: Invocation) -> HandlerFuture;
}

impl<F, Fut> CommandHandler for F
where
    F: Fn(Invocation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CommandResult, HandlerError>> + Send + 'static,
{
    fn call(&self, invocation: Invocation) -> HandlerFuture {
        Box::pin(self(invocation))
    }
}

/// One invocation as a handler sees it.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Seq of the `command/run` already written for it.
    pub command_id: Seq,
    /// The session.
    pub session: String,
    /// The exact agent whose UI received it.
    pub agent: String,
    /// The mode.
    pub mode: Mode,
    /// The exact text after the name, separator whitespace included.
    pub raw_input: String,
    /// The admitted blocks, in submission order; empty unless the command declares
    /// `input.attachments`. Read their bytes with [`Engine::read_blob`].
    pub attachments: Vec<AdmittedBlock>,
    /// Cancelled when the dispatching request is.
    pub cancel: CancellationToken,
    /// The engine, to read state or append domain events.
    pub engine: Engine,
}

/// An attachment submitted with a line, before admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmittedAttachment {
    /// Encoded image bytes.
    Image {
        /// Display name.
        name: String,
        /// Bytes.
        bytes: Vec<u8>,
    },
    /// File bytes sent with the request (the daemon's base64 attachments).
    File {
        /// Display name.
        name: String,
        /// Bytes.
        bytes: Vec<u8>,
    },
    /// A staged file receipt, resolved by the receipt resolver.
    FileReceipt {
        /// The receipt.
        receipt: String,
    },
}

/// One `execute` call.
#[derive(Debug, Clone)]
pub struct ExecuteRequest {
    /// An open session.
    pub session: String,
    /// The receiving agent.
    pub agent: String,
    /// The mode.
    pub mode: Mode,
    /// The complete slash line.
    pub line: String,
    /// Who invoked it.
    pub source: InvocationSource,
    /// Attachments, in submission order.
    pub attachments: Vec<SubmittedAttachment>,
    /// Cancellation owned by the caller.
    pub cancel: CancellationToken,
}

impl ExecuteRequest {
    /// A user invocation of `line` with no attachments.
    pub fn new(session: &str, agent: &str, mode: Mode, line: &str) -> Self {
        ExecuteRequest {
            session: session.into(),
            agent: agent.into(),
            mode,
            line: line.into(),
            source: InvocationSource::User,
            attachments: Vec::new(),
            cancel: CancellationToken::new(),
        }
    }
}

/// A settled execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// Seq of its `command/run` (the command id).
    pub command_id: Seq,
    /// The registration that ran.
    pub registration: Seq,
    /// The command name.
    pub name: String,
    /// How it settled.
    pub outcome: Outcome,
    /// Seq of its `command/done`; `None` when that append failed on the
    /// handler-failure path (the handler's error is the reported failure).
    pub done: Option<Seq>,
}

/// `execute` failed loudly: the run could not be recorded, or its success could not.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// The session does not exist or has ended.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The admitted attachments could not be stored: nothing was logged, and at most
    /// unreferenced blobs were left for `cmdlog gc`.
    #[error("could not store the attachments of /{name}, so it did not run: {source}")]
    AttachmentsNotStored {
        /// The command.
        name: String,
        /// Why.
        source: BlobError,
    },
    /// `command/run` could not be appended: the handler did not run.
    #[error("could not record the run of /{name}, so it did not run: {source}")]
    RunNotRecorded {
        /// The command.
        name: String,
        /// Why.
        source: AppendError,
    },
    /// The handler succeeded but its `command/done` could not be appended.
    #[error("/{name} ran (command id {run}) but its result could not be recorded: {source}")]
    DoneNotRecorded {
        /// The command.
        name: String,
        /// Seq of the run.
        run: Seq,
        /// The outcome that was lost.
        outcome: Box<Outcome>,
        /// Why.
        source: AppendError,
    },
}

/// `register` failed; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Same name, same layer, same provider, overlapping modes.
    #[error(
        "/{name} is already registered by provider {provider} in this scope for overlapping modes (registration seq {existing}); dispose it first or restrict supported_modes"
    )]
    Conflict {
        /// The name.
        name: String,
        /// The provider.
        provider: String,
        /// The registration in the way.
        existing: Seq,
    },
    /// A prompt command needs a template and no handler; others need a handler.
    #[error("/{name}: {message}")]
    Shape {
        /// The name.
        name: String,
        /// What is wrong.
        message: &'static str,
    },
    /// A file receipt resolver is already registered.
    #[error("a file receipt resolver is already registered; dispose it before registering another")]
    ResolverTaken,
    /// Storing the template failed.
    #[error("could not store the template of /{name}: {source}")]
    Template {
        /// The name.
        name: String,
        /// Why.
        source: BlobError,
    },
    /// Appending the registration failed.
    #[error("could not record the registration of /{name}: {source}")]
    Append {
        /// The name.
        name: String,
        /// Why.
        source: AppendError,
    },
}

/// Opening an engine on a log failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineOpenError {
    /// Reading the log failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A record is not a valid event.
    #[error("{0}; run `cmdlog verify` to see the damage")]
    Decode(#[from] DecodeError),
    /// Recovery appends failed.
    #[error("could not record crash recovery: {0}")]
    Append(#[from] AppendError),
    /// Registering a built-in failed.
    #[error(transparent)]
    Register(#[from] RegisterError),
}

/// Appending a domain event failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No such session: create it first.
    #[error("unknown session {session:?}; create it first (the CLI does with --session)")]
    Unknown {
        /// The id.
        session: String,
    },
    /// The session was closed or died; nothing may follow.
    #[error("session {session:?} ended at seq {ended}; start a new session")]
    Ended {
        /// The id.
        session: String,
        /// Seq of its end.
        ended: Seq,
    },
    /// A session id breaks the rules.
    #[error(
        "invalid session id {session:?}: use 1 to 128 of A-Z a-z 0-9 . _ : - starting with a letter or digit"
    )]
    InvalidId {
        /// The id.
        session: String,
    },
    /// The append failed.
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// A new registration.
pub struct NewRegistration {
    /// Global or agent-scoped.
    pub scope: Scope,
    /// Provider and precedence.
    pub provider: ProviderRef,
    /// The command.
    pub command: CommandSpec,
    /// The handler (local and local-jsx commands).
    pub handler: Option<Arc<dyn CommandHandler>>,
    /// The template text (prompt commands).
    pub template: Option<String>,
    /// The source file (file commands).
    pub origin: Option<Origin>,
}

impl NewRegistration {
    /// A global runtime registration by the `api` provider with a handler.
    pub fn handler(command: CommandSpec, handler: impl CommandHandler) -> Self {
        NewRegistration {
            scope: Scope::Global,
            provider: api_provider(),
            command,
            handler: Some(Arc::new(handler)),
            template: None,
            origin: None,
        }
    }

    /// A global runtime registration by the `api` provider of a prompt command.
    pub fn prompt(command: CommandSpec, template: impl Into<String>) -> Self {
        NewRegistration {
            scope: Scope::Global,
            provider: api_provider(),
            command,
            handler: None,
            template: Some(template.into()),
            origin: None,
        }
    }

    /// Scopes it to one agent.
    pub fn for_agent(mut self, agent: impl Into<String>) -> Self {
        self.scope = Scope::Agent(agent.into());
        self
    }
}

/// The provider of runtime registrations made through the API.
pub fn api_provider() -> ProviderRef {
    ProviderRef {
        id: "api".into(),
        priority: 90,
        level: "runtime".into(),
        order: 1,
        item: 0,
    }
}

/// How an engine is opened.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The clock every event's `at` comes from.
    pub clock: Arc<dyn Clock>,
    /// Limits on attachments per invocation.
    pub attachment_limits: AttachmentLimits,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            clock: Arc::new(SystemClock),
            attachment_limits: AttachmentLimits::default(),
        }
    }
}

impl EngineConfig {
    /// The default configuration with `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        EngineConfig {
            clock,
            ..EngineConfig::default()
        }
    }
}

/// Identifies an observer for removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObserverId(u64);

type Observer = Arc<dyn Fn() + Send + Sync>;

struct Inner {
    log: Arc<Log>,
    state: Arc<Mutex<LogState>>,
    /// Handlers by registration seq. An async lock so `register` can hold it across the
    /// append: an `execute` that resolves the new registration waits for its handler.
    handlers: tokio::sync::Mutex<HashMap<Seq, Arc<dyn CommandHandler>>>,
    /// Serializes register/dispose so the conflict check and the append are one step.
    registry_writes: tokio::sync::Mutex<()>,
    observers: Mutex<Vec<(ObserverId, Observer)>>,
    next_observer: AtomicU64,
    clock: Arc<dyn Clock>,
    limits: AttachmentLimits,
    /// The one file receipt resolver, with the id its handle removes it by.
    receipts: Mutex<Option<(u64, Arc<dyn FileReceiptResolver>)>>,
}

/// The engine: cheap to clone, all clones share one log and state.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("log", &self.inner.log)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Events folded past the snapshot at open before a fresh snapshot is written.
const SNAPSHOT_TAIL_EVENTS: u64 = 10_000;
/// The snapshot format this version writes and reads.
const SNAPSHOT_VERSION: u64 = 1;

/// The state of the latest snapshot, when it is of this format and matches this
/// log (the chain hash of its seq); `None` means fold from the start.
pub fn load_snapshot(log: &Log) -> Option<LogState> {
    #[derive(serde::Deserialize)]
    struct Snapshot {
        version: u64,
        seq: Seq,
        hash: String,
        state: LogState,
    }
    let (seq, bytes) = log.latest_snapshot().ok()??;
    let snapshot: Snapshot = serde_json::from_slice(&bytes).ok()?;
    let record = log.get(seq).ok()??;
    let valid = snapshot.version == SNAPSHOT_VERSION
        && snapshot.seq == seq
        && snapshot.state.applied == seq
        && BlobHash(record.hash).to_hex() == snapshot.hash;
    valid.then_some(snapshot.state)
}

/// Folds every record of `log` in `from..=until` into `state`.
pub fn fold_log(
    log: &Log,
    state: &mut LogState,
    from: Seq,
    until: Seq,
) -> Result<(), EngineOpenError> {
    fold_log_with(log, state, from, until, |_| {})
}

/// [`fold_log`], calling `progress` with each seq folded.
pub fn fold_log_with(
    log: &Log,
    state: &mut LogState,
    from: Seq,
    until: Seq,
    mut progress: impl FnMut(Seq),
) -> Result<(), EngineOpenError> {
    let mut failure = None;
    log.scan(from, until, |record| {
        match Event::decode(record.seq, &record.bytes) {
            Ok(event) => {
                state.apply(&event);
                progress(record.seq);
                true
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

impl Engine {
    /// Opens an engine on `log` for writing: folds the log, closes runs left without
    /// a done as interrupted, ends handler registrations of earlier processes, and
    /// registers the built-ins that are missing.
    pub async fn open(log: Log, config: EngineConfig) -> Result<Engine, EngineOpenError> {
        let log = Arc::new(log);
        let head = log.head().seq;
        let mut state = load_snapshot(&log).unwrap_or_default();
        let folded_from = state.applied + 1;
        fold_log(&log, &mut state, folded_from, head)?;
        let state = Arc::new(Mutex::new(state));
        let hook_state = Arc::clone(&state);
        log.set_commit_hook(Box::new(move |batch| {
            let mut state = lock(&hook_state);
            for record in batch {
                match Event::decode(record.seq, record.bytes) {
                    Ok(event) => state.apply(&event),
                    // Only this engine appends, with bytes it just encoded.
                    Err(e) => unreachable!("the engine appended an undecodable event: {e}"),
                }
            }
        }));
        let engine = Engine {
            inner: Arc::new(Inner {
                log,
                state,
                handlers: tokio::sync::Mutex::new(HashMap::new()),
                registry_writes: tokio::sync::Mutex::new(()),
                observers: Mutex::new(Vec::new()),
                next_observer: AtomicU64::new(1),
                clock: config.clock,
                limits: config.attachment_limits,
                receipts: Mutex::new(None),
            }),
        };
        engine.recover().await?;
        if head + 1 - folded_from >= SNAPSHOT_TAIL_EVENTS {
            // A cache: if writing it fails, the next open folds the log again.
            let _ = engine.snapshot().await;
        }
        Ok(engine)
    }

    async fn recover(&self) -> Result<(), EngineOpenError> {
        let now = self.now();
        let (open_runs, stale, missing) = {
            let state = lock(&self.inner.state);
            let open_runs: Vec<_> = state.open_runs.values().cloned().collect();
            let mut missing: Vec<_> = builtins::definitions();
            let mut stale = Vec::new();
            let mut reattach = Vec::new();
            for r in state.registry.active() {
                if r.command.is_prompt() {
                    continue;
                }
                match missing.iter().position(|b| b.matches(r)) {
                    Some(i) => reattach.push((r.seq, missing.swap_remove(i))),
                    None => stale.push(r.seq),
                }
            }
            drop(state);
            let mut handlers = self
                .inner
                .handlers
                .try_lock()
                .expect("no one else holds the handlers while the engine opens");
            for (seq, builtin) in reattach {
                handlers.insert(seq, builtin.handler);
            }
            (open_runs, stale, missing)
        };
        let mut events: Vec<NewEvent> = open_runs
            .into_iter()
            .map(|run| NewEvent {
                at: now,
                session: run.session,
                agent: run.agent,
                data: EventData::CommandDone(CommandDone {
                    run: run.seq,
                    outcome: Outcome::Error {
                        text: format!(
                            "interrupted: the process running /{} ended before it settled",
                            run.name
                        ),
                        interrupted: true,
                    },
                    elapsed_us: 0,
                }),
            })
            .collect();
        events.extend(stale.into_iter().map(|registration| NewEvent {
            at: now,
            session: None,
            agent: None,
            data: EventData::Unregistered(Unregistered {
                registration,
                reason: UnregisterReason::OwnerExited,
            }),
        }));
        let registry_changed = events
            .iter()
            .any(|e| matches!(e.data, EventData::Unregistered(_)));
        if !events.is_empty() {
            self.append(events).await?;
        }
        for builtin in missing {
            let disposer = self.register(builtin.into_registration()).await?;
            disposer.forget();
        }
        if registry_changed {
            self.notify();
        }
        Ok(())
    }

    /// Stores the current state as a snapshot (with the chain hash of its seq), so
    /// the next open folds only the events after it. Snapshots are a cache:
    /// deleting them changes no answer.
    pub async fn snapshot(&self) -> Result<Seq, AppendError> {
        let (seq, bytes) = {
            let state = lock(&self.inner.state);
            let hash = match self.inner.log.get(state.applied) {
                Ok(Some(r)) => BlobHash(r.hash).to_hex(),
                _ => return Ok(0),
            };
            let snapshot = serde_json::json!({"version": SNAPSHOT_VERSION, "seq": state.applied, "hash": hash, "state": &*state});
            (
                state.applied,
                serde_json::to_vec(&snapshot).expect("the state serializes"),
            )
        };
        self.inner.log.put_snapshot(seq, bytes).await?;
        Ok(seq)
    }

    /// The log underneath.
    pub fn log(&self) -> &Arc<Log> {
        &self.inner.log
    }

    pub(crate) fn now(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    /// Serializes registry writers (register, unregister, sync).
    pub(crate) async fn registry_writes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.inner.registry_writes.lock().await
    }

    async fn append(&self, events: Vec<NewEvent>) -> Result<cmdlog_store::Receipt, AppendError> {
        let records = events.iter().map(NewEvent::to_record).collect();
        self.inner.log.append_async(records).await
    }

    /// A copy of the whole folded state.
    pub fn state(&self) -> LogState {
        lock(&self.inner.state).clone()
    }

    /// Runs `f` on the folded state under its lock.
    pub fn with_state<T>(&self, f: impl FnOnce(&LogState) -> T) -> T {
        f(&lock(&self.inner.state))
    }

    /// Registers a command. Returns its disposer.
    pub async fn register(&self, new: NewRegistration) -> Result<Disposer, RegisterError> {
        let name = new.command.name.to_string();
        let shape = |message| RegisterError::Shape {
            name: name.clone(),
            message,
        };
        match (new.command.is_prompt(), &new.handler, &new.template) {
            (true, None, Some(_)) | (false, Some(_), None) => {}
            (true, _, _) => return Err(shape("a prompt command takes a template and no handler")),
            (false, _, _) => return Err(shape("a local command takes a handler and no template")),
        }
        let _writes = self.inner.registry_writes.lock().await;
        if let Some(existing) = self.with_state(|s| {
            s.registry
                .active()
                .find(|r| {
                    r.scope == new.scope
                        && r.provider.id == new.provider.id
                        && names_overlap(&r.command, &new.command)
                        && r.command
                            .effective_modes()
                            .iter()
                            .any(|m| new.command.supports(*m))
                })
                .map(|r| r.seq)
        }) {
            return Err(RegisterError::Conflict {
                name,
                provider: new.provider.id,
                existing,
            });
        }
        let template = match new.template {
            Some(text) => Some(
                self.inner
                    .log
                    .put_blob_async(text.into_bytes())
                    .await
                    .map_err(|source| RegisterError::Template {
                        name: name.clone(),
                        source,
                    })?
                    .to_hex(),
            ),
            None => None,
        };
        let agent = match &new.scope {
            Scope::Agent(a) => Some(a.clone()),
            Scope::Global => None,
        };
        let event = NewEvent {
            at: self.now(),
            session: None,
            agent,
            data: EventData::Registered(Box::new(Registered {
                scope: new.scope,
                provider: new.provider,
                command: new.command,
                template,
                origin: new.origin,
            })),
        };
        let mut handlers = self.inner.handlers.lock().await;
        let seq = self
            .append(vec![event])
            .await
            .map_err(|source| RegisterError::Append { name, source })?
            .first;
        if let Some(handler) = new.handler {
            handlers.insert(seq, handler);
        }
        drop(handlers);
        drop(_writes);
        self.notify();
        Ok(Disposer {
            engine: Arc::downgrade(&self.inner),
            registration: seq,
            disposed: AtomicBool::new(false),
        })
    }

    /// Ends an active registration with `reason`. `Ok(false)` when it was not active.
    pub async fn unregister(
        &self,
        registration: Seq,
        reason: UnregisterReason,
    ) -> Result<bool, AppendError> {
        let _writes = self.inner.registry_writes.lock().await;
        let active = self.with_state(|s| {
            s.registry
                .get(registration)
                .is_some_and(Registration::is_active)
        });
        if !active {
            return Ok(false);
        }
        self.append(vec![NewEvent {
            at: self.now(),
            session: None,
            agent: None,
            data: EventData::Unregistered(Unregistered {
                registration,
                reason,
            }),
        }])
        .await?;
        self.inner.handlers.lock().await.remove(&registration);
        drop(_writes);
        self.notify();
        Ok(true)
    }

    /// Registers the sole file receipt resolver. A second one is an error until the
    /// first handle is disposed.
    pub fn register_receipt_resolver(
        &self,
        resolver: impl FileReceiptResolver,
    ) -> Result<ResolverHandle, RegisterError> {
        let mut slot = lock(&self.inner.receipts);
        if slot.is_some() {
            return Err(RegisterError::ResolverTaken);
        }
        let id = self.inner.next_observer.fetch_add(1, Ordering::SeqCst);
        *slot = Some((id, Arc::new(resolver)));
        Ok(ResolverHandle {
            engine: Arc::downgrade(&self.inner),
            id,
        })
    }

    /// A blob's bytes (an attachment or a template), re-hashed on read: tampered
    /// bytes are an error, never returned.
    pub fn read_blob(&self, hash: &BlobHash) -> Result<Vec<u8>, BlobError> {
        self.inner.log.get_blob(hash)?.ok_or_else(|| {
            BlobError::Read(ReadError::Corrupt {
                seq: 0,
                message: format!("blob {hash} is missing"),
            })
        })
    }

    /// Adds a `commands/change` observer, called after every registry mutation. A
    /// failing (panicking) observer cannot veto the mutation or stop the others.
    pub fn on_change(&self, observer: impl Fn() + Send + Sync + 'static) -> ObserverId {
        let id = ObserverId(self.inner.next_observer.fetch_add(1, Ordering::SeqCst));
        lock(&self.inner.observers).push((id, Arc::new(observer)));
        id
    }

    /// Removes an observer.
    pub fn remove_observer(&self, id: ObserverId) {
        lock(&self.inner.observers).retain(|(i, _)| *i != id);
    }

    pub(crate) fn notify(&self) {
        let observers: Vec<Observer> = lock(&self.inner.observers)
            .iter()
            .map(|(_, o)| Arc::clone(o))
            .collect();
        for observer in observers {
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| observer()));
        }
    }

    /// The effective commands for `agent` in `mode`, name-sorted.
    pub fn list(&self, agent: &str, mode: Mode) -> Vec<Registration> {
        self.with_state(|s| s.registry.list(agent, mode).into_iter().cloned().collect())
    }

    /// The registration `/name` resolves to for `agent` in `mode`.
    pub fn find(&self, agent: &str, mode: Mode, name: &str) -> Option<Registration> {
        let name = name.to_lowercase();
        self.with_state(|s| s.registry.resolve(agent, mode, &name).cloned())
    }

    /// The commands the model may invoke for `agent`.
    pub fn model_invocable(&self, agent: &str) -> Vec<Registration> {
        self.with_state(|s| {
            s.registry
                .model_invocable(agent)
                .into_iter()
                .cloned()
                .collect()
        })
    }

    /// What the fold knows of `session`.
    pub fn session(&self, session: &str) -> Option<SessionState> {
        self.with_state(|s| s.sessions.get(session).cloned())
    }

    /// Creates `session` if it does not exist; `Ok(true)` when created. An ended
    /// session is an error.
    pub async fn ensure_session(
        &self,
        session: &str,
        agent: &str,
        mode: Mode,
    ) -> Result<bool, SessionError> {
        if !valid_id(session) {
            return Err(SessionError::InvalidId {
                session: session.into(),
            });
        }
        match self.check_session(session) {
            Ok(()) => Ok(false),
            Err(SessionError::Unknown { .. }) => {
                self.append(vec![NewEvent {
                    at: self.now(),
                    session: Some(session.into()),
                    agent: Some(agent.into()),
                    data: EventData::SessionCreated(SessionCreated { mode: Some(mode) }),
                }])
                .await?;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// Closes `session`: nothing may follow it.
    pub async fn close_session(
        &self,
        session: &str,
        reason: Option<String>,
    ) -> Result<Seq, SessionError> {
        self.append_session_event(
            session,
            None,
            EventData::SessionClosed(SessionEnded { reason }),
        )
        .await
    }

    /// Appends a domain event to an open session.
    pub async fn append_session_event(
        &self,
        session: &str,
        agent: Option<&str>,
        data: EventData,
    ) -> Result<Seq, SessionError> {
        self.check_session(session)?;
        Ok(self
            .append(vec![NewEvent {
                at: self.now(),
                session: Some(session.into()),
                agent: agent.map(str::to_string),
                data,
            }])
            .await?
            .first)
    }

    /// `Ok` when `session` exists and has not ended.
    fn check_session(&self, session: &str) -> Result<(), SessionError> {
        match self.session(session) {
            Some(SessionState {
                ended: Some(ended), ..
            }) => Err(SessionError::Ended {
                session: session.into(),
                ended,
            }),
            Some(SessionState {
                created: Some(_), ..
            }) => Ok(()),
            _ => Err(SessionError::Unknown {
                session: session.into(),
            }),
        }
    }

    /// Parses and executes a slash line (DESIGN §5). `Ok(None)` when the line is not
    /// a command or names no command for this agent and mode: nothing is logged.
    pub async fn execute(
        &self,
        mut request: ExecuteRequest,
    ) -> Result<Option<Execution>, ExecuteError> {
        let Some(parsed) = parse_line(&request.line) else {
            return Ok(None);
        };
        self.check_session(&request.session)?;
        let Some(registration) = self.find(&request.agent, request.mode, parsed.name.as_str())
        else {
            return Ok(None);
        };
        let command = &registration.command;
        let name = command.name.to_string();

        // Validate attachments before anything is written.
        let validated = if request.attachments.is_empty() {
            Ok(Vec::new())
        } else if !command.input.as_ref().is_some_and(|i| i.attachments) {
            Err(format!(
                "/{name} does not take attachments (it does not declare input.attachments); send the line without them"
            ))
        } else {
            let resolver = lock(&self.inner.receipts)
                .as_ref()
                .map(|(_, r)| Arc::clone(r));
            attachments::validate(
                &name,
                &request.session,
                std::mem::take(&mut request.attachments),
                resolver.as_deref(),
                &self.inner.limits,
            )
        };
        let (mut admissions, refusal) = match validated {
            Ok(a) => (a, None),
            Err(text) => (Vec::new(), Some(text)),
        };

        // Blobs first: a failure here can only leave unreferenced blobs.
        let hashes = self
            .inner
            .log
            .put_blobs_async(
                admissions
                    .iter_mut()
                    .map(|a| std::mem::take(&mut a.bytes))
                    .collect(),
            )
            .await
            .map_err(|source| ExecuteError::AttachmentsNotStored {
                name: name.clone(),
                source,
            })?;

        // Then the admissions and the run, atomically; the run lists their seqs.
        let now = self.now();
        let envelope = |data| NewEvent {
            at: now,
            session: Some(request.session.clone()),
            agent: Some(request.agent.clone()),
            data,
        };
        let admitted: Vec<NewEvent> = admissions
            .iter()
            .zip(&hashes)
            .map(|(a, hash)| {
                envelope(EventData::AttachmentAdmitted(AttachmentAdmitted {
                    kind: a.kind,
                    blob: hash.to_hex(),
                    media_type: a.media_type.clone(),
                    size: a.size,
                    name: a.name.clone(),
                }))
            })
            .collect();
        let run = CommandRun {
            registration: registration.seq,
            name: name.clone(),
            mode: request.mode,
            source: request.source,
            raw_input: command.record_input.then(|| parsed.raw_input.clone()),
            attachments: Vec::new(),
        };
        let run_event = envelope(EventData::CommandRun(run));
        let count = admitted.len() as u64;
        let not_recorded = |source| ExecuteError::RunNotRecorded {
            name: name.clone(),
            source,
        };
        let receipt = self
            .inner
            .log
            .submit_built(move |first| {
                let mut run_event = run_event;
                if let EventData::CommandRun(run) = &mut run_event.data {
                    run.attachments = (first..first + count).collect();
                }
                admitted
                    .iter()
                    .chain(std::iter::once(&run_event))
                    .map(NewEvent::to_record)
                    .collect()
            })
            .map_err(not_recorded)?
            .await_receipt()
            .await
            .map_err(not_recorded)?;
        let command_id = receipt.last;
        let blocks: Vec<AdmittedBlock> = admissions
            .into_iter()
            .zip(hashes)
            .zip(receipt.first..)
            .map(|((a, blob), seq)| AdmittedBlock {
                seq,
                kind: a.kind,
                name: a.name,
                media_type: a.media_type,
                size: a.size,
                blob,
            })
            .collect();

        let started = Instant::now();
        let outcome = match refusal {
            Some(text) => Outcome::error(text),
            None => {
                self.settle(
                    &registration,
                    command_id,
                    parsed.raw_input,
                    blocks,
                    &request,
                )
                .await
            }
        };
        let elapsed_us = started.elapsed().as_micros() as u64;
        let done = NewEvent {
            at: self.now(),
            session: Some(request.session.clone()),
            agent: Some(request.agent.clone()),
            data: EventData::CommandDone(CommandDone {
                run: command_id,
                outcome: outcome.clone(),
                elapsed_us,
            }),
        };
        let done = match self.append(vec![done]).await {
            Ok(receipt) => Some(receipt.first),
            // On the failure path the handler's error stays the reported failure.
            Err(_) if outcome.is_error() => None,
            Err(source) => {
                return Err(ExecuteError::DoneNotRecorded {
                    name,
                    run: command_id,
                    outcome: Box::new(outcome),
                    source,
                });
            }
        };
        Ok(Some(Execution {
            command_id,
            registration: registration.seq,
            name,
            outcome,
            done,
        }))
    }

    async fn settle(
        &self,
        registration: &Registration,
        command_id: Seq,
        raw_input: String,
        attachments: Vec<AdmittedBlock>,
        request: &ExecuteRequest,
    ) -> Outcome {
        let name = registration.command.name.as_str();
        if request.cancel.is_cancelled() {
            return Outcome::error("aborted");
        }
        if registration.command.is_prompt() {
            return self.expand_prompt(registration, &raw_input, &attachments);
        }
        let handler = self
            .inner
            .handlers
            .lock()
            .await
            .get(&registration.seq)
            .cloned();
        let Some(handler) = handler else {
            return Outcome::error(format!(
                "/{name} (registration seq {}) has no handler in this process",
                registration.seq
            ));
        };
        let invocation = Invocation {
            command_id,
            session: request.session.clone(),
            agent: request.agent.clone(),
            mode: request.mode,
            raw_input,
            attachments,
            cancel: request.cancel.clone(),
            engine: self.clone(),
        };
        let mut task = tokio::spawn(handler.call(invocation));
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = request.cancel.cancelled() => {
                task.abort();
                // Wait until the handler's future is dropped, so nothing it holds
                // outlives the recorded outcome.
                let _ = task.await;
                return Outcome::error("aborted");
            }
        };
        match joined {
            Ok(Ok(CommandResult::Success {
                text,
                source_event_seq,
            })) => Outcome::Success {
                text,
                prompt: None,
                source_event_seq,
            },
            Ok(Ok(CommandResult::Error { text })) => Outcome::error(text),
            Ok(Ok(CommandResult::Prompt { text })) => Outcome::Success {
                text: None,
                prompt: Some(text),
                source_event_seq: None,
            },
            Ok(Err(HandlerError(text))) => Outcome::error(format!("/{name} failed: {text}")),
            Err(e) if e.is_panic() => {
                let panic = e.into_panic();
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "no message".into());
                Outcome::error(format!("/{name} panicked: {message}"))
            }
            Err(_) => Outcome::error("aborted"),
        }
    }

    fn expand_prompt(
        &self,
        registration: &Registration,
        raw_input: &str,
        attachments: &[AdmittedBlock],
    ) -> Outcome {
        let name = registration.command.name.as_str();
        let Some(hash) = registration.template.as_deref() else {
            return Outcome::error(format!("/{name} is a prompt command without a template"));
        };
        let Some(hash) = BlobHash::from_hex(hash) else {
            return Outcome::error(format!("/{name}: template hash {hash:?} is malformed"));
        };
        match self.inner.log.get_blob(&hash) {
            Ok(Some(bytes)) => {
                let template = String::from_utf8_lossy(&bytes);
                let mut prompt = expand(
                    &template,
                    registration.command.dialect.unwrap_or(Dialect::Markdown),
                    raw_input,
                );
                // The model side fetches admitted blocks by their blob hashes.
                if !attachments.is_empty() {
                    prompt.push_str("\n\nAttachments:");
                    for block in attachments {
                        prompt.push('\n');
                        prompt.push_str(&block.prompt_line());
                    }
                }
                Outcome::Success {
                    text: None,
                    prompt: Some(prompt),
                    source_event_seq: None,
                }
            }
            Ok(None) => Outcome::error(format!(
                "/{name}: template blob {hash} is missing; run `cmdlog verify`"
            )),
            Err(e) => Outcome::error(format!("/{name}: {e}")),
        }
    }
}

fn names_overlap(a: &CommandSpec, b: &CommandSpec) -> bool {
    std::iter::once(&b.name)
        .chain(&b.alt_names)
        .any(|n| a.answers_to(n.as_str()))
}

/// Whether `id` is a valid session or agent id: 1 to 128 of `A-Za-z0-9._:-`,
/// starting with a letter or digit.
pub fn valid_id(id: &str) -> bool {
    id.len() <= 128
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
}

/// Validates a command name typed by a person (lowercased first).
pub fn command_name(text: &str) -> Result<CommandName, InvalidName> {
    CommandName::new(text.trim_start_matches('/').to_lowercase())
}

/// Removes exactly the resolver it was returned for.
#[derive(Debug)]
pub struct ResolverHandle {
    engine: Weak<Inner>,
    id: u64,
}

impl ResolverHandle {
    /// Unregisters the resolver (a no-op if the engine is gone).
    pub fn dispose(self) {
        if let Some(inner) = self.engine.upgrade() {
            let mut slot = lock(&inner.receipts);
            if slot.as_ref().is_some_and(|(id, _)| *id == self.id) {
                *slot = None;
            }
        }
    }
}

/// Ends one registration, exactly once.
#[derive(Debug)]
pub struct Disposer {
    engine: Weak<Inner>,
    registration: Seq,
    disposed: AtomicBool,
}

impl Disposer {
    /// Seq of the registration it ends.
    pub fn registration(&self) -> Seq {
        self.registration
    }

    /// Appends `registry/unregistered` (reason `disposed`) the first time;
    /// `Ok(false)` on later calls or when the registration already ended.
    pub async fn dispose(&self) -> Result<bool, AppendError> {
        if self.disposed.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        let Some(inner) = self.engine.upgrade() else {
            return Err(AppendError::Closed);
        };
        let result = Engine { inner }
            .unregister(self.registration, UnregisterReason::Disposed)
            .await;
        if result.is_err() {
            self.disposed.store(false, Ordering::SeqCst);
        }
        result
    }

    /// Keeps the registration for the engine's lifetime. Dropping a disposer does too;
    /// this says so.
    pub fn forget(self) {}
}
