//! What the engine's fixture tests share: a temp HOME and workspace to write command
//! files into, and an engine over a temp log to run lines through.

use std::path::Path;
use std::sync::Arc;

use cmdlog_engine::*;
use cmdlog_engine::{discovery::*, event::*};
use cmdlog_store::{Log, LogConfig};

/// A temp home (`~/…`) and workspace (`ws/…`).
pub struct Tree {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

impl Tree {
    pub fn new() -> Self {
        Tree {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn write(&self, path: &str, text: &str) -> &Self {
        let (base, rest) = match path.split_once('/') {
            Some(("~", rest)) => (self.home.path(), rest),
            Some(("ws", rest)) => (self.ws.path(), rest),
            _ => panic!("paths start with ~/ or ws/: {path}"),
        };
        let full = base.join(rest);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
        self
    }

    pub fn remove(&self, path: &str) {
        let rest = path.strip_prefix("ws/").unwrap();
        std::fs::remove_file(self.ws.path().join(rest)).unwrap();
    }

    pub fn config(&self) -> DiscoveryConfig {
        DiscoveryConfig::new(self.home.path(), self.ws.path())
    }

    /// Replaces the temp roots in `text` with `~` and `ws`.
    pub fn shorten(&self, text: &str) -> String {
        text.replace(&self.home.path().display().to_string(), "~")
            .replace(&self.ws.path().display().to_string(), "ws")
    }
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub async fn engine_at(dir: &Path) -> Engine {
    let log = Log::open(dir.join("log.redb"), LogConfig::default()).unwrap();
    let engine = Engine::open(log, EngineConfig::with_clock(Arc::new(FixedClock::at(1))))
        .await
        .unwrap();
    engine
        .ensure_session("s", "main", Mode::NonInteractive)
        .await
        .unwrap();
    engine
}

pub async fn expand_line(engine: &Engine, line: &str) -> String {
    let ex = engine
        .execute(ExecuteRequest::new("s", "main", Mode::NonInteractive, line))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{line} resolves"));
    match ex.outcome {
        Outcome::Success {
            prompt: Some(p), ..
        } => p,
        other => panic!("{line}: {other:?}"),
    }
}
