//! Session lifecycle: capabilities, create or attach, delete.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use cmdlog_engine::{Mode, valid_id};
use serde::Deserialize;
use serde_json::json;

use super::state::{ApiError, AppState, body};

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

pub(super) async fn capabilities() -> Json<serde_json::Value> {
    Json(json!({"v": 1, "features": FEATURES}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct CreateSession {
    session_id: Option<String>,
    agent: Option<String>,
    mode: Option<String>,
}

pub(super) async fn create_session(
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
    let id = request
        .session_id
        .unwrap_or_else(crate::session_id::new_session_id);
    let engine = state.engine()?;
    let created = engine
        .ensure_session(&id, &agent, mode)
        .await
        .map_err(ApiError::session)?;
    Ok(Json(
        json!({"sessionId": id, "created": created, "lastEventId": engine.log().head().seq}),
    ))
}

pub(super) async fn delete_session(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    let seq = state
        .engine()?
        .close_session(&id, Some("deleted over HTTP".into()))
        .await
        .map_err(ApiError::session)?;
    Ok(Json(json!({"closed": true, "seq": seq})))
}
