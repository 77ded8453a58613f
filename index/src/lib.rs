//! A full-text search index of a log: one more projection, built by replaying
//! the log, kept beside it (`.cmdlog/index/`), thrown away and rebuilt at
//! will, never the source of truth. Each commit of the index records which log
//! it covers and through which seq (with that seq's chain hash), so an index
//! of another log, or of a log that was rewritten, is refused rather than
//! believed. tantivy does the indexing and the searching (`fields.rs`,
//! `document.rs`, `query.rs`).

mod beside;
mod coverage;
mod document;
mod fields;
mod limits;
mod phrase;
mod query;
mod search;

use std::path::{Path, PathBuf};

use cmdlog_store::{Log, ReadError, Seq};
use serde::{Deserialize, Serialize};
use tantivy::directory::error::LockError;
use tantivy::{Index, IndexWriter, ReloadPolicy};

pub use beside::{Beside, Refresh, beside, dir_of, keep_current};
pub use coverage::{Coverage, Findings, verify_beside};
pub use limits::{MAX_HITS, NAMED_MAX, QUERY_CHARS_MAX, TEXT_BYTES_MAX};
pub use query::{QueryError, check as check_query};
pub use search::{Hit, SessionHits, Span};

use fields::Fields;

use limits::{COMMIT_EVERY, INDEXING_THREADS, WRITER_BYTES};

/// Why the index could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The log could not be read.
    #[error("reading the log: {0}")]
    Log(#[from] ReadError),
    /// The index could not be opened, written or searched.
    #[error("the index at {dir}: {source}")]
    Tantivy {
        /// The index's folder.
        dir: PathBuf,
        /// What tantivy said.
        #[source]
        source: tantivy::TantivyError,
    },
    #[error(
        "the index at {dir} covers another log ({index}), not this one ({log}); `cmdlog index --rebuild` makes one of this log"
    )]
    /// The index covers another log.
    OtherLog {
        /// The index's folder.
        dir: PathBuf,
        /// The id of the log it covers.
        index: String,
        /// The id of this log.
        log: String,
    },
    #[error(
        "the index at {dir} covers seq {through} with a chain hash the log does not have there: the log was rewritten or replaced; `cmdlog index --rebuild`"
    )]
    /// The log holds other records where the index says it covers them.
    Diverged {
        /// The index's folder.
        dir: PathBuf,
        /// The seq it covers through.
        through: Seq,
    },
    /// The index's folder is not a folder of the user's own, owner-only.
    #[error("the index folder {dir}: {source}")]
    Folder {
        /// The index's folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Another process is writing the index (a daemon keeping it current).
    #[error("the index at {dir} is being written by another process")]
    Busy {
        /// The index's folder.
        dir: PathBuf,
    },
    /// The query was refused.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// What an index's last commit says it covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Covered {
    /// The format of the index (its schema).
    pub v: u32,
    /// The log's id (`log/identity`), or empty for a log without one.
    pub log_id: String,
    /// Every seq from 1 through this one is indexed.
    pub through: Seq,
    /// The log's chain hash at `through`, hex.
    pub hash: String,
}

/// The schema's version: an index of another is rebuilt.
const FORMAT: u32 = 1;

/// The index of a log, open.
pub struct SearchIndex {
    dir: PathBuf,
    index: Index,
    fields: Fields,
    /// Where a search that holds a phrase runs when not on the process's
    /// shared pool ([`SearchIndex::set_phrase_threads`]).
    phrases_on: Option<tantivy::Executor>,
}

impl SearchIndex {
    /// Opens the index in `dir`, or makes an empty one. One of another format
    /// (or one tantivy cannot open) is made again, empty: it is only a
    /// projection.
    pub fn open(dir: &Path) -> Result<SearchIndex, IndexError> {
        let err = |source| IndexError::Tantivy {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| err(e.into()))?;
        let (schema, fields) = fields::schema();
        let opened = Index::open_in_dir(dir)
            .ok()
            .filter(|i| i.schema() == schema)
            .filter(|i| covered_of(i).is_none_or(|c| c.v == FORMAT));
        let index = match opened {
            Some(index) => index,
            None => {
                clear(dir).map_err(|e| err(e.into()))?;
                Index::create_in_dir(dir, schema).map_err(err)?
            }
        };
        fields::register(&index);
        Ok(SearchIndex {
            dir: dir.to_path_buf(),
            index,
            fields,
            phrases_on: None,
        })
    }

    /// Opens the index in `dir` as it is, refusing one tantivy cannot open
    /// or of another format (for `verify`, which changes nothing).
    pub fn open_existing(dir: &Path) -> Result<SearchIndex, IndexError> {
        let err = |source| IndexError::Tantivy {
            dir: dir.to_path_buf(),
            source,
        };
        let index = Index::open_in_dir(dir).map_err(err)?;
        let (schema, fields) = fields::schema();
        let format = covered_of(&index).map_or(FORMAT, |c| c.v);
        if index.schema() != schema || format != FORMAT {
            return Err(err(tantivy::TantivyError::SchemaError(format!(
                "another format (v{format}); this cmdlog reads v{FORMAT}"
            ))));
        }
        fields::register(&index);
        Ok(SearchIndex {
            dir: dir.to_path_buf(),
            index,
            fields,
            phrases_on: None,
        })
    }

    /// What the index covers, if it covers anything.
    pub fn covered(&self) -> Option<Covered> {
        covered_of(&self.index)
    }

    fn err(&self, source: tantivy::TantivyError) -> IndexError {
        IndexError::Tantivy {
            dir: self.dir.clone(),
            source,
        }
    }

    /// Takes the index's writer (one process at a time writes an index).
    pub(crate) fn writer(&self) -> Result<IndexWriter, IndexError> {
        match self
            .index
            .writer_with_num_threads(INDEXING_THREADS, WRITER_BYTES)
        {
            Ok(writer) => Ok(writer),
            Err(tantivy::TantivyError::LockFailure(LockError::LockBusy, _)) => {
                Err(IndexError::Busy {
                    dir: self.dir.clone(),
                })
            }
            Err(e) => Err(self.err(e)),
        }
    }

    /// Indexes what the log holds past what the index covers; refuses an
    /// index of another log, or of a log that was rewritten. Returns how many
    /// events were added and the seq it now covers through.
    pub fn sync(&self, log: &Log) -> Result<(u64, Seq), IndexError> {
        let mut writer = self.writer()?;
        let done = self.sync_with(&mut writer, log)?;
        self.settle(writer)?;
        Ok(done)
    }

    /// [`SearchIndex::sync`] with a writer already taken (one that
    /// [`crate::keep_current`] holds while appends keep coming).
    pub(crate) fn sync_with(
        &self,
        writer: &mut IndexWriter,
        log: &Log,
    ) -> Result<(u64, Seq), IndexError> {
        // What the index covers is read once its writer is ours, so two
        // processes syncing in turn never index a seq twice.
        let log_id = log_id(log)?;
        let from = self.continues_at(log, &log_id)?;
        if from > log.head().seq {
            return Ok((0, from - 1));
        }
        self.index_from(writer, log, &log_id, from)
    }

    /// The seq after the last the index covers, once its last commit is
    /// known to be of this log (`log_id`) and of its records as they are: an
    /// index of another log, or of a log rewritten since, is refused.
    fn continues_at(&self, log: &Log, log_id: &str) -> Result<Seq, IndexError> {
        let Some(c) = self.covered() else {
            return Ok(1);
        };
        if !same_log(&c.log_id, log_id) {
            return Err(IndexError::OtherLog {
                dir: self.dir.clone(),
                index: c.log_id,
                log: log_id.to_string(),
            });
        }
        let there = log.get(c.through)?.map(|r| r.hash.to_hex());
        if c.through > 0 && there.as_deref() != Some(c.hash.as_str()) {
            return Err(IndexError::Diverged {
                dir: self.dir.clone(),
                through: c.through,
            });
        }
        Ok(c.through + 1)
    }

    /// Lets the writer's merges of the segments it wrote finish, so a search
    /// reads few segments.
    pub(crate) fn settle(&self, writer: IndexWriter) -> Result<(), IndexError> {
        writer.wait_merging_threads().map_err(|e| self.err(e))
    }

    /// Makes the index of `log` again, from nothing: every document goes, in
    /// the same commit that covers the log's head.
    pub fn rebuild(&self, log: &Log) -> Result<(u64, Seq), IndexError> {
        let mut writer = self.writer()?;
        writer.delete_all_documents().map_err(|e| self.err(e))?;
        let done = self.index_from(&mut writer, log, &log_id(log)?, 1)?;
        self.settle(writer)?;
        Ok(done)
    }

    /// Indexes the log from `from` to its head, committing every
    /// [`COMMIT_EVERY`] events and at the end.
    fn index_from(
        &self,
        writer: &mut IndexWriter,
        log: &Log,
        log_id: &str,
        from: Seq,
    ) -> Result<(u64, Seq), IndexError> {
        let head = log.head();
        let (mut added, mut pending, mut last) = (0u64, 0usize, (from - 1, None));
        if from > 1 {
            last.1 = log.get(from - 1)?.map(|r| r.hash);
        }
        let mut failed = None;
        log.scan(from, head.seq, |record| {
            if let Some(event) = document::View::read(record.seq, &record.bytes) {
                let doc = document::document(&self.fields, &event, &|h| blob(log, h));
                if let Err(e) = writer.add_document(doc) {
                    failed = Some(e);
                    return false;
                }
                added += 1;
                pending += 1;
            }
            last = (record.seq, Some(record.hash));
            if pending >= COMMIT_EVERY {
                pending = 0;
                if let Err(e) = self.commit(writer, log_id, last.0, last.1.as_ref()) {
                    failed = Some(e);
                    return false;
                }
            }
            true
        })?;
        if let Some(e) = failed {
            return Err(self.err(e));
        }
        self.commit(writer, log_id, last.0, last.1.as_ref())
            .map_err(|e| self.err(e))?;
        Ok((added, last.0))
    }

    fn commit(
        &self,
        writer: &mut IndexWriter,
        log_id: &str,
        through: Seq,
        hash: Option<&cmdlog_store::ChainHash>,
    ) -> tantivy::Result<()> {
        let covered = Covered {
            v: FORMAT,
            log_id: log_id.to_string(),
            through,
            hash: hash.map(|h| h.to_hex()).unwrap_or_default(),
        };
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&serde_json::to_string(&covered).expect("serializes"));
        prepared.commit()?;
        Ok(())
    }

    /// A reader of the index's last commit. Another process (the daemon
    /// keeping the index current) may commit and merge between our reading
    /// the commit's list of segments and opening them, and delete the ones
    /// merged away: the reader is opened again on the newer commit.
    fn searcher(&self) -> Result<tantivy::Searcher, IndexError> {
        let mut tries = 0;
        loop {
            let opened: Result<tantivy::IndexReader, _> = self
                .index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into();
            match opened {
                Ok(reader) => return Ok(reader.searcher()),
                Err(tantivy::TantivyError::OpenReadError(
                    tantivy::directory::error::OpenReadError::FileDoesNotExist(_),
                )) if tries < limits::READER_RETRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }
}

/// Whether an index of the log with id `indexed` may cover the log with id
/// `log`: the same id, or an index made before the log had one (a log gains
/// its identity when a verb first needs it). The chain hash at the covered
/// seq is what proves the same records either way.
fn same_log(indexed: &str, log: &str) -> bool {
    indexed.is_empty() || indexed == log
}

/// The log's id (`log/identity`), empty for a log without one.
fn log_id(log: &Log) -> Result<String, IndexError> {
    Ok(cmdlog_engine::identity::read_identity(log)?
        .map(|i| i.id)
        .unwrap_or_default())
}

/// Empties the index's folder (only files and folders tantivy makes there).
fn clear(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// The blob of `log` whose hash is `hex`, if it has it.
fn blob(log: &Log, hex: &str) -> Option<Vec<u8>> {
    log.get_blob(&cmdlog_store::BlobHash::from_hex(hex)?).ok()?
}

fn covered_of(index: &Index) -> Option<Covered> {
    let payload = index.load_metas().ok()?.payload?;
    serde_json::from_str(&payload).ok()
}
