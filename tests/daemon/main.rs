//! `cmdlog serve` end to end: the `qwen serve` wire, the ACP bridge with a scripted agent, and the published clients (`tests/node`).

mod acp_history;
mod bridge;
mod held;
mod node_clients;
mod otlp;
mod routes;
mod tiles;
mod web_shell;
mod workbench;
mod workbench_browser;
