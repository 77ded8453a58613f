//! What every route shares: the engine, the error response, body parsing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cmdlog_engine::{
    CancellationToken, Engine, ExecuteError, SessionError, SessionState, valid_id,
};
use cmdlog_store::AppendError;
use serde_json::json;

use crate::agent::Bridge;
use crate::live::Live;
use crate::sse;
use crate::wire::WireIndex;
use cmdlog_acp::Recorder;

use crate::limits::{LINE_BYTES_MAX, PERMISSIONS_RESOLVED_MAX, SSE_CACHE_BYTES, SSE_CACHE_FRAMES};

/// Who may reach the daemon, beyond the bearer token.
#[derive(Debug, Clone, Default)]
pub(crate) struct Access {
    /// The bearer token clients must send.
    pub token: Option<String>,
    /// The `Host` names accepted (lowercase, without port); `None` accepts any (a
    /// daemon bound to a non-loopback address, which needs a token).
    pub hosts: Option<Vec<String>>,
    /// The port the daemon listens on: a `Host` with another port is refused.
    pub port: u16,
    /// Browser origins allowed (CORS); on a daemon without a token every other
    /// `Origin` is refused.
    pub origins: Vec<String>,
    /// Qwen Code's Web Shell, served at `/` without the token.
    pub web_shell: Option<crate::web_shell::WebShell>,
}

impl axum::extract::FromRef<Arc<AppState>> for crate::web_shell::Served {
    fn from_ref(state: &Arc<AppState>) -> Self {
        crate::web_shell::Served(state.access.web_shell.clone())
    }
}

/// A permission request waiting for its first vote.
pub(crate) struct PendingPermission {
    /// The session it belongs to.
    pub session: String,
    /// The options offered.
    pub options: serde_json::Value,
    /// Where the outcome goes: the agent's request, when an agent behind the
    /// daemon asked; `None` for an external runtime's request (it reads the log).
    pub answer: Option<tokio::sync::oneshot::Sender<serde_json::Value>>,
}

/// An answered permission request: its id, session, answer, and the prompt whose
/// turn asked.
pub(crate) type Resolved = (String, String, serde_json::Value, Option<String>);

/// Shared by every route.
/// What the daemon signs its checkpoints with.
pub(crate) struct Transparency {
    /// The log's id (the `{id}` of the routes).
    pub(crate) log_id: String,
    /// The signer, or why there is none (the key could not be read or made).
    pub(crate) signer: Result<cmdlog_tlog::Signer, cmdlog_tlog::keys::KeyError>,
}

/// Where a daemon works: its workspace and its user's home.
pub(crate) struct Places {
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// The user's home folder.
    pub home: PathBuf,
}

pub(crate) struct AppState {
    /// The workspace the daemon serves, canonical (`workspaceCwd`).
    pub workspace: PathBuf,
    /// The user's home folder (for discovery: the workbench's drift page).
    pub home: PathBuf,
    /// Per session: where each wire event id points in the log.
    pub wire: WireIndex,
    /// The sessions with prompts queued or running, their clients, their agent session.
    pub live: Mutex<HashMap<String, Arc<Live>>>,
    /// The session `sessionScope: "single"` creates reuse.
    pub single: Mutex<Option<String>>,
    /// Permission requests waiting for a vote, and the latest answered.
    pub votes: Votes,
    /// The ACP agent behind the daemon (`serve --agent`).
    pub bridge: Option<Arc<Bridge>>,
    /// Records what turns and the agent produce, in order.
    pub recorder: Recorder,
    /// What hook deliveries and the agents' telemetry share.
    pub capture: Capture,
    /// Cancelled when the daemon stops: event streams end.
    pub shutdown: CancellationToken,
    /// Woken by every registry change.
    pub commands_changed: Arc<tokio::sync::Notify>,
    /// The engine, or `None` while a failed store is being reopened.
    engine: RwLock<Option<Engine>>,
    /// Why the store is degraded, while it is.
    degraded: Mutex<Option<String>>,
    pub access: Access,
    /// In-flight executions per session, by id, for `cancel`.
    pub running: Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>,
    next_execution: std::sync::atomic::AtomicU64,
    /// Recent frames shared by SSE subscribers.
    pub frames: Arc<sse::FrameCache>,
    /// The log's checkpoints and tiles (`/log/{id}/…`), when it has an id.
    pub transparency: Option<Transparency>,
    /// Who is logged in to the workbench (`/ui/`).
    pub logins: crate::logins::Logins,
    /// The log's sessions folded so far, for the workbench's list: each
    /// request folds only what was appended since.
    pub sessions: Mutex<cmdlog_replay::SessionsFold>,
    /// The team's logs, mirrored from a hub (`serve --hub`).
    pub mirrors: Arc<crate::mirrors::Mirrors>,
}

/// What hook deliveries (`POST /hook/{agent}`) and the agents' telemetry
/// (`POST /v1/logs`) share: they are appended one at a time, under `serial`.
pub(crate) struct Capture {
    /// Serializes deliveries; holds the delivery ids the log holds.
    pub serial: tokio::sync::Mutex<Option<cmdlog_agents::RecentDeliveries>>,
    /// Turns for reading and decoding OTLP requests.
    pub otlp_turns: crate::otlp_turns::Turns,
    /// What `daemon.json` says: the key hooks are checked with.
    pub daemon: cmdlog_agents::DaemonFile,
    /// Secrets are replaced in the agents' telemetry before it is recorded.
    pub redact: bool,
    /// What the agents' sessions state, kept between deliveries (taken under
    /// `serial`).
    pub facts: Arc<std::sync::Mutex<cmdlog_agents::FactCache>>,
}

/// Permission requests: those waiting for a vote, by request id, and the
/// latest answered (for a late vote's answer).
#[derive(Default)]
pub(crate) struct Votes {
    pub pending: Mutex<HashMap<String, PendingPermission>>,
    pub resolved: Mutex<std::collections::VecDeque<Resolved>>,
}

/// An execution's entry in [`AppState::running`], removed when it is dropped: once
/// the execution settled, `cancel` no longer counts it.
pub(crate) struct Tracked {
    state: Arc<AppState>,
    session: String,
    id: u64,
    pub token: CancellationToken,
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

/// Wakes `changed` after every registry change of `engine`.
fn observe(engine: &Engine, changed: &Arc<tokio::sync::Notify>) {
    let changed = Arc::clone(changed);
    engine.on_change(move || changed.notify_one());
}

impl AppState {
    pub(crate) fn new(
        engine: Engine,
        access: Access,
        places: Places,
        bridge: Option<Arc<Bridge>>,
        daemon: cmdlog_agents::DaemonFile,
        transparency: Option<Transparency>,
        redact: bool,
    ) -> Arc<Self> {
        let commands_changed = Arc::new(tokio::sync::Notify::new());
        observe(&engine, &commands_changed);
        let runs_shown = bridge.is_none();
        Arc::new_cyclic(|weak: &std::sync::Weak<AppState>| AppState {
            recorder: {
                let weak = weak.clone();
                Recorder::start(Arc::new(move || weak.upgrade()?.engine().ok()))
            },
            commands_changed,
            shutdown: CancellationToken::new(),
            capture: Capture {
                serial: tokio::sync::Mutex::new(None),
                otlp_turns: crate::otlp_turns::Turns::default(),
                daemon,
                redact,
                facts: Arc::default(),
            },
            transparency,
            logins: crate::logins::Logins::default(),
            sessions: Mutex::new(cmdlog_replay::SessionsFold::default()),
            mirrors: Arc::default(),
            workspace: places.workspace,
            home: places.home,
            // Command runs show as tool calls only where cmdlog is the runtime.
            wire: WireIndex::new(runs_shown),
            live: Mutex::new(HashMap::new()),
            single: Mutex::new(None),
            votes: Votes::default(),
            bridge,
            engine: RwLock::new(Some(engine)),
            degraded: Mutex::new(None),
            access,
            running: Mutex::new(HashMap::new()),
            next_execution: std::sync::atomic::AtomicU64::new(1),
            frames: Arc::new(sse::FrameCache::new(
                SSE_CACHE_FRAMES,
                SSE_CACHE_BYTES,
                runs_shown,
            )),
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
        self.wire.clear();
        observe(&engine, &self.commands_changed);
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

    /// Remembers an answered permission request (the latest
    /// [`PERMISSIONS_RESOLVED_MAX`]), for the votes that come after it.
    pub(crate) fn remember_resolved(
        &self,
        request_id: &str,
        session: &str,
        outcome: &serde_json::Value,
    ) {
        let mut resolved = self
            .votes
            .resolved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if resolved.len() >= PERMISSIONS_RESOLVED_MAX {
            resolved.pop_front();
        }
        // Asked during the turn under way now.
        let prompt = self.live_if(session).and_then(|live| {
            live.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|a| a.prompt_id.clone())
        });
        resolved.push_back((
            request_id.to_string(),
            session.to_string(),
            outcome.clone(),
            prompt,
        ));
    }

    /// The session, answer and prompt of a request answered lately.
    pub(crate) fn resolved(
        &self,
        request_id: &str,
    ) -> Option<(String, serde_json::Value, Option<String>)> {
        let resolved = self
            .votes
            .resolved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        resolved
            .iter()
            .rev()
            .find(|(id, ..)| id == request_id)
            .map(|(_, session, outcome, prompt)| (session.clone(), outcome.clone(), prompt.clone()))
    }

    /// An open session; 404 `session_not_found` for one that is unknown, badly
    /// named, or ended (closed or died).
    pub(crate) fn session(&self, id: &str) -> Result<SessionState, ApiError> {
        let s = self.any_session(id)?;
        if let Some(ended) = s.ended {
            return Err(ApiError::session_not_found(id).because(format!(
                "session {id:?} ended at seq {ended}; create a new one with POST /session"
            )));
        }
        Ok(s)
    }

    /// A session that exists, open or ended.
    pub(crate) fn any_session(&self, id: &str) -> Result<SessionState, ApiError> {
        if !valid_id(id) {
            return Err(ApiError::session_not_found(id).because(format!(
                "no session {id:?}: session ids are 1 to 128 of A-Z a-z 0-9 . _ : -"
            )));
        }
        match self.engine()?.session(id) {
            Some(s) if s.created.is_some() => Ok(s),
            _ => Err(ApiError::session_not_found(id)),
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

/// An error response, in `qwen serve`'s shape: `{"error": message, "code"?, ...}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    message: String,
    code: Option<&'static str>,
    extra: serde_json::Map<String, serde_json::Value>,
    retry_after: Option<u32>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            code: None,
            extra: serde_json::Map::new(),
            retry_after: None,
        }
    }

    /// 400 with a message.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// Adds the machine-readable `code`.
    pub(crate) fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// Adds a field beside `error`.
    pub(crate) fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// Replaces the message.
    pub(crate) fn because(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Adds `Retry-After`.
    pub(crate) fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 404 `session_not_found`, the shape clients test for.
    pub(crate) fn session_not_found(id: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("No session with id {id:?}; create one with POST /session"),
        )
        .code("session_not_found")
        .with("sessionId", id)
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
            SessionError::Unknown { session } | SessionError::Ended { session, .. } => {
                ApiError::session_not_found(session).because(e.to_string())
            }
            SessionError::InvalidId { .. } => {
                ApiError::bad_request(e.to_string()).code("invalid_session_id")
            }
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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.message});
        if let Some(code) = self.code {
            body["code"] = json!(code);
        }
        for (k, v) in self.extra {
            body[k] = v;
        }
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// The request body as JSON, or a 4xx that says what is wrong with it.
/// The client id a request names in `X-Qwen-Client-Id`: absent or empty is
/// anonymous; otherwise 1 to 128 of `A-Za-z0-9._:-`.
pub(crate) fn client_id(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("x-qwen-client-id") else {
        return Ok(None);
    };
    let id = value.to_str().unwrap_or("\u{0}").trim();
    if id.is_empty() {
        return Ok(None);
    }
    if id.len() > 128
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
    {
        return Err(ApiError::bad_request(
            "`X-Qwen-Client-Id` must be 1 to 128 of A-Z a-z 0-9 . _ : -",
        )
        .code("invalid_client_id"));
    }
    Ok(Some(id.to_string()))
}

pub(crate) fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    // axum's statuses: 400 malformed JSON, 422 wrong fields (400 here, as qwen
    // serve answers), 415 not JSON, 413 too large.
    body.map(|Json(t)| t).map_err(|rejection| {
        let status = match rejection.status() {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        let message = if matches!(rejection, JsonRejection::JsonSyntaxError(_)) {
            format!("Invalid JSON in request body: {}", rejection.body_text())
        } else {
            format!(
                "{}; send a JSON body with Content-Type: application/json",
                rejection.body_text()
            )
        };
        ApiError::new(status, message)
    })
}
