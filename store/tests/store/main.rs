//! The store's integration tests: the log, stream indexes, the write-ahead log.

mod log;
mod streams;
mod wal;
