//! What every route shares: the engine, the error response, body parsing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cmdlog_engine::{CancellationToken, Engine, SessionState, valid_id};
use serde_json::json;

use super::sse;

/// Largest body of a `command` request (base64 attachments), in bytes.
pub(crate) const COMMAND_BODY_BYTES_MAX: usize = 96 * 1024 * 1024;
/// Largest body of any other request, in bytes.
pub(crate) const BODY_BYTES_MAX: usize = 1024 * 1024;
/// Frames kept for sharing between subscribers.
pub(crate) const SSE_CACHE_FRAMES: usize = 8192;

/// Shared by every route.
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    pub(crate) token: Option<String>,
    /// In-flight executions per session, for `cancel`.
    pub(crate) running: Mutex<HashMap<String, Vec<CancellationToken>>>,
    /// Serializes permission votes so the first one wins.
    pub(crate) votes: tokio::sync::Mutex<()>,
    /// Recent frames shared by SSE subscribers.
    pub(crate) frames: Arc<sse::FrameCache>,
}

impl AppState {
    pub(crate) fn new(engine: Engine, token: Option<String>) -> Arc<Self> {
        Arc::new(AppState {
            engine,
            token,
            running: Mutex::new(HashMap::new()),
            votes: tokio::sync::Mutex::new(()),
            frames: Arc::new(sse::FrameCache::new(SSE_CACHE_FRAMES)),
        })
    }

    pub(crate) fn session(&self, id: &str) -> Result<SessionState, ApiError> {
        if !valid_id(id) {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no session {id:?}: session ids are 1 to 128 of A-Z a-z 0-9 . _ : -"),
            ));
        }
        match self.engine.session(id) {
            Some(s) if s.created.is_some() => Ok(s),
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no session {id:?}; create it with POST /session"),
            )),
        }
    }

    /// Registers a cancellation token for an execution in `session`.
    pub(crate) fn track(&self, session: &str) -> CancellationToken {
        let token = CancellationToken::new();
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let list = running.entry(session.to_string()).or_default();
        list.retain(|t| !t.is_cancelled());
        list.push(token.clone());
        token
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
