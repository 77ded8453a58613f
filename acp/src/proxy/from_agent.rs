//! What the agent sends, on its way to the editor: answers to what the editor
//! (or cmdlog for it) asked, session updates, and the agent's own requests —
//! each recorded in the session it belongs to before the editor sees it.

use std::sync::Arc;

use cmdlog_engine::event::{AcpDirection, PermissionRequested};
use cmdlog_engine::{EventData, valid_id};
use serde_json::{Value, json};

use super::{AgentAsked, ClientAsked, Proxy, id_key, lock};
use crate::limits::AGENT_LIST_WAIT;
use crate::load::{AgentCaps, advertised};
use crate::rpc::{self, Kind};

impl Proxy {
    pub(super) async fn on_agent_line(self: &Arc<Self>, line: String) {
        let Ok(message) = serde_json::from_str::<Value>(line.trim()) else {
            if !line.trim().is_empty() {
                self.not_protocol(&line);
            }
            return;
        };
        let (message, line) = self.translated(message, line, false);
        match rpc::kind(&message) {
            Kind::Invalid => self.not_protocol(&line),
            Kind::Response { id } => {
                let id = id_key(id);
                self.agent_answered(&id, message, line).await
            }
            Kind::Notification {
                method: "session/update",
            } => self.agent_update(&message, line).await,
            Kind::Request { id, method } => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let session = self.session_of(&params);
                let asked = match (method, &session) {
                    ("session/request_permission", Some(session)) => {
                        let request_id = cmdlog_common::ids::new_id("perm-", 16);
                        self.recorder.record(
                            Some(session),
                            None,
                            EventData::PermissionRequested(PermissionRequested {
                                request_id: request_id.clone(),
                                options: params.get("options").cloned().unwrap_or(Value::Null),
                                tool_call: params.get("toolCall").cloned(),
                            }),
                        );
                        AgentAsked::Permission {
                            session: session.clone(),
                            request_id,
                        }
                    }
                    _ => {
                        self.message(session.as_deref(), AcpDirection::FromAgent, message.clone());
                        AgentAsked::Other(session)
                    }
                };
                lock(&self.agent_asked).insert(id_key(id), asked);
                let _ = self.to_client.send(line);
            }
            _ => {
                let session = message.get("params").and_then(|p| self.session_of(p));
                self.message(session.as_deref(), AcpDirection::FromAgent, message);
                let _ = self.to_client.send(line);
            }
        }
    }

    /// The agent answered request `id` of the editor's (or cmdlog's for it).
    async fn agent_answered(self: &Arc<Self>, id: &str, message: Value, line: String) {
        let asked = lock(&self.client_asked).remove(id);
        match asked {
            Some(ClientAsked::Initialize) => {
                if let Some(name) = message
                    .pointer("/result/agentInfo/name")
                    .and_then(Value::as_str)
                {
                    let name = name.replace(
                        |c: char| !(c.is_ascii_alphanumeric() || "._:-".contains(c)),
                        "-",
                    );
                    if valid_id(&name) {
                        *lock(&self.agent) = name;
                    }
                }
                // cmdlog can reopen any session it recorded: the editor is told
                // so (load.rs).
                *lock(&self.caps) = AgentCaps::of(&message["result"]);
                let mut shown = message.clone();
                if let Some(result) = shown.get_mut("result") {
                    *result = advertised(result.take());
                }
                self.message(None, AcpDirection::FromAgent, message);
                let _ = self.to_client.send(shown.to_string());
            }
            Some(ClientAsked::Restore {
                editor_id,
                editor_sid,
                session,
                how,
                replay,
            }) => {
                self.message(Some(&session), AcpDirection::FromAgent, message.clone());
                self.restored(editor_id, editor_sid, session, (how, replay), &message)
                    .await;
            }
            Some(ClientAsked::NewSession) | Some(ClientAsked::LoadSession(_))
                if message.get("error").is_none() =>
            {
                let sid = match &asked {
                    Some(ClientAsked::LoadSession(sid)) => Some(sid.clone()),
                    _ => message
                        .pointer("/result/sessionId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                };
                let session = match sid.as_deref() {
                    Some(sid) => self.open_session(sid).await,
                    None => None,
                };
                self.message(session.as_deref(), AcpDirection::FromAgent, message);
                let _ = self.to_client.send(line);
                if let (Some(sid), Some(session)) = (sid, session) {
                    // Agents send their list right after this answer: the editor
                    // gets one list, the merged one. cmdlog's alone only when the
                    // agent has sent none by then.
                    let proxy = Arc::clone(self);
                    tokio::spawn(async move {
                        tokio::time::sleep(AGENT_LIST_WAIT).await;
                        if !lock(&proxy.agent_lists).contains_key(&sid) {
                            proxy.send_commands(&sid, Some(&session));
                        }
                    });
                }
            }
            Some(ClientAsked::Prompt { session, prompt_id }) => {
                let end = match (
                    message
                        .pointer("/result/stopReason")
                        .and_then(Value::as_str),
                    message.get("error"),
                ) {
                    (Some(reason), _) => {
                        json!({"sessionUpdate": "turn_complete", "stopReason": reason, "promptId": prompt_id})
                    }
                    (None, error) => json!({
                        "sessionUpdate": "turn_error",
                        "message": error.and_then(|e| e["message"].as_str()).unwrap_or("the agent's answer has no stopReason"),
                        "code": error.map(|e| e["code"].clone()),
                        "promptId": prompt_id,
                    }),
                };
                self.recorder
                    .record(Some(&session), None, EventData::SessionUpdate(end));
                // The editor hears the turn ended once all of it is durable.
                self.recorder.flush().await;
                let _ = self.to_client.send(line);
            }
            _ => {
                self.message(None, AcpDirection::FromAgent, message);
                let _ = self.to_client.send(line);
            }
        }
    }

    /// A `session/update` from the agent: recorded in its session; a command
    /// list merged with cmdlog's before the editor gets it.
    async fn agent_update(&self, message: &Value, line: String) {
        let params = &message["params"];
        let Some(session) = self.session_of(params) else {
            // An agent may send a session's command list before its answer to
            // `session/new` (Qwen Code does, at times): kept for that session,
            // merged, and not followed by cmdlog's list alone once the answer
            // comes.
            if params["update"]["sessionUpdate"] == "available_commands_update"
                && let Some(sid) = params["sessionId"].as_str()
            {
                let sid = sid.to_string();
                self.message(None, AcpDirection::FromAgent, message.clone());
                let update = params["update"].clone();
                lock(&self.agent_lists).insert(sid.clone(), update.clone());
                self.commands
                    .sync(&self.engine, &update["availableCommands"])
                    .await;
                self.send_commands(&sid, None);
                return;
            }
            self.message(None, AcpDirection::FromAgent, message.clone());
            let _ = self.to_client.send(line);
            return;
        };
        let update = &params["update"];
        if update["sessionUpdate"] == "available_commands_update" {
            let list = update["availableCommands"].clone();
            let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
            self.message(Some(&session), AcpDirection::FromAgent, message.clone());
            lock(&self.agent_lists).insert(sid.clone(), update.clone());
            self.commands.sync(&self.engine, &list).await;
            self.send_commands(&sid, Some(&session));
            return;
        }
        self.recorder.record(
            Some(&session),
            None,
            EventData::SessionUpdate(update.clone()),
        );
        let _ = self.to_client.send(line);
    }
}
