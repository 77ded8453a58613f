//! Reading a log another process holds. A long-lived writable open (`cmdlog
//! serve`, `cmdlog acp`, `push --follow`, `witness`) holds redb's file
//! exclusively; it answers the reads of every other cmdlog process over a
//! Unix socket in the user's private state folder
//! (`$XDG_STATE_HOME/cmdlog/holders/<hash of the log's path>.sock`, the
//! folder owner-only), from its own open log: the same records, the same
//! answers, while its writer goes on (reads take redb read transactions; they
//! never wait for an append). Either side believes the other only when the
//! kernel says it runs as the same user (`SO_PEERCRED`), and a reader only a
//! socket of its own in a folder of its own: nothing in the workspace names
//! the socket. The holder's side is `log/holding.rs`.

mod client;
pub(crate) mod wire;

pub(crate) use client::Remote;

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Where the holder of the log at `log` answers readers.
pub fn socket_path(log: &Path) -> io::Result<PathBuf> {
    let real = std::fs::canonicalize(log)?;
    let hash = blake3::hash(real.as_os_str().as_bytes()).to_hex();
    Ok(cmdlog_common::private_fs::state_dir_path()?
        .join("holders")
        .join(format!("{}.sock", &hash[..32])))
}

/// Whether the process at the other end of `stream` runs as this user.
pub(crate) fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream)
        .is_ok_and(|cred| cred.uid == rustix::process::getuid())
}

/// Refuses a socket that is not this user's, or in a folder others can reach.
fn check_socket(socket: &Path) -> io::Result<()> {
    let refused = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", socket.display()),
        ))
    };
    let me = rustix::process::getuid().as_raw();
    let dir = socket.parent().unwrap_or(Path::new("."));
    let folder = std::fs::symlink_metadata(dir)?;
    if !folder.is_dir() || folder.uid() != me || folder.mode() & 0o077 != 0 {
        return refused("its folder is not this user's alone");
    }
    let meta = std::fs::symlink_metadata(socket)?;
    if !meta.file_type().is_socket() || meta.uid() != me {
        return refused("not a socket of this user's");
    }
    Ok(())
}
