//! Every limit of capture, in one place (units last in the names).

use std::time::Duration;

/// Largest hook payload read, in bytes (by `cmdlog hook` on stdin and by the
/// daemon's `POST /hook/{agent}`).
pub const PAYLOAD_BYTES_MAX: usize = 16 * 1024 * 1024;
/// How long a hook waits for another process to let go of the log.
pub const LOCK_WAIT: Duration = Duration::from_millis(1000);
/// How long a hook waits for a daemon's answer.
pub const DAEMON_TIMEOUT: Duration = Duration::from_secs(3);
/// Events per atomic append of an import.
pub(crate) const IMPORT_CHUNK_EVENTS: usize = 4000;
/// Import appends submitted but not yet acknowledged, at most.
pub(crate) const IMPORT_IN_FLIGHT_MAX: usize = 4;

// A chunk is one group commit: it must fit in the writer's batch.
const _: () = assert!(IMPORT_CHUNK_EVENTS <= cmdlog_store::BATCH_RECORDS_MAX);
