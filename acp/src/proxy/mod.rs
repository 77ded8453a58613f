//! `cmdlog acp -- CMD ARGS…`: an ACP proxy on stdio. The editor talks to cmdlog
//! as to its agent; cmdlog starts the agent and passes every line through as it
//! came — except that slash lines naming cmdlog's commands are resolved by
//! cmdlog first (a handler answers itself, a prompt command's expansion goes on
//! as the prompt), and the agent's command list reaches the editor merged with
//! cmdlog's. Every message is recorded, in each direction in order.

mod from_agent;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cmdlog_engine::event::{AcpDirection, Decider, PermissionResolved, SessionEnded};
use cmdlog_engine::{BUILTIN_PROVIDER, CancellationToken, Engine, EventData, Mode};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::agent::{AgentCommand, StartError};
use crate::commands::{AgentCommands, merge};
use crate::limits::{AGENT_EXIT_DRAIN, AGENT_LIST_WAIT, EDITOR_GONE_GRACE};
use crate::lines::{Line, LineReader};
use crate::load::{
    AgentCaps, Restore, replay_history, restore_request, resume_request, session_key, translate,
};
use crate::outbox::{Outbox, outbox, write_lines};
use crate::record::Recorder;
use crate::rpc::{self, Kind, LINE_BYTES_MAX};
use crate::turn::{RegistryTurn, TurnPrompt, message_chunk, prompt_text, through_registry};

/// What the editor asked the agent, remembered until the answer.
enum ClientAsked {
    Initialize,
    NewSession,
    LoadSession(String),
    Prompt {
        session: String,
        prompt_id: String,
    },
    /// cmdlog's own request that gets the agent's session back for the editor's
    /// `session/load` (load.rs).
    Restore {
        editor_id: Value,
        editor_sid: String,
        session: String,
        how: Restore,
        /// Replay the history to the editor first (`session/load`; not for
        /// `session/resume`).
        replay: bool,
    },
    Other,
}

/// What the agent asked the editor.
enum AgentAsked {
    Permission {
        session: String,
        request_id: String,
    },
    /// Anything else, in the log's session it names (the editor's answer is
    /// recorded there too).
    Other(Option<String>),
}

struct Proxy {
    engine: Engine,
    recorder: Recorder,
    commands: AgentCommands,
    /// The agent's name, from `initialize`; sessions are logged under it.
    agent: Mutex<String>,
    client_asked: Mutex<HashMap<String, ClientAsked>>,
    agent_asked: Mutex<HashMap<String, AgentAsked>>,
    /// Sessions seen, by the agent's session id: their log key.
    sessions: Mutex<HashMap<String, String>>,
    /// Each session's latest command list from the agent: the whole update,
    /// its `_meta` too.
    agent_lists: Mutex<HashMap<String, Value>>,
    to_client: Outbox,
    /// What the agent can do to get a session back.
    caps: Mutex<AgentCaps>,
    /// Sessions the editor reopened whose agent session has another id: the
    /// editor's id → the agent's.
    aliases: Mutex<HashMap<String, String>>,
    /// cmdlog's own request ids to the agent.
    own_ids: std::sync::atomic::AtomicU64,
    /// Taken when the editor closes its side: the agent's stdin closes with it.
    to_agent: Mutex<Option<Outbox>>,
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The agent could not be started.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The agent's exit could not be waited for.
    #[error("cannot wait for the agent: {0}")]
    Wait(#[source] std::io::Error),
}

/// Runs the proxy between an editor (`editor_in`, `editor_out`: its stdio) and the
/// agent `command` started in `cwd`, until the editor closes its side and the
/// agent exits (or the agent exits first). Returns the agent's exit code.
pub async fn run_proxy<R, W>(
    engine: Engine,
    command: &AgentCommand,
    cwd: &Path,
    editor_in: R,
    editor_out: W,
) -> Result<i32, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Other cmdlog processes read the log through this one while it runs.
    let _readers = cmdlog_store::serve_readers(engine.log()).ok();
    let (mut child, agent_in, agent_out) = crate::agent::start(command, cwd)?;
    let (to_client, client_lines) = outbox();
    let (to_agent, agent_lines) = outbox();
    let client_writer = tokio::spawn(write_lines(editor_out, client_lines));
    let agent_writer = tokio::spawn(write_lines(agent_in, agent_lines));
    let recorder = Recorder::start({
        let engine = engine.clone();
        Arc::new(move || Some(engine.clone()))
    });
    let proxy = Arc::new(Proxy {
        engine,
        recorder,
        commands: AgentCommands::new(&command.display()),
        agent: Mutex::new("acp".into()),
        client_asked: Mutex::new(HashMap::new()),
        agent_asked: Mutex::new(HashMap::new()),
        sessions: Mutex::new(HashMap::new()),
        agent_lists: Mutex::new(HashMap::new()),
        to_client,
        caps: Mutex::new(AgentCaps::default()),
        aliases: Mutex::new(HashMap::new()),
        own_ids: std::sync::atomic::AtomicU64::new(1),
        to_agent: Mutex::new(Some(to_agent)),
    });
    let (editor_closed, mut closed) = tokio::sync::watch::channel(false);
    let from_client = {
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let mut lines = LineReader::new(editor_in, LINE_BYTES_MAX);
            while let Some(Ok(line)) = lines.next().await {
                match line {
                    Line::Text(line) => proxy.on_client_line(line).await,
                    Line::Oversized { bytes, blake3 } => {
                        proxy.oversized(AcpDirection::ToAgent, bytes, &blake3)
                    }
                }
            }
            // The editor is done: so is the agent's input.
            lock(&proxy.to_agent).take();
            let _ = editor_closed.send(true);
        })
    };
    let mut lines = LineReader::new(agent_out, LINE_BYTES_MAX);
    let mut grace_ends: Option<tokio::time::Instant> = None;
    // When the agent itself exited: what it wrote is read for a moment more,
    // then the proxy ends, even if a process it left behind holds its output.
    let mut drain_ends: Option<tokio::time::Instant> = None;
    loop {
        let line = tokio::select! {
            line = lines.next() => line,
            _ = child.wait(), if drain_ends.is_none() => {
                drain_ends = Some(tokio::time::Instant::now() + AGENT_EXIT_DRAIN);
                continue;
            }
            _ = tokio::time::sleep_until(drain_ends.unwrap_or_else(tokio::time::Instant::now)),
                if drain_ends.is_some() => break,
            _ = closed.wait_for(|c| *c), if grace_ends.is_none() => {
                // The editor left: the agent gets a moment to finish, then goes.
                grace_ends = Some(tokio::time::Instant::now() + EDITOR_GONE_GRACE);
                continue;
            }
            _ = tokio::time::sleep_until(grace_ends.unwrap_or_else(tokio::time::Instant::now)),
                if grace_ends.is_some() => {
                let _ = child.start_kill();
                break;
            }
        };
        match line {
            Some(Ok(Line::Text(line))) => proxy.on_agent_line(line).await,
            Some(Ok(Line::Oversized { bytes, blake3 })) => {
                proxy.oversized(AcpDirection::FromAgent, bytes, &blake3)
            }
            Some(Err(_)) | None => break,
        }
    }
    // The agent exited or closed its output: it is done, or dying.
    let status = child.wait().await.map_err(ProxyError::Wait)?;
    from_client.abort();
    let how = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("the agent exited with status {code}")),
        (None, Some(signal)) => Some(format!("the agent was killed by signal {signal}")),
        _ => Some("the agent exited".to_string()),
    };
    proxy.recorder.flush().await;
    let open: Vec<String> = lock(&proxy.sessions).values().cloned().collect();
    for session in open {
        let data = match &how {
            // Ended, not closed: an editor may reopen it with `session/load`.
            None => EventData::SessionEnded(SessionEnded {
                reason: Some("the ACP connection ended".into()),
                details: None,
            }),
            Some(how) => EventData::SessionDied(SessionEnded {
                reason: Some(format!("{how} (agent `{}`)", command.display())),
                details: None,
            }),
        };
        let _ = proxy
            .engine
            .append_session_event(&session, None, data)
            .await;
    }
    proxy.commands.clear().await;
    drop(proxy);
    let _ = agent_writer.await;
    let _ = client_writer.await;
    Ok(status.code().unwrap_or(1))
}

impl Proxy {
    fn send_agent(&self, line: String) {
        if let Some(to_agent) = lock(&self.to_agent).as_ref() {
            let _ = to_agent.send(line);
        }
    }

    fn agent_name(&self) -> String {
        lock(&self.agent).clone()
    }

    /// The log key of a message's `params.sessionId`, if it is a session cmdlog
    /// has seen.
    fn session_of(&self, params: &Value) -> Option<String> {
        let sid = params.get("sessionId")?.as_str()?;
        lock(&self.sessions).get(sid).cloned()
    }

    /// The message with its `params.sessionId` put in the other side's terms
    /// (load.rs, [`translate`]).
    fn translated(&self, message: Value, line: String, to_agent: bool) -> (Value, String) {
        translate(&lock(&self.aliases), message, line, to_agent)
    }

    /// The editor's id of an agent session.
    fn editor_sid(&self, agent_sid: &str) -> String {
        lock(&self.aliases)
            .iter()
            .find(|(_, agent)| agent.as_str() == agent_sid)
            .map_or_else(|| agent_sid.to_string(), |(editor, _)| editor.clone())
    }

    /// Whether the log holds session `sid` (an editor's id) from an earlier run,
    /// still open to more (ended by its connection, not closed or dead).
    fn recorded(&self, sid: &str) -> bool {
        self.engine
            .session(&session_key(sid))
            .is_some_and(|s| s.created.is_some() && s.ended.is_none())
    }

    /// The editor's `session/load` of a session the log holds, for an agent that
    /// cannot load it itself: the agent gets it back its own way (load.rs); the
    /// editor gets the history from the log, then the answer.
    fn restore(
        &self,
        editor_id: &Value,
        params: &Value,
        (how, method, p): (Restore, &str, Value),
        replay: bool,
    ) {
        let editor_sid = params["sessionId"].as_str().unwrap_or_default().to_string();
        let session = session_key(&editor_sid);
        let n = self
            .own_ids
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let own = json!(format!("cmdlog-restore-{n}"));
        let request = json!({"jsonrpc": "2.0", "id": own, "method": method, "params": p});
        lock(&self.client_asked).insert(
            id_key(&own),
            ClientAsked::Restore {
                editor_id: editor_id.clone(),
                editor_sid,
                session: session.clone(),
                how,
                replay,
            },
        );
        self.message(Some(&session), AcpDirection::ToAgent, request.clone());
        self.send_agent(request.to_string());
    }

    fn message(&self, session: Option<&str>, direction: AcpDirection, message: Value) {
        self.recorder.message(session, None, direction, message);
    }

    async fn on_client_line(&self, line: String) {
        let Ok(message) = serde_json::from_str::<Value>(line.trim()) else {
            if !line.trim().is_empty() {
                self.message(None, AcpDirection::ToAgent, Value::String(line.clone()));
                self.send_agent(line);
            }
            return;
        };
        let (message, line) = self.translated(message, line, true);
        match rpc::kind(&message) {
            Kind::Request { id, method } => {
                let key = id_key(id);
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let session = self.session_of(&params);
                if method == "session/prompt"
                    && let Some(session) = session
                {
                    self.prompt(&line, &message, session).await;
                    return;
                }
                if let Some(sid) = params["sessionId"].as_str()
                    && self.recorded(sid)
                    && let Some((request, replay)) = match method {
                        "session/load" => {
                            restore_request(*lock(&self.caps), &params).map(|r| (r, true))
                        }
                        "session/resume" => {
                            resume_request(*lock(&self.caps), &params).map(|r| (r, false))
                        }
                        _ => None,
                    }
                {
                    let session = session_key(sid);
                    lock(&self.sessions).insert(sid.to_string(), session.clone());
                    self.message(Some(&session), AcpDirection::ToAgent, message.clone());
                    self.restore(id, &params, request, replay);
                    return;
                }
                let asked = match method {
                    "initialize" => ClientAsked::Initialize,
                    "session/new" => ClientAsked::NewSession,
                    "session/load" | "session/resume" => match params["sessionId"].as_str() {
                        Some(sid) => ClientAsked::LoadSession(sid.to_string()),
                        None => ClientAsked::Other,
                    },
                    _ => ClientAsked::Other,
                };
                lock(&self.client_asked).insert(key, asked);
                self.message(session.as_deref(), AcpDirection::ToAgent, message);
            }
            Kind::Notification {
                method: "session/cancel",
            } => match message.get("params").and_then(|p| self.session_of(p)) {
                Some(session) => self.recorder.record(
                    Some(&session),
                    None,
                    EventData::SessionCancelled(Default::default()),
                ),
                None => self.message(None, AcpDirection::ToAgent, message),
            },
            Kind::Response { id } => {
                let asked = lock(&self.agent_asked).remove(&id_key(id));
                match asked {
                    Some(AgentAsked::Permission {
                        session,
                        request_id,
                    }) => {
                        let decision = message
                            .pointer("/result/outcome")
                            .cloned()
                            .unwrap_or_else(|| json!({"outcome": "cancelled"}));
                        self.recorder.record(
                            Some(&session),
                            None,
                            EventData::PermissionResolved(PermissionResolved {
                                request_id,
                                decision,
                                // The editor asked its user.
                                decided_by: Some(Decider::User),
                                ..Default::default()
                            }),
                        );
                        // Durable before the agent acts on it.
                        self.recorder.flush().await;
                    }
                    Some(AgentAsked::Other(session)) => {
                        self.message(session.as_deref(), AcpDirection::ToAgent, message)
                    }
                    None => self.message(None, AcpDirection::ToAgent, message),
                }
            }
            _ => {
                let session = message.get("params").and_then(|p| self.session_of(p));
                self.message(session.as_deref(), AcpDirection::ToAgent, message);
            }
        }
        self.send_agent(line);
    }

    /// A `session/prompt` from the editor: cmdlog's registry sees it first.
    async fn prompt(&self, line: &str, message: &Value, session: String) {
        let id = message["id"].clone();
        let params = &message["params"];
        let blocks: Vec<Value> = params["prompt"].as_array().cloned().unwrap_or_default();
        let text = prompt_text(&blocks);
        let prompt_id = format!("rpc-{}", id_key(&id).trim_matches('"'));
        let agent = self.agent_name();
        let turn = TurnPrompt {
            session: &session,
            agent: &agent,
            mode: Mode::Acp,
            text: &text,
            blocks: &blocks,
            prompt_id: &prompt_id,
            client_id: None,
            cancel: CancellationToken::new(),
            builtins: false,
        };
        let forward = match through_registry(&self.engine, &self.recorder, turn).await {
            Ok(RegistryTurn::Answered {
                message,
                stop_reason,
            }) => {
                // Answered by cmdlog: the agent never hears of it.
                if let Some(text) = message {
                    let sid = self.editor_sid(params["sessionId"].as_str().unwrap_or_default());
                    let _ = self.to_client.send(
                        rpc::notification(
                            "session/update",
                            json!({"sessionId": sid, "update": message_chunk(&text)}),
                        )
                        .to_string(),
                    );
                }
                self.recorder.record(
                    Some(&session),
                    None,
                    EventData::SessionUpdate(json!({"sessionUpdate": "turn_complete", "stopReason": stop_reason, "promptId": prompt_id})),
                );
                self.recorder.flush().await;
                let _ = self
                    .to_client
                    .send(rpc::response(id, Ok(json!({"stopReason": stop_reason}))).to_string());
                return;
            }
            Ok(RegistryTurn::Forward {
                blocks,
                expanded: true,
            }) => {
                let mut changed = message.clone();
                changed["params"]["prompt"] = Value::Array(blocks);
                changed.to_string()
            }
            Ok(RegistryTurn::Forward { .. }) => line.to_string(),
            Err(e) => {
                eprintln!(
                    "cmdlog: the prompt was passed on unrecorded: {}",
                    cmdlog_common::terminal::clean(&e.to_string())
                );
                line.to_string()
            }
        };
        lock(&self.client_asked).insert(id_key(&id), ClientAsked::Prompt { session, prompt_id });
        self.send_agent(forward);
    }

    /// A line over the limit: not passed on; its size and hash are recorded.
    fn oversized(&self, direction: AcpDirection, bytes: u64, blake3: &str) {
        eprintln!(
            "cmdlog: {} sent a line of {bytes} bytes, over the limit of {LINE_BYTES_MAX}; it was not passed on (BLAKE3 {blake3})",
            match direction {
                AcpDirection::FromAgent => "the agent",
                _ => "the editor",
            }
        );
        self.message(
            None,
            direction,
            json!({"cmdlog": "line over the limit, not passed on", "bytes": bytes, "blake3": blake3, "limit": LINE_BYTES_MAX}),
        );
    }

    /// What the agent writes that is not JSON-RPC (a log line, a stray print):
    /// recorded, shown escaped on stderr, never passed to the editor, which
    /// reads only protocol messages.
    fn not_protocol(&self, line: &str) {
        eprintln!("agent: {}", cmdlog_common::terminal::clean(line));
        self.message(
            None,
            AcpDirection::FromAgent,
            Value::String(line.to_string()),
        );
    }

    /// Creates (or reopens) the log's session for an agent session.
    async fn open_session(&self, agent_session: &str) -> Option<String> {
        let key = session_key(agent_session);
        match self
            .engine
            .ensure_session(&key, &self.agent_name(), Mode::Acp)
            .await
        {
            Ok(_) => {
                lock(&self.sessions).insert(agent_session.to_string(), key.clone());
                Some(key)
            }
            Err(e) => {
                eprintln!(
                    "cmdlog: session {} is not recorded: {}",
                    cmdlog_common::terminal::clean(agent_session),
                    cmdlog_common::terminal::clean(&e.to_string())
                );
                None
            }
        }
    }

    /// The agent has the session back (or could not): the editor gets the
    /// history from the log, then its answer — an error as the agent gave it.
    async fn restored(
        self: &Arc<Self>,
        editor_id: Value,
        editor_sid: String,
        session: String,
        (how, replay): (Restore, bool),
        answer: &Value,
    ) {
        if let Some(error) = answer.get("error") {
            let reply = json!({"jsonrpc": "2.0", "id": editor_id, "error": error});
            let _ = self.to_client.send(reply.to_string());
            return;
        }
        let mut result = answer.get("result").cloned().unwrap_or_else(|| json!({}));
        if how == Restore::Fresh {
            if let Some(agent_sid) = result["sessionId"].as_str() {
                lock(&self.aliases).insert(editor_sid.clone(), agent_sid.to_string());
                lock(&self.sessions).insert(agent_sid.to_string(), session.clone());
            }
            if let Some(r) = result.as_object_mut() {
                r.remove("sessionId");
            }
        }
        if replay {
            replay_history(&self.engine, &session, &editor_sid, &self.to_client).await;
        }
        let _ = self
            .to_client
            .send(json!({"jsonrpc": "2.0", "id": editor_id, "result": result}).to_string());
        let proxy = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(AGENT_LIST_WAIT).await;
            if !lock(&proxy.agent_lists).contains_key(&editor_sid) {
                proxy.send_commands(&editor_sid, Some(&session));
            }
        });
    }

    /// Tells the editor the session's commands: the agent's and cmdlog's merged;
    /// recorded in `session` when the log has it open.
    fn send_commands(&self, agent_session: &str, session: Option<&str>) {
        let ours = Value::Array(
            self.engine
                .list(&self.agent_name(), Mode::Acp)
                .iter()
                .filter(|r| !["acp-agent", BUILTIN_PROVIDER].contains(&r.provider.id.as_str()))
                .map(|r| r.command.acp_available_command())
                .collect(),
        );
        let agent = lock(&self.agent_lists)
            .get(agent_session)
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut update = json!({"sessionUpdate": "available_commands_update", "availableCommands": merge(&agent["availableCommands"], &ours)});
        if let Some(meta) = agent.get("_meta") {
            update["_meta"] = meta.clone();
        }
        if let Some(session) = session {
            self.recorder.record(
                Some(session),
                None,
                EventData::SessionUpdate(update.clone()),
            );
        }
        let _ = self.to_client.send(
            rpc::notification(
                "session/update",
                json!({"sessionId": agent_session, "update": update}),
            )
            .to_string(),
        );
    }
}
