//! What a page can say of an event's place in the log: its link in the hash
//! chain recomputed from the record before it, and its inclusion proof in
//! the log's Merkle tree checked against the tree's root, now, as any tlog
//! verifier checks it (`cmdlog_tlog::verify_inclusion`); and how many of a
//! page's events were checked so.

use cmdlog_store::Log;
use cmdlog_tlog::{Hash, leaf_hash, verify_inclusion};

use crate::limits::PROVEN_MAX;

/// The outcome of checking events against the tree at the head.
pub(crate) struct Proven {
    /// The tree's size (the log's head when read).
    pub(crate) size: u64,
    /// The tree's root, hex (the first 16 digits shown).
    pub(crate) root: String,
    /// Events whose inclusion proof checked.
    pub(crate) checked: usize,
    /// Events not checked (past [`PROVEN_MAX`]).
    pub(crate) unchecked: usize,
    /// The first event whose proof did not check, and why.
    pub(crate) failed: Option<(u64, String)>,
}

impl Proven {
    /// Whether every event checked (and some did).
    pub(crate) fn ok(&self) -> bool {
        self.failed.is_none() && self.checked > 0
    }
}

fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks each of `seqs` (at most [`PROVEN_MAX`]) against the log's tree.
pub(crate) fn prove(log: &Log, seqs: &[u64]) -> Proven {
    let mut proven = Proven {
        size: 0,
        root: String::new(),
        checked: 0,
        unchecked: seqs.len().saturating_sub(PROVEN_MAX),
        failed: None,
    };
    let view = match log.tree() {
        Ok(view) => view,
        Err(e) => {
            proven.failed = Some((0, format!("the tree could not be read: {e}")));
            return proven;
        }
    };
    let root = match view.root() {
        Ok(root) => root,
        Err(e) => {
            proven.failed = Some((0, format!("the root could not be computed: {e}")));
            return proven;
        }
    };
    proven.size = view.size();
    proven.root = hex(&root);
    for &seq in seqs.iter().take(PROVEN_MAX) {
        let checked = (|| -> Result<(), String> {
            if seq == 0 || seq > view.size() {
                return Err(format!(
                    "seq {seq} is not in the tree of size {}",
                    view.size()
                ));
            }
            // Its link in the hash chain: its stored hash is the hash of the
            // one before it, its seq and its bytes.
            let record = log
                .get(seq)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("seq {seq} is past the log's head"))?;
            let prev = match seq {
                1 => cmdlog_store::ChainHash::ZERO,
                _ => {
                    log.get(seq - 1)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("seq {} is missing", seq - 1))?
                        .hash
                }
            };
            if cmdlog_store::chain_hash(&prev, seq, &record.bytes) != record.hash {
                return Err("its hash is not the chain's link from the record before it".into());
            }
            let leaf = log
                .leaf(seq)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("seq {seq} is past the tree"))?;
            let path = view.inclusion_proof(seq).map_err(|e| e.to_string())?;
            verify_inclusion(&leaf_hash(&leaf), seq - 1, view.size(), &path, &root)
                .map_err(|e| e.to_string())
        })();
        match checked {
            Ok(()) => proven.checked += 1,
            Err(why) => {
                proven.failed = Some((seq, why));
                break;
            }
        }
    }
    proven
}
