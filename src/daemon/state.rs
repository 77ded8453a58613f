//! What every route shares: the engine, the error response, body parsing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cmdlog_engine::{
    CancellationToken, Engine, ExecuteError, PromptError, SessionError, SessionState, valid_id,
};
use cmdlog_store::AppendError;
use serde_json::json;

use super::sse;

/// Largest body of a `command` request (base64 attachments), in bytes.
pub(crate) const COMMAND_BODY_BYTES_MAX: usize = 96 * 1024 * 1024;
/// Largest body of any other request, in bytes.
pub(crate) const BODY_BYTES_MAX: usize = 1024 * 1024;
/// Frames kept for sharing between subscribers.
pub(crate) const SSE_CACHE_FRAMES: usize = 8192;
/// Longest prompt text or command line, in bytes.
pub(crate) const LINE_BYTES_MAX: usize = 1024 * 1024;
/// Bytes of frames kept for sharing between subscribers.
pub(crate) const SSE_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Who may reach the daemon, beyond the bearer token.
#[derive(Debug, Clone, Default)]
pub(crate) struct Access {
    /// The bearer token clients must send.
    pub(crate) token: Option<String>,
    /// The `Host` names accepted (lowercase, without port); `None` accepts any (a
    /// daemon bound to a non-loopback address, which needs a token).
    pub(crate) hosts: Option<Vec<String>>,
    /// The port the daemon listens on: a `Host` with another port is refused.
    pub(crate) port: u16,
    /// Browser origins allowed (CORS); on a daemon without a token every other
    /// `Origin` is refused.
    pub(crate) origins: Vec<String>,
}

/// Shared by every route.
pub(crate) struct AppState {
    /// The engine, or `None` while a failed store is being reopened.
    engine: RwLock<Option<Engine>>,
    /// Why the store is degraded, while it is.
    degraded: Mutex<Option<String>>,
    pub(crate) access: Access,
    /// In-flight executions per session, by id, for `cancel`.
    pub(crate) running: Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>,
    next_execution: std::sync::atomic::AtomicU64,
    /// Serializes permission votes so the first one wins.
    pub(crate) votes: tokio::sync::Mutex<()>,
    /// Recent frames shared by SSE subscribers.
    pub(crate) frames: Arc<sse::FrameCache>,
}

/// An execution's entry in [`AppState::running`], removed when it is dropped: once
/// the execution settled, `cancel` no longer counts it.
pub(crate) struct Tracked {
    state: Arc<AppState>,
    session: String,
    id: u64,
    pub(crate) token: CancellationToken,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut running = self.state.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = running.get_mut(&self.session) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                running.remove(&self.session);
            }
        }
    }
}

impl AppState {
    pub(crate) fn new(engine: Engine, access: Access) -> Arc<Self> {
        Arc::new(AppState {
            engine: RwLock::new(Some(engine)),
            degraded: Mutex::new(None),
            access,
            running: Mutex::new(HashMap::new()),
            next_execution: std::sync::atomic::AtomicU64::new(1),
            votes: tokio::sync::Mutex::new(()),
            frames: Arc::new(sse::FrameCache::new(SSE_CACHE_FRAMES, SSE_CACHE_BYTES)),
        })
    }

    /// The engine; 503 with the reason while a failed store is being reopened.
    pub(crate) fn engine(&self) -> Result<Engine, ApiError> {
        let engine = self
            .engine
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        engine.ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the log is being reopened after a storage error ({}); retry shortly",
                    self.degraded().unwrap_or_default()
                ),
            )
        })
    }

    /// Why the store is degraded, if it is.
    pub(crate) fn degraded(&self) -> Option<String> {
        self.degraded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_degraded(&self, reason: Option<String>) {
        *self.degraded.lock().unwrap_or_else(|p| p.into_inner()) = reason;
    }

    /// Takes the engine out (requests answer 503 meanwhile), so that the log it holds
    /// can close once in-flight requests let go of their clones.
    pub(crate) fn take_engine(&self) -> Option<Engine> {
        self.engine
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Puts a reopened engine in place.
    pub(crate) fn put_engine(&self, engine: Engine) {
        *self.engine.write().unwrap_or_else(|p| p.into_inner()) = Some(engine);
    }

    /// Refuses a prompt or command line over [`LINE_BYTES_MAX`].
    pub(crate) fn check_line(what: &str, text: &str) -> Result<(), ApiError> {
        if text.len() > LINE_BYTES_MAX {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the {what} is {} bytes, over the limit of {LINE_BYTES_MAX}; send large content as an attachment",
                    text.len()
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn session(&self, id: &str) -> Result<SessionState, ApiError> {
        if !valid_id(id) {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no session {id:?}: session ids are 1 to 128 of A-Z a-z 0-9 . _ : -"),
            ));
        }
        match self.engine()?.session(id) {
            Some(s) if s.created.is_some() => Ok(s),
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no session {id:?}; create it with POST /session"),
            )),
        }
    }

    /// Registers an execution in `session` for `cancel`, until the guard is dropped.
    pub(crate) fn track(self: &Arc<Self>, session: &str) -> Tracked {
        let token = CancellationToken::new();
        let id = self
            .next_execution
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running
            .entry(session.to_string())
            .or_default()
            .push((id, token.clone()));
        Tracked {
            state: Arc::clone(self),
            session: session.to_string(),
            id,
            token,
        }
    }
}

/// An error response: `{"error": message}` with a status.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }

    /// A failed append: the client's fault (too large) or the store's (503 while
    /// the daemon reopens it).
    pub(crate) fn append(e: &AppendError) -> Self {
        match e {
            AppendError::RecordTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, e.to_string())
            }
            AppendError::Poisoned { .. } | AppendError::Storage { .. } | AppendError::Closed => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            _ => ApiError::internal(e),
        }
    }

    /// A session that is unknown (404), ended (409) or badly named (400).
    pub(crate) fn session(e: SessionError) -> Self {
        match &e {
            SessionError::Unknown { .. } => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
            SessionError::Ended { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            SessionError::InvalidId { .. } => ApiError::new(StatusCode::BAD_REQUEST, e.to_string()),
            SessionError::Append(a) => ApiError::append(a),
            _ => ApiError::internal(e),
        }
    }

    /// A failed execution.
    pub(crate) fn execute(e: ExecuteError) -> Self {
        match e {
            ExecuteError::Session(s) => ApiError::session(s),
            ExecuteError::RunNotRecorded { ref source, .. }
            | ExecuteError::DoneNotRecorded { ref source, .. } => {
                let status = ApiError::append(source).status;
                ApiError::new(status, e.to_string())
            }
            other => ApiError::internal(other),
        }
    }

    /// A failed prompt.
    pub(crate) fn prompt(e: PromptError) -> Self {
        match e {
            PromptError::Streaming { .. } => ApiError::new(
                StatusCode::CONFLICT,
                format!("{e}; send streamingBehavior steer or followUp"),
            ),
            PromptError::Session(s) => ApiError::session(s),
            PromptError::Execute(x) => ApiError::execute(x),
            other => ApiError::new(StatusCode::BAD_REQUEST, other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": self.message}))).into_response()
    }
}

/// The request body as JSON, or a 4xx that says what is wrong with it.
pub(crate) fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    // axum's statuses: 400 malformed JSON, 422 wrong fields, 415 not JSON, 413 too large.
    body.map(|Json(t)| t).map_err(|rejection| {
        ApiError::new(
            rejection.status(),
            format!(
                "{}; send a JSON body with Content-Type: application/json",
                rejection.body_text()
            ),
        )
    })
}
