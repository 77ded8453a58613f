//! `POST /hook/{agent}`: `cmdlog hook` delivers an agent's hook payload here while
//! the daemon holds the log, once the daemon has proved itself (`GET
//! /hook-proof`: a keyed hash of the hook's nonce with the key only this daemon
//! and its user can read in `daemon.json`). The same mapping and atomic append as
//! the hook's own path (`cmdlog_agents`), after whatever waits in the spill
//! folder; a delivery id seen before is answered without a second append, so a
//! hook that gave up waiting and spilled its payload never doubles it.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::{ApiError, AppState};
use cmdlog_agents::{
    AgentKind, DeliveryQuery, HookDelivery, RecentDeliveries, Spill, discovery_for, drain,
    record_delivery,
};

#[derive(Deserialize)]
pub(super) struct ProofQuery {
    nonce: String,
}

/// `GET /hook-proof?nonce=N`: this daemon's log id and its proof for `N`.
pub(super) async fn proof(
    State(state): State<Arc<AppState>>,
    Query(query): Query<ProofQuery>,
) -> Result<Json<Value>, ApiError> {
    if query.nonce.is_empty() || query.nonce.len() > 128 {
        return Err(ApiError::bad_request("nonce: 1 to 128 characters"));
    }
    let proof = state
        .capture
        .daemon
        .proof(&query.nonce)
        .ok_or_else(|| ApiError::internal("the daemon has no key"))?;
    Ok(Json(
        json!({"logId": state.capture.daemon.log_id, "proof": proof}),
    ))
}

pub(super) async fn hook(
    State(state): State<Arc<AppState>>,
    UrlPath(agent): UrlPath<String>,
    Query(query): Query<DeliveryQuery>,
    payload: Bytes,
) -> Result<Json<Value>, ApiError> {
    let kind = AgentKind::parse(&agent).map_err(|e| ApiError::bad_request(e.to_string()))?;
    // One payload at a time: a session's first payloads create it once.
    let mut recent = state.capture.serial.lock().await;
    let log = Arc::clone(state.engine()?.log());
    let workspace = state.workspace.clone();
    let delivery = HookDelivery::from_query(kind, query, payload.to_vec());
    let mut known = recent.take();
    let facts = std::sync::Arc::clone(&state.capture.facts);
    let (known, receipt) = tokio::task::spawn_blocking(move || {
        let discovery = || discovery_for(&workspace);
        drain(&log, &Spill::for_log(log.path()), &discovery, &mut known);
        let known = known.get_or_insert_with(|| RecentDeliveries::from_log_tail(&log));
        let mut facts = facts.lock().unwrap_or_else(|p| p.into_inner());
        let receipt = record_delivery(&log, &delivery, discovery, Some(known), &mut facts);
        (Some(std::mem::take(known)), receipt)
    })
    .await
    .map_err(ApiError::internal)?;
    *recent = known;
    match receipt {
        Ok(Some(r)) => Ok(Json(json!({"first": r.first, "last": r.last}))),
        Ok(None) => Ok(Json(json!({"duplicate": true}))),
        Err(e) => Err(
            ApiError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, e.to_string())
                .code("not_recorded"),
        ),
    }
}
