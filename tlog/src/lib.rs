//! Transparency-log building blocks, as Sigstore's Rekor v2 and Go's checksum
//! database use them, so any tlog verifier can check a cmdlog log:
//!
//! - [`tree`]: the RFC 9162 Merkle tree over stored complete subtrees — roots,
//!   inclusion and consistency proofs — and the [`Frontier`] an appender keeps;
//! - [`proof`]: checking those proofs with nothing but hashes;
//! - [`note`]: C2SP signed notes with Ed25519 keys, and witnesses' cosignatures;
//! - [`checkpoint`]: the C2SP checkpoint a log signs;
//! - [`tiles`]: the C2SP tile layout for static serving;
//! - [`keys`]: private keys kept owner-only, outside any workspace;
//! - [`witness`]: the `add-checkpoint` body a witness takes (and a hub keeps).
//!
//! ```
//! use cmdlog_tlog::{Frontier, leaf_hash, inclusion_proof, verify_inclusion};
//! let mut frontier = Frontier::new();
//! let mut levels: Vec<Vec<[u8; 32]>> = vec![];
//! for leaf in [b"a", b"b", b"c"] {
//!     let mut closed = vec![];
//!     frontier.push(leaf_hash(leaf), &mut closed);
//!     for (level, hash) in closed.into_iter().enumerate() {
//!         if levels.len() <= level { levels.push(vec![]); }
//!         levels[level].push(hash);
//!     }
//! }
//! let proof = inclusion_proof(&levels, 1, 3).unwrap();
//! verify_inclusion(&leaf_hash(b"b"), 1, 3, &proof, &frontier.root()).unwrap();
//! ```

pub mod checkpoint;
pub mod hash;
pub mod keys;
mod limits;
pub mod note;
pub mod proof;
pub mod tiles;
pub mod tree;
pub mod witness;

pub use checkpoint::Checkpoint;
pub use hash::{Hash, empty_root, leaf_hash, node_hash};
pub use limits::{KEY_FILE_BYTES_MAX, NOTE_BYTES_MAX, NOTE_SIGNATURES_MAX, PROOF_LINES_MAX};
pub use note::{KeyKind, Note, NoteError, NoteVerifier, Signer};
pub use proof::{ProofError, root_from_inclusion, verify_consistency, verify_inclusion};
pub use tree::{Frontier, NodeSource, consistency_proof, inclusion_proof, root, subtree_root};
pub use witness::AddCheckpoint;
