//! `daemon.json` beside the log: which `cmdlog serve` holds the log and where to
//! reach it. The daemon writes it (owner-only) when it starts listening and
//! removes it when it stops; short processes that find the log locked read it to
//! deliver through the daemon, and the CLI to say who holds the log.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What `daemon.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonFile {
    /// Where the daemon listens (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The daemon's process id.
    pub pid: u32,
}

impl DaemonFile {
    /// The file's path for the log at `log`.
    pub fn path(log: &Path) -> PathBuf {
        log.parent().unwrap_or(Path::new(".")).join("daemon.json")
    }

    /// What the file beside `log` says, if there is one that reads.
    pub fn read(log: &Path) -> Option<DaemonFile> {
        let text = std::fs::read_to_string(Self::path(log)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the file beside `log` (owner-only).
    pub fn write(&self, log: &Path) -> std::io::Result<PathBuf> {
        let path = Self::path(log);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        let text = serde_json::to_string(self).expect("a daemon file serializes");
        writeln!(file, "{text}")?;
        Ok(path)
    }
}
