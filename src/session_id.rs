//! New session ids for sessions the user did not name.

/// `s-` and 12 hex characters from the time and the process id: unique enough for
/// sessions started by hand; not a secret.
pub(crate) fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = blake3_like(nanos, std::process::id());
    hasher.truncate(12);
    format!("s-{hasher}")
}

fn blake3_like(nanos: u128, pid: u32) -> String {
    // A unique-enough id from time and pid; not a secret.
    let mut bytes = nanos.to_le_bytes().to_vec();
    bytes.extend_from_slice(&pid.to_le_bytes());
    cmdlog_store::BlobHash::of(&bytes).to_hex()
}
