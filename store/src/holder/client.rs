//! The reader's side: one connection to the holder, asked one thing at a time.

use std::io;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::wire::{In, Op, Out, malformed, receive};
use crate::error::ReadError;
use crate::record::{BlobHash, Head, Record, Seq};

/// A connection to the process that holds a log.
pub(crate) struct Remote {
    stream: Mutex<UnixStream>,
}

impl Remote {
    /// Connects to the holder of the log at `log`, if one answers on its socket
    /// and runs as this user.
    pub(crate) fn connect(log: &Path) -> io::Result<Remote> {
        let socket = super::socket_path(log)?;
        super::check_socket(&socket)?;
        let stream = UnixStream::connect(&socket)?;
        if !super::same_user(&stream) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is answered by another user", socket.display()),
            ));
        }
        Ok(Remote {
            stream: Mutex::new(stream),
        })
    }

    /// Asks `op` with `fields`; the answer's fields.
    fn ask(&self, op: Op, fields: impl FnOnce(&mut Out)) -> Result<Vec<u8>, ReadError> {
        let mut out = Out::default();
        out.u8(op as u8);
        fields(&mut out);
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let frame = out
            .send(&mut *stream)
            .and_then(|()| receive(&mut *stream))
            .map_err(lost)?
            .ok_or_else(|| lost(malformed("the holder hung up")))?;
        let mut input = In(&frame);
        match input.u8().map_err(lost)? {
            0 => Ok(input.0.to_vec()),
            _ => Err(ReadError::Storage {
                message: format!(
                    "the process holding the log answered: {}",
                    input.text().unwrap_or_default()
                ),
            }),
        }
    }

    pub(crate) fn head(&self) -> Result<Head, ReadError> {
        let frame = self.ask(Op::Head, |_| {})?;
        In(&frame).head().map_err(lost)
    }

    pub(crate) fn get(&self, seq: Seq) -> Result<Option<Record>, ReadError> {
        let frame = self.ask(Op::Get, |o| {
            o.u64(seq);
        })?;
        let mut input = In(&frame);
        match input.u8().map_err(lost)? {
            0 => Ok(None),
            _ => input.record().map(Some).map_err(lost),
        }
    }

    /// One page of `from..=until`: what the holder sent, in order (empty at the
    /// end).
    pub(crate) fn page(&self, from: Seq, until: Seq) -> Result<Vec<Record>, ReadError> {
        let frame = self.ask(Op::Scan, |o| {
            o.u64(from).u64(until);
        })?;
        In(&frame).records().map_err(lost)
    }

    pub(crate) fn stream_seqs(&self, key: &str, after: Seq) -> Result<Vec<Seq>, ReadError> {
        let frame = self.ask(Op::StreamSeqs, |o| {
            o.bytes(key.as_bytes()).u64(after);
        })?;
        In(&frame).seqs().map_err(lost)
    }

    pub(crate) fn has_stream(&self, key: &str) -> Result<bool, ReadError> {
        let frame = self.ask(Op::HasStream, |o| {
            o.bytes(key.as_bytes());
        })?;
        Ok(In(&frame).u8().map_err(lost)? == 1)
    }

    pub(crate) fn records_at(&self, seqs: &[Seq]) -> Result<Vec<Record>, ReadError> {
        let mut out = Vec::with_capacity(seqs.len());
        for chunk in seqs.chunks(super::wire::PAGE_RECORDS as usize) {
            let frame = self.ask(Op::RecordsAt, |o| {
                o.u64(chunk.len() as u64);
                for s in chunk {
                    o.u64(*s);
                }
            })?;
            out.extend(In(&frame).records().map_err(lost)?);
        }
        Ok(out)
    }

    pub(crate) fn streams(&self) -> Result<Vec<String>, ReadError> {
        let frame = self.ask(Op::Streams, |_| {})?;
        let mut input = In(&frame);
        let n = input.u64().map_err(lost)?;
        (0..n).map(|_| input.text().map_err(lost)).collect()
    }

    pub(crate) fn wait_for(&self, after: Seq, timeout: Duration) -> Result<Head, ReadError> {
        let frame = self.ask(Op::WaitFor, |o| {
            o.u64(after).u64(timeout.as_millis() as u64);
        })?;
        In(&frame).head().map_err(lost)
    }

    pub(crate) fn has_blob(&self, hash: &BlobHash) -> Result<bool, ReadError> {
        let frame = self.ask(Op::HasBlob, |o| {
            o.hash(&hash.0);
        })?;
        Ok(In(&frame).u8().map_err(lost)? == 1)
    }

    pub(crate) fn get_blob(&self, hash: &BlobHash) -> Result<Option<Vec<u8>>, ReadError> {
        let frame = self.ask(Op::GetBlob, |o| {
            o.hash(&hash.0);
        })?;
        let mut input = In(&frame);
        match input.u8().map_err(lost)? {
            0 => Ok(None),
            _ => input.bytes().map(Some).map_err(lost),
        }
    }

    pub(crate) fn list_blobs(&self) -> Result<Vec<(BlobHash, u64, u64)>, ReadError> {
        let frame = self.ask(Op::ListBlobs, |_| {})?;
        let mut input = In(&frame);
        let n = input.u64().map_err(lost)?;
        (0..n)
            .map(|_| Ok((input.blob_hash()?, input.u64()?, input.u64()?)))
            .collect::<io::Result<_>>()
            .map_err(lost)
    }

    pub(crate) fn verify_tree(&self) -> Result<Option<Seq>, ReadError> {
        let frame = self.ask(Op::VerifyTree, |_| {})?;
        let mut input = In(&frame);
        match input.u8().map_err(lost)? {
            0 => Ok(None),
            _ => input.u64().map(Some).map_err(lost),
        }
    }

    pub(crate) fn has_stored_tree(&self) -> Result<bool, ReadError> {
        let frame = self.ask(Op::HasStoredTree, |_| {})?;
        Ok(In(&frame).u8().map_err(lost)? == 1)
    }

    pub(crate) fn latest_snapshot(&self) -> Result<Option<(Seq, Vec<u8>)>, ReadError> {
        let frame = self.ask(Op::LatestSnapshot, |_| {})?;
        let mut input = In(&frame);
        match input.u8().map_err(lost)? {
            0 => Ok(None),
            _ => Ok(Some((
                input.u64().map_err(lost)?,
                input.bytes().map_err(lost)?,
            ))),
        }
    }
}

/// The channel failed: the read in flight is refused, never answered in part.
fn lost(e: io::Error) -> ReadError {
    ReadError::Storage {
        message: format!(
            "reading through the process that holds the log failed ({e}); it may have stopped: run the command again"
        ),
    }
}
