//! Import checkpoints: each transcript file imported whole is recorded in the
//! log (`import/checkpoint`: its path, size and BLAKE3 hash), with its last
//! items. An import that finds a file of the recorded size and hash knows
//! every item of it is in the log and does not parse it again; a file that
//! grew or changed is read whole and its items checked against their keys.

use std::collections::HashMap;
use std::path::Path;

use cmdlog_engine::event::{IMPORT_STREAM, ImportCheckpoint};
use cmdlog_engine::{Event, EventData};
use cmdlog_store::{Log, ReadError};

use crate::plan::{Planned, PlannedData};

/// The files of one source the log has checkpoints for: size and hash of the
/// latest of each.
pub(crate) struct Checkpoints {
    source: String,
    files: HashMap<String, (u64, String)>,
}

impl Checkpoints {
    /// The checkpoints of `source` (`codex transcript`, …) in `log`.
    pub(crate) fn read(log: &Log, source: &str) -> Result<Self, ReadError> {
        let mut files = HashMap::new();
        for record in log.stream(IMPORT_STREAM, 0)? {
            if let Ok(event) = Event::decode(record.seq, &record.bytes)
                && let EventData::ImportCheckpoint(c) = event.data
                && c.source == source
            {
                files.insert(c.file, (c.bytes, c.blake3));
            }
        }
        Ok(Checkpoints {
            source: source.to_string(),
            files,
        })
    }

    /// Whether `file`, now `bytes` with hash `hash`, was imported as it is.
    pub(crate) fn unchanged(&self, file: &Path, bytes: u64, hash: &str) -> bool {
        self.files
            .get(&key(file))
            .is_some_and(|(b, h)| *b == bytes && h == hash)
    }

    /// The event that records `file` imported as `bytes` bytes hashing to
    /// `hash`; remembered, so that a second root naming the file skips it.
    pub(crate) fn record(&mut self, file: &Path, bytes: u64, hash: String) -> Planned {
        let file = key(file);
        self.files.insert(file.clone(), (bytes, hash.clone()));
        Planned {
            session: None,
            observed: None,
            data: PlannedData::Ready(EventData::ImportCheckpoint(ImportCheckpoint {
                source: self.source.clone(),
                file,
                bytes,
                blake3: hash,
            })),
            tie: None,
        }
    }
}

/// The BLAKE3 hash of a file's bytes, in hex.
pub(crate) fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// A file's key: its absolute path (as given when it cannot be made absolute).
fn key(file: &Path) -> String {
    std::path::absolute(file)
        .unwrap_or_else(|_| file.to_path_buf())
        .to_string_lossy()
        .into_owned()
}
