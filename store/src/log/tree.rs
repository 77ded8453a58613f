//! The log's Merkle tree as readers see it: a [`TreeView`] at the head, the leaf
//! input of a record, and the check of the stored tree against the records.

use cmdlog_tlog::{Frontier, Hash, NodeSource};

use crate::error::{ReadError, read_err};
use crate::record::Seq;
use crate::schema::RECORDS;
use crate::tree::{self, StoredNodes, TreeError};

use super::Log;

/// The log's Merkle tree at one size, read from one redb snapshot (plus, for a
/// log opened without writing, the leaves of records its `tree` table does not
/// hold yet, hashed in memory). Roots and proofs come from stored hashes: no
/// record is read.
pub struct TreeView {
    size: u64,
    nodes: StoredNodes,
}

impl std::fmt::Debug for TreeView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeView")
            .field("size", &self.size)
            .finish()
    }
}

impl NodeSource for TreeView {
    type Error = TreeError;
    fn node(&self, level: u32, index: u64) -> Result<Hash, TreeError> {
        self.nodes.node(level, index)
    }
}

impl TreeView {
    /// How many leaves: the log's head seq when the view was taken.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The RFC 6962 root hash.
    pub fn root(&self) -> Result<Hash, TreeError> {
        cmdlog_tlog::root(self, self.size)
    }

    /// The root of the tree of the first `size` leaves (`size` ≤ [`Self::size`]).
    pub fn root_at(&self, size: u64) -> Result<Hash, TreeError> {
        assert!(size <= self.size, "the view holds {} leaves", self.size);
        cmdlog_tlog::root(self, size)
    }

    /// The inclusion proof of record `seq` (leaf `seq − 1`), `1 ≤ seq ≤ size`.
    pub fn inclusion_proof(&self, seq: Seq) -> Result<Vec<Hash>, TreeError> {
        assert!(seq >= 1 && seq <= self.size, "seq {seq} is not in the view");
        cmdlog_tlog::inclusion_proof(self, seq - 1, self.size)
    }

    /// The consistency proof from the tree of `old` leaves to this one.
    pub fn consistency_proof(&self, old: u64) -> Result<Vec<Hash>, TreeError> {
        self.consistency_proof_between(old, self.size)
    }

    /// The consistency proof from the tree of `old` leaves to the tree of `new`
    /// (`old ≤ new ≤ size`).
    pub fn consistency_proof_between(&self, old: u64, new: u64) -> Result<Vec<Hash>, TreeError> {
        assert!(
            old <= new && new <= self.size,
            "the view holds {} leaves",
            self.size
        );
        cmdlog_tlog::consistency_proof(self, old, new)
    }
}

impl Log {
    /// The log's Merkle tree at its head. A writable log keeps the whole tree in
    /// its file; a log opened without writing hashes in memory the records its
    /// file's tree lacks (frames of short-lived appenders; a log older than the
    /// tree hashes every record, once per call).
    pub fn tree(&self) -> Result<TreeView, ReadError> {
        let head = self.head().seq;
        // Read through the holder: every leaf hashed here, as for a log older
        // than the tree.
        let table = match self.remote() {
            Some(_) => None,
            None => {
                let read = self.shared.db.begin_read().map_err(read_err)?;
                tree::open_tree(&read).map_err(read_err)?
            }
        };
        let stored = match &table {
            Some(table) => tree::stored_size(table).map_err(read_err)?,
            None => 0,
        };
        let mut nodes = StoredNodes {
            table,
            tail: tree::Run::at(u64::MAX),
        };
        if stored < head {
            let mut frontier = Frontier::of(&nodes, stored).map_err(read_err)?;
            let mut tail = tree::Run::at(stored);
            let mut failed = None;
            self.scan(stored + 1, head, |record| {
                if record.seq != tail.end() + 1 {
                    failed = Some(record.seq);
                    return false;
                }
                tail.push(&mut frontier, record.seq, &record.bytes);
                true
            })?;
            if let Some(seq) = failed.or((frontier.size() != head).then_some(head)) {
                return Err(ReadError::Corrupt {
                    seq,
                    message: "the log has a gap where its tree was hashed".into(),
                });
            }
            nodes.tail = tail;
        }
        Ok(TreeView { size: head, nodes })
    }

    /// Record `seq`'s leaf input, as hashed into the tree
    /// ([`crate::leaf_input`]); `None` past the head.
    pub fn leaf(&self, seq: Seq) -> Result<Option<Vec<u8>>, ReadError> {
        Ok(self
            .get(seq)?
            .map(|record| tree::leaf_input(seq, &record.bytes)))
    }

    /// Recomputes the Merkle tree from the records in redb's file and compares it
    /// with the stored one: `Some(seq)` names the first record whose stored
    /// hashes are wrong or missing. A log whose file has no tree yet (older than
    /// the tree, never opened writable since) reports `None` with nothing checked:
    /// see [`Log::has_stored_tree`].
    pub fn verify_tree(&self, mut progress: impl FnMut(Seq)) -> Result<Option<Seq>, ReadError> {
        // One instance for the log read after its holder stopped.
        let unseen: &mut dyn FnMut(Seq) = &mut |_| {};
        if let Some(answer) = self.read_through(|r| r.verify_tree(), |log| log.verify_tree(unseen))
        {
            progress(self.head().seq);
            return answer;
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let Some(table) = tree::open_tree(&read).map_err(read_err)? else {
            return Ok(None);
        };
        let records = read.open_table(RECORDS).map_err(read_err)?;
        tree::first_mismatch(&records, &table, progress).map_err(read_err)
    }

    /// Whether redb's file holds a tree (every log does after a writable open).
    pub fn has_stored_tree(&self) -> Result<bool, ReadError> {
        if let Some(answer) =
            self.read_through(|r| r.has_stored_tree(), |log| log.has_stored_tree())
        {
            return answer;
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        Ok(tree::open_tree(&read).map_err(read_err)?.is_some())
    }
}
