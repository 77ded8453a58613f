//! The limits on what the transparency-log code reads from elsewhere.

/// The most signature lines a note may carry (the signed-note spec asks
/// verifiers to take at least 16; Go's reference takes 100).
pub const NOTE_SIGNATURES_MAX: usize = 100;

/// The longest note read, in bytes: a checkpoint with its signatures is a few
/// hundred.
pub const NOTE_BYTES_MAX: usize = 64 * 1024;

/// The largest key file read: a key line is under 200 bytes.
pub const KEY_FILE_BYTES_MAX: u64 = 4096;

/// The most consistency-proof lines an `add-checkpoint` body may carry (the
/// tlog-witness spec's limit: a proof of a tree of 2^63 leaves fits).
pub const PROOF_LINES_MAX: usize = 63;
