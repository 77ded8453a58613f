//! The log's Merkle tree: kept with every kind of append, caught up by a writable
//! open, checked against the records, and the same whichever way it is read.

use cmdlog_store::{Log, LogConfig, NewRecord, leaf_input};
use cmdlog_tlog::{Hash, leaf_hash, node_hash, verify_consistency, verify_inclusion};
use redb::ReadableTable;

fn rec(i: usize) -> NewRecord {
    NewRecord::new(format!("{{\"at\":{i},\"type\":\"t\"}}").into_bytes())
        .stream(format!("s{}", i % 3))
}

/// RFC 9162 §2.1.1 from the definition, over every record's leaf input.
fn reference_root(log: &Log, size: u64) -> Hash {
    let leaves: Vec<Vec<u8>> = log
        .range(1, size)
        .unwrap()
        .into_iter()
        .map(|r| leaf_input(r.seq, &r.bytes))
        .collect();
    fn mth(leaves: &[Vec<u8>]) -> Hash {
        match leaves.len() {
            0 => cmdlog_tlog::empty_root(),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = 1 << (usize::BITS - 1 - (n - 1).leading_zeros());
                node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }
    mth(&leaves)
}

fn check_everything(log: &Log) {
    let view = log.tree().unwrap();
    let size = view.size();
    assert_eq!(size, log.head().seq);
    let root = view.root().unwrap();
    assert_eq!(root, reference_root(log, size), "root at {size}");
    for seq in 1..=size {
        let leaf = leaf_hash(&log.leaf(seq).unwrap().unwrap());
        let proof = view.inclusion_proof(seq).unwrap();
        verify_inclusion(&leaf, seq - 1, size, &proof, &root).unwrap();
    }
    for old in 0..=size {
        let proof = view.consistency_proof(old).unwrap();
        let old_root = view.root_at(old).unwrap();
        assert_eq!(old_root, reference_root(log, old));
        verify_consistency(old, size, &old_root, &root, &proof).unwrap();
    }
}

#[test]
fn the_tree_follows_group_commits_bulk_commits_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(
        log.tree().unwrap().root().unwrap(),
        cmdlog_tlog::empty_root()
    );
    let mut i = 0;
    for batch in [1, 2, 3, 5, 8, 13, 1, 1, 30] {
        log.append(
            (0..batch)
                .map(|_| {
                    i += 1;
                    rec(i)
                })
                .collect(),
        )
        .unwrap();
    }
    // A batch large enough to skip the write-ahead log (one durable redb commit).
    let big: Vec<NewRecord> = (0..40)
        .map(|j| NewRecord::new(format!("{{\"pad\":\"{}\"}}", "x".repeat(60_000 + j)).into_bytes()))
        .collect();
    log.append(big).unwrap();
    check_everything(&log);
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    let root = log.tree().unwrap().root().unwrap();
    drop(log);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.tree().unwrap().root().unwrap(), root);
    log.append(vec![rec(1000)]).unwrap();
    check_everything(&log);
    drop(log);
    let read = Log::open_read_only(&path, LogConfig::default()).unwrap();
    check_everything(&read);
    assert_eq!(read.verify_tree(|_| {}).unwrap(), None);
}

#[test]
fn short_lived_appends_are_in_the_tree_before_and_after_they_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append((0..7).map(rec).collect()).unwrap();
    drop(log);
    let short = Log::open_short_lived(&path, LogConfig::default()).unwrap();
    assert!(short.is_short_lived());
    short.append(vec![rec(7), rec(8)]).unwrap();
    short.append(vec![rec(9)]).unwrap();
    check_everything(&short);
    let root = short.tree().unwrap().root().unwrap();
    drop(short);
    // A read-only open hashes the frames redb lacks; a writable one applies them
    // and stores their leaves.
    let read = Log::open_read_only(&path, LogConfig::default());
    if let Ok(read) = read {
        assert_eq!(read.tree().unwrap().root().unwrap(), root);
    }
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.tree().unwrap().root().unwrap(), root);
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    check_everything(&log);
}

#[test]
fn a_log_without_a_tree_gets_one_at_its_first_writable_open_and_a_changed_tree_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    log.append((0..300).map(rec).collect()).unwrap();
    let root = log.tree().unwrap().root().unwrap();
    drop(log);
    let tree: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("tree");
    {
        // As a log written before the tree: no `tree` table.
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.delete_table(tree).unwrap();
        txn.commit().unwrap();
    }
    let read = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(!read.has_stored_tree().unwrap());
    assert_eq!(
        read.tree().unwrap().root().unwrap(),
        root,
        "hashed in memory"
    );
    drop(read);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert!(log.has_stored_tree().unwrap());
    assert_eq!(log.tree().unwrap().root().unwrap(), root);
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    drop(log);
    {
        // A tree changed under the records: one leaf's stored hash replaced.
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            // One append of 300 records: one entry from leaf 0, its leaf count,
            // then the hashes each leaf closed (leaf 99's leaf hash after the
            // 2·99 − popcount(99) hashes the leaves before it closed).
            let mut table = txn.open_table(tree).unwrap();
            let mut value = table.get(0).unwrap().unwrap().value().to_vec();
            assert_eq!(u32::from_le_bytes(value[..4].try_into().unwrap()), 300);
            let at = 4 + (2 * 99 - 99u64.count_ones() as usize) * 32;
            value[at] ^= 1;
            table.insert(0, value.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert_eq!(
        log.verify_tree(|_| {}).unwrap(),
        Some(100),
        "leaf 99 is seq 100"
    );
}

#[test]
fn a_log_written_without_the_tree_gets_it_at_the_next_open_that_keeps_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let without = LogConfig {
        merkle_tree: false,
        ..LogConfig::default()
    };
    let log = Log::open(&path, without.clone()).unwrap();
    log.append((0..500).map(rec).collect()).unwrap();
    log.append(vec![rec(501)]).unwrap();
    drop(log);
    let read = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(
        !read.has_stored_tree().unwrap(),
        "nothing of the tree was written"
    );
    let root = read.tree().unwrap().root().unwrap();
    assert_eq!(root, reference_root(&read, 501));
    drop(read);
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    check_everything(&log);
}

#[test]
fn batches_past_an_entrys_size_and_catch_ups_split_into_entries_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    // 4096 records in one group commit: four entries of 1024 leaves.
    log.append((0..4096).map(rec).collect()).unwrap();
    log.append((0..5).map(rec).collect()).unwrap();
    let view = log.tree().unwrap();
    let root = view.root().unwrap();
    assert_eq!(root, reference_root(&log, 4101));
    for seq in [1, 2, 1023, 1024, 1025, 2048, 3000, 4096, 4097, 4101] {
        let leaf = leaf_hash(&log.leaf(seq).unwrap().unwrap());
        verify_inclusion(
            &leaf,
            seq - 1,
            4101,
            &view.inclusion_proof(seq).unwrap(),
            &root,
        )
        .unwrap();
    }
    for old in [1, 1024, 1025, 2047, 4096, 4100] {
        let proof = view.consistency_proof(old).unwrap();
        assert_eq!(view.root_at(old).unwrap(), reference_root(&log, old));
        verify_consistency(old, 4101, &view.root_at(old).unwrap(), &root, &proof).unwrap();
    }
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
    drop(view);
    drop(log);
    // The same log's tree rebuilt by a catch-up: the same root.
    let tree: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("tree");
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.delete_table(tree).unwrap();
        txn.commit().unwrap();
    }
    let log = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(log.tree().unwrap().root().unwrap(), root);
    assert_eq!(log.verify_tree(|_| {}).unwrap(), None);
}
