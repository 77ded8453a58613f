//! Ids cmdlog mints. None is a secret: a daemon's token is made elsewhere.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// `prefix` and `len` hex characters (at most 64) of a hash of the time, the
/// process id and a counter: distinct within a process and across processes.
pub fn new_id(prefix: &str, len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut seed = Vec::with_capacity(32);
    seed.extend_from_slice(&crate::time::now_ns().to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let mut hex = blake3::hash(&seed).to_hex().to_string();
    hex.truncate(len);
    format!("{prefix}{hex}")
}

/// `s-` and 12 hex characters: a session the user did not name.
pub fn new_session_id() -> String {
    new_id("s-", 12)
}

/// 128 random bits as 32 hex digits: from the kernel's generator, or where there
/// is none, a hash of what differs between two processes and two moments.
pub fn random_128() -> String {
    let mut bytes = [0u8; 16];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !from_kernel {
        let mut seed = std::process::id().to_le_bytes().to_vec();
        seed.extend_from_slice(&crate::time::now_ns().to_le_bytes());
        seed.extend_from_slice(new_id("", 64).as_bytes());
        bytes.copy_from_slice(&blake3::hash(&seed).as_bytes()[..16]);
    }
    hex(&bytes)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_have_their_shape_and_differ() {
        let a = new_id("p-", 24);
        let b = new_id("p-", 24);
        assert_ne!(a, b);
        assert_eq!(a.len(), 26);
        assert!(a[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert!(new_session_id().starts_with("s-"));
        let r = random_128();
        assert_eq!(r.len(), 32);
        assert_ne!(r, random_128());
        assert_eq!(hex(&[0, 0xab, 0x1f]), "00ab1f");
    }
}
