//! The Agent Client Protocol (agentclientprotocol.com, schema v1) as cmdlog
//! bridges it. The daemon's bridge (`serve --agent`) and the stdio proxy
//! (`cmdlog acp`) are built on the same parts:
//!
//! - [`Peer`]: JSON-RPC 2.0 over newline-delimited JSON, each side with its own
//!   id space, messages kept as `serde_json::Value` so nothing is re-serialised on
//!   its way through;
//! - [`AgentCommand`] and [`spawn`]: an agent as a child process, its stderr passed
//!   on escaped, its exit reported;
//! - [`Recorder`]: events appended in the order they are given, a batch per
//!   durable commit, without holding up the messages; `flush` before a client
//!   hears that a turn ended;
//! - [`AgentCommands`]: the agent's own commands as the `acp-agent` provider;
//! - [`through_registry`]: a prompt turn, cmdlog's registry first;
//! - [`run_proxy`]: the stdio proxy between an editor and an agent;
//! - the checks of ACP payloads a client hands cmdlog ([`check_session_update`],
//!   [`permission_decision`] …).
//!
//! ```
//! use cmdlog_acp::{AgentCommand, prompt_text, with_text};
//! use serde_json::json;
//!
//! let agent = AgentCommand::parse("node 'my agent.js' --acp").unwrap();
//! assert_eq!(agent.args, ["my agent.js", "--acp"]);
//!
//! let blocks = [json!({"type": "text", "text": "/greet world"})];
//! assert_eq!(prompt_text(&blocks), "/greet world");
//! assert_eq!(with_text(&blocks, "Say hello")[0]["text"], "Say hello");
//! ```

mod agent;
mod checks;
mod commands;
mod limits;
mod lines;
mod load;
mod outbox;
mod proxy;
mod record;
mod rpc;
mod turn;

pub use agent::{
    AgentCommand, AgentCommandError, AgentExit, AgentProcess, PROTOCOL_VERSION, StartError,
    initialize_params, spawn, stop_reason,
};
pub use checks::{
    InvalidPayload, PERMISSION_OPTION_KINDS, PermissionDecision, SESSION_UPDATE_KINDS,
    STOP_REASONS, check_content_block, check_permission_options, check_session_update,
    check_tool_call_update, is_session_update_kind, option_ids, permission_decision,
};
pub use commands::{AGENT_PROVIDER_PRIORITY, AgentCommands, merge};
pub use lines::{Line, LineReader};
pub use outbox::{Closed, Inbox, Outbox, outbox, write_lines};
pub use proxy::{ProxyError, run_proxy};
pub use record::{EngineSource, Recorder};
pub use rpc::{
    CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, Incoming, Kind, LINE_BYTES_MAX,
    METHOD_NOT_FOUND, Peer, RpcError, kind, notification, response,
};
pub use turn::{RegistryTurn, TurnPrompt, message_chunk, prompt_text, through_registry, with_text};
