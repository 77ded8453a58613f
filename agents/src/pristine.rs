//! What a settings file was before cmdlog first added its hooks, so that
//! `hooks uninstall` gives the user's file back byte for byte — the same text,
//! or no file at all (and none of the folders cmdlog made for it) when there was
//! none. Kept in the user's private state folder (`installs/`), one record per
//! settings file, keyed by a hash of the file's real path.
//!
//! The record is used only while the file is exactly as cmdlog left it (the hash
//! of its text matches): a file the user edited since is uninstalled by taking
//! cmdlog's entries out of the syntax tree instead, which keeps their edits.

use std::io::Write;
use std::path::{Path, PathBuf};

use cmdlog_common::private_fs::{self, Expect};
use serde::{Deserialize, Serialize};

use crate::kind::AgentKind;

/// Largest record read, in bytes: the text of a settings file (capped at 4 MiB
/// when read) and a little more.
const RECORD_BYTES_MAX: u64 = 9 * 1024 * 1024;

/// A settings file before cmdlog's first install into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pristine {
    /// The settings file's real path (the record's key).
    pub path: PathBuf,
    /// What was installed: an agent's hooks (`claude-code`), or its
    /// telemetry settings (`claude-code telemetry`).
    pub agent: String,
    /// The file's text before, or `None` when there was no file.
    pub before: Option<String>,
    /// Folders cmdlog made for a file that did not exist, outermost first.
    #[serde(default)]
    pub made_dirs: Vec<PathBuf>,
    /// BLAKE3 of the text cmdlog wrote (hex): the record holds while the file's
    /// text still hashes to it.
    pub installed: String,
}

/// The text's BLAKE3 (hex).
pub(crate) fn text_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// What cmdlog put in a settings file: its hooks for an agent (`claude-code`),
/// or that agent's telemetry settings (`claude-code telemetry`). Each has its
/// own record, so that one's removal does not undo the other.
pub(crate) fn what(agent: AgentKind, telemetry: bool) -> String {
    if telemetry {
        format!("{} telemetry", agent.name())
    } else {
        agent.name().to_string()
    }
}

fn record_path(target: &Path, what: &str) -> std::io::Result<PathBuf> {
    let dir = private_fs::ensure_private_dir(&private_fs::state_dir()?.join("installs"))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(target.as_os_str().as_encoded_bytes());
    // The hooks' records keep the key they always had.
    if what.contains(' ') {
        hasher.update(b"\0");
        hasher.update(what.as_bytes());
    }
    let key = hasher.finalize().to_hex();
    Ok(dir.join(format!("{}.json", &key[..32])))
}

/// The record of `target`, when there is one for it and `what`.
pub(crate) fn recall(target: &Path, what: &str) -> Option<Pristine> {
    let path = record_path(target, what).ok()?;
    let bytes = private_fs::read_untrusted(
        &path,
        Expect {
            bytes_max: RECORD_BYTES_MAX,
            private: true,
        },
    )
    .ok()?;
    let record: Pristine = serde_json::from_slice(&bytes).ok()?;
    (record.path == target && record.agent == what).then_some(record)
}

/// Keeps `record`, replacing any earlier one for its file.
pub(crate) fn remember(record: &Pristine) -> std::io::Result<()> {
    let path = record_path(&record.path, &record.agent)?;
    let (tmp, mut file) = private_fs::create_fresh_beside(&path)?;
    let written = serde_json::to_vec(record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| file.write_all(&bytes))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Drops the record of `target` and `what`, if any.
pub(crate) fn forget(target: &Path, what: &str) {
    if let Ok(path) = record_path(target, what) {
        let _ = std::fs::remove_file(path);
    }
}

/// The folders missing on the way to `target`, outermost first.
pub(crate) fn missing_dirs(target: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = target
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
}
