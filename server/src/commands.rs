//! Each live session's command list, as a durable ACP `available_commands_update`:
//! appended when the session is created or attached and whenever the registry
//! changes what the session lists — so it travels with an event id, replays with
//! the session, and the log shows which commands a session had at each point.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cmdlog_engine::{BUILTIN_PROVIDER, EventData, Mode};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sse;
use crate::state::AppState;

use crate::limits::COMMANDS_SETTLE as SETTLE;

impl AppState {
    /// Records `session`'s command list if it differs from the last one recorded
    /// by this daemon.
    pub(crate) fn announce_commands(self: &Arc<Self>, session: &str) {
        let Ok(engine) = self.engine() else { return };
        let Some(s) = engine.session(session).filter(|s| s.ended.is_none()) else {
            return;
        };
        let agent = s.agent.unwrap_or_else(|| "main".into());
        let update = self.commands_update(session, &agent, s.mode.unwrap_or(Mode::Acp));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        update.to_string().hash(&mut hasher);
        let hash = hasher.finish();
        let live = self.live(session);
        let mut last = live.commands.lock().unwrap_or_else(|p| p.into_inner());
        if *last == Some(hash) {
            return;
        }
        *last = Some(hash);
        self.recorder
            .record(Some(session), None, EventData::SessionUpdate(update));
    }

    /// The `available_commands_update` a session's clients see. Without an agent:
    /// the registry's commands. With one: the agent's list as it sent it, each
    /// entry's `_meta` too, then cmdlog's command files of names it lacks —
    /// cmdlog's built-ins yield to the agent's — and the update's `_meta` without
    /// `availableSkillDetails` (skill bodies and paths), as `qwen serve` does.
    pub(crate) fn commands_update(&self, session: &str, agent: &str, mode: Mode) -> Value {
        let Ok(engine) = self.engine() else {
            return json!({"sessionUpdate": "available_commands_update", "availableCommands": []});
        };
        let list = engine.list(agent, mode);
        let Some(bridge) = &self.bridge else {
            return json!({
                "sessionUpdate": "available_commands_update",
                "availableCommands": sse::available_commands(&list),
            });
        };
        let ours: Vec<_> = list
            .into_iter()
            .filter(|r| !["acp-agent", BUILTIN_PROVIDER].contains(&r.provider.id.as_str()))
            .collect();
        let from_agent = bridge
            .agent_lists
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut update = json!({
            "sessionUpdate": "available_commands_update",
            "availableCommands": cmdlog_acp::merge(
                &from_agent["availableCommands"],
                &sse::available_commands(&ours),
            ),
        });
        if let Some(Value::Object(meta)) = from_agent.get("_meta") {
            let mut meta = meta.clone();
            meta.remove("availableSkillDetails");
            update["_meta"] = Value::Object(meta);
        }
        update
    }
}

/// Announces every live session's list after registry changes settle.
pub(crate) async fn announce_changes(state: std::sync::Weak<AppState>, changed: Arc<Notify>) {
    loop {
        changed.notified().await;
        tokio::time::sleep(SETTLE).await;
        let Some(state) = state.upgrade() else { return };
        let sessions: Vec<String> = state
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        for session in sessions {
            state.announce_commands(&session);
        }
    }
}
