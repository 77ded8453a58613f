//! A log opened through the process that holds it ([`crate::holder`]): the
//! same methods, answered by the holder's open log; appends, when the open
//! allows them, sent to the holder's group commit.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::error::{AppendError, OpenError, ReadError};
use crate::holder::Remote;
use crate::limits::APPEND_AT_TRIES;
use crate::record::{CommittedRecord, Head, NewRecord, Receipt, Seq};
use crate::shared::check_records;
use crate::writer::{BuildRecords, Request, publish_head, run_hook};

use super::{Db, Log, LogConfig, Shared};

impl Log {
    /// Opens the log at `path` through the process that holds it (a running
    /// `cmdlog serve`, `acp`, `push --follow` or `witness`), as of its head
    /// now: reads are answered by the holder, appends refused. `Locked` when
    /// no holder of this user's answers for it.
    pub fn open_through_holder(
        path: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        Self::through_holder(path.as_ref(), config, false)
    }

    /// Opens the log at `path` for appending: through the process that holds
    /// it, which appends in its own group commit, or — held by none —
    /// short-lived ([`Log::open_short_lived`]).
    pub fn open_short_lived_or_through_holder(
        path: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        Self::appending_through_holder(path.as_ref(), config, |p, c| Self::open_short_lived(p, c))
    }

    /// Opens the log at `path` writable ([`Log::open`]) or, while another
    /// process holds it, through that process, which appends in its own group
    /// commit.
    pub fn open_or_through_holder(
        path: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<Log, OpenError> {
        Self::appending_through_holder(path.as_ref(), config, |p, c| Self::open(p, c))
    }

    /// Through the holder of the log at `path`, appending; held by none,
    /// `open` itself.
    fn appending_through_holder(
        path: &Path,
        config: LogConfig,
        open: impl FnOnce(&Path, LogConfig) -> Result<Log, OpenError>,
    ) -> Result<Log, OpenError> {
        if let Ok(log) = Self::through_holder(path, config.clone(), true) {
            return Ok(log);
        }
        match open(path, config.clone()) {
            // Its holder started after the first look.
            Err(OpenError::Locked { .. }) => Self::through_holder(path, config, true),
            other => other,
        }
    }

    fn through_holder(path: &Path, config: LogConfig, writable: bool) -> Result<Log, OpenError> {
        let path = path.to_path_buf();
        let mut remote =
            Remote::connect(&path).map_err(|_| OpenError::Locked { path: path.clone() })?;
        // A holder that does not answer is going away: the log is its until then.
        let head = remote
            .head()
            .map_err(|_| OpenError::Locked { path: path.clone() })?;
        remote.writable = writable;
        *remote.hooked.get_mut().unwrap_or_else(|p| p.into_inner()) = head.seq;
        let shared = Arc::new(Shared::new(
            Db::Remote,
            config,
            head,
            Default::default(),
            false,
            Default::default(),
            None,
        ));
        Ok(Log {
            shared,
            path,
            wal_discard: None,
            requests: Mutex::new(None),
            writer: Mutex::new(None),
            inline: None,
            alone_through: None,
            presence: None,
            remote: Some(remote),
            after_holder: Default::default(),
        })
    }

    /// The holder answering this open's reads, if another process holds the log.
    pub(super) fn remote(&self) -> Option<&Remote> {
        self.remote.as_ref()
    }

    /// Whether this open reads through the process that holds the log.
    pub fn is_through_holder(&self) -> bool {
        self.remote.is_some()
    }

    /// Answers a read of an open through a holder: by the holder, or — once
    /// it stopped mid-read — by a read-only open of the log itself made then
    /// (records never change: the answer is the one the holder would have
    /// given). `None` for an open that does not read through a holder.
    pub(super) fn read_through<T>(
        &self,
        ask: impl FnOnce(&Remote) -> Result<T, ReadError>,
        local: impl FnOnce(&Log) -> Result<T, ReadError>,
    ) -> Option<Result<T, ReadError>> {
        let remote = self.remote.as_ref()?;
        if let Some(log) = self.after_holder.get() {
            return Some(local(log));
        }
        Some(match ask(remote) {
            Err(e) if remote.is_lost() && !remote.writable => match self.open_after_holder() {
                Some(log) => local(log),
                None => Err(e),
            },
            other => other,
        })
    }

    /// The log itself, once its holder is gone, if it holds at least what
    /// this open answers for.
    pub(super) fn open_after_holder(&self) -> Option<&Log> {
        let config = self.shared.config.clone();
        let log = match Log::open_read_only(&self.path, config.clone()) {
            // Killed, it left its frames to recover: recovered in memory.
            Err(OpenError::NeedsRecovery { .. }) => {
                Log::open_recovered_in_memory(&self.path, config).ok()?
            }
            other => other.ok()?,
        };
        if log.head().seq < self.head().seq {
            return None;
        }
        let _ = self.after_holder.set(Box::new(log));
        self.after_holder.get().map(|log| &**log)
    }

    /// Carries out `request` through the holder and answers it before returning.
    pub(super) fn commit_through_holder(
        &self,
        remote: &Remote,
        request: Request,
    ) -> Result<(), AppendError> {
        if !remote.writable {
            return Err(AppendError::ReadOnly);
        }
        match request {
            Request::Append { records, reply } => {
                let appended = remote.append(&records).and_then(|receipt| {
                    self.hook_through_holder(remote, receipt.last)
                        .map(|()| receipt)
                });
                let _ = reply.send(appended);
            }
            Request::AppendBuilt { build, reply } => {
                let _ = reply.send(self.append_built_through_holder(remote, build));
            }
            Request::PutBlob { hash, bytes, reply } => {
                let stored = remote
                    .put_blob(&bytes)
                    .and_then(|stored| match stored == hash {
                        true => Ok(()),
                        false => Err(AppendError::Holder {
                            message: format!(
                                "it stored blob {} under {}",
                                hash.to_hex(),
                                stored.to_hex()
                            ),
                        }),
                    });
                let _ = reply.send(stored);
            }
            Request::RemoveBlobs { hashes, reply } => {
                let _ = reply.send(remote.remove_blobs(&hashes));
            }
            // Snapshots are the holder's cache, written by the holder.
            Request::PutSnapshot { reply, .. } => {
                let _ = reply.send(Err(AppendError::ReadOnly));
            }
            Request::Shutdown => {}
        }
        Ok(())
    }

    /// Builds the records for the seq the holder's head gives the next append
    /// and asks it to append them there; builds again if another append came
    /// first.
    fn append_built_through_holder(
        &self,
        remote: &Remote,
        mut build: BuildRecords,
    ) -> Result<Receipt, AppendError> {
        for _ in 0..APPEND_AT_TRIES {
            let first = remote
                .head()
                .map_err(|e| AppendError::Holder {
                    message: e.to_string(),
                })?
                .seq
                + 1;
            let records: Vec<NewRecord> = build(first);
            check_records(&self.shared.config, &records)?;
            if let Some(receipt) = remote.append_at(first, &records)? {
                self.hook_through_holder(remote, receipt.last)?;
                return Ok(receipt);
            }
        }
        Err(AppendError::Holder {
            message: format!(
                "{APPEND_AT_TRIES} other appends in a row took the seq this one was built for; nothing was appended: run it again"
            ),
        })
    }

    /// Runs the commit hook over every record after the last it saw, through
    /// `through` (whoever appended them: the fold must see each, in order), and
    /// makes `through` this open's head.
    fn hook_through_holder(&self, remote: &Remote, through: Seq) -> Result<(), AppendError> {
        let lost = |e: crate::error::ReadError| AppendError::Holder {
            message: format!("the append is in the log, but reading it back failed: {e}"),
        };
        let mut hooked = remote.hooked.lock().unwrap_or_else(|p| p.into_inner());
        while *hooked < through {
            let page = remote.page(*hooked + 1, through).map_err(lost)?;
            let Some(last) = page.last() else {
                break;
            };
            let head = Head {
                seq: last.seq,
                hash: last.hash,
            };
            let committed: Vec<CommittedRecord<'_>> = page
                .iter()
                .map(|r| CommittedRecord {
                    seq: r.seq,
                    stream: r.stream.as_deref(),
                    bytes: &r.bytes,
                })
                .collect();
            run_hook(&self.shared, &committed);
            publish_head(&self.shared, head);
            *hooked = head.seq;
        }
        match self.poisoned() {
            Some(cause) => Err(AppendError::Poisoned { cause }),
            None => Ok(()),
        }
    }

    /// Makes what the holder appended since this open's last append visible
    /// to its commit hook and head.
    pub(super) fn catch_up_through_holder(&self, remote: &Remote) -> Result<(), AppendError> {
        let head = remote.head().map_err(|e| AppendError::Holder {
            message: e.to_string(),
        })?;
        self.hook_through_holder(remote, head.seq)
    }
}
