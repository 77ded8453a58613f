//! `session/load` from the log: a session cmdlog recorded is replayed to the
//! editor from the log — its prompts as `user_message_chunk`s and every ACP
//! update the agent sent, in order — before the answer, as ACP v1 requires of
//! `session/load`, whatever the agent can do itself. The agent behind it gets the
//! session back the best way it has: its own `session/load` (it replays; cmdlog
//! passes that on), `session/resume` (no replay; cmdlog's replay is the history),
//! or, for an agent that can do neither, a fresh `session/new` under the editor's
//! session id (the editor sees the history; the agent starts without it). An
//! editor's `session/resume` (advertised for every agent) gets no replay: the
//! agent resumes itself when it can, else starts afresh under the editor's id.

use std::collections::HashMap;

use cmdlog_engine::{Engine, Event, EventData, valid_id};
use serde_json::{Value, json};

use crate::checks::is_session_update_kind;
use crate::outbox::Outbox;
use crate::rpc::notification;

/// The log key of an agent's session id: itself when it is a valid cmdlog id,
/// else `acp-` and a hash of it.
pub(crate) fn session_key(agent_session: &str) -> String {
    if valid_id(agent_session) {
        agent_session.to_string()
    } else {
        let mut hex = cmdlog_store::BlobHash::of(agent_session.as_bytes()).to_hex();
        hex.truncate(24);
        format!("acp-{hex}")
    }
}

/// The message with its `params.sessionId` put in the other side's terms, for
/// an editor's reopened session whose agent session has another id (`aliases`:
/// the editor's id → the agent's), and its line — unchanged when no id changed.
pub(crate) fn translate(
    aliases: &HashMap<String, String>,
    message: Value,
    line: String,
    to_agent: bool,
) -> (Value, String) {
    let Some(sid) = message.pointer("/params/sessionId").and_then(Value::as_str) else {
        return (message, line);
    };
    let other = if to_agent {
        aliases.get(sid).cloned()
    } else {
        aliases
            .iter()
            .find(|(_, agent)| agent.as_str() == sid)
            .map(|(editor, _)| editor.clone())
    };
    match other {
        Some(other) => {
            let mut message = message;
            message["params"]["sessionId"] = Value::String(other);
            let line = message.to_string();
            (message, line)
        }
        None => (message, line),
    }
}

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
        let session = caps
            .entry("sessionCapabilities")
            .or_insert_with(|| json!({}));
        if let Some(session) = session.as_object_mut() {
            session.entry("resume").or_insert_with(|| json!({}));
        }
    } else if let Some(r) = result.as_object_mut() {
        r.insert(
            "agentCapabilities".into(),
            json!({"loadSession": true, "sessionCapabilities": {"resume": {}}}),
        );
    }
    result
}

/// The request that gets the agent's session back for the editor's
/// `session/resume` (no replay): `None` when the agent resumes sessions itself
/// (the request goes to it as it came); else a fresh `session/new` under the
/// editor's id — an agent's own `session/load` would replay to the editor what
/// a resume does not want.
pub(crate) fn resume_request(
    caps: AgentCaps,
    params: &Value,
) -> Option<(Restore, &'static str, Value)> {
    if caps.resume {
        return None;
    }
    let p = new_session_params(params);
    Some((Restore::Fresh, "session/new", p))
}

/// `session/new` params for the agent from an editor's load or resume: its
/// `cwd` and `mcpServers`.
fn new_session_params(params: &Value) -> Value {
    json!({"cwd": params["cwd"], "mcpServers": params.get("mcpServers").cloned().unwrap_or_else(|| json!([]))})
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
    let mut p = new_session_params(params);
    if caps.resume {
        p["sessionId"] = params["sessionId"].clone();
        Some((Restore::Resume, "session/resume", p))
    } else {
        Some((Restore::Fresh, "session/new", p))
    }
}

/// Records of a session read at once while its history is replayed.
const HISTORY_PAGE_RECORDS: usize = 256;
/// Bytes of replayed history let wait for the editor before the next page is
/// read: a slow editor holds the replay back, not the proxy's memory.
const HISTORY_BYTES_WAITING: usize = 1 << 20;

/// Sends `session`'s history to the editor as the `session/update`s that
/// replay it, under the editor's id `editor_sid`, in order: its prompts and the
/// ACP updates the agent sent (cmdlog's own `turn_complete`, `turn_error` and
/// command lists left out: they are not conversation). A page of records is
/// read at a time and the next waits until the editor has taken most of it, so
/// a session of any length is replayed in bounded memory.
pub(crate) async fn replay_history(engine: &Engine, session: &str, editor_sid: &str, to: &Outbox) {
    let log = engine.log();
    let Ok(seqs) = log.stream_seqs(session, 0) else {
        return;
    };
    for page in seqs.chunks(HISTORY_PAGE_RECORDS) {
        if !to.room(HISTORY_BYTES_WAITING).await {
            return;
        }
        let Ok(records) = log.records_at(page) else {
            return;
        };
        for e in records
            .iter()
            .filter_map(|r| Event::decode(r.seq, &r.bytes).ok())
        {
            let update = match e.data {
                EventData::SessionPrompt(p) => Some(json!({
                    "sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": p.text},
                })),
                EventData::SessionUpdate(u) => u["sessionUpdate"]
                    .as_str()
                    .is_some_and(|k| is_session_update_kind(k) && k != "available_commands_update")
                    .then_some(u),
                _ => None,
            };
            if let Some(update) = update {
                let line = notification(
                    "session/update",
                    json!({"sessionId": editor_sid, "update": update}),
                );
                if to.send(line.to_string()).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_session_ids_become_log_keys() {
        assert_eq!(session_key("sess_123"), "sess_123");
        let odd = session_key("a/b c");
        assert!(odd.starts_with("acp-") && valid_id(&odd), "{odd}");
        assert_eq!(odd, session_key("a/b c"));
    }

    #[test]
    fn ids_are_put_in_the_other_sides_terms() {
        let aliases = HashMap::from([("editor-1".to_string(), "agent-9".to_string())]);
        let m = json!({"method": "session/prompt", "params": {"sessionId": "editor-1"}});
        let (to_agent, line) = translate(&aliases, m.clone(), m.to_string(), true);
        assert_eq!(to_agent["params"]["sessionId"], "agent-9");
        assert!(line.contains("agent-9"));
        let (back, _) = translate(&aliases, to_agent, String::new(), false);
        assert_eq!(back, m);
        let other = json!({"params": {"sessionId": "x"}});
        assert_eq!(
            translate(&aliases, other.clone(), "x".into(), true),
            (other, "x".into())
        );
    }

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
            json!({"loadSession": true, "x": 1, "sessionCapabilities": {"resume": {}}})
        );
        // An editor's resume: the agent's own when it has one, else afresh.
        assert_eq!(resume_request(resume, &params), None);
        let (how, method, _) = resume_request(load, &params).unwrap();
        assert_eq!((how, method), (Restore::Fresh, "session/new"));
    }
}
