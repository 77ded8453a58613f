//! Opening a log: creation, the lock wait, recovery from the write-ahead log, the
//! writer thread's start.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redb::{
    Database, DatabaseError, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle,
};

use crate::error::OpenError;
use crate::journal::{Journal, JournalIo, journal_path};
use crate::overlay::Overlay;
use crate::record::ChainHash;
use crate::record::{Durability, Seq};
use crate::schema::{self, BLOB_META, BLOBS, FORMAT, META, RECORDS, STREAMS};
use crate::writer;

use super::{
    Db, Head, Log, LogConfig, PendingStreams, Shared, recovery, storage_error, sync_parent,
};

impl Log {
    /// Opens the log at `path`, creating it (and its folder) if needed. Waits up to
    /// `config.lock_wait` for another process to release the file. A creation that
    /// fails leaves no log (see `create.rs`: several processes may create at once).
    pub fn open(path: impl AsRef<Path>, config: LogConfig) -> Result<Log, OpenError> {
        let path = path.as_ref().to_path_buf();
        let mut made = Created::default();
        let opened = Self::open_or_create(&path, config, &mut made);
        if opened.is_err() {
            made.remove();
        }
        opened
    }

    fn open_or_create(
        path: &Path,
        config: LogConfig,
        made: &mut Created,
    ) -> Result<Log, OpenError> {
        let io = |source| OpenError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.exists()
        {
            // Inputs and attachments may hold secrets: a new log's folder is the owner's.
            std::fs::create_dir_all(parent).map_err(io)?;
            made.folder = Some(parent.to_path_buf());
            set_mode(parent, 0o700).map_err(io)?;
            sync_parent(parent).map_err(io)?;
        }
        check_own_folder(path)?;
        check_own_file(path)?;
        check_own_file(&journal_path(path))?;
        if !path.exists() {
            super::create::create(path, &config)?;
        }
        let mut builder = redb::Builder::new();
        builder.set_cache_size(config.cache_bytes);
        let db = waiting_for_lock(path, config.lock_wait, || builder.create(path))?;
        // redb's lock on the log file is held: no other process appends meanwhile
        // (short-lived appenders hold its shared lock while they append). Whether the
        // log is new is decided here, under that lock: another process may have
        // created the file, initialized it and had frames appended to the
        // write-ahead log while this one waited for the lock, and those frames are
        // acknowledged appends.
        let db = Db::Writable(db);
        let new_log = !Self::initialized(&db, path)?;
        let Db::Writable(db) = db else {
            unreachable!("wrapped above")
        };
        let wal = journal_path(path);
        let wal_io = |source| OpenError::Io {
            path: wal.clone(),
            source,
        };
        let wal_existed = wal.exists() && !new_log;
        // Frames beside a log that holds nothing yet (a file made by an older
        // version, or given empty) belong to a deleted log: no appender writes a
        // frame before the log is initialized, durably. Never apply them to it.
        let journal = owner_only_file(&wal, new_log).map_err(wal_io)?;
        if !wal_existed {
            // A synced frame in a file whose name is not yet durable in its folder
            // could vanish with a power cut: make the new names durable first.
            sync_parent(path).map_err(io)?;
        }
        // A copy of the marks beside a log that holds nothing yet is a deleted log's.
        let copy = if new_log {
            super::presence::clear_mark_copy(path).map_err(|source| OpenError::Io {
                path: super::presence_path(path),
                source,
            })?;
            None
        } else {
            super::presence::mark_copy(path)
        };
        let log = Self::from_db(
            db,
            path.to_path_buf(),
            Box::new(journal),
            wal_existed,
            wal,
            copy,
            config,
        )?;
        if log.wal_discard.is_some() {
            // The dropped seqs are reused from here on.
            super::presence::clear_mark_copy(path).map_err(|source| OpenError::Io {
                path: super::presence_path(path),
                source,
            })?;
        }
        made.folder = None;
        Ok(log)
    }

    /// Reads a log that needs crash recovery, and its write-ahead log, into memory and
    /// recovers them there, leaving both files untouched: for reading a crashed log
    /// where it cannot be written (read-only media, no write permission). Takes as
    /// much memory as the two files; whatever is appended to it is lost at drop.
    pub fn open_recovered_in_memory(
        path: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        use redb::StorageBackend;
        let path = path.as_ref().to_path_buf();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| OpenError::Io { path, source }
        };
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let backend = redb::backends::InMemoryBackend::new();
        let loaded = backend
            .set_len(bytes.len() as u64)
            .and_then(|()| backend.write(0, &bytes));
        loaded.map_err(|e| OpenError::Storage {
            path: path.clone(),
            message: e.to_string(),
        })?;
        drop(bytes);
        let wal = journal_path(&path);
        let (wal_bytes, wal_existed) = match std::fs::read(&wal) {
            Ok(b) => (b, true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), false),
            Err(e) => return Err(io(&wal)(e)),
        };
        let db = redb::Builder::new()
            .set_cache_size(config.cache_bytes)
            .create_with_backend(backend)
            .map_err(|e| open_error(&path, e))?;
        let journal = crate::journal::MemoryJournal::new(wal_bytes);
        let copy = super::presence::mark_copy(&path);
        Self::from_db(db, path, Box::new(journal), wal_existed, wal, copy, config)
    }

    /// Opens a log on a custom redb storage backend and write-ahead log file (tests
    /// use [`crate::FaultyBackend`] and [`crate::FaultyFile`]).
    pub fn open_with_backend(
        backend: impl redb::StorageBackend,
        journal: impl JournalIo + 'static,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        let path = PathBuf::from("<backend>");
        let db = redb::Builder::new()
            .set_cache_size(config.cache_bytes)
            .create_with_backend(backend)
            .map_err(|e| open_error(&path, e))?;
        Self::from_db(
            db,
            path,
            Box::new(journal),
            true,
            PathBuf::from("<backend>-wal"),
            None,
            config,
        )
    }

    fn from_db(
        db: Database,
        path: PathBuf,
        journal: Box<dyn JournalIo>,
        wal_existed: bool,
        wal: PathBuf,
        copy: Option<(crate::journal::Mark, PathBuf)>,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        let db = Db::Writable(db);
        let made_wal = (!wal_existed).then(|| wal.clone());
        let recovered = (|| {
            if !Self::initialized(&db, &path)? {
                Self::initialize(db.writable(), &path)?;
            }
            mark_streams_through(db.writable(), &path)?;
            recovery::recover(
                db.writable(),
                journal,
                wal_existed,
                wal,
                copy,
                config.discard_wal_damage,
            )
        })();
        let (journal, discard) = match recovered {
            Ok(recovered) => recovered,
            Err(e) => {
                // A refused open changes nothing: the write-ahead log file it made
                // goes, while redb's lock still keeps every other process out.
                if let Some(made) = made_wal.filter(|w| w.exists()) {
                    let _ = std::fs::remove_file(made);
                }
                return Err(e);
            }
        };
        // Buffered logs skip the write-ahead log: their commits are not durable anyway.
        let journal = (config.durability == Durability::Durable).then_some(journal);
        let mut log = Self::start(db, path, config, journal, Overlay::default())?;
        log.wal_discard = discard;
        // redb's lock excludes every other appender.
        log.alone_through = Some(log.head().seq);
        Ok(log)
    }

    /// Whether the file already holds this format's tables (then opening writes nothing).
    pub(super) fn initialized(db: &Db, path: &Path) -> Result<bool, OpenError> {
        let storage = storage_error(path);
        let read = db.begin_read().map_err(|e| storage(e.into()))?;
        let tables: Vec<String> = read
            .list_tables()
            .map_err(|e| storage(e.into()))?
            .map(|t| t.name().to_string())
            .collect();
        let wanted = [
            META.name(),
            RECORDS.name(),
            STREAMS.name(),
            BLOBS.name(),
            BLOB_META.name(),
        ];
        if !wanted.iter().all(|w| tables.iter().any(|t| t == w)) {
            return Ok(false);
        }
        let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
        match meta.get("format").map_err(|e| storage(e.into()))? {
            Some(f) if f.value() == FORMAT => Ok(true),
            Some(f) => Err(OpenError::Format {
                path: path.to_path_buf(),
                found: String::from_utf8_lossy(f.value()).into_owned(),
            }),
            None => Ok(false),
        }
    }

    /// Writes the format marker and creates the tables.
    pub(super) fn initialize(db: &Database, path: &Path) -> Result<(), OpenError> {
        let storage = storage_error(path);
        let txn = db.begin_write().map_err(|e| storage(e.into()))?;
        {
            let mut meta = txn.open_table(META).map_err(|e| storage(e.into()))?;
            let found = meta
                .get("format")
                .map_err(|e| storage(e.into()))?
                .map(|v| v.value().to_vec());
            match found {
                None => {
                    let records = txn.open_table(RECORDS).map_err(|e| storage(e.into()))?;
                    if !records.is_empty().map_err(|e| storage(e.into()))? {
                        return Err(OpenError::Format {
                            path: path.to_path_buf(),
                            found: String::new(),
                        });
                    }
                    drop(records);
                    meta.insert("format", FORMAT)
                        .map_err(|e| storage(e.into()))?;
                    meta.insert(schema::WAL_STATE, schema::WAL_CLEAN)
                        .map_err(|e| storage(e.into()))?;
                }
                Some(f) if f == FORMAT => {}
                Some(f) => {
                    return Err(OpenError::Format {
                        path: path.to_path_buf(),
                        found: String::from_utf8_lossy(&f).into_owned(),
                    });
                }
            }
            txn.open_table(RECORDS).map_err(|e| storage(e.into()))?;
            txn.open_table(STREAMS).map_err(|e| storage(e.into()))?;
            txn.open_table(BLOBS).map_err(|e| storage(e.into()))?;
            txn.open_table(BLOB_META).map_err(|e| storage(e.into()))?;
        }
        txn.commit().map_err(|e| storage(e.into()))?;
        Ok(())
    }

    /// Starts the log over `db` with `overlay` (the write-ahead log's frames redb's
    /// file lacks, for a log that does not write it) and the writer thread.
    pub(super) fn start(
        db: Db,
        path: PathBuf,
        config: LogConfig,
        journal: Option<Journal>,
        overlay: Overlay,
    ) -> Result<Log, OpenError> {
        let redb_head = {
            let storage = storage_error(&path);
            let read = db.begin_read().map_err(|e| storage(e.into()))?;
            let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
            match records.last().map_err(|e| storage(e.into()))? {
                None => Head {
                    seq: 0,
                    hash: ChainHash::ZERO,
                },
                Some((k, v)) => {
                    let seq = k.value();
                    let (hash, _, _) =
                        schema::decode_record(v.value()).ok_or_else(|| OpenError::Storage {
                            path: path.clone(),
                            message: format!(
                                "the last record, seq {seq}, is malformed; run `cmdlog verify`"
                            ),
                        })?;
                    Head { seq, hash }
                }
            }
        };

        let mut pending = Self::pending_streams(&db, &path, redb_head.seq)?;
        let mut head = redb_head;
        for (seq, value) in &overlay.records {
            let (hash, stream, _) =
                schema::decode_record(value).ok_or_else(|| OpenError::Storage {
                    path: path.clone(),
                    message: format!("the write-ahead log's record at seq {seq} is malformed"),
                })?;
            if let Some(key) = stream {
                pending.push(key, *seq);
            }
            head = Head { seq: *seq, hash };
        }
        let wal_open = {
            let read = db
                .begin_read()
                .map_err(|e| storage_error(&path)(e.into()))?;
            recovery::wal_open(&read).map_err(storage_error(&path))?
        };
        let frontier = match &db {
            Db::Writable(writable) if config.merkle_tree => {
                Some(crate::tree::catch_up(writable).map_err(storage_error(&path))?)
            }
            Db::Writable(_) | Db::ReadOnly(_) | Db::ShortLived(_) | Db::Remote => None,
        };
        let shared = Arc::new(Shared::new(
            db, config, head, pending, wal_open, overlay, frontier,
        ));
        let (requests, writer, inline) = match (&shared.db, journal) {
            (Db::ReadOnly(_) | Db::Remote, _) => (None, None, None),
            (Db::ShortLived(_), Some(journal)) => (
                None,
                None,
                Some(Mutex::new(writer::Inline::new(&shared, journal))),
            ),
            (_, journal) => {
                let (tx, writer) =
                    writer::spawn(Arc::clone(&shared), journal).map_err(|source| {
                        OpenError::Io {
                            path: path.clone(),
                            source,
                        }
                    })?;
                (Some(tx), Some(writer), None)
            }
        };
        Ok(Log {
            shared,
            path,
            wal_discard: None,
            requests: Mutex::new(requests),
            writer: Mutex::new(writer),
            inline,
            alone_through: None,
            presence: None,
            remote: None,
            after_holder: Default::default(),
        })
    }

    /// The stream index entries of the records the `streams` table does not cover.
    fn pending_streams(db: &Db, path: &Path, head: Seq) -> Result<PendingStreams, OpenError> {
        let storage = storage_error(path);
        let read = db.begin_read().map_err(|e| storage(e.into()))?;
        let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
        let through = match meta
            .get(schema::STREAMS_THROUGH)
            .map_err(|e| storage(e.into()))?
        {
            Some(v) => {
                u64::from_le_bytes(v.value().try_into().map_err(|_| OpenError::Storage {
                    path: path.to_path_buf(),
                    message: "meta streams_through is not 8 bytes; run `cmdlog verify`".into(),
                })?)
            }
            None => head,
        };
        let mut pending = PendingStreams::default();
        if through >= head {
            return Ok(pending);
        }
        let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
        for entry in records
            .range(through + 1..=head)
            .map_err(|e| storage(e.into()))?
        {
            let (k, v) = entry.map_err(|e| storage(e.into()))?;
            let seq = k.value();
            let (_, stream, _) =
                schema::decode_record(v.value()).ok_or_else(|| OpenError::Storage {
                    path: path.to_path_buf(),
                    message: format!("record {seq} is malformed; run `cmdlog verify`"),
                })?;
            if let Some(key) = stream {
                pending.push(key, seq);
            }
        }
        Ok(pending)
    }
}

/// What a failed creation removes: the folder it made (when it is still empty;
/// the log file itself is never removed, see `create.rs`).
#[derive(Default)]
struct Created {
    folder: Option<PathBuf>,
}

impl Created {
    fn remove(&self) {
        if let Some(folder) = &self.folder {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Opens (creating it if needed, truncating it when asked) a file readable and
/// writable by its owner only, never through a link.
fn owner_only_file(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    cmdlog_common::private_fs::open_or_create_private_truncating(path, truncate)
}

/// Checks that `path`, where it exists, is a regular file of this user that no
/// one else can write: a log's folder may come from elsewhere (a cloned
/// repository's `.cmdlog/`, a shared temporary folder), and a link planted as
/// `log.redb-wal` would have the log truncate and overwrite whatever it names.
/// Checks the folder that holds the log at `path`: a link, another user's, or
/// one others can write is refused ([`OpenError::Untrusted`]; see
/// [`cmdlog_common::private_fs::foreign_folder`]). Every open does; a caller
/// about to say "no log here" does it first.
pub fn check_own_folder(path: &Path) -> Result<(), OpenError> {
    let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    match cmdlog_common::private_fs::foreign_folder(folder) {
        None => Ok(()),
        Some(problem) => Err(OpenError::Untrusted {
            path: folder.to_path_buf(),
            problem,
        }),
    }
}

pub(crate) fn check_own_file(path: &Path) -> Result<(), OpenError> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(OpenError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let problem = if meta.file_type().is_symlink() {
        "is a symbolic link".to_string()
    } else if !meta.is_file() {
        "is not a regular file".to_string()
    } else if meta.uid() != cmdlog_common::private_fs::current_uid() {
        format!("belongs to another user (uid {})", meta.uid())
    } else if meta.mode() & 0o022 != 0 {
        format!(
            "is mode 0{:o}: others can write it (`chmod 600` it if it is yours)",
            meta.mode() & 0o777
        )
    } else {
        return Ok(());
    };
    Err(OpenError::Untrusted {
        path: path.to_path_buf(),
        problem,
    })
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Retries `open` while another process holds the file, up to `wait`.
pub(super) fn waiting_for_lock<T>(
    path: &Path,
    wait: Duration,
    mut open: impl FnMut() -> Result<T, DatabaseError>,
) -> Result<T, OpenError> {
    let deadline = Instant::now() + wait;
    loop {
        match open() {
            Err(DatabaseError::DatabaseAlreadyOpen) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(open_error(path, e)),
            Ok(db) => return Ok(db),
        }
    }
}

pub(super) fn open_error(path: &Path, e: DatabaseError) -> OpenError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path: path.to_path_buf(),
        },
        DatabaseError::RepairAborted => OpenError::NeedsRecovery {
            path: path.to_path_buf(),
        },
        DatabaseError::Storage(redb::StorageError::Io(source)) => OpenError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => OpenError::Storage {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    }
}

/// Records in `META` that the `streams` table is complete through the head, for a
/// log written before the stream index was deferred (which has no such entry):
/// from now on the writer defers entries, and a crash must not hide them.
fn mark_streams_through(db: &Database, path: &Path) -> Result<(), OpenError> {
    let storage = storage_error(path);
    let read = db.begin_read().map_err(|e| storage(e.into()))?;
    let meta = read.open_table(META).map_err(|e| storage(e.into()))?;
    if meta
        .get(schema::STREAMS_THROUGH)
        .map_err(|e| storage(e.into()))?
        .is_some()
    {
        return Ok(());
    }
    let records = read.open_table(RECORDS).map_err(|e| storage(e.into()))?;
    let head = records
        .last()
        .map_err(|e| storage(e.into()))?
        .map_or(0, |(k, _)| k.value());
    drop((records, meta, read));
    let txn = db.begin_write().map_err(|e| storage(e.into()))?;
    txn.open_table(META)
        .map_err(|e| storage(e.into()))?
        .insert(schema::STREAMS_THROUGH, head.to_le_bytes().as_slice())
        .map_err(|e| storage(e.into()))?;
    txn.commit().map_err(|e| storage(e.into()))?;
    Ok(())
}
