//! Every limit of capture, in one place (units last in the names).

use std::time::Duration;

/// Largest hook payload recorded whole (in blobs past a record's size); a larger
/// one is recorded by its size and hash.
pub const PAYLOAD_BYTES_MAX: usize = 256 * 1024 * 1024;
/// A string of a payload over this many bytes is stored as a blob, a marker in its
/// place.
pub(crate) const STRING_INLINE_BYTES_MAX: usize = 1024 * 1024;
/// A payload's JSON (after its large strings left) is at most this many bytes in
/// the record.
pub(crate) const PAYLOAD_INLINE_BYTES_MAX: usize = 4 * 1024 * 1024;
/// An event over this many bytes (a transcript item of many megabytes) is
/// stored as blobs, an `agent/event` naming them in its place.
pub(crate) const EVENT_INLINE_BYTES_MAX: usize = 8 * 1024 * 1024;
/// The largest blob one part of a large payload becomes.
pub(crate) const BLOB_PART_BYTES: usize = 16 * 1024 * 1024;
/// How long a hook waits in all (for a daemon, then for the log) before it keeps
/// the payload in the spill folder.
pub const HOOK_WAIT: Duration = Duration::from_millis(1000);
/// How long a hook waits to connect to a daemon.
pub(crate) const DAEMON_CONNECT_WAIT: Duration = Duration::from_millis(200);
/// Largest `daemon.json` read, in bytes.
pub(crate) const DAEMON_FILE_BYTES_MAX: u64 = 4096;
/// Largest spill entry read, in bytes (a payload at its limit, base64, and its
/// envelope).
pub(crate) const SPILL_ENTRY_BYTES_MAX: u64 = 360 * 1024 * 1024;
/// Records at the log's end searched for payloads already delivered, when spilled
/// payloads are appended.
pub(crate) const RECENT_DELIVERIES_RECORDS: u64 = 8192;
/// Delivery ids a daemon remembers.
pub(crate) const RECENT_DELIVERIES_MAX: usize = 65_536;
/// Events per atomic append of an import.
pub(crate) const IMPORT_CHUNK_EVENTS: usize = 4000;
/// Bytes read of a Gemini CLI chat for what a payload or a subagent's chat
/// does not say (the last reply, the call that started a subagent, whether a
/// subagent still runs): a larger chat says none of it.
pub(crate) const CHAT_BYTES_MAX: u64 = 16 * 1024 * 1024;
/// Bytes read from the head of a Codex rollout for its `session_meta` line
/// (which carries the model's base instructions, tens of kilobytes).
pub(crate) const ROLLOUT_HEAD_BYTES_MAX: u64 = 1024 * 1024;
/// Largest OTLP request body read (`POST /v1/logs`), compressed or once
/// decompressed: an agent's exporter sends batches of 512 records at most by
/// default, a few hundred kilobytes.
pub const OTLP_BODY_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Most log records one OTLP request may carry (16 of the SDKs' default batches).
pub const OTLP_RECORDS_MAX: usize = 8192;
/// Most messages (records, attributes, values) one OTLP request may carry (64 a
/// record at the most records; an agent's record has about 30): a decoded
/// message takes up to about a hundred bytes besides its text, so one request
/// decodes to tens of MiB at most, whatever its wire size (`otel/bounds.rs`).
pub const OTLP_MESSAGES_MAX: usize = 524_288;
/// Deepest nesting of values (arrays and lists in values) read.
pub const OTLP_DEPTH_MAX: usize = 16;
/// OTLP requests a daemon reads and decodes at once; more wait their turn with
/// their body unread.
pub const OTLP_REQUESTS_IN_FLIGHT: usize = 4;
/// OTLP requests that may wait for a turn; past them a request is answered 503
/// with `Retry-After`, which the exporters honour.
pub const OTLP_REQUESTS_WAITING_MAX: usize = 64;
/// Sessions whose facts a daemon keeps between deliveries (the least recently
/// used one is read again from the log when it comes back).
pub(crate) const FACT_CACHE_SESSIONS: usize = 256;
/// A session's last records a hook appending without a daemon reads for the
/// facts they state (with a daemon, its cache knows the whole session).
pub(crate) const HOOK_FACTS_LOOK_BACK: usize = 1024;
/// Import appends submitted but not yet acknowledged, at most.
pub(crate) const IMPORT_IN_FLIGHT_MAX: usize = 4;

// A chunk is one group commit: it must fit in the writer's batch.
const _: () = assert!(IMPORT_CHUNK_EVENTS <= cmdlog_store::BATCH_RECORDS_MAX);
// A blob part fits the store's blob limit; an inline string fits a record many
// times over.
const _: () = assert!(BLOB_PART_BYTES as u64 <= cmdlog_store::BLOB_BYTES_MAX);
const _: () = assert!(PAYLOAD_INLINE_BYTES_MAX * 2 <= cmdlog_store::RECORD_BYTES_MAX);
const _: () = assert!(STRING_INLINE_BYTES_MAX < PAYLOAD_INLINE_BYTES_MAX);
const _: () = assert!(PAYLOAD_INLINE_BYTES_MAX < EVENT_INLINE_BYTES_MAX);
const _: () = assert!(EVENT_INLINE_BYTES_MAX < cmdlog_store::RECORD_BYTES_MAX);
// A spilled payload fits the spill entry read back.
const _: () = assert!((PAYLOAD_BYTES_MAX as u64) * 4 / 3 + 4096 <= SPILL_ENTRY_BYTES_MAX);
const _: () = assert!(DAEMON_CONNECT_WAIT.as_millis() < HOOK_WAIT.as_millis());
