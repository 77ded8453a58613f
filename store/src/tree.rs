//! The log's Merkle tree (RFC 6962 / RFC 9162, SHA-256), kept with the records:
//! leaf `N − 1` is record `N`, and its input is the record's bytes with its seq
//! as the first member (`{"seq":N,…}`; bytes that are not a JSON object are
//! taken as they are). Table `tree` holds, under each leaf index, the hashes of
//! the complete subtrees that leaf closes (its own leaf hash, then one per level
//! it completes): an append writes O(1) hashes on average and O(log n) at most,
//! and any root or proof reads O(log² n) of them, never a record.
//!
//! The writer updates the tree in the same redb transaction as the records. The
//! write-ahead log holds no tree: a writable open computes what redb's records
//! have beyond the tree (frames it just applied, a log older than the tree) in
//! [`catch_up`].

use cmdlog_tlog::{Frontier, Hash, NodeSource, leaf_hash};
use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable};

use crate::record::Seq;
use crate::schema::{self, RECORDS, TREE};

use crate::limits::TREE_CATCH_UP_RECORDS as CATCH_UP_RECORDS;

/// The leaf input of record `seq`: `{"seq":<seq>,` then the record's bytes after
/// their opening brace (`{"seq":<seq>}` for `{}`); bytes that do not start with
/// `{` are the leaf as they are.
pub fn leaf_input(seq: Seq, bytes: &[u8]) -> Vec<u8> {
    let Some(rest) = bytes.strip_prefix(b"{") else {
        return bytes.to_vec();
    };
    let mut leaf = Vec::with_capacity(bytes.len() + 28);
    leaf.extend_from_slice(b"{\"seq\":");
    leaf.extend_from_slice(seq.to_string().as_bytes());
    if !rest.trim_ascii_start().starts_with(b"}") {
        leaf.push(b',');
    }
    leaf.extend_from_slice(rest);
    leaf
}

/// Appends record `seq` to `frontier` and returns its `tree` table value: the
/// hashes of the subtrees it closes, by level.
pub(crate) fn push_record(
    frontier: &mut Frontier,
    seq: Seq,
    bytes: &[u8],
    closed: &mut Vec<Hash>,
) -> Vec<u8> {
    debug_assert_eq!(frontier.size() + 1, seq, "leaf N-1 is record N");
    closed.clear();
    frontier.push(leaf_hash(&leaf_input(seq, bytes)), closed);
    closed.concat()
}

/// Why the stored tree could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// redb failed underneath.
    #[error("storage error while reading the log's tree: {0}")]
    Storage(String),
    /// A node the tree should hold is missing or too short.
    #[error("the log's tree lacks node ({level}, {index}): run `cmdlog verify`")]
    Missing {
        /// Its level.
        level: u32,
        /// Its index.
        index: u64,
    },
}

/// Node `(level, index)` is stored under the leaf that closed it.
fn entry_of(level: u32, index: u64) -> u64 {
    ((index + 1) << level) - 1
}

/// The tree as a table holds it (`None`: a log without one yet), plus the leaves
/// past the table, computed in memory from records the table does not cover.
pub(crate) struct StoredNodes {
    pub(crate) table: Option<ReadOnlyTable<u64, &'static [u8]>>,
    /// Leaf index of `tail[0]`.
    pub(crate) tail_start: u64,
    /// The `tree` values of leaves `tail_start..`.
    pub(crate) tail: Vec<Vec<u8>>,
}

impl NodeSource for StoredNodes {
    type Error = TreeError;

    fn node(&self, level: u32, index: u64) -> Result<Hash, TreeError> {
        let missing = || TreeError::Missing { level, index };
        let key = entry_of(level, index);
        let at = level as usize * 32;
        let hash = |value: &[u8]| -> Result<Hash, TreeError> {
            value
                .get(at..at + 32)
                .and_then(|h| h.try_into().ok())
                .ok_or_else(missing)
        };
        if key >= self.tail_start {
            let value = self
                .tail
                .get((key - self.tail_start) as usize)
                .ok_or_else(missing)?;
            return hash(value);
        }
        let value = self
            .table
            .as_ref()
            .ok_or_else(missing)?
            .get(key)
            .map_err(|e| TreeError::Storage(e.to_string()))?
            .ok_or_else(missing)?;
        hash(value.value())
    }
}

/// The `tree` table, `None` in a log that has none yet (written before the tree,
/// and not opened writable since).
pub(crate) fn open_tree(
    read: &redb::ReadTransaction,
) -> Result<Option<ReadOnlyTable<u64, &'static [u8]>>, redb::Error> {
    match read.open_table(TREE) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// How many leaves the `tree` table holds.
pub(crate) fn stored_size(
    table: &impl ReadableTable<u64, &'static [u8]>,
) -> Result<u64, redb::StorageError> {
    Ok(table.last()?.map_or(0, |(k, _)| k.value() + 1))
}

/// Brings the `tree` table up to the records (a log older than the tree, frames
/// just applied) and returns the frontier of the whole tree. Commits every
/// [`CATCH_UP_RECORDS`] records, the last durably.
pub(crate) fn catch_up(db: &Database) -> Result<Frontier, redb::Error> {
    let (mut size, records_head) = {
        let read = db.begin_read()?;
        let head = read
            .open_table(RECORDS)?
            .last()?
            .map_or(0, |(k, _)| k.value());
        let size = match open_tree(&read)? {
            Some(table) => stored_size(&table)?,
            None => 0,
        };
        (size, head)
    };
    if size > records_head {
        return Err(redb::Error::Corrupted(format!(
            "the tree holds {size} leaves but the log only {records_head} records"
        )));
    }
    let mut frontier = {
        let read = db.begin_read()?;
        let nodes = StoredNodes {
            table: open_tree(&read)?,
            tail_start: u64::MAX,
            tail: vec![],
        };
        Frontier::of(&nodes, size).map_err(|e| redb::Error::Corrupted(e.to_string()))?
    };
    let mut closed = Vec::new();
    loop {
        let txn = db.begin_write()?;
        {
            let records = txn.open_table(RECORDS)?;
            let mut tree = txn.open_table(TREE)?;
            let until = (size + CATCH_UP_RECORDS).min(records_head);
            for entry in records.range(size + 1..=until)? {
                let (k, v) = entry?;
                let seq = k.value();
                let (_, _, bytes) = schema::decode_record(v.value())
                    .ok_or_else(|| redb::Error::Corrupted(format!("record {seq} is malformed")))?;
                let value = push_record(&mut frontier, seq, bytes, &mut closed);
                tree.insert(seq - 1, value.as_slice())?;
            }
            size = until;
        }
        txn.commit()?;
        if size >= records_head {
            return Ok(frontier);
        }
    }
}

/// Recomputes the tree from the records and compares it with the stored one:
/// the seq of the first record whose stored hashes differ (or are missing), or
/// one past the last record when the tree holds leaves no record has.
pub(crate) fn first_mismatch(
    records: &impl ReadableTable<u64, &'static [u8]>,
    tree: &impl ReadableTable<u64, &'static [u8]>,
    mut progress: impl FnMut(Seq),
) -> Result<Option<Seq>, redb::StorageError> {
    let mut frontier = Frontier::new();
    let mut closed = Vec::new();
    let mut head = 0;
    for entry in records.iter()? {
        let (k, v) = entry?;
        let seq = k.value();
        let Some((_, _, bytes)) = schema::decode_record(v.value()) else {
            return Ok(Some(seq));
        };
        if seq != head + 1 {
            return Ok(Some(head + 1));
        }
        let value = push_record(&mut frontier, seq, bytes, &mut closed);
        match tree.get(seq - 1)? {
            Some(stored) if stored.value() == value.as_slice() => {}
            _ => return Ok(Some(seq)),
        }
        head = seq;
        progress(seq);
    }
    if stored_size(tree)? > head {
        return Ok(Some(head + 1));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaf_names_its_seq_first() {
        assert_eq!(
            leaf_input(7, br#"{"at":1,"type":"x"}"#),
            br#"{"seq":7,"at":1,"type":"x"}"#
        );
        assert_eq!(leaf_input(12, b"{}"), br#"{"seq":12}"#);
        assert_eq!(leaf_input(3, b"raw"), b"raw");
        assert_eq!(entry_of(0, 5), 5);
        assert_eq!(entry_of(1, 0), 1);
        assert_eq!(entry_of(3, 1), 15);
    }
}
