//! Session lifecycle on `qwen serve`'s wire: capabilities, create or attach,
//! status, list, heartbeat, detach, close (`docs/http.md`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cmdlog_engine::event::SessionEnded;
use cmdlog_engine::{EventData, Mode, SessionState, valid_id};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::limits::QUEUE_MAX;
use crate::state::{ApiError, AppState, body, client_id};

/// The features `/capabilities` lists: the `qwen serve` tags for what the daemon
/// does as `qwen serve` does it, then cmdlog's own.
const FEATURES: [&str; 24] = [
    "health",
    "capabilities",
    "session_create",
    "session_id_override",
    "session_scope_override",
    "session_list",
    "session_status",
    "session_prompt",
    "non_blocking_prompt",
    "session_cancel",
    "session_events",
    "typed_event_schema",
    "session_set_model",
    "client_identity",
    "client_heartbeat",
    "session_permission_vote",
    "permission_vote",
    "session_supported_commands",
    "session_close",
    "session_source_metadata",
    "session_load",
    "cmdlog_command_execute",
    "cmdlog_runtime_update",
    "cmdlog_durable_resume",
];

pub(super) async fn capabilities(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "v": 1,
        "protocolVersions": {"current": "v1", "supported": ["v1"]},
        "mode": "http-bridge",
        "features": FEATURES,
        "modelServices": [],
        "workspaceCwd": state.workspace,
        "limits": {"maxPendingPromptsPerSession": QUEUE_MAX},
        "cmdlogVersion": env!("CARGO_PKG_VERSION"),
        "agent": state.bridge.as_ref().map(|b| b.command.display()),
    }))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateSession {
    cwd: Option<Value>,
    session_id: Option<String>,
    session_scope: Option<String>,
    /// cmdlog's own: the agent id the session's commands are listed for.
    agent: Option<String>,
    /// cmdlog's own: the execution mode.
    mode: Option<String>,
    /// Where the session comes from, as the client names it (Qwen Code's Web
    /// Shell sends `default`): echoed, not kept.
    source_type: Option<Value>,
    source_id: Option<Value>,
    /// The agent's approval mode to start in (`default`, `auto-edit`, `yolo`…).
    approval_mode: Option<Value>,
}

/// Echoes a session's source as `qwen serve` does; cmdlog does not keep it.
fn echo_source(answer: &mut Value, source_type: Option<String>, source_id: Option<String>) {
    if let Some(source_type) = source_type {
        answer["sourceType"] = source_type.into();
        answer["sourcePersisted"] = false.into();
    }
    if let Some(source_id) = source_id {
        answer["sourceId"] = source_id.into();
    }
}

/// A session source's type or id: `None` when not given, else 1 to 128 of
/// `A-Za-z0-9._:-` (400 `invalid_session_source` otherwise).
fn session_source(field: &str, value: Option<&Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s))
            if (1..=128).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b)) =>
        {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(ApiError::bad_request(format!(
            "`{field}` must be 1 to 128 of A-Z a-z 0-9 . _ : -"
        ))
        .code("invalid_session_source")),
    }
}

/// `workspace_mismatch` unless `cwd` is the daemon's workspace.
fn check_cwd(state: &AppState, cwd: &str) -> Result<(), ApiError> {
    let path = std::path::Path::new(cwd);
    if !path.is_absolute() {
        return Err(ApiError::bad_request(format!(
            "`cwd` must be an absolute path; this daemon serves {}",
            state.workspace.display()
        )));
    }
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if canonical != state.workspace {
        return Err(ApiError::bad_request(format!(
            "this daemon serves {}, not {cwd}; start `cmdlog serve` in that workspace",
            state.workspace.display()
        ))
        .code("workspace_mismatch")
        .with("boundWorkspace", state.workspace.display().to_string())
        .with("requestedWorkspace", cwd));
    }
    Ok(())
}

use cmdlog_common::time::{now_ms, rfc3339 as iso};

pub(super) async fn create_session(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Result<Json<CreateSession>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let request = body(request)?;
    let client = client_id(&headers)?;
    match &request.cwd {
        None | Some(Value::Null) => {}
        Some(Value::String(cwd)) => check_cwd(&state, cwd)?,
        Some(_) => {
            return Err(ApiError::bad_request(
                "`cwd` must be an absolute path string",
            ));
        }
    }
    let (source_type, source_id) = (
        session_source("sourceType", request.source_type.as_ref())?,
        session_source("sourceId", request.source_id.as_ref())?,
    );
    let approval_mode = crate::modes::requested_mode(request.approval_mode.as_ref())?;
    let scope = request.session_scope.as_deref().unwrap_or("single");
    if scope != "single" && scope != "thread" {
        return Err(
            ApiError::bad_request(format!("sessionScope {scope:?}: use single or thread"))
                .code("invalid_session_scope"),
        );
    }
    let mode = match request.mode.as_deref() {
        None => Mode::Acp,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown mode {m:?}: use interactive, non_interactive or acp"
            ))
        })?,
    };
    let agent = request.agent.unwrap_or_else(|| "main".into());
    if !valid_id(&agent) {
        return Err(ApiError::bad_request(format!("invalid agent id {agent:?}")));
    }
    let engine = state.engine()?;
    // A requested id is created or attached to; `single` reuses the workspace's
    // session; `thread` always starts a new one.
    let id = match request.session_id {
        Some(requested) => {
            let id = requested.to_lowercase();
            if !valid_id(&id) {
                return Err(ApiError::bad_request(format!(
                    "invalid sessionId {requested:?}: use 1 to 128 of a-z 0-9 . _ : - starting with a letter or digit"
                ))
                .code("invalid_session_id"));
            }
            if let Some(SessionState {
                ended: Some(ended), ..
            }) = engine.session(&id)
            {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("session {id:?} ended at seq {ended}; choose another sessionId"),
                )
                .code("session_conflict")
                .with("sessionId", id));
            }
            id
        }
        None if scope == "single" => {
            let single = state
                .single
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            single
                .filter(|s| engine.session(s).is_some_and(|s| s.ended.is_none()))
                .unwrap_or_else(cmdlog_common::ids::new_session_id)
        }
        None => cmdlog_common::ids::new_session_id(),
    };
    let created = engine
        .ensure_session(&id, &agent, mode)
        .await
        .map_err(ApiError::session)?;
    if scope == "single" {
        *state.single.lock().unwrap_or_else(|p| p.into_inner()) = Some(id.clone());
    }
    let client = client.unwrap_or_else(|| cmdlog_common::ids::new_id("c-", 16));
    let live = state.live(&id);
    live.clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(client.clone(), now_ms());
    if let Some(bridge) = state.bridge.clone()
        && let Err(e) = bridge.bind(&state, &id).await
    {
        // The first prompt tries again, and fails its turn if the agent still cannot.
        eprintln!(
            "cmdlog serve: session {}: {}",
            cmdlog_common::terminal::clean(&id),
            cmdlog_common::terminal::clean(&e.to_string())
        );
    }
    // The mode asked for, when the agent offers it and is not in it already.
    if let Some(mode) = approval_mode
        && crate::modes::offers(&state, &id, &mode) == Some(false)
    {
        crate::modes::set_mode(&state, &id, &mode, Some(client.clone())).await?;
    }
    state.announce_commands(&id);
    state.recorder.flush().await;
    let session = engine.session(&id).unwrap_or_default();
    let mut answer = json!({
        "sessionId": id,
        "workspaceCwd": state.workspace,
        "attached": !created,
        "clientId": client,
        "createdAt": iso(created_at(&state, &session)),
        "hasActivePrompt": has_active_prompt(&state, &id),
    });
    // The agent's models and modes, as its `session/new` answer gave them
    // (and as the mode asked for left them): a client picks among these.
    let said = live
        .agent_state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    for key in ["models", "modes", "configOptions"] {
        if let Some(value) = said.get(key) {
            answer[key] = value.clone();
        }
    }
    echo_source(&mut answer, source_type, source_id);
    Ok(Json(answer))
}

/// `POST /session/{id}/load`: a client (the Web Shell reloading a session's
/// page) takes up an open session, with a client id of its own and the
/// agent's models and modes. Its history comes whole, as `qwen serve` sends
/// it: every shown frame in `liveJournal` (a page renders these with its
/// own prompts' echoes), and `lastEventId` the last of them, after which its
/// event stream resumes. A session too large to send whole
/// ([`crate::limits::JOURNAL_EVENTS_MAX`]) answers `lastEventId: 0` and
/// `replayDegraded: true`: its history then comes on the event stream.
pub(super) async fn load(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let session = state.session(&id)?;
    let client = cmdlog_common::ids::new_id("c-", 16);
    state
        .live(&id)
        .clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(client.clone(), now_ms());
    let log = Arc::clone(state.engine()?.log());
    let (sid, runs) = (id.clone(), state.frames.runs);
    let journal = tokio::task::spawn_blocking(move || {
        crate::journal::journal(&log, &sid, log.head().seq, runs)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    let mut answer = summary(&state, &id, &session);
    let (frames, last, degraded) = match journal {
        Some(journal) => {
            let frames = journal
                .envelopes
                .iter()
                .map(|e| serde_json::from_str::<Value>(e))
                .collect::<Result<Vec<_>, _>>()
                .map_err(ApiError::internal)?;
            // What the journal shows, not the turn's bookkeeping, which ends a
            // moment after the turn's end is in the log: a page told a turn
            // runs whose end its journal already holds waits for an end that
            // never comes on its stream.
            answer["hasActivePrompt"] = journal.turn_open.into();
            (frames, journal.last_id, false)
        }
        None => (Vec::new(), 0, true),
    };
    for (key, value) in [
        ("attached", Value::from(true)),
        ("clientId", client.into()),
        ("state", crate::modes::said_of(&state, &id).await),
        ("compactedReplay", Value::Array(Vec::new())),
        ("liveJournal", Value::Array(frames)),
        ("lastEventId", last.into()),
    ] {
        answer[key] = value;
    }
    if degraded {
        answer["replayDegraded"] = true.into();
    }
    Ok(Json(answer))
}

/// When the session was created, unix ms.
fn created_at(state: &AppState, session: &SessionState) -> u64 {
    let Some(seq) = session.created else {
        return now_ms();
    };
    state
        .engine()
        .ok()
        .and_then(|e| e.log().get(seq).ok().flatten())
        .and_then(|r| cmdlog_engine::Event::decode(r.seq, &r.bytes).ok())
        .map(|e| e.at)
        .unwrap_or_else(now_ms)
}

fn has_active_prompt(state: &AppState, id: &str) -> bool {
    state
        .live_if(id)
        .is_some_and(|l| l.active.lock().unwrap_or_else(|p| p.into_inner()).is_some())
}

/// A session's summary, as status and list give it.
fn summary(state: &AppState, id: &str, session: &SessionState) -> Value {
    let live = state.live_if(id);
    let mut summary = json!({
        "sessionId": id,
        "workspaceCwd": state.workspace,
        "createdAt": iso(created_at(state, session)),
        "clientCount": live.as_ref().map(|l| l.clients.lock().unwrap_or_else(|p| p.into_inner()).len()).unwrap_or(0),
        "hasActivePrompt": has_active_prompt(state, id),
        "pendingPromptCount": live.as_ref().map(|l| l.queued.load(std::sync::atomic::Ordering::SeqCst)).unwrap_or(0),
        "isWaitingForPermission": state.votes.pending.lock().unwrap_or_else(|p| p.into_inner()).values().any(|p| p.session == id),
        "agent": session.agent,
        "mode": session.mode,
    });
    // Named as `qwen serve` names a live session: by the agent's title.
    if let Some(title) = &session.title {
        summary["displayName"] = Value::String(title.clone());
    }
    summary
}

pub(super) async fn status(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let session = state.session(&id)?;
    Ok(Json(summary(&state, &id, &session)))
}

#[derive(Deserialize)]
pub(super) struct ListQuery {
    size: Option<String>,
    cursor: Option<String>,
}

/// `GET /workspace/:cwd/sessions`: the open sessions, newest first, a page at a time.
pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    UrlPath(cwd): UrlPath<String>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    check_cwd(&state, &cwd)?;
    let size = match query.size.as_deref() {
        None => 20,
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ApiError::bad_request("`size` must be an integer from 1 to 1000"))?,
    };
    let skip = match query.cursor.as_deref() {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            ApiError::bad_request("`cursor` is not one this daemon gave").code("invalid_cursor")
        })?,
    };
    let engine = state.engine()?;
    let mut open: Vec<(String, SessionState)> = engine.with_state(|s| {
        s.sessions
            .iter()
            .filter(|(_, s)| s.created.is_some() && s.ended.is_none())
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect()
    });
    open.sort_by_key(|s| std::cmp::Reverse(s.1.created));
    let page: Vec<Value> = open
        .iter()
        .skip(skip)
        .take(size)
        .map(|(id, s)| {
            let mut listed = summary(&state, id, s);
            // Listed as `qwen serve` lists it: by its title, else by its
            // first prompt (which `qwen serve` reads from its transcript).
            if listed.get("displayName").is_none()
                && let Some(prompt) = &s.first_prompt
            {
                listed["displayName"] = Value::String(prompt.clone());
            }
            listed
        })
        .collect();
    let mut answer = json!({"sessions": page});
    if skip + size < open.len() {
        answer["nextCursor"] = json!((skip + size).to_string());
    }
    Ok(Json(answer))
}

pub(super) async fn heartbeat(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.session(&id)?;
    let client = client_id(&headers)?;
    let now = now_ms();
    let mut answer = json!({"sessionId": id, "lastSeenAt": now});
    if let Some(client) = client {
        state
            .live(&id)
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(client.clone(), now);
        answer["clientId"] = json!(client);
    }
    Ok(Json(answer))
}

pub(super) async fn detach(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    state.session(&id)?;
    if let (Some(client), Some(live)) = (client_id(&headers)?, state.live_if(&id)) {
        live.clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&client);
    }
    Ok(StatusCode::NO_CONTENT)
}

use crate::limits::CLOSE_GRACE;

/// `DELETE /session/:id`: the running turn is cancelled, waiting permission
/// requests answered `cancelled`, and `session/closed` ends every stream. A
/// second DELETE finds no session (404).
pub(super) async fn delete_session(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.session(&id)?;
    let closer = client_id(&headers)?;
    let live = state.live_if(&id);
    state.end_session(&id).await;
    // The cancelled turn ends (its stop reason recorded) before the session does,
    // unless the agent takes too long to wind down.
    if let Some(live) = live {
        live.turn_ended_within(CLOSE_GRACE).await;
    }
    state.recorder.flush().await;
    // Who closed it, as `qwen serve` says (`closedBy`).
    state
        .engine()?
        .append_session_event(
            &id,
            None,
            EventData::SessionClosed(SessionEnded {
                reason: Some("client_close".into()),
                details: closer.map(|c| json!({"closedBy": c})),
            }),
        )
        .await
        .map_err(ApiError::session)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
