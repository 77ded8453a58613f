//! Prompts and commands: prompt, cancel, model, command, supported commands.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use base64::Engine as _;
use cmdlog_engine::{
    EventData, ExecuteRequest, InvocationSource, Mode, Outcome, PromptOutcome, PromptRequest,
    StreamingBehavior, SubmittedAttachment,
};
use serde::Deserialize;
use serde_json::json;

use super::sse::{self};
use super::state::{ApiError, AppState, body};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct PromptBody {
    text: String,
    streaming_behavior: Option<String>,
}

pub(super) async fn prompt(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<PromptBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    AppState::check_line("prompt text", &request.text)?;
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
    let tracked = state.track(&id);
    req.cancel = tracked.token.clone();
    let outcome = state
        .engine()?
        .prompt(req)
        .await
        .map_err(ApiError::prompt)?;
    drop(tracked);
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

pub(super) async fn cancel(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.session(&id)?;
    // Only executions still running: a settled one left the list when it settled.
    let tokens = state
        .running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id)
        .unwrap_or_default();
    let cancelled = tokens.iter().filter(|(_, t)| !t.is_cancelled()).count();
    for (_, t) in &tokens {
        t.cancel();
    }
    let seq = state
        .engine()?
        .append_session_event(&id, None, EventData::SessionCancelled(Default::default()))
        .await
        .map_err(ApiError::session)?;
    Ok(Json(json!({"cancelled": cancelled, "seq": seq})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelBody {
    model: String,
}

pub(super) async fn model(
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
        .engine()?
        .execute(exec)
        .await
        .map_err(ApiError::execute)?
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
pub(super) struct AttachmentBody {
    name: String,
    #[serde(default)]
    media_type: Option<String>,
    data: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CommandBody {
    line: String,
    #[serde(default)]
    attachments: Vec<AttachmentBody>,
}

pub(super) async fn command(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<CommandBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    AppState::check_line("command line", &request.line)?;
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
    let tracked = state.track(&id);
    exec.cancel = tracked.token.clone();
    let ex = state
        .engine()?
        .execute(exec)
        .await
        .map_err(ApiError::execute)?;
    drop(tracked);
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

#[derive(Deserialize)]
pub(super) struct ModeQuery {
    mode: Option<String>,
}

pub(super) async fn supported_commands(
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
    let list = state.engine()?.list(&agent, mode);
    Ok(Json(
        json!({"mode": mode, "availableCommands": sse::available_commands(&list)}),
    ))
}
