//! A log read through the process that holds it ([`crate::holder`]): the same
//! methods, answered by the holder's open log.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::error::OpenError;
use crate::holder::Remote;

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
        let path = path.as_ref().to_path_buf();
        let remote =
            Remote::connect(&path).map_err(|_| OpenError::Locked { path: path.clone() })?;
        let head = remote.head().map_err(|e| OpenError::Storage {
            path: path.clone(),
            message: e.to_string(),
        })?;
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
}
