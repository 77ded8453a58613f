//! The index's schema: one document per event, its words in `text`, and the
//! facets a query names (`session:`, `agent:`, `type:`, `source:`, `tool:`,
//! `file:`, `status:`) as exact, lowercased terms.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};

/// The analyzer of `text`: words split at what is not a letter or digit,
/// lowercased; tokens up to 256 bytes (hashes and long identifiers kept).
pub(crate) const WORDS: &str = "cmdlog_words";
/// The analyzer of the facets: the whole value, lowercased.
pub(crate) const EXACT: &str = "cmdlog_exact";

/// The fields, by what a query calls them.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) seq: Field,
    pub(crate) at: Field,
    pub(crate) text: Field,
    pub(crate) session: Field,
    pub(crate) agent: Field,
    pub(crate) kind: Field,
    pub(crate) source: Field,
    pub(crate) tool: Field,
    pub(crate) file: Field,
    pub(crate) status: Field,
}

/// The names a query may use before `:`, and the field each names.
pub(crate) const QUERY_FIELDS: [&str; 7] = [
    "session", "agent", "type", "source", "tool", "file", "status",
];

pub(crate) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(WORDS)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let exact = || {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(EXACT)
                .set_index_option(IndexRecordOption::Basic),
        )
    };
    let fields = Fields {
        seq: b.add_u64_field("seq", INDEXED | FAST),
        at: b.add_i64_field("at", INDEXED | FAST),
        text: b.add_text_field("text", words),
        session: b.add_text_field("session", STRING | FAST),
        agent: b.add_text_field("agent", exact()),
        kind: b.add_text_field("type", exact()),
        source: b.add_text_field("source", exact()),
        tool: b.add_text_field("tool", exact()),
        file: b.add_text_field("file", exact()),
        status: b.add_text_field("status", exact()),
    };
    (b.build(), fields)
}

/// Registers the analyzers on an index (they are not kept in it).
pub(crate) fn register(index: &tantivy::Index) {
    let words = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(256))
        .filter(LowerCaser)
        .build();
    let exact = TextAnalyzer::builder(RawTokenizer::default())
        .filter(LowerCaser)
        .build();
    index.tokenizers().register(WORDS, words);
    index.tokenizers().register(EXACT, exact);
}
