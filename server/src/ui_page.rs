//! How a workbench page is answered: made from the log on a blocking
//! thread, as HTML, or as the page that says why it could not be made
//! (404 when the request named what the log does not hold).

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// A page as the answer, or the page saying why it could not be made.
pub(crate) fn html(
    status: StatusCode,
    page: Result<String, cmdlog_workbench::PageError>,
) -> Response {
    match page {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => {
            let status = if e.is_not_found() {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            let body = cmdlog_workbench::message_page("Not shown", &e.to_string())
                .unwrap_or_else(|_| "the page could not be made".into());
            (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                body,
            )
                .into_response()
        }
    }
}

/// The answer of a page made on a blocking thread.
pub(crate) fn answer(
    made: Result<Result<String, cmdlog_workbench::PageError>, tokio::task::JoinError>,
) -> Response {
    match made {
        Ok(page) => html(StatusCode::OK, page),
        Err(e) => html(
            StatusCode::INTERNAL_SERVER_ERROR,
            Err(cmdlog_workbench::PageError::Log(e.to_string())),
        ),
    }
}

/// Makes a page from the log on a blocking thread.
pub(crate) async fn page(
    state: Arc<AppState>,
    make: impl FnOnce(&AppState, &cmdlog_store::Log) -> Result<String, cmdlog_workbench::PageError>
    + Send
    + 'static,
) -> Response {
    let engine = match state.engine() {
        Ok(engine) => engine,
        Err(e) => return e.into_response(),
    };
    let made = tokio::task::spawn_blocking(move || make(&state, engine.log())).await;
    answer(made)
}

/// This daemon's own log, as its pages name it: this machine and the
/// daemon's workspace.
pub(crate) fn local_site(state: &AppState) -> cmdlog_workbench::Site {
    // Read once: every page names the machine.
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let site = cmdlog_workbench::Site::local_at(
        HOST.get_or_init(cmdlog_engine::identity::host_name),
        &state.workspace.display().to_string(),
    );
    match &state.transparency {
        Some(t) => site.witnessed(state.mirrors.witnessed_of(&t.log_id)),
        None => site,
    }
}

/// Reads the mirror of the hub's log `log_id` on a blocking thread, the
/// mirrors held still while it does (a clone's file is open in one place at
/// a time; a round of the mirroring waits).
pub(crate) async fn with_mirror<T: Send + 'static>(
    state: &AppState,
    log_id: String,
    read: impl FnOnce(
        &cmdlog_store::Log,
        &mut crate::mirrors::Mirror,
        &cmdlog_workbench::Site,
    ) -> Result<T, cmdlog_workbench::PageError>
    + Send
    + 'static,
) -> Result<T, cmdlog_workbench::PageError> {
    let unshown = |log_id: &str, why: &str| cmdlog_workbench::PageError::NoMirror {
        log_id: cmdlog_common::terminal::clean(log_id).into_owned(),
        why: why.to_string(),
    };
    if !cmdlog_workbench::is_log_id(&log_id) {
        return Err(unshown(&log_id, "that is not a log id"));
    }
    let mut logs = Arc::clone(&state.mirrors.logs).lock_owned().await;
    tokio::task::spawn_blocking(move || {
        let Some(mirror) = logs.get_mut(&log_id) else {
            return Err(unshown(&log_id, "the hub has no log by that id"));
        };
        let path = match (&mirror.path, &mirror.error) {
            (Some(path), None) => path.clone(),
            (_, e) => {
                let why = format!("its clone is not read: {}", e.as_deref().unwrap_or(""));
                return Err(unshown(&log_id, &why));
            }
        };
        let log = cmdlog_store::Log::open(&path, cmdlog_store::LogConfig::default())
            .map_err(|e| cmdlog_workbench::PageError::Log(e.to_string()))?;
        let site = cmdlog_workbench::Site::mirror(&log_id, &mirror.host)
            .witnessed(mirror.witnessed.clone());
        read(&log, mirror, &site)
    })
    .await
    .map_err(|e| cmdlog_workbench::PageError::Log(e.to_string()))?
}
