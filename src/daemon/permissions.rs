//! Permission votes and what the agent runtime publishes (`update`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use cmdlog_engine::{EventData, PermissionRequested, PermissionResolved, SessionError};
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

pub(super) async fn update(
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
