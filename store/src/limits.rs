//! Every limit of the store, in one place (units last in the names). The
//! defaults of [`crate::LogConfig`] come from here; the limits that depend on
//! each other are tied by `const` assertions below.

use std::time::Duration;

/// Largest single record, by default ([`crate::LogConfig::record_bytes_max`]).
pub const RECORD_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Largest blob, by default ([`crate::LogConfig::blob_bytes_max`]).
pub const BLOB_BYTES_MAX: u64 = 32 * 1024 * 1024;
/// Most records one group commit takes, by default
/// ([`crate::LogConfig::batch_records_max`]).
pub const BATCH_RECORDS_MAX: usize = 4096;
/// Longest stream key, in bytes.
pub const STREAM_KEY_BYTES_MAX: usize = 256;
/// Frames the write-ahead log holds before a checkpoint, by default
/// ([`crate::LogConfig::checkpoint_bytes`]).
pub(crate) const CHECKPOINT_BYTES: u64 = 64 * 1024 * 1024;
/// The redb page cache, by default.
pub(crate) const CACHE_BYTES: usize = 64 * 1024 * 1024;
/// How long an open waits for another process, by default.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(2);
/// The group commit's wait for more appenders, by default.
pub(crate) const COMMIT_DELAY: Duration = Duration::from_micros(50);

/// The write-ahead log's header block.
pub(crate) const WAL_HEADER_BYTES: u64 = 4096;
/// A new write-ahead log is extended to this length (sparse) so frame writes
/// seldom grow it.
pub(crate) const WAL_PREALLOCATED_BYTES: u64 = 64 * 1024 * 1024;
/// Zeros written per call when a reset clears old frames.
pub(crate) const WAL_ZERO_CHUNK_BYTES: usize = 1024 * 1024;
/// Bytes read ahead per call when reading frames in order.
pub(crate) const WAL_READ_AHEAD_BYTES: usize = 64 * 1024;
/// Bytes read per call when looking for frames past an unreadable one.
pub(crate) const WAL_SCAN_CHUNK_BYTES: usize = 1024 * 1024;

/// A short-lived open over this many bytes of frames (or a quarter of the
/// checkpoint's) opens writable instead, which checkpoints them: every short-lived
/// open reads all the frames (measured: about 1 µs a frame), and a checkpoint costs
/// about as much as ten short-lived appends.
pub(crate) const SHORT_LIVED_FRAME_BYTES: u64 = 64 * 1024;

/// The size of a blob chunk: 1 KiB under 256 KiB leaves room for the leaf's header.
pub(crate) const BLOB_CHUNK_BYTES: usize = 255 * 1024;
/// A batch carrying this many blob bytes skips the write-ahead log.
pub(crate) const DIRECT_BLOB_BYTES: usize = 1024 * 1024;
/// Records over this many bytes in one group commit (a bulk import) go the same
/// way: a durable redb commit writes them once, where a frame and its checkpoint
/// write them twice.
pub(crate) const DIRECT_RECORD_BYTES: usize = 2 * 1024 * 1024;
/// Pending stream index entries are written to the `streams` table in batches of
/// about this many (and at every checkpoint).
pub(crate) const STREAMS_FLUSH_ENTRIES: usize = 16 * 1024;
/// How long the writer spins for a lone appender's next request.
pub(crate) const LONE_APPENDER_SPIN: Duration = Duration::from_micros(30);

// A record fits in a frame the default checkpoint can hold.
const _: () = assert!(RECORD_BYTES_MAX as u64 <= CHECKPOINT_BYTES);
// The file is pre-sized to hold what one generation holds before its checkpoint.
const _: () = assert!(WAL_PREALLOCATED_BYTES >= CHECKPOINT_BYTES);
// Large batches go to redb before the write-ahead log fills.
const _: () = assert!((DIRECT_RECORD_BYTES as u64) < CHECKPOINT_BYTES);
const _: () = assert!((DIRECT_BLOB_BYTES as u64) < CHECKPOINT_BYTES);
// Short-lived appenders reach their limit before a checkpoint's.
const _: () = assert!(SHORT_LIVED_FRAME_BYTES < CHECKPOINT_BYTES);
// A blob bigger than one chunk is what chunking exists for.
const _: () = assert!(BLOB_CHUNK_BYTES < DIRECT_BLOB_BYTES);
const _: () = assert!(WAL_HEADER_BYTES as usize <= WAL_ZERO_CHUNK_BYTES);
/// Blobs from this size are hashed on every core (BLAKE3's tree, with rayon);
/// below it the threads' start costs more than they save.
pub(crate) const PARALLEL_HASH_BYTES: usize = 1024 * 1024;

/// Records hashed into the Merkle tree per transaction when an open catches the
/// tree up (a log older than the tree, frames just applied).
pub(crate) const TREE_CATCH_UP_RECORDS: u64 = 65_536;

/// Most leaves one entry of the `tree` table holds: a group commit writes its
/// batch's hashes as one entry (or a few), about 64 bytes per leaf.
pub(crate) const TREE_ENTRY_LEAVES_MAX: usize = 1024;
/// How many times an append built for its seqs is built again when, through a
/// holder, other appends keep taking the seq it was built for.
pub(crate) const APPEND_AT_TRIES: usize = 200;
