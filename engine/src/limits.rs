//! Every limit of the engine, in one place (units last in the names). The
//! limits that depend on each other, here and in the store below, are tied by
//! `const` assertions.

/// Longest command name, in bytes.
pub const NAME_BYTES_MAX: usize = 128;
/// Longest session or agent id, in bytes (a session id is its events' stream key).
pub const ID_BYTES_MAX: usize = 128;
/// Longest model id `/model` takes, in bytes.
pub(crate) const MODEL_ID_BYTES_MAX: usize = 128;
/// Longest description shown in a listing, in characters.
pub const DESCRIPTION_CHARS_MAX: usize = 60;
/// Largest expansion of one prompt command, in bytes (enforced while it is built).
pub const EXPANSION_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Largest outcome text a `command/done` records, in bytes.
pub const OUTCOME_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Longest injection snippet quoted in a note, in characters.
pub(crate) const SNIPPET_CHARS_MAX: usize = 80;
/// Events folded after the last snapshot before an open writes a new one. Every
/// `cmdlog run` folds them (measured: about 0.8 µs an event), and a snapshot of a
/// short-lived process rides in the write-ahead log without a sync of its own.
pub(crate) const SNAPSHOT_TAIL_EVENTS: u64 = 128;

/// Most images one invocation admits, by default.
pub(crate) const ATTACHED_IMAGES_MAX: usize = 10;
/// Largest image, by default.
pub(crate) const ATTACHED_IMAGE_BYTES_MAX: u64 = 10 * 1024 * 1024;
/// Largest other file, by default.
pub(crate) const ATTACHED_FILE_BYTES_MAX: u64 = 32 * 1024 * 1024;
/// Largest total of one invocation's attachments, by default.
pub(crate) const ATTACHED_TOTAL_BYTES_MAX: u64 = 64 * 1024 * 1024;

// A session id is the stream key of its events.
const _: () = assert!(ID_BYTES_MAX <= cmdlog_store::STREAM_KEY_BYTES_MAX);
// A done carries the outcome (a prompt command's outcome is its expansion) with
// room to spare in one record.
const _: () = assert!(EXPANSION_BYTES_MAX <= OUTCOME_BYTES_MAX);
/// The most characters of a session's title kept from an agent (`qwen
/// serve` 0.24.4's `MAX_DISPLAY_NAME_LENGTH` for a name a client sets).
pub(crate) const TITLE_CHARS_MAX: usize = 200;

const _: () = assert!(OUTCOME_BYTES_MAX < cmdlog_store::RECORD_BYTES_MAX);
// An attachment is one blob.
const _: () = assert!(ATTACHED_FILE_BYTES_MAX <= cmdlog_store::BLOB_BYTES_MAX);
const _: () = assert!(ATTACHED_IMAGE_BYTES_MAX <= ATTACHED_FILE_BYTES_MAX);
const _: () = assert!(ATTACHED_FILE_BYTES_MAX <= ATTACHED_TOTAL_BYTES_MAX);
