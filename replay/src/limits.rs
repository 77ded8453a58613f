//! Every limit of the projections, in one place (units last in the names).

/// Records an import appends per atomic append.
pub(crate) const IMPORT_BATCH_RECORDS: usize = 1000;

// An import's append is one group commit of the store.
const _: () = assert!(IMPORT_BATCH_RECORDS <= cmdlog_store::BATCH_RECORDS_MAX);
