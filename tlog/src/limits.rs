//! The limits on what the transparency-log code reads from elsewhere.

/// The most signature lines a note may carry (the signed-note spec asks
/// verifiers to take at least 16; Go's reference takes 100).
pub const NOTE_SIGNATURES_MAX: usize = 100;

/// The longest note read, in bytes: a checkpoint with its signatures is a few
/// hundred.
pub const NOTE_BYTES_MAX: usize = 64 * 1024;

/// The largest key file read: a key line is under 200 bytes.
pub const KEY_FILE_BYTES_MAX: u64 = 4096;
