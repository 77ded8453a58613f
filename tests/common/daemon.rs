//! A `cmdlog serve` child of a test workspace, killed and reaped when dropped.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Workspace;

/// A running daemon and the URL it printed into `.cmdlog/daemon.json`.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Workspace {
    /// `.cmdlog/daemon.json` in the workspace.
    pub(crate) fn daemon_json(&self) -> PathBuf {
        self.ws.path().join(".cmdlog/daemon.json")
    }

    /// `cmdlog serve` on a free loopback port.
    pub(crate) fn serve(&self, extra: &[&str]) -> Daemon {
        self.serve_at("127.0.0.1:0", extra)
    }

    /// `cmdlog serve --addr ADDR`.
    pub(crate) fn serve_at(&self, addr: &str, extra: &[&str]) -> Daemon {
        self.serve_with(addr, extra, None)
    }

    /// `cmdlog serve --addr ADDR`, with `CMDLOG_TOKEN` set to `token_env` (or unset);
    /// returns once the daemon wrote its URL.
    pub(crate) fn serve_with(&self, addr: &str, extra: &[&str], token_env: Option<&str>) -> Daemon {
        let _ = std::fs::remove_file(self.daemon_json());
        let mut command = self.cmd(&["serve", "--addr", addr]);
        match token_env {
            Some(t) => command.env("CMDLOG_TOKEN", t),
            None => command.env_remove("CMDLOG_TOKEN"),
        };
        let child = command
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The guard kills and reaps the child on every path, a failed start included.
        let mut daemon = Daemon {
            child,
            url: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(self.daemon_json())
                && let Ok(info) = serde_json::from_str::<Value>(&text)
            {
                daemon.url = info["url"].as_str().unwrap().to_string();
                return daemon;
            }
            assert!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
