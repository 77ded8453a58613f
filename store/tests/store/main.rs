//! The store's integration tests: the log, stream indexes, the write-ahead log.

mod faults;
mod log;
mod short_lived;
mod streams;
mod tree;
mod wal;
