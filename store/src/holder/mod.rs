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

/// The longest path a Unix socket address holds (`sun_path`, less its NUL).
const SUN_PATH_MAX: usize = 107;

/// Runs `op` (a bind or a connect) on `socket` by a path short enough for a
/// socket address. A deep state folder (a long `$HOME` or
/// `$XDG_STATE_HOME`) makes the socket's own path too long; it is then
/// reached through its folder opened here (not following a link), as
/// `/proc/self/fd/N/NAME`, which names the folder we checked and nothing else.
pub(crate) fn at_short_path<T>(
    socket: &Path,
    op: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<T> {
    if socket.as_os_str().len() <= SUN_PATH_MAX {
        return op(socket);
    }
    let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else {
        return op(socket);
    };
    use rustix::fs::{Mode, OFlags};
    let folder = rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    use std::os::fd::AsRawFd;
    let short = Path::new("/proc/self/fd")
        .join(folder.as_raw_fd().to_string())
        .join(name);
    let done = op(&short);
    drop(folder);
    done
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
