//! Every limit of the ACP bridge, in one place (units last in the names).

use std::time::Duration;

/// Longest line accepted, in bytes (the ACP TypeScript SDK's default limit).
pub const LINE_BYTES_MAX: usize = 32 * 1024 * 1024;
/// How long the agent may go on after the editor closed its side, before the
/// proxy ends it.
pub(crate) const EDITOR_GONE_GRACE: Duration = Duration::from_secs(5);
/// How long the proxy still reads what an agent wrote once the agent has
/// exited (a process it left behind may hold its output open).
pub(crate) const AGENT_EXIT_DRAIN: Duration = Duration::from_millis(500);
/// An `acp/message` over this many bytes has its large values stored as blobs.
pub(crate) const MESSAGE_INLINE_BYTES_MAX: usize = 64 * 1024;
/// A value of a large `acp/message` over this many bytes is stored as a blob.
pub(crate) const MESSAGE_VALUE_INLINE_BYTES_MAX: usize = 16 * 1024;
/// How long after a new session the proxy waits for the agent's command list
/// before it tells the editor cmdlog's commands alone.
pub(crate) const AGENT_LIST_WAIT: Duration = Duration::from_millis(300);
/// A message over this many bytes is recorded as a blob (a record holds less).
pub(crate) const RECORD_INLINE_BYTES_MAX: usize = 4 * 1024 * 1024;
/// The largest blob one part of a large event becomes.
pub(crate) const BLOB_PART_BYTES: usize = 16 * 1024 * 1024;
/// Most events the recorder appends in one commit.
pub(crate) const RECORD_BATCH_EVENTS_MAX: usize = 1024;

// The recorder's batch is one group commit of the store.
const _: () = assert!(RECORD_BATCH_EVENTS_MAX <= cmdlog_store::BATCH_RECORDS_MAX);
const _: () = assert!(BLOB_PART_BYTES as u64 <= cmdlog_store::BLOB_BYTES_MAX);
// A message recorded inline fits a record with room for its envelope.
const _: () = assert!(RECORD_INLINE_BYTES_MAX * 2 <= cmdlog_store::RECORD_BYTES_MAX);
const _: () = assert!(MESSAGE_VALUE_INLINE_BYTES_MAX < MESSAGE_INLINE_BYTES_MAX);
const _: () = assert!(MESSAGE_INLINE_BYTES_MAX < RECORD_INLINE_BYTES_MAX);
