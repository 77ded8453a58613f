//! RFC 6962 §2.1 hashing: SHA-256 with a one-byte prefix that keeps a leaf from
//! ever hashing like an interior node (0x00 leaves, 0x01 nodes).

use sha2::{Digest, Sha256};

/// A SHA-256 hash of a leaf, a node or a whole tree.
pub type Hash = [u8; 32];

/// The root of the empty tree: SHA-256 of the empty string (RFC 9162 §2.1.1).
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// `SHA-256(0x00 ‖ input)`: the hash of one leaf.
pub fn leaf_hash(input: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(input);
    hasher.finalize().into()
}

/// `SHA-256(0x01 ‖ left ‖ right)`: the hash of an interior node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_root_is_sha256_of_nothing() {
        // RFC 9162 §2.1.1: MTH({}) = SHA-256().
        let hex: String = empty_root().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn leaves_and_nodes_never_collide() {
        let (a, b) = (leaf_hash(b"a"), leaf_hash(b"b"));
        let mut joined = vec![];
        joined.extend_from_slice(&a);
        joined.extend_from_slice(&b);
        assert_ne!(node_hash(&a, &b), leaf_hash(&joined));
    }
}
