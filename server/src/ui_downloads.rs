//! The workbench's downloads and values loaded on demand: an event's
//! inclusion proof, a session's events with their proofs (checkable offline
//! with `cmdlog verify --proofs`), and the values the log keeps as blobs —
//! their page, and their bytes.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::state::AppState;
use crate::ui_page::{html, local_site, page, with_mirror};

/// Why no proof can be made.
#[derive(Debug, thiserror::Error)]
enum NoProof {
    #[error("this log has no id, so it has no signed checkpoint: `cmdlog checkpoint` gives it one")]
    NoId,
    #[error("no signing key: {0}")]
    NoKey(String),
    #[error(transparent)]
    Proof(#[from] cmdlog_replay::CheckpointError),
    #[error("no event of session {session} in this log from seq {from}")]
    NoEvents { session: String, from: u64 },
}

/// The signer of the daemon's log, or why there is none.
fn signer(state: &AppState) -> Result<(String, cmdlog_tlog::Signer), NoProof> {
    let transparency = state.transparency.as_ref().ok_or(NoProof::NoId)?;
    match &transparency.signer {
        Ok(signer) => Ok((transparency.log_id.clone(), signer.clone())),
        Err(why) => Err(NoProof::NoKey(why.to_string())),
    }
}

/// A file to keep: `bytes` of `content_type`, saved as `name`.
fn file(content_type: &'static str, name: &str, bytes: impl IntoResponse) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], bytes).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, v);
    }
    response
}

/// Makes a file on a blocking thread from the daemon's log and its signer;
/// `Err` is said on a page.
async fn signed_file(
    state: Arc<AppState>,
    make: impl FnOnce(&cmdlog_store::Log, &str, &cmdlog_tlog::Signer) -> Result<Response, NoProof>
    + Send
    + 'static,
) -> Response {
    let (log_id, signer) = match signer(&state) {
        Ok(found) => found,
        Err(why) => {
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                cmdlog_workbench::message_page("No proof", &why.to_string()),
            );
        }
    };
    let engine = match state.engine() {
        Ok(engine) => engine,
        Err(e) => return e.into_response(),
    };
    let made = tokio::task::spawn_blocking(move || make(engine.log(), &log_id, &signer)).await;
    match made {
        Ok(Ok(response)) => response,
        Ok(Err(why)) => html(
            StatusCode::NOT_FOUND,
            cmdlog_workbench::message_page("No proof", &why.to_string()),
        ),
        Err(e) => html(
            StatusCode::INTERNAL_SERVER_ERROR,
            cmdlog_workbench::message_page("No proof", &e.to_string()),
        ),
    }
}

/// `GET /ui/event/{seq}/proof`: the event's inclusion proof with the log's
/// signed checkpoint (`cmdlog prove SEQ`), as a file to keep.
pub(crate) async fn proof(State(state): State<Arc<AppState>>, Path(seq): Path<u64>) -> Response {
    signed_file(state, move |log, log_id, signer| {
        let origin = cmdlog_replay::origin(log_id);
        let proof = cmdlog_replay::prove_inclusion(log, seq, &origin, signer)?;
        Ok(file(
            "text/plain; charset=utf-8",
            &format!("cmdlog-{log_id}-seq-{seq}.tlog-proof"),
            proof.to_tlog_proof(),
        ))
    })
    .await
}

#[derive(Deserialize)]
pub(crate) struct ProofsQuery {
    #[serde(default)]
    from: u64,
}

/// `GET /ui/session/{id}/proofs[?from=SEQ]`: the session's events with their
/// inclusion proofs against one checkpoint signed now (JSON lines; a long
/// session's in parts, each naming the next).
pub(crate) async fn session_proofs(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Query<ProofsQuery>,
) -> Response {
    signed_file(state, move |log, log_id, signer| {
        let proofs = cmdlog_replay::prove_session(log, log_id, &id, q.from, signer)?;
        if proofs.events.is_empty() {
            return Err(NoProof::NoEvents {
                session: cmdlog_common::terminal::clean(&id).into_owned(),
                from: q.from,
            });
        }
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(80)
            .collect();
        let part = if q.from > 0 {
            format!("-from-{}", q.from)
        } else {
            String::new()
        };
        Ok(file(
            "application/jsonl",
            &format!("cmdlog-{log_id}-session-{safe}{part}.proofs.jsonl"),
            proofs.to_jsonl(),
        ))
    })
    .await
}

/// `GET /ui/blob/{H1+H2}`: the value stored as those blobs, its text shown.
pub(crate) async fn blob(
    State(state): State<Arc<AppState>>,
    Path(hashes): Path<String>,
) -> Response {
    page(state, move |state, log| {
        cmdlog_workbench::blob_page(log, &hashes, &local_site(state))
    })
    .await
}

/// The bytes of a value stored as blobs, to save (never shown by the browser).
fn raw(bytes: Result<Vec<u8>, cmdlog_workbench::PageError>, hashes: &str) -> Response {
    match bytes {
        Ok(bytes) => file(
            "application/octet-stream",
            &format!("cmdlog-blob-{}.bin", &hashes[..hashes.len().min(16)]),
            bytes,
        ),
        Err(e) => html(StatusCode::OK, Err(e)),
    }
}

/// `GET /ui/blob/{H1+H2}/raw`: the bytes of the value stored as those blobs.
pub(crate) async fn blob_raw(
    State(state): State<Arc<AppState>>,
    Path(hashes): Path<String>,
) -> Response {
    let engine = match state.engine() {
        Ok(engine) => engine,
        Err(e) => return e.into_response(),
    };
    let read = tokio::task::spawn_blocking(move || {
        let bytes = cmdlog_workbench::blob_bytes(engine.log(), &hashes);
        raw(bytes, &hashes)
    })
    .await;
    read.unwrap_or_else(|e| {
        html(
            StatusCode::INTERNAL_SERVER_ERROR,
            Err(cmdlog_workbench::PageError::Log(e.to_string())),
        )
    })
}

/// `GET /ui/hub/{log}/blob/{H1+H2}`: a value stored as blobs, of a mirrored log.
pub(crate) async fn team_blob(
    State(state): State<Arc<AppState>>,
    Path((log_id, hashes)): Path<(String, String)>,
) -> Response {
    let made = with_mirror(&state, log_id, move |log, _, site| {
        cmdlog_workbench::blob_page(log, &hashes, site)
    })
    .await;
    html(StatusCode::OK, made)
}

/// `GET /ui/hub/{log}/blob/{H1+H2}/raw`: its bytes.
pub(crate) async fn team_blob_raw(
    State(state): State<Arc<AppState>>,
    Path((log_id, hashes)): Path<(String, String)>,
) -> Response {
    let named = hashes.clone();
    let read = with_mirror(&state, log_id, move |log, _, _| {
        cmdlog_workbench::blob_bytes(log, &hashes)
    })
    .await;
    raw(read, &named)
}
