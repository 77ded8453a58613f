//! The holder's side: a thread that accepts readers on the log's socket and a
//! thread per reader that answers its reads from the holder's own open log.
//! It holds the log weakly: a reader never keeps the holder's log open, and a
//! reader of a holder that closed it is hung up on, as if the holder had died.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Log;
use crate::error::{AppendError, ReadError};
use crate::holder::wire::{In, Op, Out, PAGE_BYTES, PAGE_RECORDS, receive};
use crate::record::BlobHash;

/// Readers are answered while this lives; dropping it stops the listener and
/// removes the socket.
pub struct Holding {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// How often the listener looks whether it should stop.
const POLL: Duration = Duration::from_millis(25);

/// Serves reads of `log` on its socket ([`crate::socket_path`]).
pub fn serve_readers(log: &Arc<Log>) -> io::Result<Holding> {
    let socket = crate::holder::socket_path(log.path())?;
    if let Some(dir) = socket.parent() {
        cmdlog_common::private_fs::ensure_private_dir(dir)?;
    }
    // A socket left by a holder that died: nobody answers on it.
    if std::fs::symlink_metadata(&socket).is_ok() {
        if crate::holder::at_short_path(&socket, |at| UnixStream::connect(at)).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{} is answered by another holder", socket.display()),
            ));
        }
        std::fs::remove_file(&socket)?;
    }
    let listener = crate::holder::at_short_path(&socket, |at| UnixListener::bind(at))?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let weak = Arc::downgrade(log);
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("cmdlog-holder".into())
            .spawn(move || accept(listener, weak, stop))?
    };
    Ok(Holding {
        socket,
        stop,
        thread: Some(thread),
    })
}

fn accept(listener: UnixListener, log: Weak<Log>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if !crate::holder::same_user(&stream) || stream.set_nonblocking(false).is_err() {
                    continue;
                }
                let (log, stop) = (log.clone(), Arc::clone(&stop));
                let _ = std::thread::Builder::new()
                    .name("cmdlog-reader".into())
                    .spawn(move || answer(stream, log, stop));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Answers one reader until it hangs up or the holder stops. A holder that
/// stopped hangs up: to the reader it is gone, as if it had died, and the
/// reader reads the log itself.
fn answer(mut stream: UnixStream, log: Weak<Log>, stop: Arc<AtomicBool>) {
    while let Ok(Some(frame)) = receive(&mut stream) {
        if frame.first() == Some(&(Op::ScanStream as u8)) {
            // A channel of the scan's own: it ends with it.
            let _ = stream_scan(&log, &stop, &frame, &mut stream);
            return;
        }
        if frame.first() == Some(&(Op::WaitFor as u8)) {
            let waited = match wait(&log, &stop, &frame) {
                Ok(Some(waited)) => waited,
                Ok(None) => return,
                Err(e) => failed(&e.to_string()),
            };
            if waited.send(&mut stream).is_err() {
                return;
            }
            continue;
        }
        let reply = match (stop.load(Ordering::SeqCst), log.upgrade()) {
            (false, Some(log)) => one(&log, &frame).unwrap_or_else(|e| failed(&e.to_string())),
            _ => return,
        };
        if reply.send(&mut stream).is_err() {
            return;
        }
    }
}

fn failed(why: &str) -> Out {
    let mut out = Out::default();
    out.u8(1).bytes(why.as_bytes());
    out
}

/// Writes one page of `from..=until` into `out`; the seq of its last record.
fn page(log: &Log, from: u64, until: u64, out: &mut Out) -> Result<Option<u64>, ReadError> {
    let mut page = Vec::new();
    let mut bytes = 0;
    log.scan(from, until, |r| {
        bytes += r.bytes.len();
        page.push(r);
        page.len() < PAGE_RECORDS as usize && bytes < PAGE_BYTES
    })?;
    out.u64(page.len() as u64);
    for r in &page {
        out.record(r);
    }
    Ok(page.last().map(|r| r.seq))
}

/// Sends the pages of `from..=until` one after another, unasked (an empty
/// page ends them): the reader takes one in while the next is read. Each is
/// read with the log held and sent without it, so a slow reader never keeps
/// the holder from closing it; a reader that stops early hangs up.
fn stream_scan(
    log: &Weak<Log>,
    stop: &AtomicBool,
    frame: &[u8],
    to: &mut UnixStream,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut input = In(&frame[1..]);
    let (mut next, until) = (input.u64()?, input.u64()?);
    loop {
        let mut out = Out::default();
        out.u8(0);
        let last = match (stop.load(Ordering::SeqCst), log.upgrade()) {
            (false, Some(log)) => match page(&log, next, until, &mut out) {
                Ok(last) => last,
                Err(e) => return Ok(failed(&e.to_string()).send(to)?),
            },
            _ => return Ok(()),
        };
        out.send(to)?;
        match last {
            Some(seq) if seq < until => next = seq + 1,
            _ => return Ok(()),
        }
    }
}

/// Waits for the head to pass the seq asked, in slices that hold the log only
/// briefly: a reader waiting never keeps the holder from closing it.
fn wait(
    log: &Weak<Log>,
    stop: &AtomicBool,
    frame: &[u8],
) -> Result<Option<Out>, Box<dyn std::error::Error>> {
    let mut input = In(&frame[1..]);
    let (after, ms) = (input.u64()?, input.u64()?);
    let deadline = std::time::Instant::now() + Duration::from_millis(ms.min(60_000));
    loop {
        let log = match (stop.load(Ordering::SeqCst), log.upgrade()) {
            (false, Some(log)) => log,
            _ => return Ok(None),
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let head = log.wait_for(after, left.min(POLL));
        if head > after || left.is_zero() {
            let mut out = Out::default();
            out.u8(0).head(log.head());
            return Ok(Some(out));
        }
    }
}

/// One request's answer (status 0 and its fields).
fn one(log: &Log, frame: &[u8]) -> Result<Out, Box<dyn std::error::Error>> {
    let mut input = In(frame);
    let op = Op::of(input.u8()?).ok_or("an operation this holder does not know")?;
    let mut out = Out::default();
    out.u8(0);
    match op {
        Op::HasBlob
        | Op::GetBlob
        | Op::ListBlobs
        | Op::LatestSnapshot
        | Op::VerifyTree
        | Op::HasStoredTree => stored(log, op, &mut input, &mut out)?,
        Op::Append | Op::AppendAt | Op::PutBlob | Op::RemoveBlobs => {
            writes(log, op, &mut input, &mut out)?
        }
        _ => records(log, op, &mut input, &mut out)?,
    }
    Ok(out)
}

type Answered = Result<(), Box<dyn std::error::Error>>;

/// The records, streams, head and tree.
fn records(log: &Log, op: Op, input: &mut In<'_>, out: &mut Out) -> Answered {
    match op {
        Op::Head => {
            out.head(log.head());
        }
        Op::Get => match log.get(input.u64()?)? {
            Some(r) => {
                out.u8(1).record(&r);
            }
            None => {
                out.u8(0);
            }
        },
        Op::Scan => {
            let (from, until) = (input.u64()?, input.u64()?);
            page(log, from, until, out)?;
        }
        Op::StreamSeqs => {
            let key = input.text()?;
            let seqs = log.stream_seqs(&key, input.u64()?)?;
            out.u64(seqs.len() as u64);
            for s in seqs {
                out.u64(s);
            }
        }
        Op::HasStream => {
            out.u8(u8::from(log.has_stream(&input.text()?)?));
        }
        Op::RecordsAt => {
            let records = log.records_at(&input.seqs()?)?;
            out.u64(records.len() as u64);
            for r in &records {
                out.record(r);
            }
        }
        Op::Streams => {
            let keys = log.streams()?;
            out.u64(keys.len() as u64);
            for k in keys {
                out.bytes(k.as_bytes());
            }
        }
        _ => unreachable!("answered by stored, writes or wait"),
    }
    Ok(())
}

/// Appends and blob writes, in the holder's own group commit: the caller is
/// answered once they are durable, as the holder's own appends are.
fn writes(log: &Log, op: Op, input: &mut In<'_>, out: &mut Out) -> Answered {
    match op {
        Op::Append => {
            let receipt = log.append(input.new_records()?)?;
            out.u64(receipt.first).u64(receipt.last);
        }
        Op::AppendAt => {
            let first = input.u64()?;
            let records = input.new_records()?;
            if records.is_empty() {
                return Err(AppendError::Empty.into());
            }
            // Built empty when another append took `first`: the store refuses an
            // empty append, and the caller builds again at the new head.
            let mut records = Some(records);
            let ticket = log.submit_built(move |at| match at == first {
                true => records.take().unwrap_or_default(),
                false => Vec::new(),
            })?;
            match ticket.wait() {
                Ok(receipt) => {
                    out.u8(1).u64(receipt.first).u64(receipt.last);
                }
                Err(AppendError::Empty) => {
                    out.u8(0);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Op::PutBlob => {
            out.hash(&log.put_blob(input.bytes()?)?.0);
        }
        Op::RemoveBlobs => {
            let n = input.u64()?;
            let hashes = (0..n)
                .map(|_| input.blob_hash())
                .collect::<io::Result<Vec<_>>>()?;
            out.u64(log.remove_blobs(hashes)?);
        }
        _ => unreachable!("answered by records or stored"),
    }
    Ok(())
}

/// The blobs, the stored tree's check and the projection snapshot.
fn stored(log: &Log, op: Op, input: &mut In<'_>, out: &mut Out) -> Answered {
    match op {
        Op::HasBlob => {
            out.u8(u8::from(log.has_blob(&input.blob_hash()?)?));
        }
        Op::GetBlob => match log.get_blob(&BlobHash(input.hash()?))? {
            Some(bytes) => {
                out.u8(1).bytes(&bytes);
            }
            None => {
                out.u8(0);
            }
        },
        Op::ListBlobs => {
            let blobs = log.list_blobs()?;
            out.u64(blobs.len() as u64);
            for (hash, at, size) in blobs {
                out.hash(&hash.0).u64(at).u64(size);
            }
        }
        Op::VerifyTree => match log.verify_tree(|_| {})? {
            Some(seq) => {
                out.u8(1).u64(seq);
            }
            None => {
                out.u8(0);
            }
        },
        Op::HasStoredTree => {
            out.u8(u8::from(log.has_stored_tree()?));
        }
        Op::LatestSnapshot => match log.latest_snapshot()? {
            Some((seq, bytes)) => {
                out.u8(1).u64(seq).bytes(&bytes);
            }
            None => {
                out.u8(0);
            }
        },
        _ => unreachable!("answered by records"),
    }
    Ok(())
}
