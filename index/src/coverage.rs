//! Checking an index against its log (`cmdlog verify`): one document for
//! each event through the seq it says it covers, and nothing else.

use cmdlog_store::{Log, Seq};
use serde::Serialize;

use crate::limits::NAMED_MAX;
use crate::{IndexError, SearchIndex};

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
        let searcher = self.searcher()?;
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
            let event = crate::document::View::read(record.seq, &record.bytes).is_some();
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

/// What `verify` says of the index beside a log: where it does not hold
/// what it says it covers, each finding with the seq it is at when there is
/// one; and what it covers, when it could be read.
#[derive(Debug, Default)]
pub struct Findings {
    /// How far the index goes, when it could be read.
    pub coverage: Option<Coverage>,
    /// What is wrong with it.
    pub problems: Vec<(Option<Seq>, String)>,
}

/// Checks the index beside the log at `log_path` (none there: `None`)
/// without changing it: one of another log, of a rewritten log, one that
/// cannot be read, or one that misses or adds documents is named.
pub fn verify_beside(
    log_path: &std::path::Path,
    log: &Log,
) -> Result<Option<Findings>, IndexError> {
    let dir = crate::dir_of(log_path);
    if !dir.join("meta.json").exists() {
        return Ok(None);
    }
    let mut found = Findings::default();
    let rebuild = "`cmdlog index --rebuild` makes it again";
    let index = match SearchIndex::open_existing(&dir) {
        Ok(index) => index,
        Err(why) => {
            found.problems.push((
                None,
                format!(
                    "the index at {} cannot be read ({why}); {rebuild}",
                    dir.display()
                ),
            ));
            return Ok(Some(found));
        }
    };
    let through = index.covered().map_or(0, |c| c.through);
    let head = log.head().seq;
    if through > head {
        found.problems.push((
            Some(through),
            format!("the index says it covers seq 1 through {through}, past the log's head {head}; {rebuild}"),
        ));
        return Ok(Some(found));
    }
    match index.continues_at(log, &crate::log_id(log)?) {
        Ok(_) => {}
        Err(e @ IndexError::OtherLog { .. }) => {
            found.problems.push((None, e.to_string()));
            return Ok(Some(found));
        }
        Err(e @ IndexError::Diverged { .. }) => {
            found.problems.push((Some(through), e.to_string()));
            return Ok(Some(found));
        }
        Err(e) => return Err(e),
    }
    let coverage = match index.check(log) {
        Ok(coverage) => coverage,
        Err(e @ IndexError::Tantivy { .. }) => {
            found.problems.push((None, format!("{e}; {rebuild}")));
            return Ok(Some(found));
        }
        Err(e) => return Err(e),
    };
    let list = |seqs: &[Seq], n: u64| {
        let named: Vec<String> = seqs.iter().map(|s| s.to_string()).collect();
        format!(
            "seq {}{}",
            named.join(", "),
            if n > seqs.len() as u64 { ", …" } else { "" }
        )
    };
    if coverage.missing_count > 0 {
        found.problems.push((
            coverage.missing.first().copied(),
            format!(
                "the index misses {} event(s) it says it covers ({}); {rebuild}",
                coverage.missing_count,
                list(&coverage.missing, coverage.missing_count)
            ),
        ));
    }
    if coverage.extra_count > 0 {
        found.problems.push((coverage.extra.first().copied(), format!(
            "the index holds {} document(s) for no event of the log it covers, or twice ({}); {rebuild}",
            coverage.extra_count, list(&coverage.extra, coverage.extra_count)
        )));
    }
    found.coverage = Some(coverage);
    Ok(Some(found))
}
