//! The values that cross the store's API.

use std::fmt;

/// A record's position in the log: gapless, strictly increasing, from 1.
pub type Seq = u64;

/// How hard a commit tries before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync at every commit: an acknowledged append survives power loss. The default.
    #[default]
    Durable,
    /// No fsync per commit; data reaches the disk at the next durable commit or at close.
    /// For benchmarks and throwaway logs only.
    Buffered,
}

/// A record to append: opaque bytes and an optional stream key to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The stream key (cmdlog: the session id) under which the record is indexed.
    pub stream: Option<String>,
    /// The record's bytes, stored as given.
    pub bytes: Vec<u8>,
}

impl NewRecord {
    /// A record without a stream key.
    pub fn new(bytes: Vec<u8>) -> Self {
        NewRecord {
            stream: None,
            bytes,
        }
    }

    /// Sets the stream key.
    pub fn stream(mut self, key: impl Into<String>) -> Self {
        self.stream = Some(key.into());
        self
    }
}

/// The seqs an acknowledged append was given: `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Seq of the append's first record.
    pub first: Seq,
    /// Seq of the append's last record.
    pub last: Seq,
}

/// A stored record as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its seq.
    pub seq: Seq,
    /// The chain hash stored with it, `h(seq)`.
    pub hash: ChainHash,
    /// Its stream key.
    pub stream: Option<String>,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A record as handed to the commit hook, right after its transaction committed.
#[derive(Debug, Clone, Copy)]
pub struct CommittedRecord<'a> {
    /// Its seq.
    pub seq: Seq,
    /// Its stream key.
    pub stream: Option<&'a str>,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// A record's place in the hash chain: `h(seq) = BLAKE3(h(seq-1) ‖ seq ‖
/// bytes)`, `h(0)` 32 zero bytes. Not a blob's address ([`BlobHash`]): the two
/// are both BLAKE3 and are never mixed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ChainHash(pub [u8; 32]);

impl ChainHash {
    /// The hash before the first record.
    pub const ZERO: ChainHash = ChainHash([0; 32]);

    /// Its 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Option<Self> {
        blake3::Hash::from_hex(text)
            .ok()
            .map(|h| ChainHash(*h.as_bytes()))
    }
}

impl fmt::Display for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChainHash({})", self.to_hex())
    }
}

/// A blob's BLAKE3 hash, its address in the blob store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobHash(pub [u8; 32]);

impl BlobHash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        if bytes.len() < crate::limits::PARALLEL_HASH_BYTES {
            return BlobHash(*blake3::hash(bytes).as_bytes());
        }
        // Large attachments: BLAKE3's tree hashed on every core.
        let mut hasher = blake3::Hasher::new();
        hasher.update_rayon(bytes);
        BlobHash(*hasher.finalize().as_bytes())
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Option<Self> {
        blake3::Hash::from_hex(text)
            .ok()
            .map(|h| BlobHash(*h.as_bytes()))
    }
}

impl fmt::Display for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobHash({})", self.to_hex())
    }
}

/// Called on the writer thread with each committed batch, in seq order, before any
/// appender of the batch is acknowledged. Keep it short: it delays every appender.
pub type CommitHook = Box<dyn Fn(&[CommittedRecord<'_>]) + Send + Sync>;

/// The log's last committed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Its seq; 0 for an empty log.
    pub seq: Seq,
    /// Its chain hash; 32 zero bytes for an empty log.
    pub hash: ChainHash,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_blob_hashed_on_every_core_has_the_plain_blake3_hash() {
        for len in [
            crate::limits::PARALLEL_HASH_BYTES - 1,
            crate::limits::PARALLEL_HASH_BYTES,
            3 * crate::limits::PARALLEL_HASH_BYTES + 17,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            assert_eq!(
                BlobHash::of(&bytes).0,
                *blake3::hash(&bytes).as_bytes(),
                "{len} bytes"
            );
        }
    }
}
