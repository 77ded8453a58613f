//! The daemon itself: the router, `/health`, `daemon.json`, the command-folder
//! watcher, the store supervisor that reopens a failed log, and `serve`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use std::future::Future;
use std::pin::Pin;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use cmdlog_engine::discovery::{DiscoveryConfig, discover, watch_roots};
use cmdlog_engine::{Engine, WorkspaceOpenError};
use serde_json::json;

use crate::limits::{BODY_BYTES_MAX, COMMAND_BODY_BYTES_MAX, REOPEN_BACKOFF_MAX, SUPERVISE_EVERY};
use crate::state::{Access, AppState};
use crate::{
    auth, commands, events, hooks, modes, otlp, permissions, prompts, providers, sessions, tlog,
    turns, web_shell, workspace,
};

/// Reopens the engine after a storage error (the same opening `serve` began with).
pub type Reopen = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<Engine, WorkspaceOpenError>> + Send>>
        + Send
        + Sync,
>;

/// Why the daemon did not start, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {0} without a token: pass --token or set CMDLOG_TOKEN, or bind a loopback address"
    )]
    NoToken(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// `daemon.json` could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    DaemonFile {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The agent behind the daemon could not start.
    #[error(transparent)]
    Agent(#[from] crate::bridge::BridgeError),
    /// The server stopped with an error.
    #[error("the server stopped: {0}")]
    Stopped(#[source] std::io::Error),
}

#[derive(serde::Deserialize)]
struct HealthQuery {
    deep: Option<String>,
}

/// `/health`: 200 while the store works, 503 with the reason while it is reopened.
/// `?deep=1` adds the live sessions, the waiting permission requests and the log's
/// head (seq and chain hash).
async fn health(
    State(state): State<Arc<AppState>>,
    axum::extract::Query(query): axum::extract::Query<HealthQuery>,
) -> Response {
    match state.degraded() {
        None if query.deep.as_deref() == Some("1") => {
            let head = state.engine().map(|e| e.log().head()).ok();
            Json(json!({
                "status": "ok",
                "sessions": state.live.lock().unwrap_or_else(|p| p.into_inner()).len(),
                "pendingPermissions": state.votes.pending.lock().unwrap_or_else(|p| p.into_inner()).len(),
                "logHead": head.map(|h| json!({"seq": h.seq, "hash": h.hash.to_hex()})),
            }))
            .into_response()
        }
        None => Json(json!({"status": "ok"})).into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "degraded", "reason": reason})),
        )
            .into_response(),
    }
}

/// The routes Qwen Code's Web Shell calls besides the SDK's: the agent's modes
/// and models, and what `qwen serve` says of a workspace without the feature.
fn web_shell_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/session/{id}/goal", get(workspace::goal))
        .route("/session/{id}/load", post(sessions::load))
        .route(
            "/session/{id}/pending-prompts",
            get(prompts::pending_prompts),
        )
        .route(
            "/session/{id}/pending-prompts/{prompt}",
            axum::routing::delete(prompts::remove_pending),
        )
        .route("/session/{id}/context", get(modes::context))
        .route("/session/{id}/approval-mode", post(modes::approval_mode))
        .route("/brand", get(workspace::brand))
        .route("/workspace/settings", get(workspace::settings))
        .route("/workspace/models", get(workspace::models))
        .route("/workspace/skills", get(workspace::skills))
        .route("/workspace/providers", get(providers::providers))
        .route("/workspace/git", get(workspace::git))
        .route("/workspaces/{workspace}/git", get(workspace::workspace_git))
}

/// The router: every route behind the host and origin check, all but `/health`
/// behind the token; CORS only for the allowed origins.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let protected = Router::new()
        .route("/capabilities", get(sessions::capabilities))
        .route("/session", post(sessions::create_session))
        .route(
            "/session/{id}",
            axum::routing::delete(sessions::delete_session).get(web_shell::session_page),
        )
        .route("/session/{id}/status", get(sessions::status))
        .route("/session/{id}/heartbeat", post(sessions::heartbeat))
        .route("/session/{id}/detach", post(sessions::detach))
        .route("/workspace/{cwd}/sessions", get(sessions::list))
        // The qualified twin, which Qwen Code's Web Shell polls for a
        // session's running state (a workspace named by its absolute cwd).
        .route("/workspaces/{cwd}/sessions", get(sessions::list))
        .route("/session/{id}/prompt", post(prompts::prompt))
        .route("/session/{id}/cancel", post(prompts::cancel))
        .route("/session/{id}/model", post(prompts::model))
        .route(
            "/session/{id}/permission/{request}",
            post(permissions::vote_in_session),
        )
        .route("/permission/{request}", post(permissions::vote_any))
        .route(
            "/session/{id}/command",
            post(prompts::command).layer(DefaultBodyLimit::max(COMMAND_BODY_BYTES_MAX)),
        )
        .route("/session/{id}/update", post(permissions::update))
        .route(
            "/session/{id}/supported-commands",
            get(prompts::supported_commands),
        )
        .route("/session/{id}/events", get(events::events))
        .merge(web_shell_routes())
        .route("/log/{id}/tile/entries/{*path}", get(tlog::entries))
        .route(
            "/v1/logs",
            post(otlp::logs).layer(DefaultBodyLimit::max(cmdlog_agents::OTLP_BODY_BYTES_MAX)),
        )
        .route(
            "/v1/metrics",
            post(otlp::not_recorded)
                .layer(DefaultBodyLimit::max(cmdlog_agents::OTLP_BODY_BYTES_MAX)),
        )
        .route(
            "/v1/traces",
            post(otlp::not_recorded)
                .layer(DefaultBodyLimit::max(cmdlog_agents::OTLP_BODY_BYTES_MAX)),
        )
        .route(
            "/hook/{agent}",
            post(hooks::hook).layer(DefaultBodyLimit::max(cmdlog_agents::PAYLOAD_BYTES_MAX)),
        )
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_token,
        ));
    let origins: Vec<HeaderValue> = state
        .access
        .origins
        .iter()
        .filter_map(|o| o.parse().ok())
        .collect();
    let mut app = Router::new()
        .route("/", get(web_shell::index))
        .route("/assets/{*path}", get(web_shell::asset))
        .route("/sw.js", get(web_shell::service_worker))
        .route("/manifest.webmanifest", get(web_shell::manifest))
        .route("/health", get(health))
        .route("/hook-proof", get(hooks::proof))
        .route("/log/{id}/checkpoint", get(tlog::checkpoint))
        .route("/log/{id}/tile/{*path}", get(tlog::tile))
        .merge(crate::ui::routes(&state))
        .merge(protected)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_host_and_origin,
        ))
        .with_state(state);
    if !origins.is_empty() {
        app = app.layer(
            tower_http::cors::CorsLayer::new()
                .allow_origin(origins)
                .allow_methods(tower_http::cors::Any)
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::HeaderName::from_static("last-event-id"),
                    header::HeaderName::from_static("x-qwen-client-id"),
                    header::HeaderName::from_static("x-qwen-event-epoch"),
                ]),
        );
    }
    app
}

/// The log's checkpoints and tiles, when it has an id: signed with its key,
/// or unsigned (said on stderr) when the key cannot be read or made.
fn transparency(log_id: &str, key: Option<&Path>) -> Option<crate::state::Transparency> {
    (!log_id.is_empty()).then(|| crate::state::Transparency {
        signer: cmdlog_replay::log_signer(log_id, key).map_err(|e| {
            eprintln!("cmdlog serve: checkpoints unsigned: {e}");
            e
        }),
        log_id: log_id.to_string(),
    })
}

/// How `cmdlog serve` runs.
pub struct ServeConfig {
    /// Where to listen (a non-loopback address needs a token).
    pub addr: SocketAddr,
    /// The bearer token clients must send.
    pub token: Option<String>,
    /// Browser origins allowed (CORS).
    pub allow_origins: Vec<String>,
    /// Host names answered besides the loopback ones.
    pub allow_hosts: Vec<String>,
    /// The workspace served.
    pub workspace: PathBuf,
    /// The user's home folder (for discovery).
    pub home: PathBuf,
    /// How to reopen the engine after a storage error.
    pub reopen: Reopen,
    /// The ACP agent to run behind the daemon.
    pub agent: Option<cmdlog_acp::AgentCommand>,
    /// The key that signs the log's checkpoints (`--key`); `None`: the user's key
    /// for this log, made on first need.
    pub key: Option<PathBuf>,
    /// Replace secrets in the agents' telemetry before it is recorded
    /// (`--redact`).
    pub redact: bool,
    /// Serve Qwen Code's Web Shell at `/` when an installed one is found
    /// (`--no-web`: not).
    pub web: bool,
    /// Mirror every log of this hub, read-only, for the workbench's team view
    /// (`--hub`).
    pub hub: Option<cmdlog_hub::HubOptions>,
    /// The witnesses whose cosignatures the team view checks and shows
    /// (`--witness`, with `--hub`).
    pub witnesses: Vec<cmdlog_tlog::NoteVerifier>,
}

/// Runs discovery + sync whenever a watched command folder changes (debounced), so
/// edits reach the log within a second.
fn watch_commands(
    state: Arc<AppState>,
    config: DiscoveryConfig,
    runtime: tokio::runtime::Handle,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = tx.send(());
        }
    })
    .ok()?;
    for (root, recursive) in watch_roots(&config) {
        let mode = if recursive {
            notify::RecursiveMode::Recursive
        } else {
            notify::RecursiveMode::NonRecursive
        };
        let _ = watcher.watch(&root, mode);
    }
    std::thread::Builder::new()
        .name("cmdlog-reload".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Let a burst of file events settle, then sync once.
                std::thread::sleep(Duration::from_millis(150));
                while rx.try_recv().is_ok() {}
                let Ok(engine) = state.engine() else {
                    continue;
                };
                match discover(&config) {
                    Ok(found) => match runtime.block_on(engine.sync(&found)) {
                        Ok(report) => {
                            for w in &report.warnings {
                                eprintln!(
                                    "cmdlog serve: warning: {}: {}",
                                    cmdlog_common::terminal::clean(&w.path),
                                    cmdlog_common::terminal::clean(&w.message)
                                );
                            }
                        }
                        Err(e) => eprintln!(
                            "cmdlog serve: reload failed: {}",
                            cmdlog_common::terminal::clean(&e.to_string())
                        ),
                    },
                    Err(e) => eprintln!(
                        "cmdlog serve: reload skipped: {}",
                        cmdlog_common::terminal::clean(&e.to_string())
                    ),
                }
            }
        })
        .ok()?;
    Some(watcher)
}

/// Watches the store: after a storage error (a full disk, say) poisoned the log, it
/// takes the engine out (requests answer 503, `/health` says why), lets the old log
/// close, and reopens it with backoff until the cause clears. Recovery applies what
/// the write-ahead log acknowledged; SSE subscribers end and resume with
/// `Last-Event-ID`, losing nothing.
async fn supervise(state: Arc<AppState>, reopen: Reopen) {
    let mut tick = tokio::time::interval(SUPERVISE_EVERY);
    loop {
        tick.tick().await;
        let Some(cause) = state.engine().ok().and_then(|e| e.log().poisoned()) else {
            continue;
        };
        eprintln!(
            "cmdlog serve: the log stopped after a storage error ({}); reopening it",
            cmdlog_common::terminal::clean(&cause)
        );
        state.set_degraded(Some(cause.clone()));
        drop(state.take_engine());
        let mut backoff = SUPERVISE_EVERY;
        loop {
            tokio::time::sleep(backoff).await;
            match reopen().await {
                Ok(engine) => {
                    state.put_engine(engine);
                    state.set_degraded(None);
                    eprintln!("cmdlog serve: the log is reopened");
                    break;
                }
                Err(e) => {
                    state.set_degraded(Some(format!("{cause}; reopening failed: {e}")));
                    backoff = (backoff * 2).min(REOPEN_BACKOFF_MAX);
                }
            }
        }
    }
}

/// Keeps the log's search index (`.cmdlog/index/`) current on a thread of
/// its own, a group commit's events indexed shortly after it, until the
/// daemon stops (issue 41). A search while it writes reads its last commit.
fn keep_index_current(state: Arc<AppState>, log_path: &Path) {
    let log_path = log_path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("cmdlog-index".into())
        .spawn(move || {
            let log = || state.engine().ok().map(|e| Arc::clone(e.log()));
            let stopped = || state.shutdown.is_cancelled();
            if let Err(e) = cmdlog_index::keep_current(&log_path, &log, &stopped) {
                eprintln!(
                    "cmdlog serve: the search index is no longer kept current ({}); `cmdlog search` brings it up to the log itself",
                    cmdlog_common::terminal::clean(&e.to_string())
                );
            }
        });
    if let Err(e) = spawned {
        eprintln!("cmdlog serve: the search index is not kept current: {e}");
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = ctrl_c => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}

/// The names a daemon answers to: any, bound to a non-loopback address (with
/// its token); else loopback names, those allowed, and its own address.
fn allowed_hosts(config: &ServeConfig, local: std::net::SocketAddr) -> Option<Vec<String>> {
    config.addr.ip().is_loopback().then(|| {
        auth::LOOPBACK_HOSTS
            .iter()
            .map(|h| h.to_string())
            .chain(config.allow_hosts.iter().map(|h| h.to_ascii_lowercase()))
            .chain(std::iter::once(match local.ip() {
                std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                ip => ip.to_string(),
            }))
            .collect()
    })
}

/// Serves until SIGINT or SIGTERM. `engine` holds the log for the daemon's
/// life, and answers the reads of other cmdlog processes (`serve_readers`).
pub async fn serve(engine: Engine, config: ServeConfig, log_path: &Path) -> Result<(), ServeError> {
    if !config.addr.ip().is_loopback() && config.token.is_none() {
        return Err(ServeError::NoToken(config.addr));
    }
    let listen = |source| ServeError::Listen {
        addr: config.addr,
        source,
    };
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    let url = format!("http://{local}");
    let log_id = cmdlog_engine::identity::read_identity(engine.log())
        .ok()
        .flatten()
        .map(|i| i.id)
        .unwrap_or_default();
    // Every other cmdlog process reads the log through this one while it runs.
    let _readers = cmdlog_store::serve_readers(engine.log())
        .map_err(|e| {
            eprintln!("cmdlog serve: other cmdlog commands cannot read the log while it runs: {e}")
        })
        .ok();
    let daemon = cmdlog_agents::DaemonFile::new(&url, &log_id);
    let daemon_json = daemon
        .write(log_path)
        .map_err(|source| ServeError::DaemonFile {
            path: cmdlog_agents::DaemonFile::path(log_path),
            source,
        })?;
    let hosts = allowed_hosts(&config, local);
    let access = Access {
        token: config.token,
        hosts,
        port: local.port(),
        origins: config.allow_origins,
        web_shell: None,
    };
    let workspace = std::fs::canonicalize(&config.workspace).unwrap_or(config.workspace.clone());
    let access = Access {
        web_shell: config
            .web
            .then(|| web_shell::announced(&url, &workspace))
            .flatten(),
        ..access
    };
    let bridge = config
        .agent
        .map(|command| crate::agent::Bridge::new(command, workspace.clone()));
    let transparency = transparency(&log_id, config.key.as_deref());
    let state = AppState::new(
        engine,
        access,
        crate::state::Places {
            workspace,
            home: config.home.clone(),
        },
        bridge.clone(),
        daemon,
        transparency,
        config.redact,
    );
    tokio::spawn(commands::announce_changes(
        Arc::downgrade(&state),
        Arc::clone(&state.commands_changed),
    ));
    if let Some(bridge) = &bridge {
        // The turns an earlier daemon's agent died in end first, durably.
        turns::close_interrupted_turns(&state).await;
        // Started with the daemon, so a command that cannot run is known at once.
        bridge.running(&state).await?;
    }
    let _watcher = watch_commands(
        Arc::clone(&state),
        DiscoveryConfig::from_env(&config.home, &config.workspace),
        tokio::runtime::Handle::current(),
    );
    tokio::spawn(supervise(Arc::clone(&state), config.reopen));
    keep_index_current(Arc::clone(&state), log_path);
    eprintln!(
        "cmdlog serve: listening on {url} (pid {}); log {}",
        std::process::id(),
        log_path.display()
    );
    crate::ui::start(&state, &url, config.hub.clone(), config.witnesses.clone());
    let app = router(Arc::clone(&state));
    let stopping = state.shutdown.clone();
    let served = axum::serve(crate::stalled::DeadlineListener(listener), app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            stopping.cancel();
        })
        .await;
    let _ = std::fs::remove_file(&daemon_json);
    served.map_err(ServeError::Stopped)
}
