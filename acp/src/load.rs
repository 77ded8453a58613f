//! `session/load` from the log: a session cmdlog recorded is replayed to the
//! editor from the log — its prompts as `user_message_chunk`s and every ACP
//! update the agent sent, in order — before the answer, as ACP v1 requires of
//! `session/load`, whatever the agent can do itself. The agent behind it gets the
//! session back the best way it has: its own `session/load` (it replays; cmdlog
//! passes that on), `session/resume` (no replay; cmdlog's replay is the history),
//! or, for an agent that can do neither, a fresh `session/new` under the editor's
//! session id (the editor sees the history; the agent starts without it).

use cmdlog_engine::{Engine, Event, EventData};
use serde_json::{Value, json};

use crate::checks::is_session_update_kind;

/// What the agent can do to get a session back (its `initialize` answer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AgentCaps {
    /// `agentCapabilities.loadSession`.
    pub load: bool,
    /// `agentCapabilities.sessionCapabilities.resume`.
    pub resume: bool,
}

impl AgentCaps {
    /// Reads them from an `initialize` result.
    pub(crate) fn of(result: &Value) -> AgentCaps {
        let caps = &result["agentCapabilities"];
        AgentCaps {
            load: caps["loadSession"].as_bool().unwrap_or(false),
            resume: caps["sessionCapabilities"]["resume"].is_object(),
        }
    }
}

/// The `initialize` result the editor sees: `loadSession` is on, since cmdlog
/// can replay any session it recorded.
pub(crate) fn advertised(mut result: Value) -> Value {
    if let Some(caps) = result
        .get_mut("agentCapabilities")
        .and_then(Value::as_object_mut)
    {
        caps.insert("loadSession".into(), Value::Bool(true));
    } else if let Some(r) = result.as_object_mut() {
        r.insert("agentCapabilities".into(), json!({"loadSession": true}));
    }
    result
}

/// How the agent gets a session back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restore {
    /// `session/resume`: the agent keeps its context, cmdlog replays.
    Resume,
    /// `session/new`: a fresh agent session under the editor's id.
    Fresh,
}

/// The request that gets the agent's session back, for `params` of the editor's
/// `session/load`; `None` when the agent loads sessions itself (the editor's
/// request goes to it as it came).
pub(crate) fn restore_request(
    caps: AgentCaps,
    params: &Value,
) -> Option<(Restore, &'static str, Value)> {
    if caps.load {
        return None;
    }
    let mut p = json!({"cwd": params["cwd"], "mcpServers": params.get("mcpServers").cloned().unwrap_or_else(|| json!([]))});
    if caps.resume {
        p["sessionId"] = params["sessionId"].clone();
        Some((Restore::Resume, "session/resume", p))
    } else {
        Some((Restore::Fresh, "session/new", p))
    }
}

/// A session's history as the `session/update`s that replay it: its prompts
/// and the ACP updates the agent sent, in order (cmdlog's own `turn_complete`,
/// `turn_error` and command lists left out: they are not conversation).
pub(crate) fn history(engine: &Engine, session: &str) -> Vec<Value> {
    let Ok(records) = engine.log().stream(session, 0) else {
        return Vec::new();
    };
    records
        .iter()
        .filter_map(|r| Event::decode(r.seq, &r.bytes).ok())
        .filter_map(|e| match e.data {
            EventData::SessionPrompt(p) => Some(json!({
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": p.text},
            })),
            EventData::SessionUpdate(u) => {
                let kind = u["sessionUpdate"].as_str()?;
                (is_session_update_kind(kind) && kind != "available_commands_update").then_some(u)
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_way_back_follows_what_the_agent_can_do() {
        let params = json!({"sessionId": "s1", "cwd": "/w", "mcpServers": []});
        let load = AgentCaps::of(&json!({"agentCapabilities": {"loadSession": true}}));
        assert_eq!(restore_request(load, &params), None);
        let resume =
            AgentCaps::of(&json!({"agentCapabilities": {"sessionCapabilities": {"resume": {}}}}));
        let (how, method, p) = restore_request(resume, &params).unwrap();
        assert_eq!(
            (how, method, &p["sessionId"]),
            (Restore::Resume, "session/resume", &json!("s1"))
        );
        let (how, method, p) = restore_request(AgentCaps::default(), &params).unwrap();
        assert_eq!((how, method), (Restore::Fresh, "session/new"));
        assert!(p.get("sessionId").is_none());
        let shown = advertised(json!({"agentCapabilities": {"loadSession": false, "x": 1}}));
        assert_eq!(
            shown["agentCapabilities"],
            json!({"loadSession": true, "x": 1})
        );
    }
}
