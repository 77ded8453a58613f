//! What the daemon keeps of a live session: its prompt queue and the turn
//! running now, the clients attached, its agent session, its last command list.
//! The turns themselves run in `turns.rs`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use cmdlog_engine::CancellationToken;
use serde_json::Value;
use tokio::sync::mpsc;

/// A session with prompts to run, and who is attached to it.
pub(crate) struct Live {
    pub(crate) queue: mpsc::UnboundedSender<Queued>,
    /// Prompts admitted and not yet finished.
    pub queued: AtomicUsize,
    /// The turn running now.
    pub active: Mutex<Option<Active>>,
    /// Woken when an external runtime ends a turn through `/update`.
    pub turn_ended: tokio::sync::Notify,
    /// Client ids attached, and when each was last seen (unix ms).
    pub clients: Mutex<HashMap<String, u64>>,
    /// Its agent session, with an agent behind the daemon.
    pub bound: tokio::sync::Mutex<Option<Bound>>,
    /// A hash of the command list last recorded for it.
    pub commands: Mutex<Option<u64>>,
    /// The prompts admitted and not finished, in order: the running one first.
    pub pending: Mutex<Vec<PendingPrompt>>,
    /// What the agent said of its session in `session/new` — its `models`,
    /// `modes` and `configOptions` — kept current as they are switched here.
    pub agent_state: Mutex<Value>,
}

impl Live {
    /// Waits until no turn runs, or `grace` has passed: a turn that is ending
    /// records its end first.
    pub(crate) async fn turn_ended_within(&self, grace: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        while self
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

/// The running turn.
#[derive(Clone)]
pub(crate) struct Active {
    pub prompt_id: String,
    pub cancel: CancellationToken,
    /// When a client cancelled it, unix ms (0: not cancelled).
    pub cancelled_at: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Tells the agent to stop the turn (ACP `session/cancel`), once the turn has
    /// reached one; at most once (see [`Active::tell_agent`]).
    pub agent_cancel: std::sync::Arc<std::sync::OnceLock<AgentCancel>>,
    pub agent_told: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What sends an agent `session/cancel` for a turn (and records it).
pub(crate) type AgentCancel = Box<dyn Fn() + Send + Sync>;

impl Active {
    /// Sends the agent `session/cancel`, unless it was sent already or the turn
    /// has not reached the agent. ACP wants it before the client answers the
    /// turn's permission requests `cancelled` (Qwen Code then says the tool call
    /// was cancelled and ends the turn `cancelled`; told the other way round, it
    /// takes the answer as a refusal and finishes the turn).
    pub(crate) fn tell_agent(&self) {
        if let Some(send) = self.agent_cancel.get()
            && !self
                .agent_told
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            send();
        }
    }
}

/// An admitted prompt.
pub(crate) struct Queued {
    pub prompt_id: String,
    /// The text of its text blocks, joined: what the registry looks at.
    pub text: String,
    /// Its ACP content blocks, as sent.
    pub blocks: Vec<Value>,
    /// Cancel the turn after this long.
    pub deadline: Option<Duration>,
    /// The client that sent it (`X-Qwen-Client-Id`).
    pub client: Option<String>,
}

/// A prompt admitted and not finished, as `GET /session/{id}/pending-prompts`
/// lists it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingPrompt {
    pub prompt_id: String,
    pub text: String,
    /// When it was admitted (RFC 3339).
    pub queued_at: String,
    /// `queued`, or `running` for the turn under way.
    pub state: &'static str,
    #[serde(rename = "originatorClientId", skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// A daemon session's agent session.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub(crate) generation: u64,
    pub(crate) agent_session: String,
    /// The config option that selects the model, if the agent offers one.
    pub(crate) model_option: Option<String>,
}
