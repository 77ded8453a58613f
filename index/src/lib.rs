//! A full-text search index of a log: one more projection, built by replaying
//! the log, kept beside it (`.cmdlog/index/`), thrown away and rebuilt at
//! will, never the source of truth. Each commit of the index records which log
//! it covers and through which seq (with that seq's chain hash), so an index
//! of another log, or of a log that was rewritten, is refused rather than
//! believed. tantivy does the indexing and the searching (`fields.rs`,
//! `document.rs`, `query.rs`).

mod document;
mod fields;
mod query;

use std::path::{Path, PathBuf};

use cmdlog_engine::Event;
use cmdlog_store::{Log, ReadError, Seq};
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use tantivy::collector::{Count, TopDocs};

use tantivy::query::{BooleanQuery, Occur, RangeQuery};
use tantivy::{Index, IndexWriter, ReloadPolicy, Term};

pub use document::TEXT_BYTES_MAX;
pub use query::{MAX_HITS, QUERY_CHARS_MAX, QueryError};

use fields::Fields;

/// The index's memory while it indexes (one thread).
const WRITER_BYTES: usize = 32 * 1024 * 1024;
/// Events indexed between two commits while building.
const COMMIT_EVERY: usize = 50_000;

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
    /// The query was refused.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// What an index's last commit says it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// One hit: the event, and the words that matched in it.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// The event's seq (`cmdlog show SEQ`).
    pub seq: Seq,
    /// Its session.
    pub session: Option<String>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it was appended, unix ms.
    pub at: u64,
    /// How well it matches (higher is better).
    pub score: f32,
    /// A passage of the event's text around the match.
    pub snippet: String,
    /// Byte ranges of `snippet` that matched.
    #[serde(skip)]
    pub highlights: Vec<std::ops::Range<usize>>,
}

impl Hit {
    /// The snippet with each match between `open` and `close`.
    pub fn marked(&self, open: &str, close: &str) -> String {
        let mut s = String::with_capacity(self.snippet.len() + self.highlights.len() * 4);
        let mut at = 0;
        for r in &self.highlights {
            s.push_str(&self.snippet[at..r.start]);
            s.push_str(open);
            s.push_str(&self.snippet[r.clone()]);
            s.push_str(close);
            at = r.end;
        }
        s.push_str(&self.snippet[at..]);
        s
    }
}

/// The index of a log, open.
pub struct SearchIndex {
    dir: PathBuf,
    index: Index,
    fields: Fields,
}

/// Where the index of the log at `log` lives: `index/` beside it.
pub fn dir_of(log: &Path) -> PathBuf {
    log.parent().unwrap_or(Path::new(".")).join("index")
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

    /// Indexes what the log holds past what the index covers; refuses an
    /// index of another log, or of a log that was rewritten. Returns how many
    /// events were added and the seq it now covers through.
    pub fn sync(&self, log: &Log) -> Result<(u64, Seq), IndexError> {
        let log_id = cmdlog_engine::identity::read_identity(log)?
            .map(|i| i.id)
            .unwrap_or_default();
        let from = match self.covered() {
            None => 1,
            Some(c) => {
                if c.log_id != log_id {
                    return Err(IndexError::OtherLog {
                        dir: self.dir.clone(),
                        index: c.log_id,
                        log: log_id,
                    });
                }
                let there = log.get(c.through)?.map(|r| r.hash.to_hex());
                if c.through > 0 && there.as_deref() != Some(c.hash.as_str()) {
                    return Err(IndexError::Diverged {
                        dir: self.dir.clone(),
                        through: c.through,
                    });
                }
                c.through + 1
            }
        };
        let head = log.head();
        if from > head.seq {
            return Ok((0, head.seq));
        }
        let mut writer: IndexWriter = self
            .index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(|e| self.err(e))?;
        let (mut added, mut pending, mut last) = (0u64, 0usize, (from - 1, None));
        let mut failed = None;
        log.scan(from, head.seq, |record| {
            if let Ok(event) = Event::decode(record.seq, &record.bytes) {
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
                if let Err(e) = self.commit(&mut writer, &log_id, last.0, last.1.as_ref()) {
                    failed = Some(e);
                    return false;
                }
            }
            true
        })?;
        if let Some(e) = failed {
            return Err(self.err(e));
        }
        self.commit(&mut writer, &log_id, last.0, last.1.as_ref())
            .map_err(|e| self.err(e))?;
        writer.wait_merging_threads().map_err(|e| self.err(e))?;
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

    /// The events that match `query`, best first, at most `limit`; and how
    /// many match in all.
    pub fn search(
        &self,
        log: &Log,
        query: &str,
        limit: usize,
    ) -> Result<(Vec<Hit>, usize), IndexError> {
        self.search_in(log, query, limit, None)
    }

    /// [`SearchIndex::search`] among the events appended in `span` (unix ms,
    /// from included, to excluded).
    pub fn search_in(
        &self,
        log: &Log,
        query: &str,
        limit: usize,
        span: Option<(Option<u64>, Option<u64>)>,
    ) -> Result<(Vec<Hit>, usize), IndexError> {
        let mut parsed = query::parse(&self.index, &self.fields, query)?;
        if let Some((from, to)) = span {
            let at =
                |t: u64| Term::from_field_i64(self.fields.at, i64::try_from(t).unwrap_or(i64::MAX));
            let range = RangeQuery::new(
                from.map_or(Bound::Unbounded, |t| Bound::Included(at(t))),
                to.map_or(Bound::Unbounded, |t| Bound::Excluded(at(t))),
            );
            parsed = Box::new(BooleanQuery::new(vec![
                (Occur::Must, parsed),
                (Occur::Must, Box::new(range)),
            ]));
        }
        let reader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| self.err(e))?;
        let searcher = reader.searcher();
        let limit = limit.clamp(1, MAX_HITS);
        let (top, total) = searcher
            .search(
                &parsed,
                &(TopDocs::with_limit(limit).order_by_score(), Count),
            )
            .map_err(|e| self.err(e))?;
        let snippets =
            tantivy::snippet::SnippetGenerator::create(&searcher, &parsed, self.fields.text)
                .map_err(|e| self.err(e))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let segment = searcher.segment_reader(address.segment_ord);
            let seqs = segment.fast_fields().u64("seq").map_err(|e| self.err(e))?;
            let Some(seq) = seqs.first(address.doc_id) else {
                continue;
            };
            let Some(record) = log.get(seq)? else {
                continue;
            };
            let Ok(event) = Event::decode(record.seq, &record.bytes) else {
                continue;
            };
            let text = document::text_of(&event, &|h| blob(log, h));
            let snippet = snippets.snippet(&text);
            let (snippet, highlights) = if snippet.fragment().is_empty() {
                let mut end = text.len().min(160);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                (text[..end].to_string(), Vec::new())
            } else {
                (
                    snippet.fragment().to_string(),
                    snippet.highlighted().to_vec(),
                )
            };
            hits.push(Hit {
                seq,
                session: event.session.clone(),
                kind: event.data.type_name().to_string(),
                at: event.at,
                score,
                snippet,
                highlights,
            });
        }
        Ok((hits, total))
    }
}

/// What `verify` finds of an index against its log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// The seq the index says it covers through (0: nothing).
    pub through: Seq,
    /// The log's head.
    pub head: Seq,
    /// Events of the log up to `through` the index does not hold (the first
    /// [`NAMED_MAX`]).
    pub missing: Vec<Seq>,
    /// How many in all.
    pub missing_count: u64,
    /// Documents for seqs the log does not have up to `through`, or twice,
    /// or past `through` (the first [`NAMED_MAX`]).
    pub extra: Vec<Seq>,
    /// How many in all.
    pub extra_count: u64,
}

/// The most seqs a [`Coverage`] names of each kind.
pub const NAMED_MAX: usize = 20;

impl Coverage {
    /// Whether the index holds exactly the log's events through its head.
    pub fn exact(&self) -> bool {
        self.missing_count == 0 && self.extra_count == 0 && self.through == self.head
    }
}

impl SearchIndex {
    /// Checks that the index holds one document for each event of the log
    /// through the seq it says it covers, and nothing else.
    pub fn check(&self, log: &Log) -> Result<Coverage, IndexError> {
        let through = self.covered().map_or(0, |c| c.through);
        let mut seen = vec![
            0u8;
            usize::try_from(through)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        ];
        let mut coverage = Coverage {
            through,
            head: log.head().seq,
            ..Coverage::default()
        };
        let extra = |c: &mut Coverage, seq: Seq| {
            c.extra_count += 1;
            if c.extra.len() < NAMED_MAX {
                c.extra.push(seq);
            }
        };
        let reader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| self.err(e))?;
        let searcher = reader.searcher();
        for segment in searcher.segment_readers() {
            let seqs = segment.fast_fields().u64("seq").map_err(|e| self.err(e))?;
            for doc in segment.doc_ids_alive() {
                let Some(seq) = seqs.first(doc) else {
                    continue;
                };
                match seen.get_mut(usize::try_from(seq).unwrap_or(usize::MAX)) {
                    Some(n) if seq > 0 && *n == 0 => *n = 1,
                    _ => extra(&mut coverage, seq),
                }
            }
        }
        log.scan(1, through, |record| {
            let indexed = seen[usize::try_from(record.seq).unwrap_or(0)] == 1;
            seen[usize::try_from(record.seq).unwrap_or(0)] = 2;
            let event = Event::decode(record.seq, &record.bytes).is_ok();
            if event && !indexed {
                coverage.missing_count += 1;
                if coverage.missing.len() < NAMED_MAX {
                    coverage.missing.push(record.seq);
                }
            }
            true
        })?;
        // Marked seen but never met in the log, or an undecodable record indexed.
        for (seq, n) in seen.iter().enumerate().skip(1) {
            if *n == 1 {
                extra(&mut coverage, seq as Seq);
            }
        }
        Ok(coverage)
    }
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

/// Makes the index of `log` at `dir` again, from nothing.
pub fn rebuild(dir: &Path, log: &Log) -> Result<(u64, Seq), IndexError> {
    if dir.exists() {
        clear(dir).map_err(|e| IndexError::Tantivy {
            dir: dir.to_path_buf(),
            source: e.into(),
        })?;
    }
    SearchIndex::open(dir)?.sync(log)
}

/// The blob of `log` whose hash is `hex`, if it has it.
fn blob(log: &Log, hex: &str) -> Option<Vec<u8>> {
    log.get_blob(&cmdlog_store::BlobHash::from_hex(hex)?).ok()?
}

fn covered_of(index: &Index) -> Option<Covered> {
    let payload = index.load_metas().ok()?.payload?;
    serde_json::from_str(&payload).ok()
}
