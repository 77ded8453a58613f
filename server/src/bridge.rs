//! `serve --agent`: one ACP agent process behind the daemon. Each daemon session
//! gets an agent session (`session/new`); every message that crosses is recorded
//! (typed events where one fits, `acp/message` for the rest); the agent's own
//! commands join the registry as the `acp-agent` provider.
//!
//! Restart policy: the agent starts with the daemon. When it exits, every session
//! bound to it dies (`session/died` with how it ended) and the next session or
//! prompt starts a new process — at once if the last one ran for a while, after a
//! backoff (1 s doubling to 30 s) if it keeps exiting young.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use cmdlog_engine::EventData;
use cmdlog_engine::event::{AcpDirection, PermissionRequested, SessionEnded};
use serde_json::{Value, json};

use crate::agent::{Bridge, Routes, Running};
use crate::live::Bound;
use crate::state::{AppState, PendingPermission};
use cmdlog_acp::{AgentProcess, Incoming, Peer, RpcError};

use crate::limits::{
    AGENT_BACKOFF_FIRST as BACKOFF_FIRST, AGENT_BACKOFF_MAX as BACKOFF_MAX,
    AGENT_EARLY_UPDATES_MAX as EARLY_MAX, AGENT_HEALTHY_RUN as HEALTHY_RUN,
    AGENT_SETUP_TIMEOUT as SETUP_TIMEOUT, CLOSE_GRACE,
};

/// Why the agent behind the daemon cannot serve a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// Its process could not be started.
    #[error(transparent)]
    Start(#[from] cmdlog_acp::StartError),
    /// It did not answer in time.
    #[error("the agent `{command}` did not answer {method} within {}s", SETUP_TIMEOUT.as_secs())]
    Timeout {
        /// The agent's command line.
        command: String,
        /// What it was asked.
        method: &'static str,
    },
    /// It answered with an error.
    #[error("the agent `{command}` refused {method}: {error}")]
    Refused {
        /// The agent's command line.
        command: String,
        /// What it was asked.
        method: &'static str,
        /// Its answer.
        error: RpcError,
    },
    /// Its answer to `session/new` has no session id.
    #[error("the agent's answer to session/new has no sessionId")]
    NoSessionId,
}

impl Bridge {
    /// The running agent, started (or restarted) if there is none.
    pub(crate) async fn running(
        self: &Arc<Self>,
        state: &Arc<AppState>,
    ) -> Result<Arc<Running>, BridgeError> {
        let mut slot = self.running.lock().await;
        if let Some(running) = slot.as_ref() {
            return Ok(Arc::clone(running));
        }
        let wait = {
            let r = self.restarts.lock().unwrap_or_else(|p| p.into_inner());
            match r.started {
                Some(at) if at.elapsed() < HEALTHY_RUN => r.backoff,
                _ => Duration::ZERO,
            }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let sessions: Arc<Mutex<Routes>> = Arc::default();
        let handler = {
            let (state, bridge, sessions) = (
                Arc::downgrade(state),
                Arc::downgrade(self),
                Arc::clone(&sessions),
            );
            move |peer: &Arc<Peer>, incoming: Incoming| {
                if let (Some(state), Some(bridge)) = (state.upgrade(), bridge.upgrade()) {
                    bridge.handle(&state, peer, &sessions, incoming);
                }
            }
        };
        let AgentProcess { peer, exit, pid } =
            cmdlog_acp::spawn(&self.command, &self.cwd, handler)?;
        {
            let mut r = self.restarts.lock().unwrap_or_else(|p| p.into_inner());
            let young = r.started.is_some_and(|at| at.elapsed() < HEALTHY_RUN);
            r.backoff = if young {
                (r.backoff * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX)
            } else {
                BACKOFF_FIRST
            };
            r.started = Some(Instant::now());
        }
        let (id, request) = peer.prepare("initialize", cmdlog_acp::initialize_params());
        state
            .recorder
            .message(None, None, AcpDirection::ToAgent, request.clone());
        let answer = tokio::time::timeout(SETUP_TIMEOUT, peer.send_prepared(id, request))
            .await
            .map_err(|_| BridgeError::Timeout {
                command: self.command.display(),
                method: "initialize",
            })?;
        state.recorder.message(
            None,
            None,
            AcpDirection::FromAgent,
            cmdlog_acp::response(json!(id), answer.clone()),
        );
        let initialize = answer.map_err(|error| BridgeError::Refused {
            command: self.command.display(),
            method: "initialize",
            error,
        })?;
        eprintln!(
            "cmdlog serve: agent `{}` started (pid {}, {})",
            cmdlog_common::terminal::clean(&self.command.display()),
            pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
            cmdlog_common::terminal::clean(
                &initialize["agentInfo"]["name"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| "no agentInfo".into())
            )
        );
        let running = Arc::new(Running {
            generation,
            peer,
            sessions: Arc::clone(&sessions),
        });
        *slot = Some(Arc::clone(&running));
        tokio::spawn(watch_exit(
            Arc::downgrade(self),
            Arc::downgrade(state),
            generation,
            sessions,
            exit,
        ));
        Ok(running)
    }

    /// The agent session of daemon session `session`, made with `session/new` if
    /// the session has none in the running process.
    pub(crate) async fn bind(
        self: &Arc<Self>,
        state: &Arc<AppState>,
        session: &str,
    ) -> Result<(Arc<Running>, Bound), BridgeError> {
        let live = state.live(session);
        let mut bound = live.bound.lock().await;
        let running = self.running(state).await?;
        if let Some(b) = bound
            .as_ref()
            .filter(|b| b.generation == running.generation)
        {
            return Ok((running, b.clone()));
        }
        let params = json!({"cwd": self.cwd, "mcpServers": []});
        let (id, request) = running.peer.prepare("session/new", params);
        state
            .recorder
            .message(Some(session), None, AcpDirection::ToAgent, request.clone());
        let answer = tokio::time::timeout(SETUP_TIMEOUT, running.peer.send_prepared(id, request))
            .await
            .map_err(|_| BridgeError::Timeout {
                command: self.command.display(),
                method: "session/new",
            })?;
        state.recorder.message(
            Some(session),
            None,
            AcpDirection::FromAgent,
            cmdlog_acp::response(json!(id), answer.clone()),
        );
        let answer = answer.map_err(|error| BridgeError::Refused {
            command: self.command.display(),
            method: "session/new",
            error,
        })?;
        let agent_session = answer["sessionId"]
            .as_str()
            .ok_or(BridgeError::NoSessionId)?
            .to_string();
        let early = {
            let mut routes = running.sessions.lock().unwrap_or_else(|p| p.into_inner());
            routes
                .sessions
                .insert(agent_session.clone(), session.to_string());
            let early = routes.early.remove(&agent_session).unwrap_or_default();
            routes.early_count -= early.len();
            early
        };
        for params in early {
            self.handle(
                state,
                &running.peer,
                &running.sessions,
                Incoming::Notification {
                    method: "session/update".into(),
                    params,
                },
            );
        }
        let b = Bound {
            generation: running.generation,
            agent_session,
            model_option: model_option(&answer),
        };
        let said = crate::modes::agent_state(&answer);
        *self.defaults.lock().unwrap_or_else(|p| p.into_inner()) = said.clone();
        *live.agent_state.lock().unwrap_or_else(|p| p.into_inner()) = said;
        *bound = Some(b.clone());
        Ok((running, b))
    }

    /// What the agent sends of its own accord.
    fn handle(
        self: &Arc<Self>,
        state: &Arc<AppState>,
        peer: &Arc<Peer>,
        sessions: &Mutex<Routes>,
        incoming: Incoming,
    ) {
        let ours = |params: &Value| {
            params["sessionId"].as_str().and_then(|s| {
                sessions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .sessions
                    .get(s)
                    .cloned()
            })
        };
        match incoming {
            Incoming::Notification { method, params } if method == "session/update" => {
                let session = ours(&params);
                if session.is_none()
                    && let Some(sid) = params["sessionId"].as_str()
                {
                    let mut routes = sessions.lock().unwrap_or_else(|p| p.into_inner());
                    if routes.early_count < EARLY_MAX {
                        routes.early_count += 1;
                        routes
                            .early
                            .entry(sid.to_string())
                            .or_default()
                            .push(params);
                        return;
                    }
                }
                let (Some(session), Some(update)) = (session, params.get("update")) else {
                    state.recorder.message(
                        None,
                        None,
                        AcpDirection::FromAgent,
                        cmdlog_acp::notification(&method, params),
                    );
                    return;
                };
                if update["sessionUpdate"] == "available_commands_update" {
                    // The agent's list joins the registry; the session hears the
                    // merged list (commands.rs). Its own message is kept as sent.
                    let list = update["availableCommands"].clone();
                    self.agent_lists
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(session.clone(), update.clone());
                    let (bridge, st) = (Arc::clone(self), Arc::clone(state));
                    let session_for_list = session.clone();
                    tokio::spawn(async move {
                        if let Ok(engine) = st.engine() {
                            bridge.commands.sync(&engine, &list).await;
                        }
                        // Its `_meta` may have changed where the registry did not.
                        st.announce_commands(&session_for_list);
                    });
                    state.recorder.message(
                        Some(&session),
                        None,
                        AcpDirection::FromAgent,
                        cmdlog_acp::notification(&method, params),
                    );
                    return;
                }
                state.recorder.record(
                    Some(&session),
                    None,
                    EventData::SessionUpdate(update.clone()),
                );
            }
            Incoming::Request { id, method, params } if method == "session/request_permission" => {
                permission_asked(state, peer, ours(&params), (id, method, params));
            }
            Incoming::Request { id, method, params } => {
                // cmdlog offers no file system or terminal (initialize says so).
                let session = ours(&params);
                let error = RpcError::new(
                    cmdlog_acp::METHOD_NOT_FOUND,
                    format!("cmdlog does not offer {method}"),
                );
                state.recorder.message(
                    session.as_deref(),
                    None,
                    AcpDirection::FromAgent,
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                );
                state.recorder.message(
                    session.as_deref(),
                    None,
                    AcpDirection::ToAgent,
                    cmdlog_acp::response(id.clone(), Err(error.clone())),
                );
                peer.respond(id, Err(error));
            }
            Incoming::Notification { method, params } => {
                let session = ours(&params);
                state.recorder.message(
                    session.as_deref(),
                    None,
                    AcpDirection::FromAgent,
                    cmdlog_acp::notification(&method, params),
                );
            }
        }
    }

    /// Forgets the running process if it is `generation` (it exited).
    async fn forget(&self, generation: u64) {
        let mut slot = self.running.lock().await;
        if slot.as_ref().is_some_and(|r| r.generation == generation) {
            *slot = None;
        }
    }
}

/// The config option that selects the model, in a `session/new` answer.
fn model_option(answer: &Value) -> Option<String> {
    answer["configOptions"]
        .as_array()?
        .iter()
        .find(|o| o["category"] == "model")
        .and_then(|o| o["id"].as_str())
        .map(str::to_string)
}

/// Waits for the process to exit; then every session bound to it dies.
async fn watch_exit(
    bridge: Weak<Bridge>,
    state: Weak<AppState>,
    generation: u64,
    sessions: Arc<Mutex<Routes>>,
    mut exit: tokio::sync::watch::Receiver<Option<cmdlog_acp::AgentExit>>,
) {
    let exit = match exit.wait_for(Option::is_some).await {
        Ok(exit) => exit.clone(),
        Err(_) => None,
    }
    .unwrap_or_else(|| cmdlog_acp::AgentExit {
        code: None,
        signal: None,
        how: "the agent's process was lost".to_string(),
    });
    let how = &exit.how;
    let Some(bridge) = bridge.upgrade() else {
        return;
    };
    bridge.forget(generation).await;
    eprintln!(
        "cmdlog serve: {how} (agent `{}`); it restarts on the next session or prompt",
        cmdlog_common::terminal::clean(&bridge.command.display())
    );
    let Some(state) = state.upgrade() else { return };
    let bound: Vec<String> = sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .sessions
        .values()
        .cloned()
        .collect();
    state.recorder.flush().await;
    for session in bound {
        // As `qwen serve` ends a session whose agent's channel closed: the turn's
        // questions answered `cancelled`, the turn failed (its prompt fails with
        // the channel and the turn records `turn_error`, code `channel_closed`:
        // turns.rs), then `session_died`. The turn gets a moment to say so.
        state.cancel_permissions(&session).await;
        if let Some(live) = state.live_if(&session) {
            live.turn_ended_within(CLOSE_GRACE).await;
        }
        state.end_session(&session).await;
        if let Ok(engine) = state.engine() {
            let _ = engine
                .append_session_event(
                    &session,
                    None,
                    EventData::SessionDied(SessionEnded {
                        reason: Some("channel_closed".into()),
                        details: Some(serde_json::json!({
                            "exitCode": exit.code,
                            "signalCode": exit.signal_name(),
                            "message": format!("{how} (agent `{}`)", bridge.command.display()),
                        })),
                    }),
                )
                .await;
        }
    }
}
/// The agent asks the session's clients for a permission: recorded, kept until
/// a client answers (or the session ends: cancelled). Refused for a session the
/// daemon does not know.
fn permission_asked(
    state: &Arc<AppState>,
    peer: &Arc<Peer>,
    session: Option<String>,
    (id, method, params): (Value, String, Value),
) {
    let Some(session) = session else {
        let error = RpcError::new(cmdlog_acp::INVALID_PARAMS, "no such session");
        state.recorder.message(
            None,
            None,
            AcpDirection::FromAgent,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        state.recorder.message(
            None,
            None,
            AcpDirection::ToAgent,
            cmdlog_acp::response(id.clone(), Err(error.clone())),
        );
        peer.respond(id, Err(error));
        return;
    };
    let request_id = cmdlog_common::ids::new_id("perm-", 16);
    let options = params.get("options").cloned().unwrap_or(Value::Null);
    state.recorder.record(
        Some(&session),
        None,
        EventData::PermissionRequested(PermissionRequested {
            request_id: request_id.clone(),
            options: options.clone(),
            tool_call: params.get("toolCall").cloned(),
        }),
    );
    let (tx, rx) = tokio::sync::oneshot::channel();
    state
        .votes
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(
            request_id,
            PendingPermission {
                session,
                options,
                answer: Some(tx),
            },
        );
    let peer = Arc::clone(peer);
    tokio::spawn(async move {
        // Dropped unanswered (the session ended): the turn is over.
        let outcome = rx.await.unwrap_or_else(|_| json!({"outcome": "cancelled"}));
        peer.respond(id, Ok(json!({"outcome": outcome})));
    });
}
