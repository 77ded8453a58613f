//! Signing keys on disk. A log's key is made on first need from the kernel's
//! random generator and kept in one owner-only file (the private key in the form
//! Go's `sumdb/note` writes), outside any workspace, never in the log: a key
//! shipped with a log would let anyone who has the log sign for it.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cmdlog_common::private_fs::{self, Expect};

use crate::note::{KeyKind, NoteError, Signer};

pub use crate::limits::KEY_FILE_BYTES_MAX;

/// Why a key could not be read or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file (or its folder) could not be read or written, or is not
    /// owner-only.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The key file does not hold a key.
    #[error("key file {path}: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        source: NoteError,
    },
    /// The kernel's random generator could not be read: no key is made without it.
    #[error("cannot read /dev/urandom to make a key: {0}")]
    Random(io::Error),
}

/// Where a user's keys live: `$XDG_CONFIG_HOME/cmdlog/keys`, else
/// `$HOME/.config/cmdlog/keys`. A relative `XDG_CONFIG_HOME` is ignored, as the
/// XDG Base Directory specification says (it would put the key in whatever
/// folder cmdlog runs in: a workspace).
pub fn key_dir_path() -> io::Result<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "HOME is not set"))?;
    Ok(base.join("cmdlog").join("keys"))
}

/// Reads the key in `path`: a regular file of this user, owner-only, not a link,
/// in a folder of this user's that no one else can reach.
pub fn load_signer(path: &Path) -> Result<Signer, KeyError> {
    let io_err = |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| d.exists()) {
        private_fs::check_private_dir(dir).map_err(io_err)?;
    }
    let bytes = private_fs::read_untrusted(
        path,
        Expect {
            bytes_max: KEY_FILE_BYTES_MAX,
            private: true,
        },
    )
    .map_err(io_err)?;
    let text = String::from_utf8(bytes).map_err(|_| KeyError::Format {
        path: path.to_path_buf(),
        source: NoteError::BadSignerKey("the file is not UTF-8".into()),
    })?;
    Signer::parse_private(text.trim()).map_err(|source| KeyError::Format {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads the key in `path`, or makes one named `name` there if there is none
/// (its folder made owner-only). Two processes making it at once end with the
/// same key: the file is written under a fresh name and linked into place, and
/// the one that loses the race reads the winner's.
pub fn load_or_create_signer(path: &Path, name: &str, kind: KeyKind) -> Result<Signer, KeyError> {
    match load_signer(path) {
        Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        found => return found,
    }
    let io_err = |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(KeyError::Random)?;
    let signer = Signer::from_seed(name, kind, seed).map_err(|source| KeyError::Format {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(dir) = path.parent() {
        private_fs::ensure_private_dir(dir).map_err(io_err)?;
    }
    let (fresh, mut file) = private_fs::create_fresh_beside(path).map_err(io_err)?;
    let written = file
        .write_all(format!("{}\n", signer.to_private_string()).as_bytes())
        .and_then(|()| file.sync_all());
    let linked = written.and_then(|()| std::fs::hard_link(&fresh, path));
    let _ = std::fs::remove_file(&fresh);
    match linked {
        Ok(()) => {
            if let Some(dir) = path.parent() {
                std::fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(io_err)?;
            }
            Ok(signer)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load_signer(path),
        Err(e) => Err(io_err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_is_made_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/log.key");
        let made = load_or_create_signer(&path, "cmdlog/abc", KeyKind::Ed25519).unwrap();
        let again = load_or_create_signer(&path, "cmdlog/abc", KeyKind::Ed25519).unwrap();
        assert_eq!(made.verifier(), again.verifier());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }

    #[test]
    fn a_shared_or_linked_key_file_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("keys");
        let path = dir.join("log.key");
        load_or_create_signer(&path, "cmdlog/abc", KeyKind::Ed25519).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_signer(&path).unwrap_err().to_string();
        assert!(err.contains("owner-only"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(load_signer(&link).is_err());
        let junk = dir.join("junk.key");
        std::fs::write(&junk, "nonsense").unwrap();
        std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(load_signer(&junk), Err(KeyError::Format { .. })));
    }
}
