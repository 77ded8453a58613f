//! Every limit of the daemon, in one place (units last in the names).

use std::time::Duration;

/// Largest body of a `command` request (base64 attachments), in bytes.
pub(crate) const COMMAND_BODY_BYTES_MAX: usize = 96 * 1024 * 1024;
/// Largest body of any other request, in bytes.
pub(crate) const BODY_BYTES_MAX: usize = 1024 * 1024;
/// Longest prompt text or command line, in bytes.
pub(crate) const LINE_BYTES_MAX: usize = 1024 * 1024;
/// Prompts admitted and not yet finished, per session, before `prompt_queue_full`.
pub(crate) const QUEUE_MAX: usize = 64;

/// Answered permission requests remembered, so a late vote is told which answer
/// stands (`permission_already_resolved`; `qwen serve` 0.24.4 keeps 512).
pub(crate) const PERMISSIONS_RESOLVED_MAX: usize = 512;

/// Frames kept for sharing between subscribers.
pub(crate) const SSE_CACHE_FRAMES: usize = 8192;
/// Bytes of frames kept for sharing between subscribers.
pub(crate) const SSE_CACHE_BYTES: usize = 32 * 1024 * 1024;
/// Bytes of frames one SSE read takes from the log before sending them (at least
/// one frame): a subscriber that does not read holds no more than this.
pub(crate) const SSE_BATCH_BYTES_MAX: usize = 256 * 1024;
/// Most events one SSE read takes from the log before sending them.
pub(crate) const SSE_BATCH_EVENTS_MAX: u64 = 1000;
/// How long a woken subscriber waits for more commits before reading, under load.
pub(crate) const SSE_COALESCE: Duration = Duration::from_millis(10);
/// A read of at least this many events means load: the next one waits to coalesce.
pub(crate) const SSE_BUSY_EVENTS: u64 = 32;
/// A connection whose peer has not taken a waiting write for this long is closed
/// (an SSE subscriber that stopped reading comes back with `Last-Event-ID`).
pub(crate) const WRITE_STALL_MAX: Duration = Duration::from_secs(10);
/// Longest `Last-Event-ID` accepted, in characters (a u64 has at most 20 digits).
pub(crate) const LAST_EVENT_ID_CHARS_MAX: usize = 20;

/// How long the agent may take to answer `initialize` or `session/new`.
pub(crate) const AGENT_SETUP_TIMEOUT: Duration = Duration::from_secs(60);
/// An agent process that ran at least this long restarts without waiting.
pub(crate) const AGENT_HEALTHY_RUN: Duration = Duration::from_secs(10);
/// The first wait before restarting an agent that keeps exiting.
pub(crate) const AGENT_BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait before restarting it.
pub(crate) const AGENT_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Most early updates kept for agent sessions not yet known.
pub(crate) const AGENT_EARLY_UPDATES_MAX: usize = 256;

/// How long registry changes settle before sessions hear of them.
pub(crate) const COMMANDS_SETTLE: Duration = Duration::from_millis(100);
/// How long a close waits for the cancelled turn to end.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How often the supervisor looks at the store.
pub(crate) const SUPERVISE_EVERY: Duration = Duration::from_millis(250);
/// The longest wait between two reopening attempts.
pub(crate) const REOPEN_BACKOFF_MAX: Duration = Duration::from_secs(5);

// A prompt line fits in the body that carries it.
const _: () = assert!(LINE_BYTES_MAX <= BODY_BYTES_MAX);
// The shared cache holds at least one subscriber's batch.
const _: () = assert!(SSE_BATCH_BYTES_MAX <= SSE_CACHE_BYTES);
const _: () = assert!(SSE_BATCH_EVENTS_MAX as usize <= SSE_CACHE_FRAMES);
// A u64 is at most 20 decimal digits.
const _: () = assert!(LAST_EVENT_ID_CHARS_MAX >= 20);
const _: () = assert!(AGENT_BACKOFF_FIRST.as_millis() <= AGENT_BACKOFF_MAX.as_millis());
const _: () = assert!(SUPERVISE_EVERY.as_millis() <= REOPEN_BACKOFF_MAX.as_millis());

/// Most events of a session `POST /session/{id}/load` sends whole in its
/// journal; a larger session's client reads its history on the event stream.
pub(crate) const JOURNAL_EVENTS_MAX: usize = 20_000;
/// Most bytes of envelopes in that journal (the same fallback beyond).
pub(crate) const JOURNAL_BYTES_MAX: usize = 16 * 1024 * 1024;

/// How long a workbench login lasts (its cookie's `Max-Age`).
pub(crate) const UI_LOGIN_TTL: Duration = Duration::from_secs(12 * 3600);
/// Browsers logged in to the workbench at once; a new login past it ends the
/// oldest.
pub(crate) const UI_LOGINS_MAX: usize = 64;
/// Failed workbench logins answered at once within [`UI_FAILURE_WINDOW`];
/// each one past them waits half a second more (up to five).
pub(crate) const UI_FAILURES_FREE: usize = 5;
/// How long a failed workbench login counts against the next ones.
pub(crate) const UI_FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// How often `serve --hub` brings its clones of the hub's logs up to date.
pub(crate) const HUB_MIRROR_EVERY: Duration = Duration::from_secs(2);
