//! Permission votes and what the agent runtime publishes (`update`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use cmdlog_engine::{
    EventData, PermissionDecision, PermissionRequested, PermissionResolved, SESSION_UPDATE_KINDS,
    is_session_update_kind, option_ids, permission_decision,
};
use serde::Deserialize;
use serde_json::json;

use super::state::{ApiError, AppState, body};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct PermissionBody {
    request_id: String,
    decision: serde_json::Value,
}

pub(super) async fn permission(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<PermissionBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    let request = body(request)?;
    let Some(decision) = permission_decision(&request.decision) else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "a decision is an option id, {\"optionId\": ID}, or ACP's outcome {\"outcome\": \"selected\", \"optionId\": ID} / {\"outcome\": \"cancelled\"}",
        ));
    };
    let _first_vote_wins = state.votes.lock().await;
    let engine = state.engine()?;
    let log = Arc::clone(engine.log());
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
    if let PermissionDecision::Selected(option) = &decision {
        let offered = option_ids(&pending.options);
        if !offered.is_empty() && !offered.contains(option) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "{option:?} is not an option of permission request {:?}: choose one of {}",
                    request.request_id,
                    offered.join(", ")
                ),
            ));
        }
    }
    let seq = engine
        .append_session_event(
            &id,
            None,
            EventData::PermissionResolved(PermissionResolved {
                request_id: request.request_id,
                decision: request.decision,
            }),
        )
        .await
        .map_err(ApiError::session)?;
    Ok(Json(json!({"resolved": true, "seq": seq})))
}

pub(super) async fn update(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let update = body(request)?;
    let known = || {
        format!(
            "{}, turn_complete or permission_request",
            SESSION_UPDATE_KINDS.join(", ")
        )
    };
    let kind = update
        .get("sessionUpdate")
        .and_then(|v| v.as_str())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("an update needs a sessionUpdate field: {}", known()),
            )
        })?;
    if !is_session_update_kind(kind) && kind != "turn_complete" && kind != "permission_request" {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("unknown sessionUpdate {kind:?}: use one of {}", known()),
        ));
    }
    let engine = state.engine()?;
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
        let log = Arc::clone(engine.log());
        let sid = id.clone();
        let view = tokio::task::spawn_blocking(move || {
            cmdlog_replay::SessionView::load(&log, &sid, u64::MAX)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
        if view.permissions.iter().any(|p| p.request_id == request_id) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "permission request {request_id:?} already exists in session {id}: each request needs its own requestId"
                ),
            ));
        }
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
    let seq = engine
        .append_session_event(&id, session.agent.as_deref(), data)
        .await
        .map_err(ApiError::session)?;
    Ok(Json(json!({"seq": seq})))
}
