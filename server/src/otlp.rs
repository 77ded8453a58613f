//! `POST /v1/logs`: the daemon as the OTLP/HTTP endpoint the agents already
//! export their telemetry to (`OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`, and the
//! daemon's token in `OTEL_EXPORTER_OTLP_HEADERS`). The body is read and
//! mapped by `cmdlog_agents::otel`; here, only HTTP: the encoding from
//! `Content-Type`, the answers the OTLP spec gives each case — 200 with an
//! `ExportLogsServiceResponse` (`partial_success` naming records not taken),
//! 400 for a body that is not a request (never retried), 413 past the size
//! limit, 415 for another media type, 503 with `Retry-After` while the log
//! cannot take writes (retried by the exporters).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cmdlog_agents::otel::{self, Encoding, OtlpError};

use crate::state::AppState;

/// Seconds an exporter is asked to wait before sending again while the log
/// cannot take writes.
const RETRY_AFTER_SECS: u32 = 5;

/// gRPC status codes the OTLP/HTTP error body carries.
const INVALID_ARGUMENT: i32 = 3;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNAVAILABLE: i32 = 14;

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
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "OTLP/HTTP takes application/x-protobuf or application/json, not {content_type:?}\n"
            ),
        )
            .into_response();
    };
    let content_encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok());
    // A few requests are read and decoded at once; the others wait with their
    // body unread, and past a queue's length are asked to come back.
    let Some(_turn) = state.otlp_turns.wait().await else {
        let mut response = answer(
            encoding,
            StatusCode::SERVICE_UNAVAILABLE,
            otel::status(
                encoding,
                UNAVAILABLE,
                "too many telemetry requests wait already; retry shortly",
            ),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    let body: Bytes = match axum::body::to_bytes(body, cmdlog_agents::OTLP_BODY_BYTES_MAX).await {
        Ok(body) => body,
        Err(e) => {
            return answer(
                encoding,
                StatusCode::PAYLOAD_TOO_LARGE,
                otel::status(encoding, RESOURCE_EXHAUSTED, &format!("not read: {e}")),
            );
        }
    };
    let request = match otel::decode(encoding, content_encoding, &body) {
        Ok(request) => request,
        Err(e @ (OtlpError::TooLarge { .. } | OtlpError::Bounded(_))) => {
            return answer(
                encoding,
                StatusCode::PAYLOAD_TOO_LARGE,
                otel::status(encoding, RESOURCE_EXHAUSTED, &e.to_string()),
            );
        }
        Err(e) => {
            return answer(
                encoding,
                StatusCode::BAD_REQUEST,
                otel::status(encoding, INVALID_ARGUMENT, &e.to_string()),
            );
        }
    };
    let unavailable = |message: String| {
        let mut response = answer(
            encoding,
            StatusCode::SERVICE_UNAVAILABLE,
            otel::status(encoding, UNAVAILABLE, &message),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        response
    };
    let log = match state.engine() {
        Ok(engine) => Arc::clone(engine.log()),
        Err(_) => {
            return unavailable(format!(
                "the log is being reopened after a storage error ({}); retry shortly",
                state.degraded().unwrap_or_default()
            ));
        }
    };
    let redact = state.redact;
    // Mapped before the lock: requests are read in parallel, appended in turn.
    let telemetry =
        match tokio::task::spawn_blocking(move || otel::Telemetry::read(&request, redact)).await {
            Ok(t) => t,
            Err(e) => return unavailable(format!("not recorded: {e}")),
        };
    // One delivery at a time, hooks included: a session's first events create
    // it once, and a fact is folded against what the others appended.
    let _serial = state.hooks.lock().await;
    let at = cmdlog_common::time::now_ms();
    let facts = Arc::clone(&state.facts);
    let ingested = tokio::task::spawn_blocking(move || {
        let mut facts = facts.lock().unwrap_or_else(|p| p.into_inner());
        telemetry.append(&log, at, &mut facts)
    })
    .await;
    match ingested {
        Ok(Ok(report)) => answer(
            encoding,
            StatusCode::OK,
            otel::response(encoding, report.rejected, &report.why_rejected),
        ),
        Ok(Err(e)) if e.retryable() => unavailable(format!("not recorded: {e}")),
        Ok(Err(e)) => answer(
            encoding,
            StatusCode::BAD_REQUEST,
            otel::status(encoding, INVALID_ARGUMENT, &format!("not recorded: {e}")),
        ),
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
    match Encoding::from_content_type(content_type) {
        Some(encoding) => answer(encoding, StatusCode::OK, otel::response(encoding, 0, "")),
        None => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "OTLP/HTTP takes application/x-protobuf or application/json\n",
        )
            .into_response(),
    }
}

fn answer(encoding: Encoding, status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response()
}
