//! The routes of `qwen serve` that Qwen Code's Web Shell calls on every
//! connect and that cmdlog has nothing of its own to say on: answered as
//! `qwen serve` 0.24.4 answers them for a workspace without that feature (no
//! brand, no settings or model files of its own, no git status computed, no
//! goal), so the page takes them as it takes the real daemon's. A `200`
//! carries every array the page reads (a missing one breaks its connect).
//! `docs/http.md` lists them with both daemons' answers.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use serde::Serialize;

use crate::state::{ApiError, AppState};

/// An empty list the page reads (`settings`, `models`, `skills`).
type Nothing = [(); 0];

#[derive(Serialize)]
pub(super) struct Brand {}

/// `GET /brand`: no brand (the page keeps its own).
pub(super) async fn brand() -> Json<Brand> {
    Json(Brand {})
}

#[derive(Serialize)]
pub(super) struct Settings {
    v: u8,
    settings: Nothing,
}

/// `GET /workspace/settings`: no settings the daemon edits.
pub(super) async fn settings() -> Json<Settings> {
    Json(Settings { v: 1, settings: [] })
}

#[derive(Serialize)]
pub(super) struct Models {
    models: Nothing,
}

/// `GET /workspace/models`: no model configurations in settings files.
pub(super) async fn models() -> Json<Models> {
    Json(Models { models: [] })
}

/// The idle answer of a workspace route: nothing configured, nothing loaded.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Idle {
    v: u8,
    workspace_cwd: PathBuf,
    initialized: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    skills: Option<Nothing>,
}

impl Idle {
    fn of(state: &AppState) -> Idle {
        Idle {
            v: 1,
            workspace_cwd: state.workspace.clone(),
            initialized: false,
            skills: None,
        }
    }
}

/// `GET /workspace/skills`: the idle answer (cmdlog's commands are listed per
/// session, `GET /session/{id}/supported-commands`).
pub(super) async fn skills(State(state): State<Arc<AppState>>) -> Json<Idle> {
    Json(Idle {
        skills: Some([]),
        ..Idle::of(&state)
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Git {
    v: u8,
    workspace_cwd: PathBuf,
    branch: Option<String>,
}

/// `GET /workspace/git`: no status computed.
pub(super) async fn git(State(state): State<Arc<AppState>>) -> Json<Git> {
    Json(Git {
        v: 2,
        workspace_cwd: state.workspace.clone(),
        branch: None,
    })
}

/// `GET /workspaces/{workspace}/git`: the same, for this daemon's workspace
/// named by its path; another is not found.
pub(super) async fn workspace_git(
    State(state): State<Arc<AppState>>,
    UrlPath(workspace): UrlPath<String>,
) -> Result<Json<Git>, ApiError> {
    let named = std::path::Path::new(&workspace);
    let canonical = std::fs::canonicalize(named).unwrap_or_else(|_| named.to_path_buf());
    if canonical != state.workspace {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            format!(
                "this daemon serves {}, not {workspace}",
                state.workspace.display()
            ),
        )
        .code("workspace_not_found"));
    }
    Ok(git(State(state)).await)
}

#[derive(Serialize)]
pub(super) struct Goal {
    snapshot: GoalSnapshot,
}

#[derive(Serialize)]
pub(super) struct GoalSnapshot {
    v: u8,
    goal: Option<String>,
    activity: &'static str,
}

/// `GET /session/{id}/goal`: no goal set, idle.
pub(super) async fn goal(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Goal>, ApiError> {
    state.session(&id)?;
    Ok(Json(Goal {
        snapshot: GoalSnapshot {
            v: 2,
            goal: None,
            activity: "idle",
        },
    }))
}
