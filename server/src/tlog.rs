//! The log's signed checkpoint and its C2SP tiles over HTTP, read-only
//! (`c2sp.org/tlog-tiles`): `GET /log/{id}/checkpoint` and
//! `GET /log/{id}/tile/{L}/{N}[.p/{W}]`, `…/tile/entries/{N}[.p/{W}]`, so any
//! tlog client can audit a daemon's log. The checkpoint and the hash tiles say
//! nothing of what the records hold and need no token; entry bundles are the
//! records themselves and sit behind the token like every other read of them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cmdlog_replay::TileError;

use crate::state::{ApiError, AppState};

fn not_this_log(id: &str) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("this daemon serves no log {id:?}: GET /health?deep=1 shows its head"),
    )
    .into_response()
}

/// `GET /log/{id}/checkpoint`: the signed checkpoint of the head, as text.
pub(crate) async fn checkpoint(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Response {
    let Some(transparency) = state.transparency.as_ref().filter(|t| t.log_id == id) else {
        return not_this_log(&id);
    };
    let signer = match &transparency.signer {
        Ok(signer) => signer,
        Err(why) => {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no signing key: {why}"),
            )
            .into_response();
        }
    };
    let engine = match state.engine() {
        Ok(engine) => engine,
        Err(e) => return e.into_response(),
    };
    let signed = engine
        .log()
        .tree()
        .map_err(|e| e.to_string())
        .and_then(|view| {
            cmdlog_replay::sign(&view, &cmdlog_replay::origin(&id), signer)
                .map_err(|e| e.to_string())
        });
    match signed {
        Ok(signed) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            signed.note,
        )
            .into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// `GET /log/{id}/tile/{*path}`: one hash tile, from the tree at the head (full
/// tiles and any partial tile the head covers). No token: hashes only.
pub(crate) async fn tile(
    State(state): State<Arc<AppState>>,
    Path((id, path)): Path<(String, String)>,
) -> Response {
    if path.starts_with("entries/") {
        // Routed here only when the protected route did not take it.
        return ApiError::new(StatusCode::NOT_FOUND, format!("no tile tile/{path}"))
            .into_response();
    }
    tile_bytes(state, id, path).await
}

/// `GET /log/{id}/tile/entries/{*path}`: one entry bundle (the records' leaf
/// inputs), behind the token.
pub(crate) async fn entries(
    State(state): State<Arc<AppState>>,
    Path((id, path)): Path<(String, String)>,
) -> Response {
    tile_bytes(state, id, format!("entries/{path}")).await
}

/// Serves a tile, the token already checked where it applies.
async fn tile_bytes(state: Arc<AppState>, id: String, path: String) -> Response {
    if state.transparency.as_ref().is_none_or(|t| t.log_id != id) {
        return not_this_log(&id);
    }
    let engine = match state.engine() {
        Ok(engine) => engine,
        Err(e) => return e.into_response(),
    };
    let served = tokio::task::spawn_blocking(move || {
        let log = engine.log();
        let view = log.tree()?;
        cmdlog_replay::tile_at(log, &view, &path)
    })
    .await;
    match served {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e @ TileError::NotFound(_))) => {
            ApiError::new(StatusCode::NOT_FOUND, e.to_string()).into_response()
        }
        Ok(Err(e @ TileError::EntryTooLarge { .. })) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()).into_response()
        }
        Ok(Err(e)) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response()
        }
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
