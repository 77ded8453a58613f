//! How a log is opened.

use std::time::Duration;

use crate::limits;
use crate::record::Durability;

/// How a log is opened.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Commit durability. Default [`Durability::Durable`].
    pub durability: Durability,
    /// Largest blob accepted by [`Log::put_blob`]. Default 32 MiB.
    pub blob_bytes_max: u64,
    /// Largest single record. Default 16 MiB.
    pub record_bytes_max: usize,
    /// Most records one group commit takes before it commits. Default 4096.
    pub batch_records_max: usize,
    /// redb page cache. Default 64 MiB.
    pub cache_bytes: usize,
    /// How long an open waits for another process to release the file before it
    /// reports [`OpenError::Locked`]. Default 2 s: CLI runs hold the file briefly.
    pub lock_wait: Duration,
    /// A checkpoint (one durable redb commit, after which the write-ahead log starts
    /// over) is made once the write-ahead log holds this many bytes of frames, and
    /// at close. Default 64 MiB: it bounds the file and the replay after a crash.
    pub checkpoint_bytes: u64,
    /// When the last group commit carried several requests, how long the writer
    /// waits for as many to queue before it commits the next (as PostgreSQL's
    /// `commit_delay`). A lone appender never waits. Default 50 µs; zero turns it
    /// off. Measured: 64 concurrent appenders went from ~75,000 to ~116,000
    /// events/s on a 2-core VM.
    pub commit_delay: Duration,
    /// A writable open of a log whose write-ahead log is missing, cut, damaged or
    /// does not continue the log normally refuses with [`OpenError::WalDamaged`].
    /// With this set it applies the frames before the damage, drops the rest and
    /// reports it ([`Log::wal_discard`]). Default false: only `cmdlog recover
    /// --discard-damaged-wal` sets it.
    pub discard_wal_damage: bool,
    /// Whether the writer keeps the Merkle tree (the `tree` table) with every
    /// batch. Default true. False only to measure what the tree costs: a log
    /// written without it gets its tree at the next writable open that keeps one,
    /// and reads hash the missing leaves in memory until then.
    pub merkle_tree: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            durability: Durability::Durable,
            blob_bytes_max: limits::BLOB_BYTES_MAX,
            record_bytes_max: limits::RECORD_BYTES_MAX,
            batch_records_max: limits::BATCH_RECORDS_MAX,
            cache_bytes: limits::CACHE_BYTES,
            lock_wait: limits::LOCK_WAIT,
            checkpoint_bytes: limits::CHECKPOINT_BYTES,
            commit_delay: limits::COMMIT_DELAY,
            discard_wal_damage: false,
            merkle_tree: true,
        }
    }
}
