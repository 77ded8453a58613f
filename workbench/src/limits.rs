//! Every limit of the workbench's pages, in one place.

/// Entries one page of a session shows; the page links the next ones.
pub const PAGE_ENTRIES: usize = 200;
/// Hits one search page shows (the best first).
pub const SEARCH_HITS: usize = 50;
/// Lines past which a block of outside text (a tool's output) is folded.
pub const FOLD_LINES: usize = 8;
/// A session's events whose inclusion proofs its page checks (the first
/// ones); the page says how many it left unchecked.
pub const PROVEN_MAX: usize = 10_000;
