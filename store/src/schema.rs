//! The redb tables of a log file. The byte layout of each value is written
//! down here and in `docs/architecture.md`.

use redb::TableDefinition;

use crate::record::ChainHash;

/// `seq -> record`. Value layout:
/// `chain hash (32 bytes) | stream key length (u16 LE) | stream key (UTF-8) | record bytes`.
pub(crate) const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

/// `leaf index -> hashes`: the log's Merkle tree (see [`crate::tree`]). Under
/// leaf `i` (record `i + 1`), the SHA-256 hashes of the complete subtrees that
/// leaf closes, by level from 0 (its leaf hash): `32 · (trailing_ones(i) + 1)`
/// bytes.
pub(crate) const TREE: TableDefinition<u64, &[u8]> = TableDefinition::new("tree");

/// `(stream key, seq) -> ()`: the index behind reads by stream. Complete through
/// `META["streams_through"]` (a u64 LE; absent means through the head, as logs
/// written before the index was deferred are); later records' entries are held in
/// memory ([`crate::log::PendingStreams`]) and written in sorted batches.
pub(crate) const STREAMS: TableDefinition<(&str, u64), ()> = TableDefinition::new("streams");

/// The `META` key saying whether the write-ahead log may hold frames redb's file
/// lacks: [`WAL_OPEN`] from before a writer's first frame until its clean close
/// ([`WAL_CLEAN`]). Absent in logs written before it existed (read as clean). A
/// missing or cut write-ahead log is harmless only when this says clean.
pub(crate) const WAL_STATE: &str = "wal";
/// [`WAL_STATE`]: frames may be pending.
pub(crate) const WAL_OPEN: &[u8] = b"open";
/// [`WAL_STATE`]: closed cleanly; redb's file holds everything.
pub(crate) const WAL_CLEAN: &[u8] = b"clean";

/// The `META` key of the seq through which `STREAMS` is complete.
pub(crate) const STREAMS_THROUGH: &str = "streams_through";

/// `blake3 hash -> blob bytes`, for blobs of at most [`BLOB_CHUNK_BYTES`].
pub(crate) const BLOBS: TableDefinition<&[u8; 32], &[u8]> = TableDefinition::new("blobs");

/// `(blake3 hash, chunk index) -> chunk bytes`, for larger blobs: pieces of
/// [`BLOB_CHUNK_BYTES`], the last one shorter. redb gives a value larger than a
/// page a power-of-two run of pages; a whole 8 MiB blob plus its entry header took
/// 16 MiB on disk (and in writes), while a chunk fits its 256 KiB run.
pub(crate) const BLOB_CHUNKS: TableDefinition<(&[u8; 32], u32), &[u8]> =
    TableDefinition::new("blob_chunks");

pub(crate) use crate::limits::BLOB_CHUNK_BYTES;

/// Stores a blob's bytes, whole or in chunks.
pub(crate) fn insert_blob(
    blobs: &mut redb::Table<&[u8; 32], &[u8]>,
    chunks: &mut redb::Table<(&[u8; 32], u32), &[u8]>,
    hash: &[u8; 32],
    bytes: &[u8],
) -> Result<(), redb::StorageError> {
    if bytes.len() <= BLOB_CHUNK_BYTES {
        blobs.insert(hash, bytes)?;
    } else {
        for (index, chunk) in bytes.chunks(BLOB_CHUNK_BYTES).enumerate() {
            let index = u32::try_from(index).expect("a blob has fewer than 2^32 chunks");
            chunks.insert((hash, index), chunk)?;
        }
    }
    Ok(())
}

/// Removes a blob's bytes, whole or chunked.
pub(crate) fn remove_blob(
    blobs: &mut redb::Table<&[u8; 32], &[u8]>,
    chunks: &mut redb::Table<(&[u8; 32], u32), &[u8]>,
    hash: &[u8; 32],
) -> Result<(), redb::StorageError> {
    blobs.remove(hash)?;
    chunks.retain_in((hash, 0)..=(hash, u32::MAX), |_, _| false)?;
    Ok(())
}

/// A blob's stored bytes (not re-hashed), whole or put back together from chunks.
pub(crate) fn read_blob(
    read: &redb::ReadTransaction,
    hash: &[u8; 32],
) -> Result<Option<Vec<u8>>, redb::Error> {
    let blobs = read.open_table(BLOBS)?;
    if let Some(value) = blobs.get(hash)? {
        return Ok(Some(value.value().to_vec()));
    }
    // Logs written before chunking have no chunk table.
    let chunks = match read.open_table(BLOB_CHUNKS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut bytes = Vec::new();
    let mut found = false;
    for entry in chunks.range((hash, 0)..=(hash, u32::MAX))? {
        let (_, chunk) = entry?;
        bytes.extend_from_slice(chunk.value());
        found = true;
    }
    Ok(found.then_some(bytes))
}

/// `blake3 hash -> (added at, unix ms; size in bytes)`, kept apart from the bytes so
/// listing blobs never reads them.
pub(crate) const BLOB_META: TableDefinition<&[u8; 32], (u64, u64)> =
    TableDefinition::new("blob_meta");

/// `seq -> snapshot bytes`: a cache of a projection as of that seq, opaque to the
/// store. Only the latest is kept.
pub(crate) const SNAPSHOTS: TableDefinition<u64, &[u8]> = TableDefinition::new("snapshots");

/// Replaces every snapshot with this one.
pub(crate) fn replace_snapshot(
    txn: &redb::WriteTransaction,
    seq: u64,
    bytes: &[u8],
) -> Result<(), redb::Error> {
    use redb::ReadableTable;
    let mut snapshots = txn.open_table(SNAPSHOTS)?;
    let old: Vec<u64> = snapshots
        .iter()?
        .map(|e| e.map(|(k, _)| k.value()))
        .collect::<Result<_, _>>()?;
    for k in old {
        snapshots.remove(k)?;
    }
    snapshots.insert(seq, bytes)?;
    Ok(())
}

/// `key -> value` facts about the file itself.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// The value of `META["format"]` this version writes and reads.
pub(crate) const FORMAT: &[u8] = b"cmdlog-log/1";

/// Encodes one `RECORDS` value.
pub(crate) fn encode_record(hash: &ChainHash, stream: Option<&str>, bytes: &[u8]) -> Vec<u8> {
    let key = stream.unwrap_or("");
    let key_len = u16::try_from(key.len()).expect("stream key length checked before append");
    let mut out = Vec::with_capacity(32 + 2 + key.len() + bytes.len());
    out.extend_from_slice(hash.as_bytes());
    out.extend_from_slice(&key_len.to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(bytes);
    out
}

/// Decodes one `RECORDS` value into (hash, stream key, record bytes).
/// `None` when the value is too short to hold its own header: a corrupt file.
pub(crate) fn decode_record(value: &[u8]) -> Option<(ChainHash, Option<&str>, &[u8])> {
    let hash = ChainHash(value.get(..32)?.try_into().ok()?);
    let key_len = u16::from_le_bytes(value.get(32..34)?.try_into().ok()?) as usize;
    let key = value.get(34..34 + key_len)?;
    let bytes = value.get(34 + key_len..)?;
    let key = if key.is_empty() {
        None
    } else {
        Some(std::str::from_utf8(key).ok()?)
    };
    Some((hash, key, bytes))
}

/// The hash chain's link: `h(n) = blake3(h(n-1) || seq(n) as 8 bytes LE ||
/// record_bytes(n))`, `h(0)` 32 zero bytes. Every writer and checker of the chain
/// (the store, a hub's reader) computes it here.
pub fn chain(prev: &ChainHash, seq: u64, bytes: &[u8]) -> ChainHash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(prev.as_bytes());
    hasher.update(&seq.to_le_bytes());
    hasher.update(bytes);
    ChainHash(*hasher.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout_round_trips() {
        let hash = ChainHash([7u8; 32]);
        let value = encode_record(&hash, Some("s-1"), b"{}");
        assert_eq!(decode_record(&value), Some((hash, Some("s-1"), &b"{}"[..])));
        let value = encode_record(&hash, None, b"x");
        assert_eq!(decode_record(&value), Some((hash, None, &b"x"[..])));
    }

    #[test]
    fn truncated_record_is_not_decoded() {
        assert_eq!(decode_record(&[0u8; 33]), None);
        let mut value = encode_record(&ChainHash::ZERO, Some("abc"), b"");
        value.truncate(35);
        assert_eq!(decode_record(&value), None);
    }

    #[test]
    fn chain_depends_on_every_input() {
        let base = chain(&ChainHash::ZERO, 1, b"a");
        assert_ne!(base, chain(&ChainHash([1; 32]), 1, b"a"));
        assert_ne!(base, chain(&ChainHash::ZERO, 2, b"a"));
        assert_ne!(base, chain(&ChainHash::ZERO, 1, b"b"));
    }
}
