//! Every limit of the workbench's pages, in one place.

/// Events one page of a session shows the entries of; the page links the
/// earlier and later ones. A session is never read whole for a page.
pub const PAGE_EVENTS: usize = 500;
/// Hits one search page shows (the best first).
pub const SEARCH_HITS: usize = 50;
/// Lines past which a block of outside text (a tool's output) is folded.
pub const FOLD_LINES: usize = 8;
/// A session's events whose inclusion proofs its page checks (the first
/// ones); the page says how many it left unchecked.
pub const PROVEN_MAX: usize = 10_000;
/// Rows one page of the sessions list shows; it links the others.
pub const LIST_ROWS: usize = 200;
/// Parts one blob page joins (a value stored as blobs names its parts:
/// `H1 + H2 + …`, 16 MiB each).
pub const BLOB_PARTS_MAX: usize = 16;
/// Bytes of a blob's text its page shows; the rest is in its download.
pub const BLOB_SHOWN_BYTES_MAX: usize = 4 * 1024 * 1024;
