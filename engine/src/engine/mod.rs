//! The live engine: registration, resolution, execution and sessions over one log.

mod builtins;
mod execute;
mod handler;
mod open;
mod registration;
mod sessions;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cmdlog_store::{AppendError, BlobError, BlobHash, Log, ReadError};

use crate::attachments::{AttachmentLimits, FileReceiptResolver};
use crate::clock::{Clock, SystemClock};
use crate::command::Mode;
use crate::event::{NewEvent, Seq};

use crate::registry::Registration;
use crate::state::LogState;

pub use builtins::{BUILTIN_PRIORITY, BUILTIN_PROVIDER, render_help};
pub use execute::{
    ExecuteError, ExecuteRequest, Execution, KnownRelease, OUTCOME_BYTES_MAX, run_release,
};
pub use handler::{
    CommandHandler, CommandResult, HandlerError, HandlerFuture, Invocation, NewRegistration,
    api_provider,
};
pub use open::{EngineOpenError, fold_log, fold_log_with, load_snapshot};
pub use registration::{Disposer, RegisterError, ResolverHandle, command_name};
pub use sessions::{SessionError, valid_id};

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

impl Engine {
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
}

impl Engine {
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
}
