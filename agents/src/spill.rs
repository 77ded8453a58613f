//! The spill folder: a hook payload the log could not take (held past the wait,
//! a full disk, a daemon that did not answer) is kept as a file, and the next
//! call that reaches the log appends it first — so nothing an agent reported is
//! lost, and `cmdlog verify` says what still waits.
//!
//! The folder is `spill/` beside the log; when that cannot be written (the disk
//! that is full is the log's), a folder of the log's in the user's private state
//! folder (`~/.local/state/cmdlog/spill/<hash of the log's path>`). Both are
//! owner-only, and what is read from them is checked as if a stranger had put it
//! there: a folder that is a link, another user's, or open to others is not
//! read; an entry is read only if it is a regular file of this user, mode 0600,
//! under the size limit, opened without following a link or blocking. A cloned
//! repository that ships `.cmdlog/spill/` (mode 0755/0644, as git makes files)
//! has its entries ignored, and `verify` names them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cmdlog_common::private_fs::{self, Expect};

use crate::delivery::HookDelivery;
use crate::limits::SPILL_ENTRY_BYTES_MAX;

/// A kept entry, read.
#[derive(Debug)]
pub enum SpillEntry {
    /// A spilled payload.
    Payload(HookDelivery),
    /// Ours, but not a spilled payload (damaged): its text, kept in the log as such.
    Damaged(String),
}

/// Where a log's spilled payloads wait.
#[derive(Debug, Clone)]
pub struct Spill {
    /// Beside the log.
    beside: PathBuf,
    /// In the user's private state folder, when it can be found.
    fallback: Option<PathBuf>,
}

/// What the spill folders hold (as JSON, in `verify --json`'s words:
/// `spilled`, `spill_refused`, `spill_set_aside`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpillReport {
    /// Payloads the next call that reaches the log appends.
    #[serde(rename = "spilled", serialize_with = "shown_all")]
    pub waiting: Vec<PathBuf>,
    /// Entries and folders never read: not this user's, open to others, links,
    /// too large, not regular files.
    #[serde(rename = "spill_refused")]
    pub refused: Vec<Refused>,
    /// Entries the log could never take, moved to `failed/`.
    #[serde(rename = "spill_set_aside", serialize_with = "shown_all")]
    pub set_aside: Vec<PathBuf>,
}

/// A spill entry or folder that is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refused {
    /// The file or folder.
    #[serde(serialize_with = "shown")]
    pub path: PathBuf,
    /// Why it is not read.
    pub why: String,
}

/// A path as a person reads it (lossily, never refused).
fn shown<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&path.display())
}

fn shown_all<S: serde::Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.display().to_string()))
}

impl Spill {
    /// The spill folders of the log at `log`.
    pub fn for_log(log: &Path) -> Spill {
        let beside = log.parent().unwrap_or(Path::new(".")).join("spill");
        let absolute = std::path::absolute(log).unwrap_or_else(|_| log.to_path_buf());
        let mut hex = cmdlog_store::BlobHash::of(absolute.to_string_lossy().as_bytes()).to_hex();
        hex.truncate(16);
        let fallback = private_fs::state_dir_path()
            .ok()
            .map(|d| d.join("spill").join(hex));
        Spill { beside, fallback }
    }

    /// Takes the drain lock of the log at `log` (an `flock` of its folder), so
    /// that two processes never append the same spilled payload, waiting until
    /// `deadline` for a process draining now: `Ok(None)` if it is still at it.
    pub fn lock_drain(
        log: &Path,
        deadline: std::time::Instant,
    ) -> std::io::Result<Option<std::fs::File>> {
        let folder = log.parent().filter(|p| !p.as_os_str().is_empty());
        let folder = std::fs::File::open(folder.unwrap_or(Path::new(".")))?;
        loop {
            match folder.try_lock() {
                Ok(()) => return Ok(Some(folder)),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.beside).chain(self.fallback.iter())
    }

    /// Keeps `item`, in the first folder that takes it. The file is complete or
    /// absent (written aside, synced, renamed), owner-only, never written through
    /// a link.
    pub fn keep(&self, item: &HookDelivery) -> std::io::Result<PathBuf> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{:016}-{:010}-{:06}.json",
            item.received_at,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let bytes = serde_json::to_vec(item).expect("a spilled payload serializes");
        let mut last = None;
        for dir in self.dirs() {
            match write_new(dir, &name, &bytes) {
                Ok(path) => return Ok(path),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no spill folder")))
    }

    /// The payloads waiting, oldest first, and what is refused (not read).
    pub fn scan(&self) -> (Vec<PathBuf>, Vec<Refused>) {
        let mut files = Vec::new();
        let mut refused = Vec::new();
        for dir in self.dirs() {
            match std::fs::symlink_metadata(dir) {
                Err(_) => continue,
                Ok(_) => {
                    if let Err(e) = private_fs::ensure_private_dir(dir) {
                        refused.push(Refused {
                            path: dir.clone(),
                            why: e.to_string(),
                        });
                        continue;
                    }
                }
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || !name.ends_with(".json") {
                    continue;
                }
                files.push(path);
            }
        }
        files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        (files, refused)
    }

    /// The payloads waiting, oldest first.
    pub fn pending(&self) -> Vec<PathBuf> {
        self.scan().0
    }

    /// What the folders hold, as `verify` reports it: payloads the next call
    /// appends, entries it will not read (and why), and entries set aside because
    /// the log can never take them.
    pub fn report(&self) -> SpillReport {
        let (files, mut refused) = self.scan();
        let mut waiting = Vec::new();
        for path in files {
            match Self::read(&path) {
                Ok(_) => waiting.push(path),
                Err(e) => refused.push(Refused {
                    path,
                    why: e.to_string(),
                }),
            }
        }
        let set_aside = self
            .dirs()
            .filter_map(|d| std::fs::read_dir(d.join("failed")).ok())
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        SpillReport {
            waiting,
            refused,
            set_aside,
        }
    }

    /// Reads a kept payload: `Err` when the file is refused (a link, another
    /// user's, open to others, too large, not a regular file).
    pub fn read(path: &Path) -> std::io::Result<SpillEntry> {
        let bytes = private_fs::read_untrusted(
            path,
            Expect {
                bytes_max: SPILL_ENTRY_BYTES_MAX,
                private: true,
            },
        )?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(match serde_json::from_str(&text) {
            Ok(spilled) => SpillEntry::Payload(spilled),
            Err(_) => SpillEntry::Damaged(text),
        })
    }

    /// Moves an entry that can never be appended aside (`failed/` in its folder),
    /// so it does not hold the others back.
    pub fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
        let dir = path.parent().unwrap_or(Path::new(".")).join("failed");
        private_fs::ensure_private_dir(&dir)?;
        let to = dir.join(path.file_name().unwrap_or_default());
        std::fs::rename(path, &to)?;
        Ok(to)
    }
}

fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    private_fs::ensure_private_dir(dir)?;
    let path = dir.join(name);
    let (tmp, mut file) = private_fs::create_fresh_beside(&path)?;
    let result = (|| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_payloads_come_back_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::for_log(&dir.path().join(".cmdlog/log.redb"));
        for (at, p) in [(20, "b"), (10, "a")] {
            spill
                .keep(&HookDelivery::new(
                    "codex",
                    false,
                    at,
                    p.as_bytes().to_vec(),
                ))
                .unwrap();
        }
        let pending = spill.pending();
        assert_eq!(pending.len(), 2);
        let SpillEntry::Payload(first) = Spill::read(&pending[0]).unwrap() else {
            panic!("a spilled payload")
        };
        assert_eq!(first.payload, "a");
        assert!(pending[0].starts_with(dir.path().join(".cmdlog/spill")));
        let raw = HookDelivery::new("qwen", false, 1, vec![b'a', 0xff]);
        assert_eq!(
            raw.bytes(),
            vec![b'a', 0xff],
            "bytes that are not UTF-8 come back"
        );
        assert_ne!(
            raw.delivery,
            HookDelivery::new("qwen", false, 1, vec![]).delivery
        );
    }

    #[test]
    fn the_fallback_is_private_and_not_in_the_shared_temp_folder() {
        let spill = Spill::for_log(Path::new("/w/.cmdlog/log.redb"));
        if let Some(fallback) = &spill.fallback {
            assert!(!fallback.starts_with(std::env::temp_dir()), "{fallback:?}");
            assert!(fallback.to_string_lossy().contains("cmdlog/spill/"));
        }
    }
}
