//! `cmdlog serve`: sessions over HTTP, events over SSE read from the durable log.
//! Routes are thin adapters over the engine and replay libraries (docs/http.md).

mod auth;
mod events;
mod permissions;
mod prompts;
mod sessions;
mod sse;
mod state;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::middleware::{self};
use axum::routing::{get, post};
use axum::{Json, Router};
use cmdlog_engine::{DiscoveryConfig, Engine, discover, watch_roots};
use serde_json::json;

use state::{AppState, BODY_BYTES_MAX, COMMAND_BODY_BYTES_MAX};

/// The router. `allow_origin` enables CORS for that origin only.
pub(crate) fn router(state: Arc<AppState>, allow_origin: Option<&str>) -> Router {
    let protected = Router::new()
        .route("/capabilities", get(sessions::capabilities))
        .route("/session", post(sessions::create_session))
        .route(
            "/session/{id}",
            axum::routing::delete(sessions::delete_session),
        )
        .route("/session/{id}/prompt", post(prompts::prompt))
        .route("/session/{id}/cancel", post(prompts::cancel))
        .route("/session/{id}/model", post(prompts::model))
        .route("/session/{id}/permission", post(permissions::permission))
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
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_token,
        ));
    let mut app = Router::new()
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .merge(protected)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .with_state(state);
    if let Some(origin) = allow_origin
        && let Ok(origin) = origin.parse::<HeaderValue>()
    {
        app = app.layer(
            tower_http::cors::CorsLayer::new()
                .allow_origin(origin)
                .allow_methods(tower_http::cors::Any)
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::HeaderName::from_static("last-event-id"),
                ]),
        );
    }
    app
}

/// How `cmdlog serve` runs.
pub(crate) struct ServeConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) token: Option<String>,
    pub(crate) allow_origin: Option<String>,
    pub(crate) workspace: PathBuf,
    pub(crate) home: PathBuf,
}

/// `.cmdlog/daemon.json` beside the log: who holds it and where to reach them.
pub(crate) fn daemon_file(log: &Path) -> PathBuf {
    log.parent().unwrap_or(Path::new(".")).join("daemon.json")
}

fn write_daemon_file(path: &Path, url: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    writeln!(file, "{}", json!({"url": url, "pid": std::process::id()}))
}

/// Runs discovery + sync whenever a watched command folder changes (debounced), so
/// edits reach the log within a second.
fn watch_commands(
    engine: Engine,
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
                match discover(&config) {
                    Ok(found) => match runtime.block_on(engine.sync(&found)) {
                        Ok(report) => {
                            for w in &report.warnings {
                                eprintln!("cmdlog serve: warning: {}: {}", w.path, w.message);
                            }
                        }
                        Err(e) => eprintln!("cmdlog serve: reload failed: {e}"),
                    },
                    Err(e) => eprintln!("cmdlog serve: reload skipped: {e}"),
                }
            }
        })
        .ok()?;
    Some(watcher)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = ctrl_c => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}

/// Serves until SIGINT or SIGTERM. `engine` holds the log for the daemon's life.
pub(crate) async fn serve(
    engine: Engine,
    config: ServeConfig,
    log_path: &Path,
) -> Result<(), String> {
    if !config.addr.ip().is_loopback() && config.token.is_none() {
        return Err(format!(
            "refusing to listen on {} without a token: pass --token or set CMDLOG_TOKEN, or bind a loopback address",
            config.addr
        ));
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let url = format!("http://{local}");
    let daemon_json = daemon_file(log_path);
    write_daemon_file(&daemon_json, &url)
        .map_err(|e| format!("cannot write {}: {e}", daemon_json.display()))?;
    let _watcher = watch_commands(
        engine.clone(),
        DiscoveryConfig::new(&config.home, &config.workspace),
        tokio::runtime::Handle::current(),
    );
    eprintln!(
        "cmdlog serve: listening on {url} (pid {}); log {}",
        std::process::id(),
        log_path.display()
    );
    let state = AppState::new(engine, config.token);
    let app = router(state, config.allow_origin.as_deref());
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await;
    let _ = std::fs::remove_file(&daemon_json);
    served.map_err(|e| format!("the server stopped: {e}"))
}
