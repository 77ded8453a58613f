//! The reader's side: one connection to the holder, asked one thing at a time.

use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::wire::{In, Op, Out, malformed, receive};
use crate::error::{AppendError, ReadError};
use crate::record::{BlobHash, Head, NewRecord, Receipt, Record, Seq};

/// A connection to the process that holds a log.
pub(crate) struct Remote {
    socket: PathBuf,
    stream: Mutex<UnixStream>,
    /// The seq through which this open's commit hook ran: what its appends
    /// catch up from (see `Log::hook_through_holder`).
    pub(crate) hooked: Mutex<Seq>,
    /// Whether this open may append (through the holder).
    pub(crate) writable: bool,
    /// Whether the channel failed: the holder is gone, or going.
    lost: std::sync::atomic::AtomicBool,
}

impl Remote {
    /// Connects to the holder of the log at `log`, if one answers on its socket
    /// and runs as this user.
    pub(crate) fn connect(log: &Path) -> io::Result<Remote> {
        let socket = super::socket_path(log)?;
        let stream = channel(&socket)?;
        Ok(Remote {
            socket,
            stream: Mutex::new(stream),
            hooked: Mutex::new(0),
            writable: false,
            lost: Default::default(),
        })
    }

    /// Asks `op` with `fields`; the answer's fields.
    fn exchange(&self, op: Op, fields: impl FnOnce(&mut Out)) -> Result<Vec<u8>, Failure> {
        let mut out = Out::default();
        out.u8(op as u8);
        fields(&mut out);
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let frame = out
            .send(&mut *stream)
            .and_then(|()| receive(&mut *stream))
            .and_then(|frame| frame.ok_or_else(|| malformed("the holder hung up")))
            .map_err(|e| {
                self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
                Failure::Lost(e)
            })?;
        let mut input = In(&frame);
        match input.u8().map_err(Failure::Lost)? {
            0 => Ok(input.0.to_vec()),
            _ => Err(Failure::Answered(input.text().unwrap_or_default())),
        }
    }

    /// A read's answer.
    fn ask(&self, op: Op, fields: impl FnOnce(&mut Out)) -> Result<Vec<u8>, ReadError> {
        self.exchange(op, fields).map_err(|failure| match failure {
            Failure::Lost(e) => lost(e),
            Failure::Answered(why) => ReadError::Storage {
                message: format!("the process holding the log answered: {why}"),
            },
        })
    }

    /// A write's answer.
    fn tell(&self, op: Op, fields: impl FnOnce(&mut Out)) -> Result<Vec<u8>, AppendError> {
        self.exchange(op, fields).map_err(|failure| match failure {
            Failure::Lost(e) => AppendError::Holder {
                message: format!(
                    "the channel to it failed ({e}); it may have stopped, after or before appending: `cmdlog log` shows what is in the log"
                ),
            },
            Failure::Answered(why) => AppendError::Holder { message: why },
        })
    }

    /// Calls `f` with the pages of `from..=until`, in order, until it returns
    /// false: on a channel of the scan's own, the holder sending each page
    /// unasked while the last is taken in.
    pub(crate) fn scan_stream(
        &self,
        from: Seq,
        until: Seq,
        mut f: impl FnMut(Vec<Record>) -> bool,
    ) -> Result<(), ReadError> {
        let lost = |e: io::Error| {
            self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
            lost(e)
        };
        let mut stream = channel(&self.socket).map_err(lost)?;
        let mut out = Out::default();
        out.u8(Op::ScanStream as u8).u64(from).u64(until);
        out.send(&mut stream).map_err(lost)?;
        loop {
            let frame = receive(&mut stream)
                .and_then(|frame| frame.ok_or_else(|| malformed("the holder hung up")))
                .map_err(lost)?;
            let mut input = In(&frame);
            if input.u8().map_err(lost)? != 0 {
                return Err(ReadError::Storage {
                    message: format!(
                        "the process holding the log answered: {}",
                        input.text().unwrap_or_default()
                    ),
                });
            }
            let page = input.records().map_err(lost)?;
            let Some(last) = page.last().map(|r| r.seq) else {
                return Ok(());
            };
            // Stopping early hangs up: the holder stops at its next page.
            if !f(page) || last >= until {
                return Ok(());
            }
        }
    }

    /// Whether the channel to the holder failed.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Asks the holder to append `records` as one unit in its group commit.
    pub(crate) fn append(&self, records: &[NewRecord]) -> Result<Receipt, AppendError> {
        let frame = self.tell(Op::Append, |o| {
            o.new_records(records);
        })?;
        receipt(&frame)
    }

    /// Asks the holder to append `records` only if the first would get seq
    /// `first`; `None` when another append came first.
    pub(crate) fn append_at(
        &self,
        first: Seq,
        records: &[NewRecord],
    ) -> Result<Option<Receipt>, AppendError> {
        let frame = self.tell(Op::AppendAt, |o| {
            o.u64(first).new_records(records);
        })?;
        match frame.first() {
            Some(1) => receipt(&frame[1..]).map(Some),
            _ => Ok(None),
        }
    }

    /// Asks the holder to store a blob; its hash.
    pub(crate) fn put_blob(&self, bytes: &[u8]) -> Result<BlobHash, AppendError> {
        let frame = self.tell(Op::PutBlob, |o| {
            o.bytes(bytes);
        })?;
        In(&frame).blob_hash().map_err(garbled)
    }

    /// Asks the holder to remove blobs; how many existed.
    pub(crate) fn remove_blobs(&self, hashes: &[BlobHash]) -> Result<u64, AppendError> {
        let frame = self.tell(Op::RemoveBlobs, |o| {
            o.u64(hashes.len() as u64);
            for h in hashes {
                o.hash(&h.0);
            }
        })?;
        In(&frame).u64().map_err(garbled)
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

/// A channel to the holder answering on `socket`, if it is this user's.
fn channel(socket: &Path) -> io::Result<UnixStream> {
    super::check_socket(socket)?;
    let stream = super::at_short_path(socket, |at| UnixStream::connect(at))?;
    if !super::same_user(&stream) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is answered by another user", socket.display()),
        ));
    }
    Ok(stream)
}

/// How an exchange failed.
enum Failure {
    /// The channel: nothing is known of the answer.
    Lost(io::Error),
    /// The holder answered that it failed, and why.
    Answered(String),
}

fn receipt(frame: &[u8]) -> Result<Receipt, AppendError> {
    let mut input = In(frame);
    Ok(Receipt {
        first: input.u64().map_err(garbled)?,
        last: input.u64().map_err(garbled)?,
    })
}

/// An acknowledgement that could not be read.
fn garbled(e: io::Error) -> AppendError {
    AppendError::Holder {
        message: format!(
            "its answer could not be read ({e}): `cmdlog log` shows what is in the log"
        ),
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
