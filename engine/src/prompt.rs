//! The prompt pipeline (seed 002 §5–8): what a typed line becomes before the model
//! sees it.

use cmdlog_store::AppendError;
use tokio_util::sync::CancellationToken;

use crate::command::Mode;
use crate::engine::{
    BUILTIN_PROVIDER, Engine, ExecuteError, ExecuteRequest, Execution, SessionError,
};
use crate::event::{Delivery, EventData, InvocationSource, Outcome, Seq, SessionPrompt};
use crate::parse::parse_line;

/// How a prompt joins a session that is streaming a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingBehavior {
    /// Inject into the running turn.
    Steer,
    /// Queue after the running turn.
    FollowUp,
}

impl From<StreamingBehavior> for Delivery {
    fn from(b: StreamingBehavior) -> Delivery {
        match b {
            StreamingBehavior::Steer => Delivery::Steer,
            StreamingBehavior::FollowUp => Delivery::FollowUp,
        }
    }
}

/// One `prompt` call.
#[derive(Debug, Clone)]
pub struct PromptRequest {
    /// An open session.
    pub session: String,
    /// The receiving agent.
    pub agent: String,
    /// The mode.
    pub mode: Mode,
    /// What the user typed.
    pub text: String,
    /// Required when the session is streaming.
    pub behavior: Option<StreamingBehavior>,
    /// Cancellation of any command the text runs.
    pub cancel: CancellationToken,
    /// The client's id for this prompt, recorded with it.
    pub prompt_id: Option<String>,
    /// ACP content blocks sent beside the text (images, resources), recorded with it.
    pub blocks: Vec<serde_json::Value>,
    /// The client that sent it, as it names itself, recorded with it.
    pub client_id: Option<String>,
    /// Whether cmdlog's built-in commands (`/help`, `/model`) answer. A bridge to
    /// an agent turns them off: the agent's own `/help` and `/model` are the ones
    /// that mean something there, so the line goes on to it as typed.
    pub builtins: bool,
}

impl PromptRequest {
    /// A prompt with no streaming behavior.
    pub fn new(session: &str, agent: &str, mode: Mode, text: &str) -> Self {
        PromptRequest {
            session: session.into(),
            agent: agent.into(),
            mode,
            text: text.into(),
            behavior: None,
            cancel: CancellationToken::new(),
            prompt_id: None,
            blocks: Vec::new(),
            client_id: None,
            builtins: true,
        }
    }
}

/// What became of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptOutcome {
    /// A command consumed the text: a handler that did not replace it, a failing
    /// handler (handled: its error is the answer), or a prompt command that could not
    /// expand. Nothing was sent to the model.
    Handled(Execution),
    /// Text was delivered to the model and recorded as `session/prompt`.
    Delivered {
        /// Seq of the `session/prompt`.
        seq: Seq,
        /// The text delivered.
        text: String,
        /// How.
        delivery: Delivery,
        /// The prompt command run whose expansion it is.
        from_run: Option<Seq>,
        /// Commands that ran on the way (a replacing handler, a prompt command).
        runs: Vec<Execution>,
    },
}

/// The pipeline failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The session is streaming and the prompt named no behavior.
    #[error(
        "session {session:?} is streaming a turn: choose how this prompt joins it, steer (now) or follow-up (after the turn)"
    )]
    Streaming {
        /// The session.
        session: String,
    },
    /// Handler commands run at once; they are never queued as text.
    #[error(
        "/{name} is a command that runs now; send it with prompt, it is never queued as steer or follow-up text"
    )]
    HandlerNotQueued {
        /// The command.
        name: String,
    },
    /// See [`ExecuteError`].
    #[error(transparent)]
    Execute(#[from] ExecuteError),
    /// See [`SessionError`].
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<AppendError> for PromptError {
    fn from(e: AppendError) -> Self {
        PromptError::Session(SessionError::Append(e))
    }
}

impl Engine {
    fn command_kind(
        &self,
        agent: &str,
        mode: Mode,
        text: &str,
        builtins: bool,
    ) -> Option<(String, bool)> {
        let parsed = parse_line(text)?;
        let r = self.find(agent, mode, parsed.name.as_str())?;
        if !builtins && r.provider.id == BUILTIN_PROVIDER {
            return None;
        }
        Some((r.command.name.to_string(), r.command.is_prompt()))
    }

    async fn run_line(
        &self,
        request: &PromptRequest,
        line: &str,
    ) -> Result<Execution, PromptError> {
        let mut exec = ExecuteRequest::new(&request.session, &request.agent, request.mode, line);
        exec.source = InvocationSource::User;
        exec.cancel = request.cancel.clone();
        self.execute(exec)
            .await?
            .ok_or_else(|| unreachable_miss(line))
    }

    /// Runs the pipeline: a handler command runs now (even while streaming) and may
    /// replace the text; then a prompt command expands; unknown `/x` and plain text
    /// pass through unchanged; then the text is delivered — at once when the session
    /// is idle, as steer or follow-up when it streams (an error without either).
    pub async fn prompt(&self, request: PromptRequest) -> Result<PromptOutcome, PromptError> {
        let mut text = request.text.clone();
        let mut runs = Vec::new();
        let builtins = request.builtins;
        if let Some((_, false)) = self.command_kind(&request.agent, request.mode, &text, builtins) {
            let ex = self.run_line(&request, &text).await?;
            match &ex.outcome {
                Outcome::Success {
                    prompt: Some(replacement),
                    ..
                } => {
                    text = replacement.clone();
                    runs.push(ex);
                }
                _ => return Ok(PromptOutcome::Handled(ex)),
            }
        }
        let mut from_run = None;
        let mut found_injections = Vec::new();
        if let Some((_, true)) = self.command_kind(&request.agent, request.mode, &text, builtins) {
            let ex = self.run_line(&request, &text).await?;
            match &ex.outcome {
                Outcome::Success {
                    prompt: Some(expanded),
                    ..
                } => {
                    text = expanded.clone();
                    from_run = Some(ex.command_id);
                    found_injections = ex.injections.clone();
                    runs.push(ex);
                }
                _ => return Ok(PromptOutcome::Handled(ex)),
            }
        }
        let streaming = self.session(&request.session).is_some_and(|s| s.streaming);
        let delivery = match (streaming, request.behavior) {
            (false, _) => Delivery::Idle,
            (true, Some(b)) => b.into(),
            (true, None) => {
                return Err(PromptError::Streaming {
                    session: request.session,
                });
            }
        };
        let seq = self
            .append_session_event(
                &request.session,
                Some(&request.agent),
                EventData::SessionPrompt(SessionPrompt {
                    text: text.clone(),
                    delivery,
                    from_run,
                    injections: found_injections,
                    client_id: request.client_id.clone(),
                    prompt_id: request.prompt_id.clone(),
                    blocks: request.blocks.clone(),
                }),
            )
            .await?;
        Ok(PromptOutcome::Delivered {
            seq,
            text,
            delivery,
            from_run,
            runs,
        })
    }

    /// Queues `text` as steer or follow-up without running the pipeline. Refuses a
    /// handler command: those run now, through [`Engine::prompt`].
    pub async fn queue(
        &self,
        session: &str,
        agent: &str,
        text: &str,
        behavior: StreamingBehavior,
    ) -> Result<Seq, PromptError> {
        let mode = self
            .session(session)
            .and_then(|s| s.mode)
            .unwrap_or(Mode::NonInteractive);
        if let Some((name, false)) = self.command_kind(agent, mode, text, true) {
            return Err(PromptError::HandlerNotQueued { name });
        }
        Ok(self
            .append_session_event(
                session,
                Some(agent),
                EventData::SessionPrompt(SessionPrompt {
                    text: text.into(),
                    delivery: behavior.into(),
                    from_run: None,
                    injections: Vec::new(),
                    client_id: None,
                    prompt_id: None,
                    blocks: Vec::new(),
                }),
            )
            .await?)
    }
}

/// The line resolved a moment ago; a miss now means a concurrent unregister.
fn unreachable_miss(line: &str) -> PromptError {
    let name = parse_line(line)
        .map(|p| p.name.to_string())
        .unwrap_or_default();
    PromptError::Session(SessionError::Append(AppendError::Storage {
        message: format!("/{name} was unregistered while the prompt ran; send it again"),
    }))
}
