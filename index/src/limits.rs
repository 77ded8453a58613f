//! Every limit of the index, in one place (units last in the names).

use std::time::Duration;

/// The most bytes of one event's text that are indexed.
pub const TEXT_BYTES_MAX: usize = 1024 * 1024;
/// The longest query taken, in characters.
pub const QUERY_CHARS_MAX: usize = 1000;
/// The most hits one search returns.
pub const MAX_HITS: usize = 1000;
/// The most seqs a [`crate::Coverage`] names of each kind.
pub const NAMED_MAX: usize = 20;
/// The index's memory while it indexes (shared by its threads).
pub(crate) const WRITER_BYTES: usize = 32 * 1024 * 1024;
/// Threads that index (beside the one that reads the log and builds the
/// documents).
pub(crate) const INDEXING_THREADS: usize = 2;
/// Threads a search that holds a phrase runs on, a segment each at a time
/// (at most the machine's cores; other searches run on the caller's thread).
pub(crate) const SEARCH_THREADS_MAX: usize = 4;
/// Events indexed between two commits while building.
pub(crate) const COMMIT_EVERY: usize = 50_000;
/// How long [`crate::keep_current`] waits after an append before it indexes,
/// so one commit takes in a burst of them (the sync itself, under load,
/// gathers the appends that come while it runs).
pub(crate) const SETTLE: Duration = Duration::from_millis(50);
/// How many times a reader is opened again when a segment of the commit it
/// read went away meanwhile (merged away by the process that writes).
pub(crate) const READER_RETRIES: u32 = 10;
