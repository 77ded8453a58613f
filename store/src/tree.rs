//! The log's Merkle tree (RFC 6962 / RFC 9162, SHA-256), kept with the records:
//! leaf `N − 1` is record `N`, and its input is the record's bytes with its seq
//! as the first member (`{"seq":N,…}`; bytes that are not a JSON object are
//! taken as they are).
//!
//! Every leaf closes some complete subtrees: its own leaf hash, then one per
//! level it completes (`trailing_ones(index) + 1` hashes; the first `n` leaves
//! close `2n − popcount(n)` in all). Table `tree` keeps them in runs: an entry
//! under the index of its first leaf holds the count of its leaves and the
//! hashes they closed, in leaf order. The writer adds one entry per batch (of at
//! most [`TREE_ENTRY_LEAVES_MAX`] leaves) in the batch's own transaction: one
//! insert per group commit, where one per record cost a quarter of the
//! throughput of 64 appenders. Any root or proof reads O(log² n) hashes, each
//! found by one range lookup, never a record.
//!
//! The write-ahead log holds no tree: a writable open computes what redb's
//! records have beyond the tree (frames it just applied, a log older than the
//! tree) in [`catch_up`].

use cmdlog_tlog::{Frontier, Hash, NodeSource, leaf_hash};
use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable};

use crate::limits::{TREE_CATCH_UP_RECORDS as CATCH_UP_RECORDS, TREE_ENTRY_LEAVES_MAX};
use crate::record::Seq;
use crate::schema::{self, RECORDS, TREE};

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

/// How many hashes the first `n` leaves close: `2n − popcount(n)`.
fn closed_before(n: u64) -> u64 {
    2 * n - u64::from(n.count_ones())
}

/// Node `(level, index)` is closed by this leaf.
fn closing_leaf(level: u32, index: u64) -> u64 {
    ((index + 1) << level) - 1
}

/// One `tree` entry being built: the leaves from `first` on and the hashes they
/// closed.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    first: u64,
    leaves: u32,
    hashes: Vec<u8>,
    closed: Vec<Hash>,
}

impl Run {
    /// An empty run that starts at leaf `first`.
    pub(crate) fn at(first: u64) -> Self {
        Run {
            first,
            leaves: 0,
            hashes: Vec::new(),
            closed: Vec::new(),
        }
    }

    /// The leaf index of the next record.
    pub(crate) fn end(&self) -> u64 {
        self.first + u64::from(self.leaves)
    }

    /// Hashes record `seq` into `frontier` and keeps what it closed.
    pub(crate) fn push(&mut self, frontier: &mut Frontier, seq: Seq, bytes: &[u8]) {
        debug_assert_eq!(frontier.size() + 1, seq, "leaf N-1 is record N");
        debug_assert_eq!(self.end() + 1, seq, "a run's leaves are contiguous");
        self.closed.clear();
        frontier.push(leaf_hash(&leaf_input(seq, bytes)), &mut self.closed);
        for hash in &self.closed {
            self.hashes.extend_from_slice(hash);
        }
        self.leaves += 1;
    }

    /// Whether it holds as many leaves as an entry takes.
    pub(crate) fn is_full(&self) -> bool {
        self.leaves as usize >= TREE_ENTRY_LEAVES_MAX
    }

    /// Writes the run as one entry (nothing when empty) and starts the next.
    pub(crate) fn flush(
        &mut self,
        table: &mut redb::Table<u64, &[u8]>,
    ) -> Result<(), redb::StorageError> {
        if self.leaves > 0 {
            let mut value = Vec::with_capacity(4 + self.hashes.len());
            value.extend_from_slice(&self.leaves.to_le_bytes());
            value.extend_from_slice(&self.hashes);
            table.insert(self.first, value.as_slice())?;
        }
        *self = Run::at(self.end());
        Ok(())
    }

    /// The hash of node `(level, index)` if this run's leaves closed it.
    fn node(&self, level: u32, index: u64) -> Option<Hash> {
        hash_in(self.first, self.leaves, &self.hashes, level, index)
    }
}

/// Node `(level, index)` from an entry: the leaves from `first`, `leaves` of
/// them, whose closed hashes are `hashes`.
fn hash_in(first: u64, leaves: u32, hashes: &[u8], level: u32, index: u64) -> Option<Hash> {
    let leaf = closing_leaf(level, index);
    if leaf < first || leaf >= first + u64::from(leaves) {
        return None;
    }
    let at = (closed_before(leaf) - closed_before(first) + u64::from(level)) as usize * 32;
    hashes.get(at..at + 32)?.try_into().ok()
}

/// An entry's value split into its leaf count and hashes.
fn decode_entry(value: &[u8]) -> Option<(u32, &[u8])> {
    let leaves = u32::from_le_bytes(value.get(..4)?.try_into().ok()?);
    Some((leaves, &value[4..]))
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

/// The tree as a table holds it (`None`: a log without one yet), plus the leaves
/// past the table, hashed in memory from records the table does not cover.
pub(crate) struct StoredNodes {
    pub(crate) table: Option<ReadOnlyTable<u64, &'static [u8]>>,
    /// The leaves past the table (an empty run at `u64::MAX` when none).
    pub(crate) tail: Run,
}

impl NodeSource for StoredNodes {
    type Error = TreeError;

    fn node(&self, level: u32, index: u64) -> Result<Hash, TreeError> {
        let missing = || TreeError::Missing { level, index };
        let leaf = closing_leaf(level, index);
        if leaf >= self.tail.first {
            return self.tail.node(level, index).ok_or_else(missing);
        }
        let table = self.table.as_ref().ok_or_else(missing)?;
        let entry = table
            .range(..=leaf)
            .map_err(|e| TreeError::Storage(e.to_string()))?
            .next_back()
            .ok_or_else(missing)?
            .map_err(|e| TreeError::Storage(e.to_string()))?;
        let first = entry.0.value();
        let (leaves, hashes) = decode_entry(entry.1.value()).ok_or_else(missing)?;
        hash_in(first, leaves, hashes, level, index).ok_or_else(missing)
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
    Ok(match table.last()? {
        None => 0,
        Some((k, v)) => {
            k.value() + decode_entry(v.value()).map_or(0, |(leaves, _)| u64::from(leaves))
        }
    })
}

/// Brings the `tree` table up to the records (a log older than the tree, frames
/// just applied) and returns the frontier of the whole tree. Commits every
/// [`CATCH_UP_RECORDS`] records, the last durably.
pub(crate) fn catch_up(db: &Database) -> Result<Frontier, redb::Error> {
    let read = db.begin_read()?;
    let records_head = read
        .open_table(RECORDS)?
        .last()?
        .map_or(0, |(k, _)| k.value());
    let nodes = StoredNodes {
        table: open_tree(&read)?,
        tail: Run::at(u64::MAX),
    };
    let mut size = match &nodes.table {
        Some(table) => stored_size(table)?,
        None => 0,
    };
    if size > records_head {
        return Err(redb::Error::Corrupted(format!(
            "the tree holds {size} leaves but the log only {records_head} records"
        )));
    }
    let mut frontier =
        Frontier::of(&nodes, size).map_err(|e| redb::Error::Corrupted(e.to_string()))?;
    drop(nodes);
    drop(read);
    while size < records_head {
        let txn = db.begin_write()?;
        {
            let records = txn.open_table(RECORDS)?;
            let mut tree = txn.open_table(TREE)?;
            let until = (size + CATCH_UP_RECORDS).min(records_head);
            let mut run = Run::at(size);
            for entry in records.range(size + 1..=until)? {
                let (k, v) = entry?;
                let seq = k.value();
                let (_, _, bytes) = schema::decode_record(v.value())
                    .ok_or_else(|| redb::Error::Corrupted(format!("record {seq} is malformed")))?;
                if seq != run.end() + 1 {
                    return Err(redb::Error::Corrupted(format!(
                        "record {seq} follows record {}",
                        run.end()
                    )));
                }
                run.push(&mut frontier, seq, bytes);
                if run.is_full() {
                    run.flush(&mut tree)?;
                }
            }
            run.flush(&mut tree)?;
            size = until;
        }
        txn.commit()?;
    }
    Ok(frontier)
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
    let mut entries = tree.iter()?;
    // The entry being compared: its first leaf, leaf count and hashes.
    let mut entry: Option<(u64, u32, Vec<u8>)> = None;
    let mut run = Run::at(0);
    for record in records.iter()? {
        let (k, v) = record?;
        let seq = k.value();
        let leaf = seq - 1;
        let Some((_, _, bytes)) = schema::decode_record(v.value()) else {
            return Ok(Some(seq));
        };
        if leaf != frontier.size() {
            return Ok(Some(frontier.size() + 1));
        }
        if entry
            .as_ref()
            .is_none_or(|(first, leaves, _)| leaf >= first + u64::from(*leaves))
        {
            let next = match entries.next() {
                Some(e) => {
                    let (k, v) = e?;
                    decode_entry(v.value()).map(|(n, h)| (k.value(), n, h.to_vec()))
                }
                None => None,
            };
            match next {
                Some(e) if e.0 == leaf => entry = Some(e),
                _ => return Ok(Some(seq)),
            }
            run = Run::at(leaf);
        }
        let (first, _, hashes) = entry.as_ref().expect("set above");
        let before = run.hashes.len();
        run.push(&mut frontier, seq, bytes);
        let start = (closed_before(leaf) - closed_before(*first)) as usize * 32;
        if hashes.get(start..start + run.hashes.len() - before) != Some(&run.hashes[before..]) {
            return Ok(Some(seq));
        }
        progress(seq);
    }
    let head = frontier.size();
    let extra = entry.is_some_and(|(first, leaves, _)| first + u64::from(leaves) > head);
    if extra || entries.next().is_some() {
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
        assert_eq!(closing_leaf(0, 5), 5);
        assert_eq!(closing_leaf(1, 0), 1);
        assert_eq!(closing_leaf(3, 1), 15);
        for n in 0..100u64 {
            let by_leaf: u64 = (0..n).map(|i| u64::from(i.trailing_ones()) + 1).sum();
            assert_eq!(closed_before(n), by_leaf);
        }
    }
}
