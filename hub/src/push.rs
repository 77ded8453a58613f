//! `cmdlog push`: this log's records, in seq order, to its subject on the hub.
//!
//! Each round asks the hub where the log stands (its last message), checks that
//! record against ours (same seq, same chain hash — else the log forked or was
//! rolled back), pushes the blobs the hub lacks, then the records after it in
//! atomic batches of at most [`BATCH_RECORDS`]: the first message of a batch
//! expects the subject's last stream sequence, the last commits it. A batch
//! whose acknowledgement was lost is found on the hub by the next round's
//! question; one that did not land is sent again. Nothing is duplicated, nothing
//! on the hub is overwritten.

use std::collections::HashSet;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::stream;
use bytes::Bytes;
use cmdlog_store::{Log, Record};
use serde::Deserialize;

use crate::chain::Foreign;
use crate::connect::{Hub, HubOptions};
use crate::error::HubError;
use crate::layout::{HASH, HOST, SEQ, STREAM_KEY, bucket};
use crate::limits::{
    BATCH_BYTES, BATCH_RECORDS, CHECKPOINT_RETRY, RECONNECT_FIRST, RECONNECT_MAX, RETRY_FIRST,
    RETRY_MAX,
};
use crate::mark::PushMark;
use crate::read::{HubHead, head, survey};
use cmdlog_common::Backoff;

/// Why a push stopped.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The hub holds another record at a seq this log has: a fork.
    #[error(
        "log {log} forked: at seq {seq} the hub holds hash {hub_hash}, this log {local_hash}; nothing was pushed over it (is this a copy of another machine's log, or a restored backup?)"
    )]
    Fork {
        /// The log's id.
        log: String,
        /// Where the two differ.
        seq: u64,
        /// The hub's hash there.
        hub_hash: String,
        /// This log's hash there.
        local_hash: String,
    },
    /// The hub holds seqs this log lacks: a rollback (or a restored old copy) —
    /// certain when this machine pushed further than its log now goes; else the
    /// hub's extra records may also be foreign (this machine has no record of
    /// what it pushed).
    #[error(
        "log {log} {}: the hub holds seq {hub_seq} (hash {hub_hash}), this log ends at seq {local_seq} (hash {local_hash}); nothing was pushed (restore the newer log, or `cmdlog clone` it from the hub)",
        if *certain { "was rolled back (this machine pushed further than its log now goes)" } else { "was rolled back, or the hub's records after it are foreign (forged, or another machine's: this machine has no record of having pushed them)" }
    )]
    Rollback {
        /// Whether this machine's record of what it pushed proves a rollback.
        certain: bool,
        /// The log's id.
        log: String,
        /// The hub's head seq.
        hub_seq: u64,
        /// The hub's head hash.
        hub_hash: String,
        /// This log's head seq.
        local_seq: u64,
        /// This log's head hash.
        local_hash: String,
    },
    /// The hub holds fewer of the log's records than it acknowledged: its
    /// stream's limits or retention removed some.
    #[error(
        "the hub holds {held} message(s) of log {log}, but {pushed} record(s) of it were pushed: the hub lost records (its stream's limits or retention removed them). `cmdlog hub init` names the setting and fixes what it can; push to a stream that keeps every record"
    )]
    Lost {
        /// The log's id.
        log: String,
        /// Messages on the log's subject.
        held: u64,
        /// The hub's head seq for the log (what was pushed).
        pushed: u64,
    },
    /// The server has no JetStream: nothing can be pushed to it.
    #[error("{0}: JetStream is not enabled on this server (start nats-server with -js)")]
    NoJetStream(String),
    /// A record too large for the hub's `max_payload`.
    #[error(
        "record seq {seq} is {bytes} bytes, over the hub's max_payload of {max} bytes; raise max_payload in nats-server's configuration (up to 64MB)"
    )]
    TooLarge {
        /// The record's seq.
        seq: u64,
        /// Its size.
        bytes: usize,
        /// The hub's `max_payload`.
        max: usize,
    },
    /// The hub could not be reached or refused something else: worth retrying.
    #[error("{0}")]
    Hub(#[from] HubError),
    /// This log could not be read.
    #[error(transparent)]
    Local(#[from] cmdlog_store::StoreError),
    /// The records landed, but their signed checkpoint did not.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoints::PublishError),
}

impl PushError {
    /// Whether waiting and trying again can help.
    pub fn retryable(&self) -> bool {
        matches!(self, PushError::Hub(_))
    }
}

/// Where a round resumes past a foreign tail.
struct Resume {
    next: u64,
    expected: u64,
    foreign: Vec<Foreign>,
}

/// What a round pushed.
#[derive(Debug, Clone, Default)]
pub struct Pushed {
    /// Messages on the log's subject this machine never pushed (forged, or
    /// another machine's with this log's id), pushed past.
    pub foreign: Vec<Foreign>,
    /// Records sent.
    pub records: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Blobs sent.
    pub blobs: u64,
    /// The hub's head for this log afterwards.
    pub head: Option<HubHead>,
    /// Why the round's signed checkpoint could not be published (the records
    /// were): the hub unreachable at that moment, or its permissions refusing
    /// the checkpoint bucket. The next round tries again.
    pub checkpoint_failed: Option<String>,
}

/// A pusher of one log to one hub; keeps what it learnt between rounds.
pub struct Pusher {
    hub: Hub,
    /// The hub's stream, once a round has found (or made) it.
    stream: Option<stream::Stream>,
    log_id: String,
    host: String,
    /// Blobs known to be on the hub.
    blobs_there: Option<HashSet<String>>,
    nonce: u64,
    /// The log's key: each round ends with a checkpoint signed with it.
    signer: Option<cmdlog_tlog::Signer>,
}

/// A JetStream API error in a reply.
#[derive(Deserialize)]
struct ApiError {
    #[serde(default)]
    err_code: u64,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    error: Option<ApiError>,
    #[serde(default)]
    seq: u64,
}

impl Pusher {
    /// A pusher of log `log_id` (pushed from `host`) to `hub`. Its first round
    /// finds the stream, or creates it when it is missing.
    pub fn new(hub: Hub, log_id: &str, host: &str) -> Pusher {
        Pusher {
            hub,
            stream: None,
            log_id: log_id.to_string(),
            host: host.to_string(),
            blobs_there: None,
            nonce: 0,
            signer: None,
        }
    }

    /// Ends every round with a checkpoint of what the hub holds of the log, signed
    /// with `signer` (the log's key), published to the hub's checkpoint bucket.
    pub fn sign_checkpoints(&mut self, signer: cmdlog_tlog::Signer) {
        self.signer = Some(signer);
    }

    /// Publishes the checkpoint of this log's first `size` records (all of them
    /// on the hub), when a key was given. A hub that refuses it (or is gone just
    /// then) is said in `pushed`; a checkpoint there that this log contradicts
    /// stops the push.
    async fn checkpoint(&self, log: &Log, size: u64, pushed: &mut Pushed) -> Result<(), PushError> {
        if let Some(signer) = &self.signer
            && size > 0
        {
            match crate::checkpoints::publish_checkpoint(&self.hub, &self.log_id, log, size, signer)
                .await
            {
                Ok(()) => {}
                Err(e @ crate::checkpoints::PublishError::Hub(_)) => {
                    pushed.checkpoint_failed = Some(e.to_string());
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The hub it pushes to.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// The stream a round found.
    fn stream(&self) -> &stream::Stream {
        self.stream
            .as_ref()
            .expect("a round finds the stream first")
    }

    /// One round: everything up to this log's head now. `progress` gets the
    /// records pushed so far.
    pub async fn round(
        &mut self,
        log: &Log,
        mut progress: impl FnMut(u64),
    ) -> Result<Pushed, PushError> {
        let local = log.head();
        if !self.hub.client.server_info().jetstream {
            return Err(PushError::NoJetStream(self.hub.shown.clone()));
        }
        if self.stream.is_none() {
            self.stream = Some(self.hub.stream().await?);
        }
        let there = head(&self.hub, self.stream(), &self.log_id).await?;
        let mut expected = 0;
        let mut next = 1;
        let mut foreign = Vec::new();
        if let Some(h) = &there {
            if h.seq <= local.seq && local_hash(log, h.seq)? == h.hash {
                expected = h.stream_seq;
                next = h.seq + 1;
                PushMark {
                    seq: h.seq,
                    hash: h.hash.clone(),
                }
                .write(&self.hub.name, &self.log_id);
            } else {
                // The hub's last message is not this log's record: a foreign tail
                // (forged, or another machine's), a local rollback, or a fork.
                let resume = self.past_foreign(log, local.seq, h).await?;
                expected = resume.expected;
                next = resume.next;
                foreign = resume.foreign;
            }
        }
        let mut pushed = Pushed {
            head: there.clone(),
            foreign,
            ..Pushed::default()
        };
        if next > local.seq {
            self.check_held(&pushed).await?;
            self.checkpoint(log, next - 1, &mut pushed).await?;
            return Ok(pushed);
        }
        pushed.blobs = self.push_blobs(log).await?;
        let max = self.hub.client.server_info().max_payload;
        while next <= local.seq {
            let mut batch: Vec<Record> = Vec::new();
            let mut bytes = 0usize;
            log.scan(next, local.seq, |record| {
                bytes += record.bytes.len();
                batch.push(record);
                batch.len() < BATCH_RECORDS && bytes < BATCH_BYTES
            })
            .map_err(|e| PushError::Local(e.into()))?;
            let Some(last) = batch.last() else { break };
            let (last_seq, last_hash) = (last.seq, last.hash.to_hex());
            for r in &batch {
                if r.bytes.len() + 512 > max {
                    return Err(PushError::TooLarge {
                        seq: r.seq,
                        bytes: r.bytes.len(),
                        max,
                    });
                }
            }
            match self.publish_batch(&batch, expected).await {
                Ok(stream_seq) => expected = stream_seq,
                Err(Conflict::WrongLast) => {
                    // Our own batch whose answer was lost, a replica that had
                    // not yet seen our last batch when asked, or another
                    // writer: the hub's head says which.
                    let now = head(&self.hub, self.stream(), &self.log_id).await?;
                    match now {
                        Some(h) if h.seq == last_seq && h.hash == last_hash => {
                            expected = h.stream_seq
                        }
                        Some(h) if h.seq < last_seq && local_hash(log, h.seq)? == h.hash => {
                            // The hub holds this log up to h: go on from there.
                            expected = h.stream_seq;
                            next = h.seq + 1;
                            continue;
                        }
                        // Not ours: the next round looks at the hub's head whole
                        // (a foreign tail, a fork or a rollback).
                        _ => {
                            return Err(PushError::Hub(self.hub.error(format!(
                                "the hub's head of log {} is not where this push left it; looking again",
                                self.log_id
                            ))));
                        }
                    }
                }
                Err(Conflict::Other(e)) => return Err(PushError::Hub(e)),
            }
            PushMark {
                seq: last_seq,
                hash: last_hash.clone(),
            }
            .write(&self.hub.name, &self.log_id);
            pushed.records += batch.len() as u64;
            pushed.bytes += bytes as u64;
            progress(pushed.records);
            next = last_seq + 1;
            pushed.head = Some(HubHead {
                seq: last_seq,
                hash: last_hash,
                stream_seq: expected,
                host: self.host.clone(),
                pushed_at: String::new(),
            });
        }
        self.check_held(&pushed).await?;
        self.checkpoint(log, next - 1, &mut pushed).await?;
        Ok(pushed)
    }

    /// Fails with [`PushError::Lost`] when the log's subject holds fewer
    /// messages than the hub's head seq: every seq up to it was pushed, so the
    /// stream removed some (a limit, or work-queue retention).
    async fn check_held(&self, pushed: &Pushed) -> Result<(), PushError> {
        let Some(head) = &pushed.head else {
            return Ok(());
        };
        let held =
            crate::read::messages_on(&self.hub, self.stream(), &self.hub.subject(&self.log_id))
                .await?;
        if held < head.seq {
            return Err(PushError::Lost {
                log: self.log_id.clone(),
                held,
                pushed: head.seq,
            });
        }
        Ok(())
    }

    /// Where pushing resumes when the hub's last message is not this log's: after
    /// the last record this machine pushed (its mark), past what others added,
    /// when the hub still holds that record and this log still has it; else the
    /// rollback or fork is refused.
    async fn past_foreign(
        &self,
        log: &Log,
        local_seq: u64,
        hub_head: &HubHead,
    ) -> Result<Resume, PushError> {
        let mark = PushMark::read(&self.hub.name, &self.log_id);
        let survey = survey(&self.hub, self.stream(), &self.log_id).await?;
        if let Some(m) = &mark
            && m.seq <= local_seq
            && local_hash(log, m.seq)? == m.hash
            && survey.holds(m.seq, &m.hash).is_some()
        {
            // Ours up to the mark; and beyond it, ours if a round's answer was lost.
            let mut ours = m.seq;
            while ours < local_seq
                && survey
                    .holds(ours + 1, &local_hash(log, ours + 1)?)
                    .is_some()
            {
                ours += 1;
            }
            let since = survey
                .holds(ours, &local_hash(log, ours)?)
                .unwrap_or_default();
            let foreign = survey
                .after(since)
                .into_iter()
                .map(|(stream_seq, seq, _)| Foreign {
                    stream_seq,
                    seq,
                    why: "this machine never pushed it",
                })
                .collect();
            return Ok(Resume {
                next: ours + 1,
                expected: survey.last_stream_seq(),
                foreign,
            });
        }
        if hub_head.seq > local_seq {
            let pushed_further = mark.as_ref().is_some_and(|m| m.seq > local_seq);
            return Err(PushError::Rollback {
                log: self.log_id.clone(),
                hub_seq: hub_head.seq,
                hub_hash: hub_head.hash.clone(),
                local_seq,
                local_hash: local_hash(log, local_seq)?,
                certain: pushed_further,
            });
        }
        Err(PushError::Fork {
            log: self.log_id.clone(),
            seq: hub_head.seq,
            hub_hash: hub_head.hash.clone(),
            local_hash: local_hash(log, hub_head.seq)?,
        })
    }

    /// One atomic batch; the stream sequence of its last message.
    async fn publish_batch(&mut self, batch: &[Record], expected: u64) -> Result<u64, Conflict> {
        self.nonce += 1;
        let id = format!(
            "{}-{}-{}",
            &self.log_id[..self.log_id.len().min(32)],
            batch[0].seq,
            self.nonce
        );
        let id: String = id.chars().take(64).collect();
        let subject = self.hub.subject(&self.log_id);
        let last = batch.len() - 1;
        for (i, record) in batch.iter().enumerate() {
            let mut headers = HeaderMap::new();
            headers.insert(SEQ, record.seq.to_string().as_str());
            headers.insert(HASH, record.hash.to_hex().as_str());
            if let Some(key) = &record.stream {
                headers.insert(STREAM_KEY, key.as_str());
            }
            headers.insert(HOST, self.host.as_str());
            headers.insert("Nats-Batch-Id", id.as_str());
            headers.insert("Nats-Batch-Sequence", (i + 1).to_string().as_str());
            if i == 0 {
                headers.insert(
                    "Nats-Expected-Last-Subject-Sequence",
                    expected.to_string().as_str(),
                );
            }
            let payload = Bytes::copy_from_slice(&record.bytes);
            if i < last {
                self.hub
                    .client
                    .publish_with_headers(subject.clone(), headers, payload)
                    .await
                    .map_err(|e| Conflict::Other(self.hub.error(format!("publish: {e}"))))?;
                continue;
            }
            headers.insert("Nats-Batch-Commit", "1");
            let reply = self
                .hub
                .client
                .request_with_headers(subject.clone(), headers, payload)
                .await
                .map_err(|e| {
                    Conflict::Other(self.hub.error(format!(
                        "batch commit: {e}: no stream leader answered (a node restarting, or a cluster without its quorum, which takes writes again once a majority of its nodes is back)"
                    )))
                })?;
            let reply: Reply = serde_json::from_slice(&reply.payload).map_err(|e| {
                Conflict::Other(self.hub.error(format!("batch commit answer: {e}")))
            })?;
            if let Some(error) = reply.error {
                // 10071 wrong last sequence; 10164 its constant form.
                if matches!(error.err_code, 10071 | 10164) {
                    return Err(Conflict::WrongLast);
                }
                return Err(Conflict::Other(self.hub.error(format!(
                    "batch refused: {} (error {})",
                    error.description, error.err_code
                ))));
            }
            return Ok(reply.seq);
        }
        unreachable!("batches are never empty")
    }

    /// Every blob of this log the hub lacks, each once.
    async fn push_blobs(&mut self, log: &Log) -> Result<u64, PushError> {
        let local = log.list_blobs().map_err(|e| PushError::Local(e.into()))?;
        if local.is_empty() {
            return Ok(0);
        }
        let store = self.object_store().await?;
        if self.blobs_there.is_none() {
            let mut there = HashSet::new();
            let mut list = store
                .list()
                .await
                .map_err(|e| self.hub.error(format!("listing blobs: {e}")))?;
            use futures_util::StreamExt;
            while let Some(info) = list.next().await {
                let info = info.map_err(|e| self.hub.error(format!("listing blobs: {e}")))?;
                if !info.deleted {
                    there.insert(info.name);
                }
            }
            self.blobs_there = Some(there);
        }
        let mut sent = 0;
        for (hash, _, _) in local {
            let name = hash.to_hex();
            if self.blobs_there.as_ref().is_some_and(|t| t.contains(&name)) {
                continue;
            }
            let Some(bytes) = log
                .get_blob(&hash)
                .map_err(|e| PushError::Local(e.into()))?
            else {
                continue;
            };
            store
                .put(name.as_str(), &mut bytes.as_slice())
                .await
                .map_err(|e| self.hub.error(format!("blob {name}: {e}")))?;
            self.blobs_there.get_or_insert_default().insert(name);
            sent += 1;
        }
        Ok(sent)
    }

    async fn object_store(
        &self,
    ) -> Result<async_nats::jetstream::object_store::ObjectStore, HubError> {
        let name = bucket(&self.hub.name);
        match self.hub.js.get_object_store(&name).await {
            Ok(store) => Ok(store),
            Err(_) => self
                .hub
                .js
                .create_object_store(crate::config::blobs_config(&self.hub.name, 1))
                .await
                .map_err(|e| self.hub.error(format!("blob bucket {name}: {e}"))),
        }
    }
}

/// This log's chain hash at `seq` in hex (empty when it has no such record).
fn local_hash(log: &Log, seq: u64) -> Result<String, PushError> {
    Ok(log
        .get(seq)
        .map_err(|e| PushError::Local(e.into()))?
        .map(|r| r.hash.to_hex())
        .unwrap_or_default())
}

/// Why a batch did not land.
enum Conflict {
    /// The subject did not end where the batch expected.
    WrongLast,
    Other(HubError),
}

/// Pushes until this log's head is on the hub; with `follow`, keeps pushing as
/// the log grows. Errors worth retrying (the hub unreachable, restarting) are
/// retried with backoff — for ever with `follow`, else for `patience`.
pub async fn push(
    pusher: &mut Pusher,
    log: &Log,
    follow: bool,
    patience: Duration,
    mut progress: impl FnMut(u64),
    mut note: impl FnMut(&str),
) -> Result<Pushed, PushError> {
    let mut total = Pushed::default();
    let mut backoff = Backoff::new(RETRY_FIRST, RETRY_MAX);
    let mut failing_since: Option<std::time::Instant> = None;
    let mut watch = log.subscribe();
    loop {
        let base = total.records;
        match pusher.round(log, |n| progress(base + n)).await {
            Ok(round) => {
                total.records += round.records;
                total.bytes += round.bytes;
                total.blobs += round.blobs;
                total.foreign.extend(round.foreign);
                total.head = round.head;
                if let Some(why) = &round.checkpoint_failed {
                    // The records landed; their checkpoint is tried again for a
                    // while (a cluster's bucket may still be electing its leader).
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    total.checkpoint_failed = round.checkpoint_failed.clone();
                    if !follow && since.elapsed() < patience.min(CHECKPOINT_RETRY) {
                        let wait = backoff.next_wait();
                        note(&format!(
                            "the signed checkpoint was not published: {why}; retrying in {} ms",
                            wait.as_millis()
                        ));
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    note(&format!("the signed checkpoint was not published: {why}"));
                }
                total.checkpoint_failed = round.checkpoint_failed;
                backoff.reset();
                failing_since = None;
                if !follow {
                    if total.head.as_ref().map_or(0, |h| h.seq) >= log.head().seq {
                        return Ok(total);
                    }
                    continue;
                }
                if total.head.as_ref().map_or(0, |h| h.seq) >= log.head().seq {
                    // Wait for the log to grow (or a minute, to notice a hub that
                    // changed under us).
                    let _ = tokio::time::timeout(Duration::from_secs(60), watch.changed()).await;
                }
            }
            Err(e) if e.retryable() => {
                let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                if !follow && since.elapsed() >= patience {
                    return Err(e);
                }
                let wait = backoff.next_wait();
                note(&format!("{e}; retrying in {} ms", wait.as_millis()));
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Replicates `log` to the hub of `options` as it grows, for ever: an absent hub
/// is retried (the connection with backoff, then `push` itself); a fork or a
/// rollback stops the pushing. With `signer`, every round ends with a signed
/// checkpoint. `note` hears what happens (`serve --push`).
pub async fn push_forever(
    options: HubOptions,
    log: std::sync::Arc<Log>,
    log_id: String,
    host: String,
    signer: Option<cmdlog_tlog::Signer>,
    mut note: impl FnMut(&str),
) {
    let mut backoff = Backoff::new(RECONNECT_FIRST, RECONNECT_MAX);
    let mut pusher = loop {
        let connected = match options.connect().await {
            Ok(h) => Ok(Pusher::new(h, &log_id, &host)),
            Err(e) => Err(e),
        };
        match connected {
            Ok(mut p) => {
                if let Some(signer) = &signer {
                    p.sign_checkpoints(signer.clone());
                }
                break p;
            }
            Err(e) => {
                let wait = backoff.next_wait();
                note(&format!("{e}; retrying in {} ms", wait.as_millis()));
                tokio::time::sleep(wait).await;
            }
        }
    };
    if let Err(e) = push(&mut pusher, &log, true, Duration::MAX, |_| {}, &mut note).await {
        note(&format!("stopped: {e}"));
    }
}
