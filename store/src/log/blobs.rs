//! The blob store beside the log: content-addressed puts and verified gets.

use redb::ReadableTable;
use tokio::sync::oneshot;

use crate::error::{AppendError, BlobError, ReadError, read_err};
use crate::record::BlobHash;
use crate::schema::{self, BLOB_META};
use crate::writer::Request;

use super::Log;

impl Log {
    /// Stores `bytes` under their BLAKE3 hash. Idempotent: storing the same bytes
    /// again writes nothing. Blocks until committed.
    pub fn put_blob(&self, bytes: Vec<u8>) -> Result<BlobHash, BlobError> {
        self.submit_blob(bytes)?.wait().map_err(BlobError::from)
    }

    /// Stores a blob; resolves once it is committed.
    pub async fn put_blob_async(&self, bytes: Vec<u8>) -> Result<BlobHash, BlobError> {
        self.submit_blob(bytes)?
            .await_receipt()
            .await
            .map_err(BlobError::from)
    }

    /// Stores many blobs; they share group commits instead of paying one commit each.
    /// Resolves once all are committed, with their hashes in order.
    pub async fn put_blobs_async(&self, blobs: Vec<Vec<u8>>) -> Result<Vec<BlobHash>, BlobError> {
        let tickets = blobs
            .into_iter()
            .map(|bytes| self.submit_blob(bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hashes = Vec::with_capacity(tickets.len());
        for ticket in tickets {
            hashes.push(ticket.await_receipt().await?);
        }
        Ok(hashes)
    }

    fn submit_blob(&self, bytes: Vec<u8>) -> Result<BlobTicket, BlobError> {
        let max = self.shared.config.blob_bytes_max;
        if bytes.len() as u64 > max {
            return Err(BlobError::TooLarge {
                size: bytes.len() as u64,
                max,
            });
        }
        let hash = BlobHash::of(&bytes);
        if self.has_blob(&hash)? {
            return Ok(BlobTicket::Done(hash));
        }
        let (reply, rx) = oneshot::channel();
        self.send(Request::PutBlob { hash, bytes, reply })?;
        Ok(BlobTicket::Pending(hash, rx))
    }

    /// Whether a blob is stored (its bytes are not checked).
    pub fn has_blob(&self, hash: &BlobHash) -> Result<bool, ReadError> {
        if let Some(answer) = self.read_through(|r| r.has_blob(hash), |log| log.has_blob(hash)) {
            return answer;
        }
        let in_redb = || -> Result<bool, ReadError> {
            let read = self.shared.db.begin_read().map_err(read_err)?;
            let meta = read.open_table(BLOB_META).map_err(read_err)?;
            Ok(meta.get(&hash.0).map_err(read_err)?.is_some())
        };
        let overlay = self.overlay();
        if overlay.blobs.contains_key(&hash.0) {
            return Ok(true);
        }
        if overlay.removed.contains(&hash.0) {
            return Ok(false);
        }
        drop(overlay);
        in_redb()
    }

    /// A blob's bytes, re-hashed: a mismatch is an error, never returned bytes.
    pub fn get_blob(&self, hash: &BlobHash) -> Result<Option<Vec<u8>>, BlobError> {
        let from_overlay = {
            let overlay = self.overlay();
            match overlay.blobs.get(&hash.0) {
                Some(blob) => Some(Some(blob.bytes.as_ref().clone())),
                None if overlay.removed.contains(&hash.0) => Some(None),
                None => None,
            }
        };
        let found = match from_overlay {
            Some(found) => found,
            None if self.remote().is_some() => {
                let local = |log: &Log| {
                    log.get_blob(hash).map_err(|e| ReadError::Storage {
                        message: e.to_string(),
                    })
                };
                self.read_through(|r| r.get_blob(hash), local)
                    .expect("read through a holder")?
            }
            None => {
                let read = self.shared.db.begin_read().map_err(read_err)?;
                schema::read_blob(&read, &hash.0).map_err(read_err)?
            }
        };
        let Some(bytes) = found else {
            return Ok(None);
        };
        let actual = BlobHash::of(&bytes);
        if actual != *hash {
            return Err(BlobError::Mismatch {
                hash: *hash,
                actual,
            });
        }
        Ok(Some(bytes))
    }

    /// Every stored blob with the unix-ms time it was added and its size.
    pub fn list_blobs(&self) -> Result<Vec<(BlobHash, u64, u64)>, ReadError> {
        if let Some(answer) = self.read_through(|r| r.list_blobs(), |log| log.list_blobs()) {
            return answer;
        }
        let read = self.shared.db.begin_read().map_err(read_err)?;
        let meta = read.open_table(BLOB_META).map_err(read_err)?;
        let mut out = Vec::new();
        let overlay = self.overlay();
        for entry in meta.iter().map_err(read_err)? {
            let (k, v) = entry.map_err(read_err)?;
            let (added_ms, size) = v.value();
            if !overlay.removed.contains(k.value()) && !overlay.blobs.contains_key(k.value()) {
                out.push((BlobHash(*k.value()), added_ms, size));
            }
        }
        for (hash, blob) in &overlay.blobs {
            out.push((BlobHash(*hash), blob.added_ms, blob.bytes.len() as u64));
        }
        if !overlay.blobs.is_empty() {
            out.sort_by_key(|b| b.0.0);
        }
        Ok(out)
    }
}

enum BlobTicket {
    Done(BlobHash),
    Pending(BlobHash, oneshot::Receiver<Result<(), AppendError>>),
}

impl BlobTicket {
    fn wait(self) -> Result<BlobHash, AppendError> {
        match self {
            BlobTicket::Done(h) => Ok(h),
            BlobTicket::Pending(h, rx) => rx
                .blocking_recv()
                .unwrap_or(Err(AppendError::Closed))
                .map(|()| h),
        }
    }

    async fn await_receipt(self) -> Result<BlobHash, AppendError> {
        match self {
            BlobTicket::Done(h) => Ok(h),
            BlobTicket::Pending(h, rx) => rx.await.unwrap_or(Err(AppendError::Closed)).map(|()| h),
        }
    }
}
