//! `POST /hook/{agent}`: `cmdlog hook` delivers an agent's hook payload here while
//! the daemon holds the log. The same mapping and atomic append as the hook's own
//! path (`src/agents`), after whatever waits in the spill folder.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path as UrlPath, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::{ApiError, AppState};
use cmdlog_agents::{AgentKind, Spill, append_to, batch_for, discovery_for, drain};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HookQuery {
    redact: Option<bool>,
    received_at: Option<u64>,
}

pub(super) async fn hook(
    State(state): State<Arc<AppState>>,
    UrlPath(agent): UrlPath<String>,
    Query(query): Query<HookQuery>,
    payload: String,
) -> Result<Json<Value>, ApiError> {
    let kind = AgentKind::parse(&agent).map_err(|e| ApiError::bad_request(e.to_string()))?;
    // One payload at a time: a session's first payloads create it once.
    let _one = state.hooks.lock().await;
    let log = Arc::clone(state.engine()?.log());
    let workspace: PathBuf = state.workspace.clone();
    let at = query
        .received_at
        .unwrap_or_else(cmdlog_common::time::now_ms);
    let redact = query.redact.unwrap_or(false);
    let receipt = tokio::task::spawn_blocking(move || {
        let discovery = || discovery_for(&workspace);
        drain(&log, &Spill::for_log(log.path()), &discovery);
        append_to(&log, batch_for(kind, &payload, redact, discovery), at)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| {
        ApiError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            .code("not_recorded")
    })?;
    Ok(Json(json!({"first": receipt.first, "last": receipt.last})))
}
