//! The spill folder: a hook payload the log could not take (held past the wait,
//! a full disk, a daemon that did not answer) is kept as a file, and the next
//! call that reaches the log appends it first — so nothing an agent reported is
//! lost, and `cmdlog verify` says what still waits.
//!
//! The folder is `spill/` beside the log; when that cannot be written (the disk
//! that is full is the log's), a folder under the system's temporary directory
//! named by the log's path.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// A kept payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spilled {
    /// The agent's name (`claude-code`, …).
    pub agent: String,
    /// Whether the hook was asked to redact secrets.
    #[serde(default)]
    pub redact: bool,
    /// When cmdlog received it, unix ms.
    pub received_at: u64,
    /// The payload as the agent wrote it.
    pub payload: String,
}

/// Where a log's spilled payloads wait.
#[derive(Debug, Clone)]
pub struct Spill {
    dirs: [PathBuf; 2],
}

impl Spill {
    /// The spill folders of the log at `log`.
    pub fn for_log(log: &Path) -> Spill {
        let beside = log.parent().unwrap_or(Path::new(".")).join("spill");
        let absolute = std::path::absolute(log).unwrap_or_else(|_| log.to_path_buf());
        let mut hex = cmdlog_store::BlobHash::of(absolute.to_string_lossy().as_bytes()).to_hex();
        hex.truncate(16);
        let fallback = std::env::temp_dir().join(format!("cmdlog-spill-{hex}"));
        Spill {
            dirs: [beside, fallback],
        }
    }

    /// Keeps `item`, in the first folder that takes it. The file is complete or
    /// absent (written aside, synced, renamed).
    pub fn keep(&self, item: &Spilled) -> std::io::Result<PathBuf> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{:016}-{:010}-{:06}.json",
            item.received_at,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let bytes = serde_json::to_vec(item).expect("a spilled payload serializes");
        let mut last = None;
        for dir in &self.dirs {
            match write_new(dir, &name, &bytes) {
                Ok(path) => return Ok(path),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("two folders were tried"))
    }

    /// The payloads waiting, oldest first.
    pub fn pending(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        files
    }

    /// Reads a kept payload; `Err` with the raw text when it is not one.
    pub fn read(path: &Path) -> std::io::Result<Result<Spilled, String>> {
        let text = std::fs::read_to_string(path)?;
        Ok(serde_json::from_str(&text).map_err(|_| text))
    }
}

fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| path)
}

use std::os::unix::fs::DirBuilderExt;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_payloads_come_back_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::for_log(&dir.path().join(".cmdlog/log.redb"));
        for (at, p) in [(20, "b"), (10, "a")] {
            spill
                .keep(&Spilled {
                    agent: "codex".into(),
                    redact: false,
                    received_at: at,
                    payload: p.into(),
                })
                .unwrap();
        }
        let pending = spill.pending();
        assert_eq!(pending.len(), 2);
        let first = Spill::read(&pending[0]).unwrap().unwrap();
        assert_eq!(first.payload, "a");
        assert!(pending[0].starts_with(dir.path().join(".cmdlog/spill")));
    }
}
