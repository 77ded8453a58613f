//! The agent's models and modes for a session, as Qwen Code's Web Shell reads
//! and sets them on `qwen serve`'s wire: `GET /session/{id}/context` (what the
//! agent said in `session/new`, kept current as it is switched here), and
//! `POST /session/{id}/approval-mode` and `approvalMode` in `POST /session`
//! (the agent's mode set through ACP `session/set_mode`, recorded as
//! `session/mode_set` with the client that asked).

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use cmdlog_engine::EventData;
use cmdlog_engine::event::{AcpDirection, ModeSet};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::live::Live;
use crate::state::{ApiError, AppState, body};

/// The approval modes `qwen serve` takes in `POST /session` and
/// `POST /session/{id}/approval-mode` (`APPROVAL_MODES`).
pub(crate) const APPROVAL_MODES: [&str; 5] = ["plan", "default", "auto-edit", "auto", "yolo"];

/// What a `session/new` answer says of the session's models and modes.
pub(crate) fn agent_state(answer: &Value) -> Value {
    let state: Map<String, Value> = ["models", "modes", "configOptions"]
        .into_iter()
        .filter_map(|key| {
            Some((
                key.to_string(),
                answer.get(key).filter(|v| !v.is_null())?.clone(),
            ))
        })
        .collect();
    Value::Object(state)
}

/// Makes `model` the session's current model in what the agent said.
pub(crate) fn model_switched(live: &Live, model: &str) {
    let mut state = live.agent_state.lock().unwrap_or_else(|p| p.into_inner());
    if state["models"].is_object() {
        state["models"]["currentModelId"] = model.into();
    }
    set_option(&mut state, "model", model);
}

/// Sets the current value of the config option of `category`.
fn set_option(state: &mut Value, category: &str, value: &str) {
    if let Some(options) = state["configOptions"].as_array_mut() {
        for option in options.iter_mut().filter(|o| o["category"] == category) {
            option["currentValue"] = value.into();
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Context {
    v: u8,
    session_id: String,
    workspace_cwd: PathBuf,
    recovery: Recovery,
    state: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Recovery {
    kind: &'static str,
    can_continue: bool,
}

/// `GET /session/{id}/context`: the agent's models, modes and config options
/// for the session (`{}` with no agent behind the daemon).
pub(super) async fn context(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Context>, ApiError> {
    state.session(&id)?;
    let agent_state = said_of(&state, &id).await;
    Ok(Json(Context {
        v: 1,
        session_id: id,
        workspace_cwd: state.workspace.clone(),
        recovery: Recovery {
            kind: "clean",
            can_continue: false,
        },
        state: agent_state,
    }))
}

/// What the agent said of session `id` (`{}` with no agent behind the
/// daemon, or one that cannot start).
pub(crate) async fn said_of(state: &Arc<AppState>, id: &str) -> Value {
    if let Some(bridge) = state.bridge.clone() {
        // A session this daemon has not bound since it started gets its agent
        // session now.
        let _ = bridge.bind(state, id).await;
    }
    state
        .live_if(id)
        .map(|l| {
            l.agent_state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        })
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Map::new()))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ModeChanged {
    session_id: String,
    mode: String,
    previous: Option<String>,
    persisted: bool,
}

/// `POST /session/{id}/approval-mode` `{mode}`: sets the agent's mode.
pub(super) async fn approval_mode(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Json<ModeChanged>, ApiError> {
    state.session(&id)?;
    let client = crate::state::client_id(&headers)?;
    let request = body(request)?;
    let mode = requested_mode(request.get("mode"))?
        .ok_or_else(|| invalid_mode("`mode` is required", &APPROVAL_MODES))?;
    let previous = set_mode(&state, &id, &mode, client).await?;
    Ok(Json(ModeChanged {
        session_id: id,
        mode,
        previous,
        persisted: false,
    }))
}

/// An approval mode as a request names it: `None` when not given; one of
/// [`APPROVAL_MODES`], else 400 `invalid_approval_mode`.
pub(crate) fn requested_mode(value: Option<&Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(m)) if APPROVAL_MODES.contains(&m.as_str()) => Ok(Some(m.clone())),
        Some(other) => Err(invalid_mode(
            &format!(
                "approval mode {other} is not one of {}",
                APPROVAL_MODES.join(", ")
            ),
            &APPROVAL_MODES,
        )),
    }
}

fn invalid_mode(why: &str, allowed: &[&str]) -> ApiError {
    ApiError::bad_request(why)
        .code("invalid_approval_mode")
        .with("allowed", allowed.to_vec())
}

/// The modes the agent offers for the session, and its current one.
fn offered(live: &Live) -> (Vec<String>, Option<String>) {
    let state = live.agent_state.lock().unwrap_or_else(|p| p.into_inner());
    let modes = state["modes"]["availableModes"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let current = state["modes"]["currentModeId"].as_str().map(str::to_string);
    (modes, current)
}

/// Whether the agent behind the daemon offers `mode` for the session (it
/// must be bound); then whether it is its mode already.
pub(crate) fn offers(state: &Arc<AppState>, id: &str, mode: &str) -> Option<bool> {
    let (modes, current) = offered(&*state.live_if(id)?);
    modes
        .iter()
        .any(|m| m == mode)
        .then(|| current.as_deref() == Some(mode))
}

/// Sets `mode` as the agent's mode for session `id` through ACP
/// `session/set_mode`, and records it with the client that asked; the mode
/// before.
pub(crate) async fn set_mode(
    state: &Arc<AppState>,
    id: &str,
    mode: &str,
    client: Option<String>,
) -> Result<Option<String>, ApiError> {
    let Some(bridge) = state.bridge.clone() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "no agent runs behind this daemon: there is no mode to set (serve --agent)",
        )
        .code("approval_mode_unavailable"));
    };
    let (running, bound) = bridge.bind(state, id).await.map_err(|e| {
        ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()).code("agent_unavailable")
    })?;
    let live = state.live(id);
    let (modes, previous) = offered(&live);
    if !modes.iter().any(|m| m == mode) {
        let allowed: Vec<&str> = modes.iter().map(String::as_str).collect();
        return Err(invalid_mode(
            &format!("the agent offers no mode {mode:?} for this session"),
            &allowed,
        ));
    }
    let mut params = Map::new();
    params.insert("sessionId".into(), bound.agent_session.clone().into());
    params.insert("modeId".into(), mode.into());
    let (rpc_id, message) = running
        .peer
        .prepare("session/set_mode", Value::Object(params));
    state
        .recorder
        .message(Some(id), None, AcpDirection::ToAgent, message.clone());
    let answer = running.peer.send_prepared(rpc_id, message).await;
    state.recorder.message(
        Some(id),
        None,
        AcpDirection::FromAgent,
        cmdlog_acp::response(rpc_id.into(), answer.clone()),
    );
    if let Err(e) = answer {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the agent did not set mode {mode:?}: {}", e.message),
        )
        .code("approval_mode_failed"));
    }
    {
        let mut agent_state = live.agent_state.lock().unwrap_or_else(|p| p.into_inner());
        agent_state["modes"]["currentModeId"] = mode.into();
        set_option(&mut agent_state, "mode", mode);
    }
    state.recorder.record(
        Some(id),
        None,
        EventData::ModeSet(ModeSet {
            mode: mode.into(),
            previous: previous.clone(),
            client_id: client,
        }),
    );
    state.recorder.flush().await;
    Ok(previous)
}
