//! Lines on their way to one side of a connection, in order, with the bytes
//! still waiting counted: most senders never wait (a JSON-RPC peer must not
//! block while it reads), but one that sends without end — a session's history
//! replayed to an editor — waits for room, so a slow reader holds it back
//! instead of the proxy's memory growing with the history.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

/// What sender and writer share.
#[derive(Debug, Default)]
struct Waiting {
    bytes: AtomicUsize,
    /// The writer is gone: nothing will make room any more.
    gone: AtomicBool,
    changed: Notify,
}

/// Where lines for one side go; clones send to the same writer.
#[derive(Debug, Clone)]
pub struct Outbox {
    lines: mpsc::UnboundedSender<String>,
    waiting: Arc<Waiting>,
}

/// The writer's end of an [`Outbox`], handed to [`write_lines`].
#[derive(Debug)]
pub struct Inbox {
    lines: mpsc::UnboundedReceiver<String>,
    waiting: Arc<Waiting>,
}

/// The writer is gone; the line was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed(pub String);

/// A new outbox and the inbox its lines arrive at.
pub fn outbox() -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let waiting = Arc::new(Waiting::default());
    (
        Outbox {
            lines: tx,
            waiting: Arc::clone(&waiting),
        },
        Inbox { lines: rx, waiting },
    )
}

impl Outbox {
    /// Queues `line` (without its newline); never waits.
    pub fn send(&self, line: String) -> Result<(), Closed> {
        let bytes = line.len() + 1;
        self.waiting.bytes.fetch_add(bytes, Ordering::AcqRel);
        self.lines.send(line).map_err(|e| {
            self.waiting.bytes.fetch_sub(bytes, Ordering::AcqRel);
            Closed(e.0)
        })
    }

    /// Bytes queued and not yet written.
    pub fn waiting(&self) -> usize {
        self.waiting.bytes.load(Ordering::Acquire)
    }

    /// Waits until at most `bytes` are queued, or the writer is gone (then
    /// `false`: stop sending).
    pub async fn room(&self, bytes: usize) -> bool {
        loop {
            let changed = self.waiting.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.waiting.gone.load(Ordering::Acquire) || self.lines.is_closed() {
                return false;
            }
            if self.waiting() <= bytes {
                return true;
            }
            changed.await;
        }
    }
}

/// Writes lines as they come, each with its newline; the lines already waiting go
/// out in one write. Ends when the senders are gone or the writer fails.
pub async fn write_lines(mut out: impl AsyncWrite + Unpin, inbox: Inbox) {
    let Inbox { mut lines, waiting } = inbox;
    let mut buffer = String::new();
    while let Some(line) = lines.recv().await {
        buffer.clear();
        buffer.push_str(&line);
        buffer.push('\n');
        while buffer.len() < 1 << 20
            && let Ok(more) = lines.try_recv()
        {
            buffer.push_str(&more);
            buffer.push('\n');
        }
        let written = out.write_all(buffer.as_bytes()).await.is_ok() && out.flush().await.is_ok();
        waiting.bytes.fetch_sub(buffer.len(), Ordering::AcqRel);
        waiting.changed.notify_waiters();
        if !written {
            break;
        }
    }
    waiting.gone.store(true, Ordering::Release);
    waiting.changed.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_sender_waits_for_a_slow_reader_and_nothing_is_lost() {
        let (reader, writer) = tokio::io::duplex(64);
        let (out, inbox) = outbox();
        tokio::spawn(write_lines(writer, inbox));
        let sender = tokio::spawn(async move {
            let mut most = 0;
            for n in 0..200 {
                assert!(out.room(256).await);
                out.send(format!("line {n:03} {}", "x".repeat(20))).unwrap();
                most = most.max(out.waiting());
            }
            most
        });
        let mut got = String::new();
        let mut reader = reader;
        let mut chunk = [0u8; 16];
        while got.lines().count() < 200 {
            // A slow editor.
            tokio::task::yield_now().await;
            let n = reader.read(&mut chunk).await.unwrap();
            got.push_str(std::str::from_utf8(&chunk[..n]).unwrap());
        }
        let most = sender.await.unwrap();
        assert!(most <= 256 + 40, "{most} bytes waited");
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines.len(), 200);
        assert!(lines[199].starts_with("line 199 "));
    }

    #[tokio::test]
    async fn room_ends_when_the_reader_is_gone() {
        let (reader, writer) = tokio::io::duplex(8);
        let (out, inbox) = outbox();
        let writing = tokio::spawn(write_lines(writer, inbox));
        out.send("x".repeat(100)).unwrap();
        drop(reader);
        writing.await.unwrap();
        assert!(!out.room(0).await);
        assert!(out.send("more".into()).is_err());
    }
}
