//! One timeline of runs across every log on a hub, streamed. Each log is read
//! in batches (batched direct gets), its chain checked as it goes, and folded
//! by the fold `cmdlog audit` uses (a log's seqs are its own); the logs' rows
//! are merged by time, a k-way merge over the logs' rows in seq order. Memory
//! holds a batch and the runs still open per log, not the hub. With `follow`,
//! the records pushed afterwards are read as they land, each run shown once it
//! settles.

use cmdlog_store::ChainHash;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use async_nats::jetstream::stream;
use cmdlog_engine::Event;
use cmdlog_replay::{AuditFold, AuditRow};
use futures_util::StreamExt;

use crate::chain::Foreign;
use crate::connect::Hub;
use crate::error::HubError;
use crate::limits::{
    AUDIT_BATCH_RECORDS, AUDIT_BATCH_RECORDS_MIN, AUDIT_HELD_RECORDS, AUDIT_SINCE_SKEW, READ_WAIT,
};
use crate::read::{Cursor, HubRecord, consumed, list, survey};

/// Which runs an audit keeps.
#[derive(Debug, Clone, Default)]
pub struct HubAuditFilter {
    /// Only runs at or after this time (unix ms).
    pub since: Option<u64>,
    /// Only runs recorded by this agent.
    pub agent: Option<String>,
    /// Only this command (its name, without the slash).
    pub command: Option<String>,
    /// With `since`: how far a machine's clock may run ahead of the hub's. Each
    /// log is read from the first record the hub stored this long before
    /// `since` (default: `AUDIT_SINCE_SKEW`, an hour), not from its start.
    pub clock_skew_ms: Option<u64>,
}

/// A run with the log it came from.
#[derive(Debug, Clone)]
pub struct HubRow {
    /// The log's id.
    pub log_id: String,
    /// The host that pushed it.
    pub host: String,
    /// The run, as `cmdlog audit` shows it.
    pub row: AuditRow,
}

/// What an audit finds, as it goes.
#[derive(Debug, Clone)]
pub enum Audited {
    /// A run.
    Row(Box<HubRow>),
    /// A message left out: on a log's subject but not its chain (forged, or
    /// another machine's with its id).
    Foreign {
        /// The log's id.
        log_id: String,
        /// The message.
        foreign: Foreign,
    },
}

/// What an audit read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubAuditRead {
    /// Logs read.
    pub logs: usize,
    /// Messages read (a log read again after its chain broke counts twice).
    pub messages: u64,
    /// Runs shown.
    pub rows: u64,
    /// The most rows held at once, shown or not yet: what the merge kept in
    /// memory besides one batch per log.
    pub rows_held_max: usize,
}

/// One log being read: where, its chain so far, its fold, its rows ready.
struct LogRead {
    log_id: String,
    subject: String,
    host: String,
    fold: AuditFold,
    next: u64,
    prev: ChainHash,
    /// The stream sequence to ask from next.
    from: u64,
    /// Its reader on the hub.
    cursor: Cursor,
    /// Messages on its subject when the audit began (the leader's count).
    expected: u64,
    /// Read from a stored time on (`--since`), not from its first record: the
    /// first record read anchors the chain, and the count is not waited for.
    windowed: bool,
    read: u64,
    /// A surveyed log: only these stream sequences are its records.
    chain: Option<HashSet<u64>>,
    /// Settled rows not yet shown, in seq order.
    ready: VecDeque<AuditRow>,
    /// Rows up to this seq were shown (a log read again skips them).
    shown: u64,
    /// Every message up to the audit's start was read.
    ended: bool,
}

impl LogRead {
    fn new(
        log_id: String,
        subject: String,
        host: String,
        expected: u64,
        stored_since: Option<u64>,
    ) -> Self {
        LogRead {
            log_id,
            cursor: Cursor::new(subject.clone(), stored_since),
            windowed: stored_since.is_some(),
            subject,
            host,
            fold: AuditFold::default(),
            next: 1,
            prev: ChainHash::ZERO,
            from: 1,
            expected,
            read: 0,
            chain: None,
            ready: VecDeque::new(),
            shown: 0,
            ended: false,
        }
    }

    /// Whether the record continues the chain read so far (and moves it on).
    /// A log read from a stored time takes its first record's chain hash as
    /// stated: the chain is checked from there (signed checkpoints, not the
    /// chain, say who wrote it).
    fn continues(&mut self, seq: u64, bytes: &[u8], stated: &str) -> bool {
        if self.windowed && self.next == 1 && seq > 1 {
            let Some(anchor) = ChainHash::from_hex(stated) else {
                return false;
            };
            self.next = seq + 1;
            self.prev = anchor;
            return true;
        }
        let hash = cmdlog_store::chain_hash(&self.prev, seq, bytes);
        if seq != self.next || hash.to_hex() != stated {
            return false;
        }
        self.next += 1;
        self.prev = hash;
        true
    }

    /// Folds a record of its chain; its settled rows (or, with `every`, all its
    /// settled rows, open runs before them or not) become ready.
    fn fold(&mut self, filter: &HubAuditFilter, record: &HubRecord, every: bool) {
        if let Ok(event) = Event::decode(record.seq, &record.bytes) {
            keep(filter, &mut self.fold, &event);
        }
        let rows = if every {
            self.fold.take_every_settled()
        } else {
            self.fold.take_settled()
        };
        let shown = self.shown;
        self.ready
            .extend(rows.into_iter().filter(|r| r.seq > shown));
    }

    /// The merge's key of its first ready row.
    fn key(&self, i: usize) -> Option<Reverse<(u64, String, u64, usize)>> {
        let r = self.ready.front()?;
        Some(Reverse((r.at, self.log_id.clone(), r.seq, i)))
    }
}

fn keep(filter: &HubAuditFilter, fold: &mut AuditFold, event: &Event) {
    fold.add(event, |e, run| {
        !(filter.since.is_some_and(|s| e.at < s)
            || filter.command.as_deref().is_some_and(|c| c != run.name)
            || filter
                .agent
                .as_deref()
                .is_some_and(|a| e.agent.as_deref() != Some(a)))
    });
}

/// An audit under way.
struct Auditing<'a, E> {
    hub: &'a Hub,
    stream: &'a stream::Stream,
    filter: &'a HubAuditFilter,
    follow: bool,
    /// The stream's last sequence when the audit began: the merge reads up to it.
    last: u64,
    /// Records asked of a log at once: more logs, smaller batches.
    batch: usize,
    read: HubAuditRead,
    emit: &'a mut dyn FnMut(Audited) -> Result<(), E>,
}

impl<E: From<HubError>> Auditing<'_, E> {
    /// Surveys the log (which of its subject's messages are its chain), says
    /// what is not, and starts its reading again along the chain; rows already
    /// shown are not shown again.
    async fn survey(&mut self, log: &mut LogRead) -> Result<(), E> {
        let surveyed = survey(self.hub, self.stream, &log.log_id).await?;
        for foreign in surveyed.foreign() {
            (self.emit)(Audited::Foreign {
                log_id: log.log_id.clone(),
                foreign,
            })?;
        }
        log.chain = Some(surveyed.chain().into_iter().collect());
        log.fold = AuditFold::default();
        (log.next, log.prev, log.from, log.read) = (1, ChainHash::ZERO, 1, 0);
        log.cursor.close(self.stream).await;
        log.cursor = Cursor::new(log.subject.clone(), None);
        log.windowed = false;
        log.ready.clear();
        Ok(())
    }

    /// Reads `log` on until it has a row ready or has no more messages (up to
    /// the audit's start).
    async fn fill(&mut self, log: &mut LogRead) -> Result<(), E> {
        let mut waited = std::time::Duration::ZERO;
        while log.ready.is_empty() && !log.ended {
            let batch = log
                .cursor
                .next(self.hub, self.stream, log.from, self.batch)
                .await?;
            if batch.is_empty() && (log.windowed || log.read >= log.expected) {
                log.ended = true;
            } else if batch.is_empty() {
                // Answered by a replica still catching up (a node came back):
                // the leader counted more. Ask again, for a while.
                if waited >= READ_WAIT {
                    return Err(self
                        .hub
                        .error(format!(
                            "reading {}: {} of the {} messages the stream holds came in {} s",
                            log.subject,
                            log.read,
                            log.expected,
                            READ_WAIT.as_secs()
                        ))
                        .into());
                }
                let pause = std::time::Duration::from_millis(200);
                tokio::time::sleep(pause).await;
                waited += pause;
                continue;
            }
            for record in batch {
                if record.stream_seq > self.last {
                    log.ended = true;
                    break;
                }
                log.from = record.stream_seq + 1;
                log.read += 1;
                self.read.messages += 1;
                if let Some(chain) = &log.chain {
                    if chain.contains(&record.stream_seq)
                        && log.continues(record.seq, &record.bytes, &record.hash)
                    {
                        log.fold(self.filter, &record, false);
                    }
                    continue;
                }
                if !log.continues(record.seq, &record.bytes, &record.hash) {
                    // Not one chain: read it again along the one it holds.
                    self.survey(log).await?;
                    break;
                }
                log.fold(self.filter, &record, false);
            }
            log.ended |= log.from > self.last;
        }
        if log.ended {
            log.cursor.close(self.stream).await;
        }
        if log.ended && log.ready.is_empty() {
            let rows = if self.follow {
                log.fold.take_every_settled()
            } else {
                log.fold.take_all()
            };
            let shown = log.shown;
            log.ready.extend(rows.into_iter().filter(|r| r.seq > shown));
        }
        Ok(())
    }

    /// Gives `row` of `log` to the caller.
    fn show(&mut self, log: &LogRead, row: AuditRow) -> Result<(), E> {
        self.read.rows += 1;
        (self.emit)(Audited::Row(Box::new(HubRow {
            log_id: log.log_id.clone(),
            host: log.host.clone(),
            row,
        })))
    }

    /// The k-way merge: the earliest ready row of any log, until none is left.
    async fn merge(&mut self, logs: &mut [LogRead]) -> Result<(), E> {
        let mut heap = BinaryHeap::new();
        let mut held = 0;
        for (i, log) in logs.iter_mut().enumerate() {
            self.fill(log).await?;
            held += log.ready.len();
            heap.extend(log.key(i));
        }
        while let Some(Reverse((_, _, _, i))) = heap.pop() {
            self.read.rows_held_max = self.read.rows_held_max.max(held);
            held -= 1;
            let log = &mut logs[i];
            let Some(row) = log.ready.pop_front() else {
                continue;
            };
            log.shown = row.seq;
            self.show(log, row)?;
            if log.ready.is_empty() {
                self.fill(log).await?;
                held += log.ready.len();
            }
            heap.extend(log.key(i));
        }
        Ok(())
    }

    /// After the merge: every message pushed since, as it lands, through one
    /// ordered consumer over every log; each run shown once it settles.
    async fn follow(&mut self, mut logs: Vec<LogRead>) -> Result<(), E> {
        let mut index: HashMap<String, usize> = logs
            .iter()
            .enumerate()
            .map(|(i, l)| (l.log_id.clone(), i))
            .collect();
        let consumer = crate::read::patiently(
            || {
                self.stream.create_consumer(OrderedConfig {
                    filter_subject: self.hub.all_logs(),
                    deliver_policy: DeliverPolicy::ByStartSequence {
                        start_sequence: self.last + 1,
                    },
                    ..Default::default()
                })
            },
            crate::read::consumer_transient,
        )
        .await
        .map_err(|e| self.hub.error(format!("following the hub: {e}")))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| self.hub.error(format!("following the hub: {e}")))?;
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| self.hub.error(format!("following the hub: {e}")))?;
            let record = consumed(&message)
                .map_err(|e| self.hub.error(format!("following the hub: {e}")))?;
            self.read.messages += 1;
            let i = *index.entry(record.log_id.clone()).or_insert_with(|| {
                let mut log = LogRead::new(
                    record.log_id.clone(),
                    self.hub.subject(&record.log_id),
                    record.host.clone(),
                    0,
                    None,
                );
                log.ended = true;
                logs.push(log);
                self.read.logs += 1;
                logs.len() - 1
            });
            let log = &mut logs[i];
            if !log.continues(record.seq, &record.bytes, &record.hash) {
                (self.emit)(Audited::Foreign {
                    log_id: log.log_id.clone(),
                    foreign: Foreign {
                        stream_seq: record.stream_seq,
                        seq: record.seq,
                        why: "it does not continue the hash chain",
                    },
                })?;
                continue;
            }
            log.host = record.host.clone();
            log.fold(self.filter, &record, true);
            while let Some(row) = log.ready.pop_front() {
                self.show(log, row)?;
            }
        }
        Ok(())
    }
}

/// Every run on the hub that `filter` keeps, given to `emit` by time (each
/// log's own runs in seq order), with the messages left out as they are found.
/// A log whose subject holds more messages than its chain is surveyed first
/// (`chain.rs`); one whose chain breaks as it is read is surveyed then, and
/// read again along its chain. With `follow`, goes on with what is pushed
/// afterwards, until the connection ends.
pub async fn hub_audit<E: From<HubError>>(
    hub: &Hub,
    filter: &HubAuditFilter,
    follow: bool,
    mut emit: impl FnMut(Audited) -> Result<(), E>,
) -> Result<HubAuditRead, E> {
    let stream = hub.existing_stream().await?;
    let entries = list(hub, &stream).await?;
    let mut info = stream.clone();
    let last = info
        .info()
        .await
        .map_err(|e| hub.error(format!("stream info: {e}")))?
        .state
        .last_sequence;
    let mut auditing = Auditing {
        hub,
        stream: &stream,
        filter,
        follow,
        last,
        batch: (AUDIT_HELD_RECORDS / entries.len().max(1))
            .clamp(AUDIT_BATCH_RECORDS_MIN, AUDIT_BATCH_RECORDS),
        read: HubAuditRead {
            logs: entries.len(),
            ..Default::default()
        },
        emit: &mut emit,
    };
    // With --since, each log is read from what the hub stored a little before
    // then (a run recorded after `since` was stored after it, give or take the
    // clocks), not from its start.
    let skew = filter
        .clock_skew_ms
        .unwrap_or(AUDIT_SINCE_SKEW.as_millis() as u64);
    let stored_since = filter.since.map(|s| s.saturating_sub(skew));
    let mut logs = Vec::new();
    for entry in entries {
        let mut log = LogRead::new(
            entry.id.clone(),
            hub.subject(&entry.id),
            entry.host.clone(),
            entry.messages,
            stored_since,
        );
        if entry.messages != entry.head_seq {
            auditing.survey(&mut log).await?;
        }
        logs.push(log);
    }
    auditing.merge(&mut logs).await?;
    if follow {
        auditing.follow(logs).await?;
    }
    Ok(auditing.read)
}
