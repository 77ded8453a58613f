//! `cmdlog serve`: sessions over HTTP, events over SSE read from the durable log.
//! Routes are thin adapters over the engine and replay libraries (docs/http.md).

mod sse;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use cmdlog_engine::{
    CancellationToken, DiscoveryConfig, Engine, EventData, ExecuteRequest, InvocationSource, Mode,
    Outcome, PermissionRequested, PermissionResolved, PromptError, PromptOutcome, PromptRequest,
    SessionError, SessionState, StreamingBehavior, SubmittedAttachment, discover, valid_id,
    watch_roots,
};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq;

pub(crate) use sse::{Resume, resume_from};

/// The features `/capabilities` lists.
const FEATURES: [&str; 10] = [
    "session_create",
    "session_prompt",
    "session_events",
    "session_cancel",
    "session_set_model",
    "session_permission",
    "session_supported_commands",
    "session_update",
    "session_delete",
    "command_execute",
];

/// Largest body of a `command` request (base64 attachments), in bytes.
const COMMAND_BODY_BYTES_MAX: usize = 96 * 1024 * 1024;
/// Largest body of any other request, in bytes.
const BODY_BYTES_MAX: usize = 1024 * 1024;
/// Most events one SSE read takes from the log before sending them.
const SSE_BATCH_EVENTS_MAX: u64 = 1000;
/// Frames kept for sharing between subscribers.
const SSE_CACHE_FRAMES: usize = 8192;
/// How long a woken subscriber waits for more commits before reading.
const SSE_COALESCE: Duration = Duration::from_millis(10);

/// Shared by every route.
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    token: Option<String>,
    /// In-flight executions per session, for `cancel`.
    running: Mutex<HashMap<String, Vec<CancellationToken>>>,
    /// Serializes permission votes so the first one wins.
    votes: tokio::sync::Mutex<()>,
    /// Recent frames shared by SSE subscribers.
    frames: Arc<sse::FrameCache>,
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

    fn session(&self, id: &str) -> Result<SessionState, ApiError> {
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
    fn track(&self, session: &str) -> CancellationToken {
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
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    fn internal(e: impl std::fmt::Display) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": self.message}))).into_response()
    }
}

/// The request body as JSON, or a 4xx that says what is wrong with it.
fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
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

async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // Constant time: the comparison does not reveal how much of the token matched.
        let ok: bool = given.as_bytes().ct_eq(token.as_bytes()).into();
        if !ok {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token: send Authorization: Bearer <token>",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// The router. `allow_origin` enables CORS for that origin only.
pub(crate) fn router(state: Arc<AppState>, allow_origin: Option<&str>) -> Router {
    let protected = Router::new()
        .route("/capabilities", get(capabilities))
        .route("/session", post(create_session))
        .route("/session/{id}", axum::routing::delete(delete_session))
        .route("/session/{id}/prompt", post(prompt))
        .route("/session/{id}/cancel", post(cancel))
        .route("/session/{id}/model", post(model))
        .route("/session/{id}/permission", post(permission))
        .route(
            "/session/{id}/command",
            post(command).layer(DefaultBodyLimit::max(COMMAND_BODY_BYTES_MAX)),
        )
        .route("/session/{id}/update", post(update))
        .route("/session/{id}/supported-commands", get(supported_commands))
        .route("/session/{id}/events", get(events))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_token,
        ));
    let mut app = Router::new()
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .merge(protected)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .with_state(state);
    if let Some(origin) = allow_origin
        && let Ok(origin) = origin.parse::<HeaderValue>()
    {
        app = app.layer(
            tower_http::cors::CorsLayer::new()
                .allow_origin(origin)
                .allow_methods(tower_http::cors::Any)
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::HeaderName::from_static("last-event-id"),
                ]),
        );
    }
    app
}

async fn capabilities() -> Json<serde_json::Value> {
    Json(json!({"v": 1, "features": FEATURES}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateSession {
    session_id: Option<String>,
    agent: Option<String>,
    mode: Option<String>,
}

async fn create_session(
    State(state): State<Arc<AppState>>,
    request: Result<Json<CreateSession>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = body(request)?;
    let mode = match request.mode.as_deref() {
        None => Mode::Acp,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("unknown mode {m:?}: use interactive, non_interactive or acp"),
            )
        })?,
    };
    let agent = request.agent.unwrap_or_else(|| "main".into());
    if !valid_id(&agent) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("invalid agent id {agent:?}"),
        ));
    }
    let id = request.session_id.unwrap_or_else(crate::new_session_id);
    let created = state
        .engine
        .ensure_session(&id, &agent, mode)
        .await
        .map_err(|e| match e {
            SessionError::InvalidId { .. } => ApiError::new(StatusCode::BAD_REQUEST, e.to_string()),
            SessionError::Ended { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            other => ApiError::internal(other),
        })?;
    Ok(Json(
        json!({"sessionId": id, "created": created, "lastEventId": state.engine.log().head().seq}),
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PromptBody {
    text: String,
    streaming_behavior: Option<String>,
}

async fn prompt(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<PromptBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    let behavior = match request.streaming_behavior.as_deref() {
        None => None,
        Some("steer") => Some(StreamingBehavior::Steer),
        Some("followUp" | "follow_up" | "follow-up") => Some(StreamingBehavior::FollowUp),
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("streamingBehavior {other:?}: use steer or followUp"),
            ));
        }
    };
    let agent = session.agent.clone().unwrap_or_else(|| "main".into());
    let mut req = PromptRequest::new(
        &id,
        &agent,
        session.mode.unwrap_or(Mode::Acp),
        &request.text,
    );
    req.behavior = behavior;
    req.cancel = state.track(&id);
    let outcome = state.engine.prompt(req).await.map_err(|e| match e {
        PromptError::Streaming { .. } => ApiError::new(
            StatusCode::CONFLICT,
            format!("{e}; send streamingBehavior steer or followUp"),
        ),
        PromptError::Session(SessionError::Ended { .. }) => {
            ApiError::new(StatusCode::CONFLICT, e.to_string())
        }
        other => ApiError::internal(other),
    })?;
    Ok(Json(match outcome {
        PromptOutcome::Delivered {
            seq,
            text,
            delivery,
            from_run,
            ..
        } => {
            json!({"delivered": true, "seq": seq, "text": text, "delivery": delivery, "fromRun": from_run})
        }
        PromptOutcome::Handled(ex) => {
            json!({"delivered": false, "commandId": ex.command_id, "name": ex.name, "outcome": ex.outcome})
        }
    }))
}

async fn cancel(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    let tokens = state
        .running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id)
        .unwrap_or_default();
    let cancelled = tokens.iter().filter(|t| !t.is_cancelled()).count();
    for t in &tokens {
        t.cancel();
    }
    let seq = state
        .engine
        .append_session_event(&id, None, EventData::SessionCancelled(Default::default()))
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(json!({"cancelled": cancelled, "seq": seq})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelBody {
    model: String,
}

async fn model(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<ModelBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    // Through the headless /model command, so the switch is a logged run.
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let mut exec = ExecuteRequest::new(
        &id,
        &agent,
        Mode::NonInteractive,
        &format!("/model {}", request.model),
    );
    exec.source = InvocationSource::Api;
    let ex = state
        .engine
        .execute(exec)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::internal("the headless /model command is not registered"))?;
    match &ex.outcome {
        Outcome::Error { text, .. } => Err(ApiError::new(StatusCode::BAD_REQUEST, text.clone())),
        _ => Ok(Json(
            json!({"model": request.model, "commandId": ex.command_id, "outcome": ex.outcome}),
        )),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PermissionBody {
    request_id: String,
    decision: serde_json::Value,
}

async fn permission(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<PermissionBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    let request = body(request)?;
    let _first_vote_wins = state.votes.lock().await;
    let log = Arc::clone(state.engine.log());
    let sid = id.clone();
    let view =
        tokio::task::spawn_blocking(move || cmdlog_replay::SessionView::load(&log, &sid, u64::MAX))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
    let Some(pending) = view
        .permissions
        .iter()
        .find(|p| p.request_id == request.request_id)
    else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "no permission request {:?} in session {id}",
                request.request_id
            ),
        ));
    };
    if let Some((seq, decision)) = &pending.resolved {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "permission request {:?} was already resolved at seq {seq} ({decision}); the first vote wins",
                request.request_id
            ),
        ));
    }
    let seq = state
        .engine
        .append_session_event(
            &id,
            None,
            EventData::PermissionResolved(PermissionResolved {
                request_id: request.request_id,
                decision: request.decision,
            }),
        )
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(json!({"resolved": true, "seq": seq})))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AttachmentBody {
    name: String,
    #[serde(default)]
    media_type: Option<String>,
    data: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandBody {
    line: String,
    #[serde(default)]
    attachments: Vec<AttachmentBody>,
}

async fn command(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<CommandBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    let mut attachments = Vec::with_capacity(request.attachments.len());
    for (i, a) in request.attachments.into_iter().enumerate() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(a.data.as_bytes())
            .map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("attachment {} ({}): data is not base64: {e}", i + 1, a.name),
                )
            })?;
        // The media type is sniffed from the content; a declared image/* asks for an image block.
        attachments.push(
            if a.media_type
                .as_deref()
                .is_some_and(|m| m.starts_with("image/"))
            {
                SubmittedAttachment::Image {
                    name: a.name,
                    bytes,
                }
            } else {
                SubmittedAttachment::File {
                    name: a.name,
                    bytes,
                }
            },
        );
    }
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let mut exec = ExecuteRequest::new(
        &id,
        &agent,
        session.mode.unwrap_or(Mode::Acp),
        &request.line,
    );
    exec.source = InvocationSource::Api;
    exec.attachments = attachments;
    exec.cancel = state.track(&id);
    let ex = state
        .engine
        .execute(exec)
        .await
        .map_err(ApiError::internal)?;
    let Some(ex) = ex else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{:?} is not a command for this session's agent and mode; GET /session/{id}/supported-commands lists them",
                request.line
            ),
        ));
    };
    Ok(Json(
        json!({"commandId": ex.command_id, "name": ex.name, "outcome": ex.outcome, "done": ex.done}),
    ))
}

async fn update(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let update = body(request)?;
    let kind = update.get("sessionUpdate").and_then(|v| v.as_str()).ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "an update needs a sessionUpdate field (agent_message_chunk, agent_thought_chunk, tool_call, tool_call_update, turn_complete, permission_request)")
    })?;
    let data = if kind == "permission_request" {
        let request_id = update
            .get("requestId")
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "a permission_request needs a requestId",
                )
            })?;
        EventData::PermissionRequested(PermissionRequested {
            request_id: request_id.to_string(),
            options: update
                .get("options")
                .cloned()
                .unwrap_or(serde_json::Value::Null),
        })
    } else {
        EventData::SessionUpdate(update)
    };
    let seq = state
        .engine
        .append_session_event(&id, session.agent.as_deref(), data)
        .await
        .map_err(|e| match e {
            SessionError::Ended { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            other => ApiError::internal(other),
        })?;
    Ok(Json(json!({"seq": seq})))
}

#[derive(Deserialize)]
struct ModeQuery {
    mode: Option<String>,
}

async fn supported_commands(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<ModeQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let mode = match query.mode.as_deref() {
        None => session.mode.unwrap_or(Mode::Acp),
        Some(m) => Mode::parse(m)
            .ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, format!("unknown mode {m:?}")))?,
    };
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let list = state.engine.list(&agent, mode);
    Ok(Json(
        json!({"mode": mode, "availableCommands": sse::available_commands(&list)}),
    ))
}

async fn delete_session(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    let seq = state
        .engine
        .close_session(&id, Some("deleted over HTTP".into()))
        .await
        .map_err(|e| match e {
            SessionError::Ended { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            other => ApiError::internal(other),
        })?;
    Ok(Json(json!({"closed": true, "seq": seq})))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventsQuery {
    last_event_id: Option<String>,
}

/// One subscriber: a cursor over the log and at most one batch of frames in hand.
struct Cursor {
    seq: u64,
    pending: std::collections::VecDeque<SseEvent>,
    head: tokio::sync::watch::Receiver<u64>,
    greeted: bool,
}

async fn events(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let session = state.session(&id)?;
    let header = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let resume = resume_from(header, query.last_event_id.as_deref())
        .map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, m))?;
    let log = Arc::clone(state.engine.log());
    let start = match resume {
        Resume::Live => log.head().seq,
        Resume::After(n) => n,
    };
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let mode = session.mode.unwrap_or(Mode::Acp);
    let created = session.created.unwrap_or(0);
    let cursor = Cursor {
        seq: start,
        pending: Default::default(),
        head: log.subscribe(),
        greeted: false,
    };
    let engine = state.engine.clone();
    let frames = Arc::clone(&state.frames);
    let stream = futures_util::stream::unfold(cursor, move |mut c| {
        let (log, engine, id, agent, frames) = (
            Arc::clone(&log),
            engine.clone(),
            id.clone(),
            agent.clone(),
            Arc::clone(&frames),
        );
        async move {
            loop {
                if !c.greeted {
                    c.greeted = true;
                    let hello = SseEvent::default()
                        .comment("cmdlog events")
                        .retry(Duration::from_secs(3));
                    return Some((Ok(hello), c));
                }
                if let Some(frame) = c.pending.pop_front() {
                    return Some((Ok(frame), c));
                }
                let head = *c.head.borrow_and_update();
                if head > c.seq {
                    let (from, to) = (c.seq + 1, head.min(c.seq + SSE_BATCH_EVENTS_MAX));
                    let (reader, cache) = (Arc::clone(&log), Arc::clone(&frames));
                    let window =
                        tokio::task::spawn_blocking(move || cache.window(&reader, from, to))
                            .await
                            .ok()?
                            .ok()?;
                    // Registry changes before the session existed are not its news, and
                    // several in one batch collapse into the last (the list is current).
                    let last_registry = window
                        .iter()
                        .rev()
                        .find(|f| f.registry && f.seq > created)
                        .map(|f| f.seq);
                    for frame in window {
                        if frame.registry {
                            if Some(frame.seq) != last_registry {
                                continue;
                            }
                            let data = json!({
                                "id": frame.seq,
                                "v": 1,
                                "type": "available_commands_update",
                                "session": id,
                                "data": {"mode": mode, "availableCommands": sse::available_commands(&engine.list(&agent, mode))},
                            });
                            c.pending.push_back(
                                SseEvent::default()
                                    .id(frame.seq.to_string())
                                    .event("available_commands_update")
                                    .data(data.to_string()),
                            );
                        } else if frame.session.as_deref() == Some(id.as_str()) {
                            c.pending.push_back(
                                SseEvent::default()
                                    .id(frame.seq.to_string())
                                    .event(frame.name.as_str())
                                    .data(frame.data.as_str()),
                            );
                        }
                    }
                    c.seq = to;
                    continue;
                }
                if c.head.changed().await.is_err() {
                    return None;
                }
                // Let a burst of commits land, so one read serves many of them: under
                // load each subscriber reads batches instead of one event per commit.
                tokio::time::sleep(SSE_COALESCE).await;
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(Duration::from_secs(15))
            .text("heartbeat"),
    ))
}

/// How `cmdlog serve` runs.
pub(crate) struct ServeConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) token: Option<String>,
    pub(crate) allow_origin: Option<String>,
    pub(crate) workspace: PathBuf,
    pub(crate) home: PathBuf,
}

/// `.cmdlog/daemon.json` beside the log: who holds it and where to reach them.
pub(crate) fn daemon_file(log: &Path) -> PathBuf {
    log.parent().unwrap_or(Path::new(".")).join("daemon.json")
}

fn write_daemon_file(path: &Path, url: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    writeln!(file, "{}", json!({"url": url, "pid": std::process::id()}))
}

/// Runs discovery + sync whenever a watched command folder changes (debounced), so
/// edits reach the log within a second.
fn watch_commands(
    engine: Engine,
    config: DiscoveryConfig,
    runtime: tokio::runtime::Handle,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = tx.send(());
        }
    })
    .ok()?;
    for (root, recursive) in watch_roots(&config) {
        let mode = if recursive {
            notify::RecursiveMode::Recursive
        } else {
            notify::RecursiveMode::NonRecursive
        };
        let _ = watcher.watch(&root, mode);
    }
    std::thread::Builder::new()
        .name("cmdlog-reload".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Let a burst of file events settle, then sync once.
                std::thread::sleep(Duration::from_millis(150));
                while rx.try_recv().is_ok() {}
                match discover(&config) {
                    Ok(found) => match runtime.block_on(engine.sync(&found)) {
                        Ok(report) => {
                            for w in &report.warnings {
                                eprintln!("cmdlog serve: warning: {}: {}", w.path, w.message);
                            }
                        }
                        Err(e) => eprintln!("cmdlog serve: reload failed: {e}"),
                    },
                    Err(e) => eprintln!("cmdlog serve: reload skipped: {e}"),
                }
            }
        })
        .ok()?;
    Some(watcher)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = ctrl_c => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}

/// Serves until SIGINT or SIGTERM. `engine` holds the log for the daemon's life.
pub(crate) async fn serve(
    engine: Engine,
    config: ServeConfig,
    log_path: &Path,
) -> Result<(), String> {
    if !config.addr.ip().is_loopback() && config.token.is_none() {
        return Err(format!(
            "refusing to listen on {} without a token: pass --token or set CMDLOG_TOKEN, or bind a loopback address",
            config.addr
        ));
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let url = format!("http://{local}");
    let daemon_json = daemon_file(log_path);
    write_daemon_file(&daemon_json, &url)
        .map_err(|e| format!("cannot write {}: {e}", daemon_json.display()))?;
    let _watcher = watch_commands(
        engine.clone(),
        DiscoveryConfig::new(&config.home, &config.workspace),
        tokio::runtime::Handle::current(),
    );
    eprintln!(
        "cmdlog serve: listening on {url} (pid {}); log {}",
        std::process::id(),
        log_path.display()
    );
    let state = AppState::new(engine, config.token);
    let app = router(state, config.allow_origin.as_deref());
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await;
    let _ = std::fs::remove_file(&daemon_json);
    served.map_err(|e| format!("the server stopped: {e}"))
}
