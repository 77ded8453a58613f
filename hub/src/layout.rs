//! How the hub is laid out on JetStream: the stream, one subject per log, the
//! record headers, the blob bucket, the checkpoint bucket.

/// The header that carries a record's seq.
pub const SEQ: &str = "Cmdlog-Seq";
/// The header that carries a record's chain hash (hex).
pub const HASH: &str = "Cmdlog-Hash";
/// The header that carries a record's stream key (its session).
pub const STREAM_KEY: &str = "Cmdlog-Stream";
/// The header that carries the pushing host's name.
pub const HOST: &str = "Cmdlog-Host";

/// The default stream's name.
pub const DEFAULT_STREAM: &str = "CMDLOG";

/// The subjects' prefix for a stream: `cmdlog.log` for the default stream,
/// `cmdlog.<stream>.log` for another (two streams on one server cannot share
/// subjects).
pub fn prefix(stream: &str) -> String {
    if stream == DEFAULT_STREAM {
        "cmdlog.log".into()
    } else {
        format!("cmdlog.{stream}.log")
    }
}

/// A log's subject in `stream`.
pub fn subject(stream: &str, log_id: &str) -> String {
    format!("{}.{log_id}", prefix(stream))
}

/// Every log's subject in `stream`.
pub fn all_logs(stream: &str) -> String {
    format!("{}.*", prefix(stream))
}

/// The blobs' bucket for a stream.
pub fn bucket(stream: &str) -> String {
    format!("{stream}-blobs")
}

/// The bucket (a JetStream key-value store) of the logs' latest signed
/// checkpoints for a stream.
pub fn checkpoint_bucket(stream: &str) -> String {
    format!("{stream}-checkpoints")
}

/// A header's value as text.
pub(crate) fn header<'a>(headers: &'a async_nats::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.as_str())
}

/// A JetStream time as RFC 3339.
pub(crate) fn rfc3339(time: async_nats::datetime::DateTime) -> String {
    let ms = (time.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
    cmdlog_common::time::rfc3339(ms)
}
