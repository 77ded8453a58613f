//! `POST /v1/logs`: the daemon as the OTLP/HTTP endpoint the agents already
//! export their telemetry to (`OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`, and the
//! daemon's token in `OTEL_EXPORTER_OTLP_HEADERS`). The body is read, mapped
//! and answered by `cmdlog_agents::otel` (its `Answer` says the status, body and
//! `Retry-After` the OTLP spec gives each case); here, only HTTP: the bytes in,
//! a few requests decoded at once, one append at a time, the answer out.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cmdlog_agents::otel::{self, Answer, Encoding};

use crate::state::AppState;

pub(super) async fn logs(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(encoding) = Encoding::from_content_type(content_type) else {
        return respond(Answer::unsupported_media(content_type));
    };
    let content_encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok());
    // A few requests are read and decoded at once; the others wait with their
    // body unread, and past a queue's length are asked to come back.
    let Some(_turn) = state.capture.otlp_turns.wait().await else {
        let why = "too many telemetry requests wait already; retry shortly";
        return respond(Answer::unavailable(encoding, why));
    };
    let body: Bytes = match axum::body::to_bytes(body, cmdlog_agents::OTLP_BODY_BYTES_MAX).await {
        Ok(body) => body,
        Err(e) => return respond(Answer::not_read(encoding, &e.to_string())),
    };
    let request = match otel::decode(encoding, content_encoding, &body) {
        Ok(request) => request,
        Err(e) => return respond(Answer::undecoded(encoding, &e)),
    };
    let unavailable = |why: String| respond(Answer::unavailable(encoding, &why));
    let log = match state.engine() {
        Ok(engine) => Arc::clone(engine.log()),
        Err(_) => {
            return unavailable(format!(
                "the log is being reopened after a storage error ({}); retry shortly",
                state.degraded().unwrap_or_default()
            ));
        }
    };
    let redact = state.capture.redact;
    // Mapped before the lock: requests are read in parallel, appended in turn.
    let telemetry =
        match tokio::task::spawn_blocking(move || otel::Telemetry::read(&request, redact)).await {
            Ok(t) => t,
            Err(e) => return unavailable(format!("not recorded: {e}")),
        };
    // One delivery at a time, hooks included: a session's first events create
    // it once, and a fact is folded against what the others appended.
    let _serial = state.capture.serial.lock().await;
    let at = cmdlog_common::time::now_ms();
    let facts = Arc::clone(&state.capture.facts);
    let ingested = tokio::task::spawn_blocking(move || {
        let mut facts = facts.lock().unwrap_or_else(|p| p.into_inner());
        telemetry.append(&log, at, &mut facts)
    })
    .await;
    match ingested {
        Ok(result) => respond(Answer::ingested(encoding, result)),
        Err(e) => unavailable(format!("not recorded: {e}")),
    }
}

/// `POST /v1/metrics` and `/v1/traces`: taken and not recorded. Gemini CLI and
/// Qwen Code export all three signals to one endpoint and count a failed
/// export as an error; cmdlog records the logs only (the metrics are sums of
/// them, the traces the same calls again).
pub(super) async fn not_recorded(headers: HeaderMap) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    respond(match Encoding::from_content_type(content_type) {
        Some(encoding) => Answer::taken(encoding),
        None => Answer::unsupported_media(content_type),
    })
}

/// The answer, as HTTP.
fn respond(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, answer.content_type)],
        answer.body,
    )
        .into_response();
    if let Some(secs) = answer.retry_after_secs {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}
