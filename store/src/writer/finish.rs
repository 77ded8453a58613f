//! The end of a group commit once its records are written (a durable frame laid
//! over redb, or a redb transaction): the commit hook, the new head, and the
//! answers to the appenders.
//!
//! A writable log's writer hands that to a second thread, the acker, when a batch
//! has several appenders: waking each of them is a system call, and with 64 of them
//! that cost as much as the frame's sync. The acker wakes batch N's appenders while
//! the writer writes and syncs batch N+1. Batches are finished in commit order,
//! whoever finishes them: the writer finishes one itself only when the acker has
//! nothing left to do (a lone appender, which gets its answer without a hand-off).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use crate::record::{CommittedRecord, Head, Receipt};
use crate::shared::Shared;

use super::{Request, poison, poisoned};

/// A batch whose records are written: what is left to do for it.
pub(super) struct Finish {
    pub(super) batch: Vec<Request>,
    pub(super) receipts: Vec<Option<Receipt>>,
    /// The head before the batch.
    pub(super) start: Head,
    /// The head after it.
    pub(super) head: Head,
}

/// Runs the commit hook over the batch's records, publishes its head and answers
/// each request.
pub(super) fn finish(shared: &Shared, finish: Finish) {
    let Finish {
        batch,
        receipts,
        start,
        head,
    } = finish;
    // After a commit hook panicked, whoever folds the records has missed some: the
    // later batches written meanwhile are in the log and answered, but not folded.
    if poisoned(shared).is_none() {
        let committed: Vec<CommittedRecord<'_>> = batch
            .iter()
            .filter_map(|r| match r {
                Request::Append { records, .. } => Some(records),
                _ => None,
            })
            .flatten()
            .zip(start.seq + 1..)
            .map(|(record, seq)| CommittedRecord {
                seq,
                stream: record.stream.as_deref(),
                bytes: &record.bytes,
            })
            .collect();
        run_hook(shared, &committed);
    }
    publish_head(shared, head);
    for (request, receipt) in batch.into_iter().zip(receipts) {
        match request {
            Request::Append { reply, .. } => {
                let _ = reply.send(Ok(receipt.expect("append has a receipt")));
            }
            Request::PutBlob { reply, .. } => {
                let _ = reply.send(Ok(()));
            }
            Request::RemoveBlobs { reply, .. } | Request::PutSnapshot { reply, .. } => {
                let _ = reply.send(Ok(receipt.map_or(0, |r| r.last)));
            }
            Request::AppendBuilt { .. } | Request::Shutdown => {}
        }
    }
}

/// Runs the commit hook over `committed`; a panic poisons the writer.
pub(super) fn run_hook(shared: &Shared, committed: &[CommittedRecord<'_>]) {
    if !committed.is_empty()
        && let Some(hook) = shared
            .hook
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        && let Err(panic) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(committed)))
    {
        // The records are durable, but whoever folds them missed them: stop
        // accepting appends rather than let the fold drift from the log.
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        poison(shared, format!("the commit hook panicked: {message}"));
    }
}

/// Makes `head` the log's head and wakes whoever waits for it.
pub(super) fn publish_head(shared: &Shared, head: Head) {
    *shared.head.lock().unwrap_or_else(|p| p.into_inner()) = head;
    shared.committed.notify_all();
    shared.watch.send_replace(head.seq);
}

/// The acker thread and the batches handed to it that it has not finished.
pub(super) struct Acker {
    tx: Option<Sender<Finish>>,
    unfinished: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Acker {
    /// Starts the acker of the writer over `shared`. Without a thread (the system
    /// refused one), the writer finishes every batch itself.
    pub(super) fn spawn(shared: Arc<Shared>) -> Acker {
        let (tx, rx) = mpsc::channel::<Finish>();
        let unfinished = Arc::new(AtomicUsize::new(0));
        let left = Arc::clone(&unfinished);
        let thread = std::thread::Builder::new()
            .name("cmdlog-acker".into())
            .spawn(move || {
                for job in rx {
                    finish(&shared, job);
                    left.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .ok();
        Acker {
            tx: thread.as_ref().map(|_| tx),
            unfinished,
            thread,
        }
    }

    /// Finishes `job`: on the acker when it has several requests or the acker has
    /// earlier batches to finish (answers go out in commit order), here otherwise.
    pub(super) fn finish(&self, shared: &Shared, job: Finish) {
        let Some(tx) = &self.tx else {
            return finish(shared, job);
        };
        if job.batch.len() <= 1 && self.unfinished.load(Ordering::Acquire) == 0 {
            return finish(shared, job);
        }
        self.unfinished.fetch_add(1, Ordering::AcqRel);
        if let Err(mpsc::SendError(job)) = tx.send(job) {
            self.unfinished.fetch_sub(1, Ordering::AcqRel);
            finish(shared, job);
        }
    }

    /// Waits until every batch handed over is finished, and stops the thread.
    pub(super) fn stop(&mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Acker {
    fn drop(&mut self) {
        self.stop();
    }
}
