//! `cmdlog serve`: sessions over HTTP, events over SSE read from the durable log,
//! on the wire of Qwen Code's `qwen serve` (`docs/http.md`), so its published
//! client works unmodified; optionally an ACP agent behind it (`serve --agent`).
//!
//! Routes are thin adapters over the engine and replay libraries, grouped by
//! resource (sessions, prompts, permissions, events, hooks, the log's checkpoint
//! and tiles) and assembled in one
//! router. The log keeps cmdlog's event schema; `wire` alone knows qwen's names
//! and projects each session event to one frame, numbered per session. An SSE
//! stream is a cursor over the log: what a subscriber gets after a drop or a
//! restart is exactly the log after its last seen id. It is also the OTLP/HTTP
//! endpoint the agents export their telemetry to (`POST /v1/logs`), and it
//! serves Qwen Code's Web Shell at `/` from the user's install (`web_shell`),
//! and the auditor's workbench under `/ui/` (`ui`, pages from
//! `cmdlog-workbench`).
//!
//! ```no_run
//! # async fn f(engine: cmdlog_engine::Engine, reopen: cmdlog_server::Reopen) {
//! use cmdlog_server::{ServeConfig, serve};
//! let config = ServeConfig {
//!     addr: "127.0.0.1:4170".parse().unwrap(),
//!     token: None,
//!     allow_origins: vec![],
//!     allow_hosts: vec![],
//!     workspace: ".".into(),
//!     home: "/home/me".into(),
//!     reopen,
//!     agent: None,
//!     key: None,
//!     redact: false,
//!     web: true,
//!     hub: None,
//!     witnesses: vec![],
//! };
//! serve(engine, config, std::path::Path::new(".cmdlog/log.redb")).await.unwrap();
//! # }
//! ```

mod agent;
pub mod attach;
mod auth;
mod bridge;
mod commands;
mod events;
mod hooks;
mod journal;
mod limits;
mod live;
mod logins;
mod mirrors;
mod modes;
mod otlp;
mod otlp_turns;
mod permissions;
mod prompts;
mod providers;
mod serve;
mod sessions;
mod sse;
mod stalled;
mod state;
mod tlog;
mod turns;
mod ui;
mod ui_downloads;
mod ui_page;
mod web_shell;
mod wire;
mod workspace;

pub use bridge::BridgeError;
pub use serve::{Reopen, ServeConfig, ServeError, serve};
pub use sse::{InvalidLastEventId, Resume, parse_last_event_id};
