//! The agent behind the daemon, as the daemon's state holds it: its command,
//! the running process, the routes from agent sessions to daemon sessions, the
//! restart bookkeeping. What the daemon does with it is in `bridge.rs`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cmdlog_acp::{AgentCommand, AgentCommands, Peer};
use serde_json::Value;

/// The agent behind the daemon.
pub(crate) struct Bridge {
    pub(crate) command: AgentCommand,
    pub(crate) cwd: PathBuf,
    pub(crate) running: tokio::sync::Mutex<Option<Arc<Running>>>,
    pub(crate) generation: AtomicU64,
    pub(crate) restarts: Mutex<Restarts>,
    /// The agent's commands, registered.
    pub(crate) commands: AgentCommands,
    /// Each daemon session's latest command list from the agent, the whole
    /// update (its `_meta` too): the list the session's clients see is built on it.
    pub(crate) agent_lists: Mutex<HashMap<String, Value>>,
    /// The models and modes the agent's latest `session/new` answer gave,
    /// as it gave them (its defaults: a mode or model later set on that
    /// session is not carried into the next one).
    pub(crate) defaults: Mutex<Value>,
}

#[derive(Default)]
pub(crate) struct Restarts {
    /// When the last process started and how long the next start waits.
    pub(crate) started: Option<Instant>,
    pub(crate) backoff: Duration,
}

/// One agent process.
pub(crate) struct Running {
    pub(crate) generation: u64,
    pub(crate) peer: Arc<Peer>,
    /// Agent session id → daemon session id.
    pub(crate) sessions: Arc<Mutex<Routes>>,
}

/// Which daemon session each agent session is, and the updates that came for an
/// agent session before its `session/new` answer was read (an agent may send its
/// command list right behind the answer).
#[derive(Default)]
pub(crate) struct Routes {
    pub(crate) sessions: HashMap<String, String>,
    pub(crate) early: HashMap<String, Vec<Value>>,
    pub(crate) early_count: usize,
}

impl Bridge {
    /// The agent `command`, to be started in `cwd` on first need.
    pub(crate) fn new(command: AgentCommand, cwd: PathBuf) -> Arc<Bridge> {
        let command_label = command.display();
        Arc::new(Bridge {
            command,
            cwd,
            running: tokio::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
            restarts: Mutex::new(Restarts::default()),
            commands: AgentCommands::new(&command_label),
            agent_lists: Mutex::new(HashMap::new()),
            defaults: Mutex::new(Value::Null),
        })
    }
}
