//! A phrase beside other clauses, walked with plain seeks. An intersection
//! (`deploy "payments webhook"`) moves each clause with `seek_danger`, which
//! may leave a clause past the next target; tantivy 0.27's phrase scorer
//! asserts (in debug builds) that it never is, and panics (tantivy issue
//! #2811). Wrapped, the phrase answers `seek_danger` as every plain docset
//! does: moved forward only, to its next match. It finds and ranks the same.

use tantivy::query::{EnableScoring, Explanation, PhraseQuery, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term};

/// A phrase query whose scorer is only ever moved forward.
#[derive(Clone, Debug)]
pub(crate) struct Phrase(pub(crate) PhraseQuery);

impl Query for Phrase {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(PhraseWeight(self.0.weight(enable_scoring)?)))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.0.query_terms(visitor);
    }
}

struct PhraseWeight(Box<dyn Weight>);

impl Weight for PhraseWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(Forward(self.0.scorer(reader, boost)?)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.0.explain(reader, doc)
    }
}

/// The phrase's scorer, with the default `seek_danger` (forward `seek`s only).
struct Forward(Box<dyn Scorer>);

impl DocSet for Forward {
    fn advance(&mut self) -> DocId {
        self.0.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.0.doc() >= target {
            return self.0.doc();
        }
        self.0.seek(target)
    }

    fn doc(&self) -> DocId {
        self.0.doc()
    }

    fn size_hint(&self) -> u32 {
        self.0.size_hint()
    }
}

impl Scorer for Forward {
    fn score(&mut self) -> Score {
        self.0.score()
    }
}
