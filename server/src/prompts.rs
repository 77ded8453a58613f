//! Prompts and commands: prompt, cancel, model, supported commands, and cmdlog's
//! own `command` route.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use cmdlog_acp::check_content_block;
use cmdlog_engine::attachments::SubmittedAttachment;
use cmdlog_engine::event::{
    AcpDirection, InvocationSource, ModelSwitchFailed, ModelSwitched, Outcome, SessionCancelled,
};
use cmdlog_engine::{EventData, ExecuteRequest, Mode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::limits::QUEUE_MAX;
use crate::live::Queued;
use crate::state::{ApiError, AppState, body};

/// Reads a prompt body: `{"prompt": [ContentBlock…]}` (qwen serve, ACP), or
/// cmdlog's earlier `{"text": "…"}`. Returns the text of its text blocks and
/// the blocks.
fn prompt_blocks(body: &Value) -> Result<(String, Vec<Value>), ApiError> {
    let blocks = match (body.get("prompt"), body.get("text")) {
        (Some(Value::Array(blocks)), _) if !blocks.is_empty() => blocks.clone(),
        (None, Some(Value::String(text))) => vec![json!({"type": "text", "text": text})],
        _ => {
            return Err(ApiError::bad_request(
                "`prompt` is required and must be a non-empty array of content blocks, e.g. {\"prompt\": [{\"type\": \"text\", \"text\": \"…\"}]}",
            ));
        }
    };
    for (i, block) in blocks.iter().enumerate() {
        if !block.is_object() {
            return Err(ApiError::bad_request(
                "each `prompt` element must be an object (content block)",
            ));
        }
        check_content_block(block)
            .map_err(|e| ApiError::bad_request(format!("prompt block {}: {e}", i + 1)))?;
    }
    let text = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Ok((text, blocks))
}

/// `POST /session/:id/prompt`: queues the prompt and answers 202 at once with its
/// `promptId` and the last event id before it; the turn streams on the session's
/// events and ends with `turn_complete` (or `turn_error`) carrying the `promptId`.
pub(super) async fn prompt(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: axum::http::HeaderMap,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    state.session(&id)?;
    let client = crate::state::client_id(&headers)?;
    let request = body(request)?;
    let (text, blocks) = prompt_blocks(&request)?;
    AppState::check_line("prompt text", &text)?;
    let deadline = match request.get("deadlineMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|&ms| ms > 0)
                .map(std::time::Duration::from_millis)
                .ok_or_else(|| {
                    ApiError::bad_request("`deadlineMs` must be a positive integer")
                        .code("invalid_deadline_ms")
                })?,
        ),
    };
    let engine = state.engine()?;
    let log = Arc::clone(engine.log());
    let head = log.head().seq;
    let (st, sid) = (Arc::clone(&state), id.clone());
    let last_event_id =
        tokio::task::spawn_blocking(move || st.wire.count_through(&log, &sid, head))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
    let prompt_id = cmdlog_common::ids::new_id("p-", 24);
    state
        .admit(
            &id,
            Queued {
                prompt_id: prompt_id.clone(),
                text,
                blocks,
                deadline,
                client,
            },
        )
        .map_err(|pending| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("session {id} has {pending} prompts waiting; wait for a turn to end"),
            )
            .code("prompt_queue_full")
            .with("sessionId", id.clone())
            .with("limit", QUEUE_MAX)
            .with("pendingCount", pending)
            .retry_after(5)
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"promptId": prompt_id, "lastEventId": last_event_id})),
    )
        .into_response())
}

/// `POST /session/:id/cancel`: the running turn ends `cancelled`; 204.
pub(super) async fn cancel(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<StatusCode, ApiError> {
    state.session(&id)?;
    // `prompt_cancelled` for the turn under way, before its permissions and its
    // end (as `qwen serve` orders them).
    let cancelled = SessionCancelled {
        run: None,
        prompt_id: state.active_prompt(&id),
    };
    state
        .engine()?
        .append_session_event(&id, None, EventData::SessionCancelled(cancelled))
        .await
        .map_err(ApiError::session)?;
    state.cancel_turn(&id).await;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /session/:id/model` `{"modelId"}`: switches the model — through the
/// agent behind the daemon (its model config option, else `session/set_model`),
/// or cmdlog's headless `/model` command without one.
pub(super) async fn model(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    request: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let session = state.session(&id)?;
    let request = body(request)?;
    let model = request
        .get("modelId")
        .or_else(|| request.get("model"))
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            ApiError::bad_request("`modelId` is required and must be a non-empty string")
        })?
        .to_string();
    if let Some(bridge) = state.bridge.clone() {
        let (running, bound) = bridge.bind(&state, &id).await.map_err(|e| {
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()).code("agent_unavailable")
        })?;
        // The stable way first (a `category: "model"` config option), then the
        // unstable `session/set_model` older agents answer; the next is tried only
        // when the agent does not know a method.
        let mut ways = Vec::new();
        if let Some(option) = &bound.model_option {
            ways.push((
                "session/set_config_option",
                json!({"sessionId": bound.agent_session, "configId": option, "value": model}),
            ));
        }
        ways.push((
            "session/set_model",
            json!({"sessionId": bound.agent_session, "modelId": model}),
        ));
        let mut answer = Err(cmdlog_acp::RpcError::new(
            cmdlog_acp::METHOD_NOT_FOUND,
            "no way to switch the model",
        ));
        for (method, params) in ways {
            let (rpc_id, message) = running.peer.prepare(method, params);
            state
                .recorder
                .message(Some(&id), None, AcpDirection::ToAgent, message.clone());
            answer = running.peer.send_prepared(rpc_id, message).await;
            state.recorder.message(
                Some(&id),
                None,
                AcpDirection::FromAgent,
                cmdlog_acp::response(json!(rpc_id), answer.clone()),
            );
            if !matches!(&answer, Err(e) if e.code == cmdlog_acp::METHOD_NOT_FOUND) {
                break;
            }
        }
        if let Err(e) = answer {
            // As `qwen serve` does: a `model_switch_failed` event, and a 500 that
            // carries the agent's error (its code a number). Qwen Code puts the
            // reason in `data.details` and says only "Internal error".
            let reason = e
                .data
                .as_ref()
                .and_then(|d| d["details"].as_str())
                .unwrap_or(&e.message)
                .to_string();
            let mut error = json!({"code": e.code, "message": e.message});
            if let Some(data) = &e.data {
                error["data"] = data.clone();
            }
            state.recorder.record(
                Some(&id),
                None,
                EventData::ModelSwitchFailed(ModelSwitchFailed {
                    model: model.clone(),
                    error: error.clone(),
                }),
            );
            state.recorder.flush().await;
            let mut refused = ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the agent did not switch to {model:?}: {reason}"),
            )
            .with("code", e.code)
            .with("sessionId", id)
            .with("requestedModelId", model);
            if let Some(data) = e.data {
                refused = refused.with("data", data);
            }
            return Err(refused);
        }
        crate::modes::model_switched(&state.live(&id), &model);
        state.recorder.record(
            Some(&id),
            None,
            EventData::ModelSwitched(ModelSwitched {
                model: model.clone(),
            }),
        );
        state.recorder.flush().await;
        return Ok(Json(json!({"sessionId": id, "modelId": model})));
    }
    // Through the headless /model command, so the switch is a logged run.
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let mut exec = ExecuteRequest::new(
        &id,
        &agent,
        Mode::NonInteractive,
        &format!("/model {model}"),
    );
    exec.source = InvocationSource::Api;
    let ex = state
        .engine()?
        .execute(exec)
        .await
        .map_err(ApiError::execute)?
        .ok_or_else(|| ApiError::internal("the headless /model command is not registered"))?;
    match &ex.outcome {
        Outcome::Error { text, .. } => Err(ApiError::bad_request(text.clone())
            .code("model_switch_failed")
            .with("sessionId", id)
            .with("requestedModelId", model)),
        _ => Ok(Json(
            json!({"sessionId": id, "modelId": model, "commandId": ex.command_id}),
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
        )
        .code("unknown_command"));
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
    state.engine()?;
    let update = state.commands_update(&id, &agent, mode);
    Ok(Json(json!({
        "v": 1,
        "sessionId": id,
        "mode": mode,
        "availableCommands": update["availableCommands"],
        "availableSkills": update.pointer("/_meta/availableSkills").cloned().unwrap_or_else(|| json!([])),
    })))
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Pending {
    pending_prompts: Vec<crate::live::PendingPrompt>,
}

#[derive(serde::Serialize)]
pub(super) struct Removed {
    removed: bool,
}

/// `DELETE /session/{id}/pending-prompts/{prompt}`: takes a queued prompt off
/// the queue; `removed: false` for one that runs already or is gone.
pub(super) async fn remove_pending(
    State(state): State<Arc<AppState>>,
    UrlPath((id, prompt)): UrlPath<(String, String)>,
) -> Result<Json<Removed>, ApiError> {
    state.session(&id)?;
    let removed = state.live_if(&id).is_some_and(|l| l.unqueue(&prompt));
    Ok(Json(Removed { removed }))
}

/// `GET /session/{id}/pending-prompts`: the prompts admitted and not
/// finished, the running one first.
pub(super) async fn pending_prompts(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Pending>, ApiError> {
    state.session(&id)?;
    let pending_prompts = state
        .live_if(&id)
        .map(|l| l.pending.lock().unwrap_or_else(|p| p.into_inner()).clone())
        .unwrap_or_default();
    Ok(Json(Pending { pending_prompts }))
}
