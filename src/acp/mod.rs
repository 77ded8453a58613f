//! The Agent Client Protocol (agentclientprotocol.com, schema v1) as cmdlog
//! bridges it: JSON-RPC over stdio ([`rpc`]), an agent as a child process
//! ([`agent`]), and the recording of what crosses ([`record`]). The daemon's
//! bridge (`serve --agent`) and the stdio proxy (`cmdlog acp`) are built on these.

pub(crate) mod agent;
pub(crate) mod record;
pub(crate) mod rpc;
