//! Ids the daemon and the CLI mint: sessions the user did not name, prompts,
//! permission requests, clients.

use std::sync::atomic::{AtomicU64, Ordering};

/// `s-` and 12 hex characters: unique enough for sessions started by hand; not a
/// secret.
pub(crate) fn new_session_id() -> String {
    new_id("s-", 12)
}

/// `prefix` and `len` hex characters of a hash of the time, the process id and a
/// counter: distinct within a process and across processes; not a secret.
pub(crate) fn new_id(prefix: &str, len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut bytes = nanos.to_le_bytes().to_vec();
    bytes.extend_from_slice(&std::process::id().to_le_bytes());
    bytes.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let mut hex = cmdlog_store::BlobHash::of(&bytes).to_hex();
    hex.truncate(len);
    format!("{prefix}{hex}")
}
