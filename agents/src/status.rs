//! `cmdlog hooks status`: for each agent, where cmdlog's hooks are installed and
//! when a payload of its hooks last reached the log — so that hooks an agent
//! skips without a word (Codex runs no hook until it is trusted) are seen.

use std::path::{Path, PathBuf};

use cmdlog_engine::Event;
use cmdlog_store::{Log, ReadError, Seq};

use crate::install::{Scope, hook_entries_of, settings_path};
use crate::kind::AgentKind;
use crate::settings_file::{SettingsFile, read_settings};

/// How many events are read per step, from the log's end backwards.
const STEP: u64 = 1024;

/// One agent's hooks, as this workspace and the log see them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HookStatus {
    /// The agent.
    pub agent: &'static str,
    /// The settings files that hold cmdlog's hooks for it: scope and path.
    pub installed: Vec<(String, PathBuf)>,
    /// The last payload of its hooks in the log: seq, when it was appended
    /// (unix ms), and its event type.
    pub last: Option<LastPayload>,
}

/// The last event a hook of an agent appended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LastPayload {
    /// Its seq.
    pub seq: Seq,
    /// When it was appended, unix ms.
    pub at: u64,
    /// Its type (`session/prompt`, …).
    pub event: String,
}

/// The status of every agent's hooks for `workspace` (and the user's settings
/// under `home`), with the last payloads found in `log` (if there is one).
pub fn hooks_status(
    workspace: &Path,
    home: &Path,
    log: Option<&Log>,
) -> Result<Vec<HookStatus>, ReadError> {
    let mut last = last_payloads(log)?;
    Ok(AgentKind::ALL
        .iter()
        .map(|agent| {
            let installed = [(Scope::Project, "project"), (Scope::User, "user")]
                .into_iter()
                .filter_map(|(scope, label)| {
                    let path = settings_path(*agent, scope, workspace, home);
                    let file = SettingsFile {
                        path: path.clone(),
                        target: path.clone(),
                    };
                    let text = read_settings(&file).ok()?;
                    (hook_entries_of(&text, *agent) > 0).then(|| (label.to_string(), path))
                })
                .collect();
            HookStatus {
                agent: agent.name(),
                installed,
                last: last.remove(agent.name()),
            }
        })
        .collect())
}

/// The last event each agent's hooks appended, read from the log's end until
/// every agent is found.
fn last_payloads(
    log: Option<&Log>,
) -> Result<std::collections::HashMap<&'static str, LastPayload>, ReadError> {
    let mut found = std::collections::HashMap::new();
    let Some(log) = log else {
        return Ok(found);
    };
    let mut until = log.head().seq;
    while until > 0 && found.len() < AgentKind::ALL.len() {
        let from = until.saturating_sub(STEP - 1).max(1);
        for record in log.range(from, until)?.into_iter().rev() {
            let Ok(event) = Event::decode(record.seq, &record.bytes) else {
                continue;
            };
            let Some(source) = event.observed.as_ref().map(|o| o.source.as_str()) else {
                continue;
            };
            for agent in AgentKind::ALL {
                if source.strip_suffix(" hook") == Some(agent.name()) {
                    found.entry(agent.name()).or_insert_with(|| LastPayload {
                        seq: event.seq,
                        at: event.at,
                        event: event.data.type_name().to_string(),
                    });
                }
            }
        }
        until = from - 1;
    }
    Ok(found)
}
