//! `GET /workspace/providers`: the models a client may pick before it has a
//! session. `qwen serve` reads them from Qwen Code's settings files; cmdlog
//! serves an agent it knows only through ACP, so it lists what the agent's
//! latest `session/new` answer offered (its `models`, or its model config
//! option), with the agent's own current model and mode then — never a model
//! or mode later set on one session, which stays that session's. Before the
//! daemon's first session the answer is `qwen serve`'s idle one.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;

use crate::state::AppState;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Providers {
    v: u8,
    workspace_cwd: PathBuf,
    initialized: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<Current>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_mode: Option<String>,
    providers: Vec<Provider>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Current {
    model_id: String,
}

/// One provider: the agent. No `authType` (cmdlog does not know how the agent
/// reaches its models; the page reads one from a model id's `(…)` suffix).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Provider {
    kind: &'static str,
    status: &'static str,
    current: bool,
    models: Vec<Model>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Model {
    model_id: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_limit: Option<u64>,
    is_current: bool,
    is_runtime: bool,
}

/// The agent's models in what it said (`models.availableModels`, else the
/// options of its config option of category `model`), and the current one.
fn models_of(said: &Value) -> (Vec<Model>, Option<String>) {
    let text = |v: &Value| v.as_str().map(str::to_string);
    if let Some(list) = said["models"]["availableModels"].as_array() {
        let current = text(&said["models"]["currentModelId"]);
        let models = list
            .iter()
            .filter_map(|m| {
                let id = text(&m["modelId"])?;
                Some(Model {
                    name: text(&m["name"]).unwrap_or_else(|| id.clone()),
                    description: text(&m["description"]),
                    context_limit: m["_meta"]["contextLimit"].as_u64(),
                    is_current: current.as_deref() == Some(id.as_str()),
                    is_runtime: false,
                    model_id: id,
                })
            })
            .collect();
        return (models, current);
    }
    let options = said["configOptions"].as_array().into_iter().flatten();
    let Some(option) = options.into_iter().find(|o| o["category"] == "model") else {
        return (Vec::new(), None);
    };
    let current = text(&option["currentValue"]);
    let models = option["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let id = text(&o["value"])?;
            Some(Model {
                name: text(&o["name"]).unwrap_or_else(|| id.clone()),
                description: text(&o["description"]),
                context_limit: None,
                is_current: current.as_deref() == Some(id.as_str()),
                is_runtime: false,
                model_id: id,
            })
        })
        .collect();
    (models, current)
}

/// What a client may pick from, given what the agent last said.
pub(crate) fn of(workspace: PathBuf, said: &Value) -> Providers {
    let (models, current) = models_of(said);
    let approval_mode = said["modes"]["currentModeId"]
        .as_str()
        .filter(|m| crate::modes::APPROVAL_MODES.contains(m))
        .map(str::to_string);
    Providers {
        v: 1,
        workspace_cwd: workspace,
        initialized: !models.is_empty(),
        current: current.map(|model_id| Current { model_id }),
        approval_mode,
        providers: if models.is_empty() {
            Vec::new()
        } else {
            vec![Provider {
                kind: "model_provider",
                status: "ok",
                current: true,
                models,
            }]
        },
    }
}

pub(super) async fn providers(State(state): State<Arc<AppState>>) -> Json<Providers> {
    let said = state
        .bridge
        .as_ref()
        .map(|b| b.defaults.lock().unwrap_or_else(|p| p.into_inner()).clone())
        .unwrap_or_default();
    Json(of(state.workspace.clone(), &said))
}
