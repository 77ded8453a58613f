//! Searching the index: the hits of a query, best first, each with a
//! passage of its event's text around the words that matched.

use std::ops::Bound;

use cmdlog_store::{Log, Seq};
use serde::Serialize;
use std::collections::HashMap;

use tantivy::collector::{Collector, Count, SegmentCollector, TopDocs};
use tantivy::columnar::StrColumn;
use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query, RangeQuery};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, DocId, Executor, Score, Searcher, SegmentOrdinal, SegmentReader, Term};

use crate::limits::{MAX_HITS, SEARCH_THREADS_MAX};
use crate::query;
use crate::{IndexError, SearchIndex, blob, document};

/// One hit: the event, and the words that matched in it. As JSON, its
/// snippet has each match between `[` and `]`.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The event's seq (`cmdlog show SEQ`).
    pub seq: Seq,
    /// Its session.
    pub session: Option<String>,
    /// Its type.
    pub kind: String,
    /// When it was appended, unix ms.
    pub at: u64,
    /// How well it matches (higher is better).
    pub score: f32,
    /// A passage of the event's text around the match.
    pub snippet: String,
    /// Byte ranges of `snippet` that matched.
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

impl Serialize for Hit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            seq: Seq,
            session: Option<&'a str>,
            #[serde(rename = "type")]
            kind: &'a str,
            at: u64,
            score: f32,
            snippet: String,
        }
        Shown {
            seq: self.seq,
            session: self.session.as_deref(),
            kind: &self.kind,
            at: self.at,
            score: self.score,
            snippet: self.marked("[", "]"),
        }
        .serialize(s)
    }
}

impl SearchIndex {
    /// The events that match `query`, best first, at most `limit`; and how
    /// many match in all.
    pub fn search(
        &self,
        log: &Log,
        query: &str,
        limit: usize,
    ) -> Result<(Vec<Hit>, usize), IndexError> {
        self.search_in(log, query, limit, Span::default())
    }

    /// Runs each search that holds a phrase on `threads` threads, a segment
    /// each at a time (one: on the caller's thread). By default, the
    /// machine's cores, at most [`SEARCH_THREADS_MAX`].
    pub fn set_phrase_threads(&mut self, threads: usize) {
        self.phrases_on = Some(pool_of(threads.min(SEARCH_THREADS_MAX)));
    }

    /// Where a search of `query` runs: one that holds a phrase reads the
    /// positions of every event that has all its words, on every segment,
    /// and is run over the segments in parallel; any other on the caller's
    /// thread (a word's or a facet's best hits are found by skipping, and
    /// measured slower on a pool: `docs/performance.md`).
    fn executor_for(&self, query: &dyn Query) -> Executor {
        if !query::holds_phrase(query) {
            return Executor::single_thread();
        }
        // One pool for the process, made at its first phrase: the daemon
        // opens an index for each search.
        static SHARED: std::sync::OnceLock<Executor> = std::sync::OnceLock::new();
        match &self.phrases_on {
            Some(own) => own.clone(),
            None => SHARED.get_or_init(phrase_pool).clone(),
        }
    }

    /// `collector` over the events `query` matches, on the executor the
    /// query calls for.
    fn collect<C: Collector>(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        collector: &C,
    ) -> Result<C::Fruit, IndexError> {
        searcher
            .search_with_executor(
                query,
                collector,
                &self.executor_for(query),
                EnableScoring::enabled_from_searcher(searcher),
            )
            .map_err(|e| self.err(e))
    }

    /// [`SearchIndex::search`] among the events appended in `span`.
    pub fn search_in(
        &self,
        log: &Log,
        query: &str,
        limit: usize,
        span: Span,
    ) -> Result<(Vec<Hit>, usize), IndexError> {
        let parsed = self.parsed(query, span)?;
        let searcher = self.searcher()?;
        let limit = limit.clamp(1, MAX_HITS);
        let (top, total) = self.collect(
            &searcher,
            parsed.as_ref(),
            &(TopDocs::with_limit(limit).order_by_score(), Count),
        )?;
        let snippets = self.snippets(&searcher, &parsed)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            if let Some(seq) = self.seq_of(&searcher, address)?
                && let Some(hit) = hit(log, seq, score, &snippets)?
            {
                hits.push(hit);
            }
        }
        Ok((hits, total))
    }

    /// The sessions with events that match `query` in `span`, the one with
    /// the best hit first: how many of its events match, and its best hit
    /// when that is among the best [`MAX_HITS`] of all.
    pub fn search_sessions(
        &self,
        log: &Log,
        query: &str,
        span: Span,
    ) -> Result<Vec<SessionHits>, IndexError> {
        let parsed = self.parsed(query, span)?;
        let searcher = self.searcher()?;
        let (top, mut counts) = self.collect(
            &searcher,
            parsed.as_ref(),
            &(TopDocs::with_limit(MAX_HITS).order_by_score(), BySession),
        )?;
        let snippets = self.snippets(&searcher, &parsed)?;
        let mut sessions: Vec<SessionHits> = Vec::new();
        // Only each session's first (best) hit is read from the log.
        for (score, address) in top {
            let Some(seq) = self.seq_of(&searcher, address)? else {
                continue;
            };
            let Some(session) = self.session_of(&searcher, address)? else {
                continue;
            };
            let Some(count) = counts.remove(&session) else {
                continue;
            };
            let best = hit(log, seq, score, &snippets)?;
            sessions.push(SessionHits {
                session,
                count,
                best,
            });
        }
        let mut rest: Vec<SessionHits> = counts
            .into_iter()
            .map(|(session, count)| SessionHits {
                session,
                count,
                best: None,
            })
            .collect();
        rest.sort_by(|a, b| b.count.cmp(&a.count).then(a.session.cmp(&b.session)));
        sessions.extend(rest);
        Ok(sessions)
    }

    /// The snippets of `parsed`'s matches in an event's text.
    fn snippets(
        &self,
        searcher: &Searcher,
        parsed: &dyn Query,
    ) -> Result<SnippetGenerator, IndexError> {
        SnippetGenerator::create(searcher, parsed, self.fields.text).map_err(|e| self.err(e))
    }

    /// The seq of the document at `address`.
    fn seq_of(&self, searcher: &Searcher, address: DocAddress) -> Result<Option<Seq>, IndexError> {
        let segment = searcher.segment_reader(address.segment_ord);
        let seqs = segment.fast_fields().u64("seq").map_err(|e| self.err(e))?;
        Ok(seqs.first(address.doc_id))
    }

    /// The session of the document at `address`, from the session column.
    fn session_of(
        &self,
        searcher: &Searcher,
        address: DocAddress,
    ) -> Result<Option<String>, IndexError> {
        let segment = searcher.segment_reader(address.segment_ord);
        let Some(column) = segment
            .fast_fields()
            .str("session")
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        let mut session = String::new();
        for ord in column.term_ords(address.doc_id) {
            if column.ord_to_str(ord, &mut session).unwrap_or(false) {
                return Ok(Some(session));
            }
        }
        Ok(None)
    }

    /// `query` parsed, kept to `span`.
    fn parsed(&self, query: &str, span: Span) -> Result<Box<dyn Query>, IndexError> {
        let parsed = query::parse(&self.index, &self.fields, query)?;
        if span == Span::default() {
            return Ok(parsed);
        }
        let at =
            |t: u64| Term::from_field_i64(self.fields.at, i64::try_from(t).unwrap_or(i64::MAX));
        let range = RangeQuery::new(
            span.since
                .map_or(Bound::Unbounded, |t| Bound::Included(at(t))),
            span.until
                .map_or(Bound::Unbounded, |t| Bound::Excluded(at(t))),
        );
        Ok(Box::new(BooleanQuery::new(vec![
            (Occur::Must, parsed),
            (Occur::Must, Box::new(range)),
        ])))
    }
}

/// The threads a search that holds a phrase runs on, a segment each at a
/// time: the machine's cores, at most [`SEARCH_THREADS_MAX`]; the
/// caller's thread alone where that is one or no thread can be started.
fn phrase_pool() -> Executor {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(SEARCH_THREADS_MAX);
    pool_of(threads)
}

fn pool_of(threads: usize) -> Executor {
    if threads > 1
        && let Ok(pool) = Executor::multi_thread(threads, "cmdlog-search-")
    {
        return pool;
    }
    Executor::single_thread()
}

/// The events appended from `since` (included) to `until` (excluded), unix
/// ms; either end open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    /// From this time on.
    pub since: Option<u64>,
    /// Before this time.
    pub until: Option<u64>,
}

/// A session's share of a search's hits.
#[derive(Debug, Clone, Serialize)]
pub struct SessionHits {
    /// The session ("" for events of none).
    pub session: String,
    /// How many of its events match.
    pub count: u64,
    /// Its best hit, when among the best [`MAX_HITS`] of all.
    pub best: Option<Hit>,
}

/// The hit of the event at `seq`, with its snippet; none when the log no
/// longer decodes it.
fn hit(
    log: &Log,
    seq: Seq,
    score: f32,
    snippets: &SnippetGenerator,
) -> Result<Option<Hit>, IndexError> {
    let Some(record) = log.get(seq)? else {
        return Ok(None);
    };
    let Some(event) = document::View::read(record.seq, &record.bytes) else {
        return Ok(None);
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
    Ok(Some(Hit {
        seq,
        session: event.session.clone(),
        kind: event.type_name.clone(),
        at: event.at,
        score,
        snippet,
        highlights,
    }))
}

/// Counts the matching events of each session (from the session's fast
/// column, without reading the events).
struct BySession;

struct SegmentBySession {
    column: Option<StrColumn>,
    counts: HashMap<u64, u64>,
}

impl Collector for BySession {
    type Fruit = HashMap<String, u64>;
    type Child = SegmentBySession;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<SegmentBySession> {
        Ok(SegmentBySession {
            column: segment.fast_fields().str("session")?,
            counts: HashMap::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<HashMap<String, u64>>,
    ) -> tantivy::Result<HashMap<String, u64>> {
        let mut all = HashMap::new();
        for (session, n) in fruits.into_iter().flatten() {
            *all.entry(session).or_default() += n;
        }
        Ok(all)
    }
}

impl SegmentCollector for SegmentBySession {
    type Fruit = HashMap<String, u64>;

    fn collect(&mut self, doc: DocId, _: Score) {
        if let Some(column) = &self.column {
            for ord in column.term_ords(doc) {
                *self.counts.entry(ord).or_default() += 1;
            }
        }
    }

    fn harvest(self) -> HashMap<String, u64> {
        let mut named = HashMap::with_capacity(self.counts.len());
        let Some(column) = self.column else {
            return named;
        };
        for (ord, n) in self.counts {
            let mut session = String::new();
            if column.ord_to_str(ord, &mut session).unwrap_or(false) {
                named.insert(session, n);
            }
        }
        named
    }
}
