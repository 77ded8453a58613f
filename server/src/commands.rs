//! Each live session's command list, as a durable ACP `available_commands_update`:
//! appended when the session is created or attached and whenever the registry
//! changes what the session lists — so it travels with an event id, replays with
//! the session, and the log shows which commands a session had at each point.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cmdlog_engine::{EventData, Mode};
use serde_json::json;
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
        let list = sse::available_commands(&engine.list(&agent, s.mode.unwrap_or(Mode::Acp)));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        list.to_string().hash(&mut hasher);
        let hash = hasher.finish();
        let live = self.live(session);
        let mut last = live.commands.lock().unwrap_or_else(|p| p.into_inner());
        if *last == Some(hash) {
            return;
        }
        *last = Some(hash);
        self.recorder.record(
            Some(session),
            None,
            EventData::SessionUpdate(json!({
                "sessionUpdate": "available_commands_update",
                "availableCommands": list,
            })),
        );
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
