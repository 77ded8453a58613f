//! Every limit of the ACP bridge, in one place (units last in the names).

/// Longest line accepted, in bytes (the ACP TypeScript SDK's default limit).
pub const LINE_BYTES_MAX: usize = 32 * 1024 * 1024;
/// Most events the recorder appends in one commit.
pub(crate) const RECORD_BATCH_EVENTS_MAX: usize = 1024;

// The recorder's batch is one group commit of the store.
const _: () = assert!(RECORD_BATCH_EVENTS_MAX <= cmdlog_store::BATCH_RECORDS_MAX);
