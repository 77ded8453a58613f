//! cmdlog's store: an append-only log of opaque records on [redb], and a
//! content-addressed blob store beside it.
//!
//! The store knows nothing of commands or events. It keeps, under a gapless
//! `seq` starting at 1, the bytes it is given and an optional *stream key*
//! (cmdlog uses the session id) that it indexes. Every record carries a link
//! of a BLAKE3 hash chain, so any changed, dropped or reordered record is
//! found by [`Log::verify_chain`].
//!
//! ```
//! use cmdlog_store::{Log, LogConfig, NewRecord};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
//! let receipt = log.append(vec![NewRecord::new(b"{\"hello\":1}".to_vec()).stream("s1")]).unwrap();
//! assert_eq!(receipt.first, 1);
//! assert_eq!(log.get(1).unwrap().unwrap().bytes, b"{\"hello\":1}");
//! assert_eq!(log.stream("s1", 0).unwrap().len(), 1);
//! ```
//!
//! Appends go through one writer thread that batches whatever is queued into
//! one write transaction (group commit); an append is acknowledged only after
//! the transaction holding it committed with the configured [`Durability`].

mod config;
mod error;
mod fault;
mod holder;
mod journal;
mod limits;
mod log;
mod overlay;
mod record;
mod schema;
mod shared;
mod tree;
mod writer;

pub use error::{AppendError, BlobError, OpenError, ReadError, StoreError};
pub use fault::{
    FaultKind, FaultPlan, FaultyBackend, FaultyFile, open_faulty, open_faulty_short_lived,
};
pub use holder::socket_path;
pub use journal::{JournalIo, journal_path};
pub use limits::{BATCH_RECORDS_MAX, BLOB_BYTES_MAX, RECORD_BYTES_MAX, STREAM_KEY_BYTES_MAX};
pub use log::{
    AppendTicket, ChainBreak, CommitHook, Head, Holding, Log, LogConfig, TreeView, WalDiscard,
    check_own_folder, presence_path, serve_readers,
};
pub use record::{
    BlobHash, ChainHash, CommittedRecord, Durability, NewRecord, Receipt, Record, Seq,
};
pub use redb::StorageBackend;
pub use schema::chain as chain_hash;
pub use tree::{TreeError, leaf_input};
