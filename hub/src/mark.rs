//! What this machine last pushed of a log to a hub, kept in the user's private
//! state folder (`pushed/<stream>/<log id>.json`). It is what tells a local
//! rollback (this machine pushed further than its log now goes) from a foreign
//! tail (the hub holds records after the last one this machine pushed, which it
//! never sent).

use std::io::Write;
use std::path::PathBuf;

use cmdlog_common::private_fs::{self, Expect};
use serde::{Deserialize, Serialize};

/// The last record this machine pushed of a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushMark {
    /// Its seq.
    pub seq: u64,
    /// Its chain hash, hex.
    pub hash: String,
}

fn path(stream: &str, log_id: &str) -> Option<PathBuf> {
    let safe = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    };
    if !safe(stream) || !safe(log_id) {
        return None;
    }
    Some(
        private_fs::state_dir_path()
            .ok()?
            .join("pushed")
            .join(stream)
            .join(format!("{log_id}.json")),
    )
}

impl PushMark {
    /// The mark of `log_id` on `stream`, if this machine pushed it before.
    pub fn read(stream: &str, log_id: &str) -> Option<PushMark> {
        let bytes = private_fs::read_untrusted(
            &path(stream, log_id)?,
            Expect {
                bytes_max: 4096,
                private: true,
            },
        )
        .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps the mark (a failure only loses what tells a rollback from a foreign
    /// tail later).
    pub fn write(&self, stream: &str, log_id: &str) {
        let Some(path) = path(stream, log_id) else {
            return;
        };
        let Some(dir) = path.parent() else { return };
        if private_fs::ensure_private_dir(dir).is_err() {
            return;
        }
        if let Ok((tmp, mut file)) = private_fs::create_fresh_beside(&path) {
            let text = serde_json::to_string(self).expect("a push mark serializes");
            if file.write_all(text.as_bytes()).is_ok() && std::fs::rename(&tmp, &path).is_ok() {
                return;
            }
            let _ = std::fs::remove_file(tmp);
        }
    }
}
