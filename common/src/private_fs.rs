//! Files and folders only their owner can reach, and reading what a workspace, a
//! shared folder or a peer left on disk without trusting it: no link followed
//! that cmdlog did not make, no file created through one, sizes capped, owner and
//! mode checked, never blocked by a FIFO.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// This process's effective user id.
pub fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{}: {why}", path.display()),
    )
}

/// Checks that `meta` (read without following links) is a folder or file owned
/// by this user that no one else can write or read (no group or other bits).
fn check_private(path: &Path, meta: &std::fs::Metadata, want_dir: bool) -> io::Result<()> {
    if meta.file_type().is_symlink() {
        return Err(refused(
            path,
            "is a symbolic link, which cmdlog does not follow here",
        ));
    }
    if want_dir && !meta.is_dir() {
        return Err(refused(path, "is not a folder"));
    }
    if !want_dir && !meta.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    if meta.uid() != current_uid() {
        return Err(refused(path, "belongs to another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(refused(
            path,
            &format!(
                "is mode 0{:o}: others can reach it (cmdlog makes such files owner-only)",
                meta.mode() & 0o777
            ),
        ));
    }
    Ok(())
}

/// Why `dir` is not a folder to keep a log in — a link, not a folder, another
/// user's, or one that others can write (where they could move the log away or
/// plant files beside it) — or `None` when it is fine or does not exist. Like
/// git's `safe.directory` check (CVE-2022-24765).
pub fn foreign_folder(dir: &Path) -> Option<String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("cannot be read ({e})")),
    };
    if meta.file_type().is_symlink() {
        Some("is a symbolic link cmdlog did not make".into())
    } else if !meta.is_dir() {
        Some("is not a folder".into())
    } else if meta.uid() != current_uid() {
        Some(format!("belongs to another user (uid {})", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "is mode 0{:o}: others can write in it (`chmod 700` it if it is yours)",
            meta.mode() & 0o7777
        ))
    } else {
        None
    }
}

/// Makes the folders from `root` down to `dir` (inside it), one at a time, never
/// through a link: a link planted on the way (`DIR/tile -> /elsewhere`) is
/// refused, so nothing is written outside `root`. `root` itself is the caller's
/// choice and is taken as it is.
pub fn create_dirs_within(root: &Path, dir: &Path) -> io::Result<()> {
    let rest = dir
        .strip_prefix(root)
        .map_err(|_| refused(dir, "is not inside the output folder"))?;
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refused(
                    &at,
                    "is a symbolic link, which cmdlog does not follow here",
                ));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(refused(&at, "is not a folder")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::create_dir(&at)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Checks that `dir` is a real folder of this user that no one else can reach
/// (no link, no group or other bits).
pub fn check_private_dir(dir: &Path) -> io::Result<()> {
    check_private(dir, &std::fs::symlink_metadata(dir)?, true)
}

/// Makes `dir` (and missing parents) owner-only where it creates them, and checks
/// that `dir` itself is a real folder of this user, mode 0700 at most.
pub fn ensure_private_dir(dir: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => check_private(dir, &meta, true)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            let meta = std::fs::symlink_metadata(dir)?;
            if meta.is_dir() && meta.uid() == current_uid() && meta.mode() & 0o077 != 0 {
                // A umask cannot widen 0700, but a folder made by a racing process could.
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
            check_private(dir, &std::fs::symlink_metadata(dir)?, true)?;
        }
        Err(e) => return Err(e),
    }
    Ok(dir.to_path_buf())
}

/// Creates `path` new (never through a link, never over an existing file), mode
/// 0600.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .mode(0o600)
        .open(path)
}

/// Opens a file for reading and writing, creating it (mode 0600) if it is missing,
/// never through a link.
pub fn open_or_create_private(path: &Path) -> io::Result<File> {
    open_or_create_private_truncating(path, false)
}

/// [`open_or_create_private`], emptying the file when `truncate`.
pub fn open_or_create_private_truncating(path: &Path, truncate: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .mode(0o600)
        .open(path)
}

/// Opens an existing file for reading, never through a link.
pub fn open_existing_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Opens an existing file for reading and writing, never through a link.
pub fn open_existing_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Creates a file with a fresh name beside `near` (`.<name>.<random>.cmdlog-tmp`),
/// exclusively and never through a link: where a file is written before it is
/// renamed over another.
pub fn create_fresh_beside(near: &Path) -> io::Result<(PathBuf, File)> {
    let dir = near.parent().unwrap_or(Path::new("."));
    let name = near
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for _ in 0..16 {
        let candidate = dir.join(format!(".{name}.{}.cmdlog-tmp", crate::ids::new_id("", 12)));
        match create_new(&candidate) {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no fresh name beside {}", near.display()),
    ))
}

/// What [`read_untrusted`] requires of a file.
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    /// The most bytes read; a larger file is refused.
    pub bytes_max: u64,
    /// Whether the file must be this user's and owner-only (mode 0600 at most).
    pub private: bool,
}

/// Reads a file cmdlog did not necessarily write: opened without following a
/// link and without blocking (a FIFO or a device is refused, not waited on), a
/// regular file of at most `expect.bytes_max` bytes, and (with `expect.private`)
/// owned by this user with no group or other bits.
pub fn read_untrusted(path: &Path, expect: Expect) -> io::Result<Vec<u8>> {
    let file = open_untrusted(path)?;
    let meta = file.metadata()?;
    if expect.private {
        check_private(path, &meta, false)?;
    }
    if meta.len() > expect.bytes_max {
        return Err(refused(
            path,
            &format!(
                "is {} bytes, over the limit of {}",
                meta.len(),
                expect.bytes_max
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(expect.bytes_max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > expect.bytes_max {
        return Err(refused(path, "grew past its limit while it was read"));
    }
    Ok(bytes)
}

/// Why a text file from anywhere could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TextFileError {
    /// It could not be read (missing, a link, too large, not a regular file).
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Its bytes are not UTF-8.
    #[error("{} is not UTF-8 text", .0.display())]
    NotText(std::path::PathBuf),
}

/// A text file from anywhere (a saved checkpoint, a proof bundle), read as
/// [`read_untrusted`] reads it (not private), at most `bytes_max` bytes.
pub fn read_untrusted_text(path: &Path, bytes_max: u64) -> Result<String, TextFileError> {
    let expect = Expect {
        bytes_max,
        private: false,
    };
    let bytes = read_untrusted(path, expect).map_err(|source| TextFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| TextFileError::NotText(path.to_path_buf()))
}

/// Reads at most the first `bytes_max` bytes of a file cmdlog did not write,
/// opened as [`read_untrusted`] opens it (no link followed, no blocking, a
/// regular file), whatever its length.
pub fn read_untrusted_head(path: &Path, bytes_max: u64) -> io::Result<Vec<u8>> {
    let file = open_untrusted(path)?;
    let mut bytes = Vec::new();
    file.take(bytes_max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens a file for reading without following a link or blocking; refuses
/// anything but a regular file.
fn open_untrusted(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                refused(
                    path,
                    "is a symbolic link, which cmdlog does not follow here",
                )
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    Ok(file)
}

/// The user's folder for cmdlog's own state (made owner-only): see
/// [`state_dir_path`].
pub fn state_dir() -> io::Result<PathBuf> {
    ensure_private_dir(&state_dir_path()?)
}

/// Where the user's folder for cmdlog's own state is, without making it:
/// `$XDG_STATE_HOME/cmdlog`, else `$HOME/.local/state/cmdlog`.
pub fn state_dir_path() -> io::Result<PathBuf> {
    // A relative value is ignored, as the XDG Base Directory specification says.
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "HOME is not set"))?;
    Ok(base.join("cmdlog"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_big_and_shared_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let private = ensure_private_dir(&dir.path().join("a/b")).unwrap();
        let mode = std::fs::metadata(&private).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let file = private.join("x");
        std::io::Write::write_all(&mut create_new(&file).unwrap(), b"hello").unwrap();
        assert!(create_new(&file).is_err(), "never over an existing file");
        let expect = Expect {
            bytes_max: 16,
            private: true,
        };
        assert_eq!(read_untrusted(&file, expect).unwrap(), b"hello");
        let link = private.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_untrusted(&link, expect).is_err(), "no link followed");
        assert!(create_new(&link).is_err(), "no file created through a link");
        let fifo = private.join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let refused = read_untrusted(&fifo, expect).unwrap_err();
        assert!(
            refused.to_string().contains("not a regular file"),
            "{refused}"
        );
        std::fs::write(&file, vec![b'x'; 17]).unwrap();
        assert!(read_untrusted(&file, expect).is_err(), "size capped");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&file, b"hi").unwrap();
        assert!(
            read_untrusted(&file, expect).is_err(),
            "others could reach it"
        );
        let shared = dir.path().join("shared");
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&shared)
            .unwrap();
        assert!(ensure_private_dir(&shared).is_err());
        let (tmp, _) = create_fresh_beside(&file).unwrap();
        assert!(
            tmp.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with(".cmdlog-tmp")
        );
    }
}
