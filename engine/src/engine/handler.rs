//! What a command handler is: the invocation it gets, the result it returns, and
//! the registration request that brings it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::attachments::AdmittedBlock;

use crate::command::{CommandSpec, Mode};
use crate::engine::Engine;
use crate::event::{Origin, Seq};
use crate::event::{ProviderRef, Scope};

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
