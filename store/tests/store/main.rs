//! The store's integration tests: the log, stream indexes, the write-ahead log.

/// What the write-ahead log's tests share.
mod common {
    use cmdlog_store::{Log, NewRecord};

    /// A record of `text` under one of three streams.
    pub(crate) fn rec(text: &str) -> NewRecord {
        NewRecord::new(text.as_bytes().to_vec()).stream(format!("s{}", text.len() % 3))
    }

    /// Every record's text, in seq order.
    pub(crate) fn texts(log: &Log) -> Vec<String> {
        log.range(1, u64::MAX)
            .unwrap()
            .into_iter()
            .map(|r| String::from_utf8(r.bytes).unwrap())
            .collect()
    }
}
mod faults;
mod log;
mod short_lived;
mod streams;
mod tree;
mod wal;
