//! Every limit of the projections, in one place (units last in the names).

/// Records an import appends per atomic append.
pub(crate) const IMPORT_BATCH_RECORDS: usize = 1000;
/// Bytes of one conversation entry's text the HTML report shows (the rest is
/// said to be in the log).
pub(crate) const REPORT_ENTRY_BYTES_MAX: usize = 64 * 1024;

// An import's append is one group commit of the store.
const _: () = assert!(IMPORT_BATCH_RECORDS <= cmdlog_store::BATCH_RECORDS_MAX);
/// Events one session proof bundle holds; a longer session's bundle names
/// the seq its next part starts at.
pub const SESSION_PROOFS_EVENTS_MAX: usize = 10_000;
/// Bytes of a session proof bundle `verify --proofs` reads.
pub const SESSION_PROOFS_BYTES_MAX: u64 = 256 * 1024 * 1024;
