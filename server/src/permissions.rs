//! Permission votes (`POST /permission/:requestId`, and the session-scoped
//! route) and what an external agent runtime publishes (`update`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use cmdlog_acp::{
    PermissionDecision, STOP_REASONS, check_permission_options, check_session_update,
    check_tool_call_update, option_ids,
};
use cmdlog_engine::EventData;
use cmdlog_engine::event::{Decider, PermissionRequested, PermissionResolved};
use serde_json::{Value, json};

use crate::state::{ApiError, AppState, PendingPermission, body, client_id};

/// Reads a vote: ACP's `RequestPermissionResponse`, `{"outcome": {"outcome":
/// "selected", "optionId"}}` or `{"outcome": {"outcome": "cancelled"}}`.
fn vote(body: &Value) -> Result<PermissionDecision, ApiError> {
    let shape = || {
        ApiError::bad_request(
            "`outcome` must be `{ outcome: \"cancelled\" }` or `{ outcome: \"selected\", optionId: string }`",
        )
    };
    let outcome = body
        .get("outcome")
        .filter(|o| o.is_object())
        .ok_or_else(shape)?;
    match outcome.get("outcome").and_then(Value::as_str) {
        Some("cancelled") => Ok(PermissionDecision::Cancelled),
        Some("selected") => outcome
            .get("optionId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(|id| PermissionDecision::Selected(id.to_string()))
            .ok_or_else(shape),
        _ => Err(shape()),
    }
}

/// `POST /permission/:requestId`: the first valid vote wins (200 `{}`); a request
/// that is unknown or already answered is 404.
pub(super) async fn vote_any(
    State(state): State<Arc<AppState>>,
    UrlPath(request_id): UrlPath<String>,
    headers: HeaderMap,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let voter = client_id(&headers)?;
    let decision = vote(&body(request)?)?;
    resolve(&state, None, &request_id, decision, voter).await
}

/// `POST /session/:id/permission/:requestId`: the same, for one session.
pub(super) async fn vote_in_session(
    State(state): State<Arc<AppState>>,
    UrlPath((id, request_id)): UrlPath<(String, String)>,
    headers: HeaderMap,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    state.session(&id)?;
    let voter = client_id(&headers)?;
    let decision = vote(&body(request)?)?;
    resolve(&state, Some(&id), &request_id, decision, voter).await
}

/// Records the first valid vote (and who cast it, `X-Qwen-Client-Id`) and
/// hands it to the agent that asked.
async fn resolve(
    state: &Arc<AppState>,
    session: Option<&str>,
    request_id: &str,
    decision: PermissionDecision,
    voter: Option<String>,
) -> Result<Json<Value>, ApiError> {
    let not_pending = || {
        let e = ApiError::new(
            StatusCode::NOT_FOUND,
            format!("No pending permission request {request_id:?}: it is unknown or already answered (the first vote wins)"),
        )
        .with("requestId", request_id);
        match session {
            Some(s) => e.with("sessionId", s),
            None => e,
        }
    };
    let pending = match take(state, session, request_id, &decision) {
        Ok(Some(pending)) => pending,
        Ok(None) => {
            late_vote(state, session, request_id).await;
            return Err(not_pending());
        }
        Err(e) => return Err(e),
    };
    let outcome = match &decision {
        PermissionDecision::Selected(id) => json!({"outcome": "selected", "optionId": id}),
        PermissionDecision::Cancelled => json!({"outcome": "cancelled"}),
    };
    // Recorded before the agent hears it: the log never shows a tool call that
    // went ahead on a vote it does not hold.
    state.remember_resolved(request_id, &pending.session, &outcome);
    let engine = state.engine()?;
    engine
        .append_session_event(
            &pending.session,
            None,
            EventData::PermissionResolved(PermissionResolved {
                request_id: request_id.to_string(),
                decision: outcome.clone(),
                voter,
                decided_by: Some(Decider::User),
                ..Default::default()
            }),
        )
        .await
        .map_err(ApiError::session)?;
    if let Some(answer) = pending.answer {
        let _ = answer.send(outcome);
    }
    Ok(Json(json!({})))
}

/// Takes the waiting request a vote answers out, under the lock (of two votes,
/// one finds it); `None` when nothing waits under that id (in that session).
fn take(
    state: &AppState,
    session: Option<&str>,
    request_id: &str,
    decision: &PermissionDecision,
) -> Result<Option<PendingPermission>, ApiError> {
    let mut waiting = state
        .votes
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let Some(found) = waiting
        .get(request_id)
        .filter(|p| session.is_none_or(|s| p.session == s))
    else {
        return Ok(None);
    };
    if let PermissionDecision::Selected(option) = decision {
        let offered = option_ids(&found.options);
        if !offered.contains(option) {
            return Err(ApiError::bad_request(format!(
                "{option:?} is not an option of permission request {request_id:?}: choose one of {}",
                offered.join(", ")
            ))
            .code("invalid_option_id")
            .with("requestId", request_id)
            .with("optionId", option.as_str()));
        }
    }
    Ok(waiting.remove(request_id))
}

/// A vote for a request answered already (in `session`, for the session route):
/// recorded as `permission/already_resolved` with the answer that stands, so its
/// session's clients hear which one (`permission_already_resolved`, as `qwen
/// serve` sends); the vote itself is still refused with 404. Unknown requests
/// record nothing.
async fn late_vote(state: &Arc<AppState>, session: Option<&str>, request_id: &str) {
    let Some((owner, outcome, prompt_id)) = state
        .resolved(request_id)
        .filter(|(owner, _, _)| session.is_none_or(|s| s == owner))
    else {
        return;
    };
    let Ok(engine) = state.engine() else {
        return;
    };
    let _ = engine
        .append_session_event(
            &owner,
            None,
            EventData::PermissionAlreadyResolved(PermissionResolved {
                request_id: request_id.to_string(),
                decision: outcome,
                prompt_id,
                ..Default::default()
            }),
        )
        .await;
}

/// `POST /session/:id/update`: an agent runtime that is not behind the daemon
/// publishes its ACP session updates, permission requests and turn ends here.
pub(super) async fn update(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let session = state.session(&id)?;
    let mut update = body(request)?;
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let engine = state.engine()?;
    let active = state
        .live_if(&id)
        .and_then(|l| l.active.lock().unwrap_or_else(|p| p.into_inner()).clone());
    let data = match kind.as_str() {
        "permission_request" => {
            let tool_call = update.get("toolCall").cloned().ok_or_else(|| {
                ApiError::bad_request("a permission_request needs toolCall (an ACP ToolCallUpdate)")
            })?;
            check_tool_call_update(&tool_call)
                .map_err(|e| ApiError::bad_request(format!("toolCall: {e}")))?;
            let options = update.get("options").cloned().unwrap_or(Value::Null);
            check_permission_options(&options)
                .map_err(|e| ApiError::bad_request(format!("options: {e}")))?;
            let request_id = match update.get("requestId") {
                None | Some(Value::Null) => cmdlog_common::ids::new_id("perm-", 16),
                Some(Value::String(r)) if !r.is_empty() && r.len() <= 128 => r.clone(),
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "requestId must be a string of 1 to 128 characters",
                    ));
                }
            };
            let mut waiting = state
                .votes
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if waiting.contains_key(&request_id) {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!(
                        "permission request {request_id:?} is already waiting: each request needs its own requestId"
                    ),
                ));
            }
            waiting.insert(
                request_id.clone(),
                PendingPermission {
                    session: id.clone(),
                    options: options.clone(),
                    answer: None,
                },
            );
            EventData::PermissionRequested(PermissionRequested {
                request_id,
                options,
                tool_call: Some(tool_call),
            })
        }
        "turn_complete" | "turn_error" => {
            if kind == "turn_complete" {
                let reason = update
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("end_turn");
                if !STOP_REASONS.contains(&reason) {
                    return Err(ApiError::bad_request(format!(
                        "stopReason {reason:?}: use one of {}",
                        STOP_REASONS.join(", ")
                    )));
                }
                update["stopReason"] = json!(reason);
            }
            // The turn it ends is the running one, unless it names its prompt.
            if update.get("promptId").is_none()
                && let Some(a) = &active
            {
                update["promptId"] = json!(a.prompt_id);
            }
            EventData::SessionUpdate(update.clone())
        }
        _ => {
            check_session_update(&update).map_err(|e| {
                ApiError::bad_request(format!(
                    "{e} (an ACP SessionUpdate, or turn_complete, turn_error, permission_request)"
                ))
            })?;
            EventData::SessionUpdate(update.clone())
        }
    };
    let request_id = match &data {
        EventData::PermissionRequested(p) => Some(p.request_id.clone()),
        _ => None,
    };
    let appended = engine
        .append_session_event(&id, session.agent.as_deref(), data)
        .await;
    let seq = match appended {
        Ok(seq) => seq,
        Err(e) => {
            if let Some(r) = &request_id {
                state
                    .votes
                    .pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(r);
            }
            return Err(ApiError::session(e));
        }
    };
    if (kind == "turn_complete" || kind == "turn_error")
        && let (Some(a), Some(live)) = (&active, state.live_if(&id))
        && update.get("promptId").and_then(Value::as_str) == Some(a.prompt_id.as_str())
    {
        live.turn_ended.notify_one();
    }
    let mut answer = json!({"seq": seq});
    if let Some(r) = request_id {
        answer["requestId"] = json!(r);
    }
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_are_acp_permission_responses() {
        assert_eq!(
            vote(&json!({"outcome": {"outcome": "selected", "optionId": "allow"}})).unwrap(),
            PermissionDecision::Selected("allow".into())
        );
        assert_eq!(
            vote(&json!({"outcome": {"outcome": "cancelled"}})).unwrap(),
            PermissionDecision::Cancelled
        );
        for bad in [
            json!({}),
            json!({"outcome": "cancelled"}),
            json!({"outcome": {"outcome": "selected"}}),
            json!({"outcome": {"outcome": "selected", "optionId": ""}}),
            json!({"outcome": {"outcome": "maybe"}}),
        ] {
            assert_eq!(
                vote(&bad).unwrap_err().status,
                StatusCode::BAD_REQUEST,
                "{bad}"
            );
        }
    }
}
