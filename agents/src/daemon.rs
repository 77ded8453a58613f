//! `daemon.json` beside the log: which `cmdlog serve` holds the log, where to
//! reach it, and the key it proves itself with. The daemon writes it owner-only
//! (created new, never through a link) when it starts listening and removes it
//! when it stops. A hook believes it only when it is a regular file of this user,
//! mode 0600, naming a loopback URL, and the daemon there answers a fresh nonce
//! with a proof only the holder of the key can make — a stale file (the daemon
//! gone, its port reused) or a planted one (a cloned repository's, mode 0644)
//! gets no payload and no token.

use std::io::Write;
use std::path::{Path, PathBuf};

use cmdlog_common::private_fs::{self, Expect};
use serde::{Deserialize, Serialize};

use crate::limits::DAEMON_FILE_BYTES_MAX;

/// What `daemon.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonFile {
    /// Where the daemon listens (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The daemon's process id.
    pub pid: u32,
    /// The log's id, as the daemon read it.
    #[serde(default)]
    pub log_id: String,
    /// 32 random bytes (hex) the daemon proves itself with; only readable by the
    /// user.
    #[serde(default)]
    pub key: String,
}

impl DaemonFile {
    /// A file for a daemon at `url` holding log `log_id`, with a fresh key.
    pub fn new(url: &str, log_id: &str) -> DaemonFile {
        DaemonFile {
            url: url.to_string(),
            pid: std::process::id(),
            log_id: log_id.to_string(),
            key: format!(
                "{}{}",
                cmdlog_common::ids::random_128(),
                cmdlog_common::ids::random_128()
            ),
        }
    }

    /// The file's path for the log at `log`.
    pub fn path(log: &Path) -> PathBuf {
        log.parent().unwrap_or(Path::new(".")).join("daemon.json")
    }

    /// What the file beside `log` says, if it is one this user wrote for
    /// itself (a regular file, owner-only, not a link, small) and names a
    /// loopback URL.
    pub fn read(log: &Path) -> Option<DaemonFile> {
        let bytes = private_fs::read_untrusted(
            &Self::path(log),
            Expect {
                bytes_max: DAEMON_FILE_BYTES_MAX,
                private: true,
            },
        )
        .ok()?;
        let file: DaemonFile = serde_json::from_slice(&bytes).ok()?;
        file.is_loopback().then_some(file)
    }

    /// Whether the URL is `http://` on a loopback address.
    pub fn is_loopback(&self) -> bool {
        let Some(rest) = self.url.strip_prefix("http://") else {
            return false;
        };
        let host = rest.split('/').next().unwrap_or("");
        let host = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        matches!(host, "127.0.0.1" | "[::1]" | "localhost")
    }

    /// Writes the file beside `log`, new and owner-only (whatever was there, a
    /// link included, is removed first, never written through).
    pub fn write(&self, log: &Path) -> std::io::Result<PathBuf> {
        let path = Self::path(log);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut file = private_fs::create_new(&path)?;
        let text = serde_json::to_string(self).expect("a daemon file serializes");
        writeln!(file, "{text}")?;
        file.sync_all()?;
        Ok(path)
    }

    /// The proof a daemon gives for `nonce`: a keyed hash of it and the log's id.
    pub fn proof(&self, nonce: &str) -> Option<String> {
        let key = decode_key(&self.key)?;
        let mut hasher = blake3::Hasher::new_keyed(&key);
        hasher.update(b"cmdlog daemon proof\0");
        hasher.update(nonce.as_bytes());
        hasher.update(b"\0");
        hasher.update(self.log_id.as_bytes());
        Some(hasher.finalize().to_hex().to_string())
    }

    /// Whether `key` (as a client sent it) is this daemon's key; constant time.
    pub fn key_matches(&self, key: &str) -> bool {
        match (decode_key(&self.key), decode_key(key)) {
            (Some(a), Some(b)) => blake3::Hash::from(a) == blake3::Hash::from(b),
            _ => false,
        }
    }
}

fn decode_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_file_is_believed_only_when_owner_only_and_local() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.redb");
        let file = DaemonFile::new("http://127.0.0.1:4170", "abc");
        file.write(&log).unwrap();
        assert_eq!(DaemonFile::read(&log), Some(file.clone()));
        let proof = file.proof("n1").unwrap();
        assert_ne!(Some(proof.clone()), file.proof("n2"));
        assert_ne!(
            Some(proof),
            DaemonFile::new("http://127.0.0.1:4170", "abc").proof("n1")
        );
        assert!(file.key_matches(&file.key.clone()));
        assert!(!file.key_matches(&"0".repeat(64)));
        // As git checks a planted file out: mode 0644.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            DaemonFile::path(&log),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(DaemonFile::read(&log), None);
        let remote = DaemonFile::new("http://10.0.0.9:4170", "abc");
        remote.write(&log).unwrap();
        assert_eq!(
            DaemonFile::read(&log),
            None,
            "only a loopback daemon gets hooks"
        );
    }
}
