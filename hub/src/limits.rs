//! Every limit of the hub, in one place (units last in the names).

use std::time::Duration;

/// Records per atomic batch (the server's limit is 1,000).
pub(crate) const BATCH_RECORDS: usize = 1000;
/// Payload bytes per atomic batch, at most (one record may exceed it alone).
pub(crate) const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// How long a read waits for the next message before it calls the hub gone.
pub(crate) const READ_WAIT: Duration = Duration::from_secs(30);
/// How long a connection attempt waits.
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// How long a request to the hub waits for its answer.
pub(crate) const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// How long a read of the hub keeps asking for its stream while the hub does
/// not answer (a cluster electing a leader after a node died).
pub(crate) const STREAM_WAIT: Duration = Duration::from_secs(60);
/// Records `hub audit` asks a log for at once (one batched direct get), at
/// most: what it holds of each log besides the runs still open.
pub(crate) const AUDIT_BATCH_RECORDS: usize = 256;
/// … at least, however many logs the hub holds.
pub(crate) const AUDIT_BATCH_RECORDS_MIN: usize = 16;
/// The records `hub audit`'s batches of every log add up to, at most (above
/// `AUDIT_BATCH_RECORDS_MIN` a log): more logs, smaller batches.
pub(crate) const AUDIT_HELD_RECORDS: usize = 64 * 1024;
/// With `--since`, how much earlier than its time `hub audit` starts reading a
/// log by the hub's storage time: a machine whose clock runs this much ahead of
/// the hub's loses nothing.
pub(crate) const AUDIT_SINCE_SKEW: Duration = Duration::from_secs(3600);
/// How long the hub keeps a reader's consumer it has not asked anything of
/// (`hub audit` makes one per log); a reader that comes back makes another.
pub(crate) const CURSOR_IDLE: Duration = Duration::from_secs(300);
/// Records a clone appends per atomic append.
pub(crate) const CLONE_CHUNK_RECORDS: usize = 1000;
/// How long a push that landed its records keeps trying to publish their
/// signed checkpoint (within its patience) before it says it could not.
pub(crate) const CHECKPOINT_RETRY: Duration = Duration::from_secs(30);
/// The first wait before `serve --push` tries to connect again.
pub(crate) const RECONNECT_FIRST: Duration = Duration::from_millis(200);
/// The longest wait between its connection attempts.
pub(crate) const RECONNECT_MAX: Duration = Duration::from_secs(10);
/// The first wait before a push retries an unreachable hub.
pub(crate) const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between retries.
pub(crate) const RETRY_MAX: Duration = Duration::from_secs(5);

// JetStream refuses an atomic batch of more than 1,000 messages.
const _: () = assert!(BATCH_RECORDS <= 1000);
// A clone's append is one group commit of the store.
const _: () = assert!(CLONE_CHUNK_RECORDS <= cmdlog_store::BATCH_RECORDS_MAX);
const _: () = assert!(RETRY_FIRST.as_millis() <= RETRY_MAX.as_millis());
const _: () = assert!(RECONNECT_FIRST.as_millis() <= RECONNECT_MAX.as_millis());

/// The largest value the checkpoint bucket takes: a checkpoint with its proof
/// and signatures, or a verifier key.
pub(crate) const CHECKPOINT_VALUE_BYTES_MAX: i32 = 64 * 1024;
