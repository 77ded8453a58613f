//! One error enum per operation, each variant saying what the caller can do.

use std::path::PathBuf;

use crate::record::{BlobHash, Seq};

/// Opening a log failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another process holds the file (redb allows one process per file).
    #[error(
        "{path} is held by another process; stop it (a running `cmdlog serve` lists itself in .cmdlog/daemon.json) or use another --log"
    )]
    Locked {
        /// The log file.
        path: PathBuf,
    },
    /// The file was left mid-commit by a crash; read-only opens cannot recover it.
    #[error(
        "{path} needs crash recovery; open it for writing once (any `cmdlog run`) to recover it"
    )]
    NeedsRecovery {
        /// The log file.
        path: PathBuf,
    },
    /// The file or its folder could not be opened or created.
    #[error("cannot open {path}: {source}{}", space_advice(source))]
    Io {
        /// The log file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a cmdlog log of a format this version reads.
    #[error(
        "{path} is not a cmdlog log this version can read (format {found:?}); point --log at a cmdlog log"
    )]
    Format {
        /// The log file.
        path: PathBuf,
        /// The format marker found, if any.
        found: String,
    },
    /// The write-ahead log is missing, cut or damaged, or does not continue the log,
    /// and events it acknowledged may be lost: nothing was changed.
    #[error(
        "{wal} {problem}. The log holds seqs up to {kept_through}; events acknowledged after that may be lost. Nothing was changed: keep a copy of both files, then restore {wal} from a backup, or run `cmdlog recover --discard-damaged-wal` to open the log without them (the discard is recorded in the log)"
    )]
    WalDamaged {
        /// The write-ahead log.
        wal: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// The last seq that would be kept.
        kept_through: Seq,
    },
    /// The log file, its write-ahead log or its folder is not a regular file (a
    /// folder) of this user that only this user can write (a link, another user's,
    /// one others can write): opening it could write elsewhere, lose the log or
    /// read what a stranger planted. Nothing was opened.
    #[error(
        "{path} {problem}; cmdlog keeps a log only in files and folders of this user that no one else can write (a link, or a file or folder others can write, could make it write elsewhere, lose the log or record what a stranger planted): remove it if you did not make it, or use another --log"
    )]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// redb refused the file or failed underneath.
    #[error("cannot open {path}: {message}{}", space_advice_text(message))]
    Storage {
        /// The log file, or `<backend>` for a custom storage backend.
        path: PathBuf,
        /// What redb reported.
        message: String,
    },
}

/// An append was not acknowledged.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppendError {
    /// An earlier I/O error poisoned the writer; reopen the log to go on.
    #[error(
        "the log writer stopped after a storage error ({cause}); every acknowledged event is kept: free space on the disk (or fix it), then reopen the log"
    )]
    Poisoned {
        /// The error that poisoned the writer.
        cause: String,
    },
    /// The commit failed; the writer is now poisoned. The append was not
    /// acknowledged: after a reopen it is in the log wholly or not at all.
    #[error(
        "storage error while appending, the append was not acknowledged: {message}; every acknowledged event is kept: free space on the disk (or fix it), then reopen the log"
    )]
    Storage {
        /// What redb reported.
        message: String,
    },
    /// One record is larger than the limit.
    #[error("record {index} of the append is {size} bytes, over the limit of {max} bytes")]
    RecordTooLarge {
        /// Its index in the append.
        index: usize,
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A stream key is too long or empty.
    #[error("stream key of record {index} is {len} bytes; it must be 1 to {max} bytes")]
    BadStreamKey {
        /// Its index in the append.
        index: usize,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The append held no record.
    #[error("an append needs at least one record")]
    Empty,
    /// The log was closed.
    #[error("the log is closed")]
    Closed,
    /// The log was opened read-only.
    #[error("the log was opened read-only; open it for writing to append")]
    ReadOnly,
    /// The process holding the log, which appends for this open, failed or
    /// refused the append.
    #[error("the process holding the log did not acknowledge the append: {message}")]
    Holder {
        /// What failed, or what the holder answered.
        message: String,
    },
}

/// A read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// redb failed underneath.
    #[error(
        "storage error while reading the log: {message}; a read changes nothing: retry, and if it fails again check the disk and run `cmdlog verify`"
    )]
    Storage {
        /// What redb reported.
        message: String,
    },
    /// A stored value cannot be decoded.
    #[error("record {seq} is corrupt: {message}; run `cmdlog verify`")]
    Corrupt {
        /// The record's seq.
        seq: Seq,
        /// What is wrong.
        message: String,
    },
}

/// A blob operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// The blob is larger than the configured limit.
    #[error("blob of {size} bytes is over the limit of {max} bytes")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The stored bytes no longer hash to their address: tampered or corrupt.
    #[error("blob {hash} is corrupt: its bytes hash to {actual}; run `cmdlog verify`")]
    Mismatch {
        /// The address asked for.
        hash: BlobHash,
        /// What the stored bytes hash to.
        actual: BlobHash,
    },
    /// Writing failed (see [`AppendError`]).
    #[error(transparent)]
    Write(#[from] AppendError),
    /// Reading failed.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Any store error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// See [`OpenError`].
    #[error(transparent)]
    Open(#[from] OpenError),
    /// See [`AppendError`].
    #[error(transparent)]
    Append(#[from] AppendError),
    /// See [`ReadError`].
    #[error(transparent)]
    Read(#[from] ReadError),
    /// See [`BlobError`].
    #[error(transparent)]
    Blob(#[from] BlobError),
}

pub(crate) fn read_err(e: impl std::fmt::Display) -> ReadError {
    ReadError::Storage {
        message: e.to_string(),
    }
}

/// What to do about a full disk: only steps that keep every acknowledged event.
fn space_advice(e: &std::io::Error) -> &'static str {
    // ENOSPC and EDQUOT.
    match e.raw_os_error() {
        Some(28 | 122) => SPACE_ADVICE,
        _ => "",
    }
}

fn space_advice_text(message: &str) -> &'static str {
    if message.contains("No space left") && !message.contains("free space") {
        SPACE_ADVICE
    } else {
        ""
    }
}

const SPACE_ADVICE: &str = "; free space on the disk, then try again: the files are unchanged and no acknowledged event is lost";
