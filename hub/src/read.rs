//! Reading logs back from the hub: one log's records (for `clone`), every log's
//! (for `hub audit`), and the list of logs (for `hub list`), through ordered
//! consumers and direct reads; nothing is kept on the hub afterwards.

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull, pull::OrderedConfig};
use async_nats::jetstream::stream;
use futures_util::StreamExt;

use crate::connect::Hub;
use crate::error::HubError;
use crate::layout::{HASH, HOST, SEQ, STREAM_KEY, header, rfc3339};
use crate::limits::{CURSOR_IDLE, READ_WAIT};

/// What the hub holds of one log: its last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubHead {
    /// The seq of the last record.
    pub seq: u64,
    /// Hex chain hash.
    pub hash: String,
    /// The stream sequence of that message.
    pub stream_seq: u64,
    /// The host that pushed it.
    pub host: String,
    /// When the hub stored it, RFC 3339.
    pub pushed_at: String,
}

/// The last record the hub holds of `log_id`, if any.
pub async fn head(
    hub: &Hub,
    stream: &stream::Stream,
    log_id: &str,
) -> Result<Option<HubHead>, HubError> {
    use async_nats::jetstream::stream::DirectGetErrorKind;
    match stream
        .direct_get_last_for_subject(hub.subject(log_id))
        .await
    {
        Ok(message) => {
            let seq = header(&message.headers, SEQ)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    hub.error(format!(
                        "message {} of log {log_id} has no {SEQ} header: not written by cmdlog",
                        message.sequence
                    ))
                })?;
            Ok(Some(HubHead {
                seq,
                hash: header(&message.headers, HASH).unwrap_or("").to_string(),
                stream_seq: message.sequence,
                host: header(&message.headers, HOST).unwrap_or("").to_string(),
                pushed_at: rfc3339(message.time),
            }))
        }
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
        Err(e) => Err(hub.error(format!("reading the last record of log {log_id}: {e}"))),
    }
}

/// One record as the hub holds it.
#[derive(Debug, Clone)]
pub struct HubRecord {
    /// The log it belongs to (from its subject).
    pub log_id: String,
    /// Its seq in its log.
    pub seq: u64,
    /// Hex chain hash.
    pub hash: String,
    /// Its stream key (its session), if it has one.
    pub stream: Option<String>,
    /// The host that pushed it.
    pub host: String,
    /// The record's bytes.
    pub bytes: Vec<u8>,
    /// Its message's sequence in the stream.
    pub stream_seq: u64,
}

/// Surveys every message of log `log_id` on the hub: which are its chain and
/// which are foreign.
pub async fn survey(
    hub: &Hub,
    stream: &stream::Stream,
    log_id: &str,
) -> Result<crate::chain::Survey, HubError> {
    let mut survey = crate::chain::Survey::default();
    each(hub, stream, &hub.subject(log_id), |r| {
        survey.add(r.stream_seq, r.seq, &r.bytes, &r.hash);
        Ok(true)
    })
    .await?;
    Ok(survey)
}

/// Runs `op` again while the hub answers as a cluster electing its leaders
/// does (`transient`: a timeout, no responders, a 503), for up to
/// `READ_WAIT`: right after a node comes back, a consumer or a count asked of
/// a stream whose leader is not yet elected times out, and a reader should
/// wait for the election as a push does, not fail.
pub(crate) async fn patiently<T, E, F>(
    mut op: impl FnMut() -> F,
    transient: impl Fn(&E) -> bool,
) -> Result<T, E>
where
    F: std::future::Future<Output = Result<T, E>>,
{
    let deadline = std::time::Instant::now() + READ_WAIT;
    let mut wait = std::time::Duration::from_millis(100);
    loop {
        match op().await {
            Err(e) if transient(&e) && std::time::Instant::now() + wait < deadline => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(2));
            }
            done => return done,
        }
    }
}

/// Whether a consumer could not be made for a reason an election ends.
pub(crate) fn consumer_transient(e: &stream::ConsumerError) -> bool {
    use stream::ConsumerErrorKind as K;
    match e.kind() {
        K::TimedOut | K::Request => true,
        K::JetStream(e) => e.code() == 503,
        _ => false,
    }
}

/// Whether a stream's info was not given for a reason an election ends.
fn info_transient(e: &stream::InfoError) -> bool {
    !matches!(
        e.kind(),
        async_nats::jetstream::context::RequestErrorKind::InvalidSubject
    )
}

/// How many messages the stream's leader says `filter` holds now.
pub(crate) async fn messages_on(
    hub: &Hub,
    stream: &stream::Stream,
    filter: &str,
) -> Result<u64, HubError> {
    let failed = |e: &dyn std::fmt::Display| hub.error(format!("stream info: {e}"));
    if filter == hub.all_logs() {
        let info = patiently(
            || async {
                let mut info = stream.clone();
                info.info().await.map(|i| i.state.messages)
            },
            info_transient,
        )
        .await;
        return info.map_err(|e| failed(&e));
    }
    let mut subjects = patiently(|| stream.info_with_subjects(filter), info_transient)
        .await
        .map_err(|e| failed(&e))?;
    let mut count = 0;
    while let Some(entry) = subjects.next().await {
        count += entry.map_err(|e| failed(&e))?.1 as u64;
    }
    Ok(count)
}

/// Reads every message on `filter` (a log's subject, or all logs') through an
/// ordered consumer, calling `f` with each, until every message the stream's
/// leader counted at the start is read. `f` returns false to stop. (The
/// consumer may be served by a replica still catching up after a node came
/// back: its end is not the stream's, so the leader's count is waited for.)
pub async fn each(
    hub: &Hub,
    stream: &stream::Stream,
    filter: &str,
    mut f: impl FnMut(HubRecord) -> Result<bool, HubError>,
) -> Result<u64, HubError> {
    let expected = messages_on(hub, stream, filter).await?;
    if expected == 0 {
        return Ok(0);
    }
    let consumer = patiently(
        || {
            stream.create_consumer(OrderedConfig {
                filter_subject: filter.to_string(),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
        },
        consumer_transient,
    )
    .await
    .map_err(|e| hub.error(format!("consumer on {filter}: {e}")))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| hub.error(format!("reading {filter}: {e}")))?;
    let mut count = 0;
    loop {
        let next = tokio::time::timeout(READ_WAIT, messages.next())
            .await
            .map_err(|_| {
                hub.error(format!(
                    "reading {filter}: no message for {} s after {count} of the {expected} the stream holds",
                    READ_WAIT.as_secs()
                ))
            })?;
        let Some(message) = next else { break };
        let message = message.map_err(|e| hub.error(format!("reading {filter}: {e}")))?;
        let record = consumed(&message).map_err(|e| hub.error(format!("message info: {e}")))?;
        count += 1;
        if !f(record)? || count >= expected {
            break;
        }
    }
    Ok(count)
}

/// A record from a message's subject, cmdlog's headers, payload and stream
/// sequence (a missing or unreadable seq header reads as seq 0, which no
/// record has).
fn record(
    subject: &str,
    headers: &async_nats::HeaderMap,
    payload: &[u8],
    stream_seq: u64,
) -> HubRecord {
    HubRecord {
        log_id: subject.rsplit('.').next().unwrap_or("").to_string(),
        seq: header(headers, SEQ)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        hash: header(headers, HASH).unwrap_or("").to_string(),
        stream: header(headers, STREAM_KEY).map(str::to_string),
        host: header(headers, HOST).unwrap_or("").to_string(),
        bytes: payload.to_vec(),
        stream_seq,
    }
}

/// The record a consumer delivered.
pub(crate) fn consumed(
    message: &async_nats::jetstream::Message,
) -> Result<HubRecord, async_nats::Error> {
    let stream_seq = message.info()?.stream_sequence;
    let headers = message.headers.clone().unwrap_or_default();
    Ok(record(
        message.subject.as_str(),
        &headers,
        &message.payload,
        stream_seq,
    ))
}

/// One subject read batch by batch through a pull consumer of its own, made at
/// the first batch from the stream sequence asked for (and made again if the
/// server dropped it): the server counts what is pending once, when it makes
/// the consumer, where a batched direct get counts it at every request.
pub(crate) struct Cursor {
    subject: String,
    consumer: Option<async_nats::jetstream::consumer::PullConsumer>,
    /// Where a read from the subject's start begins instead: its first message
    /// stored at or after this time (unix ms).
    stored_since: Option<u64>,
}

impl Cursor {
    /// A cursor on `subject`; nothing is asked of the hub yet. With
    /// `stored_since`, it starts at the first message the hub stored at or
    /// after that time (unix ms) rather than at the first.
    pub(crate) fn new(subject: String, stored_since: Option<u64>) -> Self {
        Cursor {
            subject,
            consumer: None,
            stored_since,
        }
    }

    /// Up to `n` messages from stream sequence `from` on (where the last batch
    /// left off); none when the subject has no more.
    pub(crate) async fn next(
        &mut self,
        hub: &Hub,
        stream: &stream::Stream,
        from: u64,
        n: usize,
    ) -> Result<Vec<HubRecord>, HubError> {
        let failed =
            |e: &dyn std::fmt::Display| hub.error(format!("reading {}: {e}", self.subject));
        let mut tries = 0;
        loop {
            tries += 1;
            let consumer = match &self.consumer {
                Some(c) => c.clone(),
                None => {
                    let config = pull::Config {
                        filter_subject: self.subject.clone(),
                        deliver_policy: match self.stored_since {
                            Some(ms) if from <= 1 => DeliverPolicy::ByStartTime {
                                start_time: async_nats::datetime::from_nanos(
                                    i128::from(ms) * 1_000_000,
                                )
                                .map_err(|e| failed(&e))?,
                            },
                            _ => DeliverPolicy::ByStartSequence {
                                start_sequence: from.max(1),
                            },
                        },
                        ack_policy: AckPolicy::None,
                        inactive_threshold: CURSOR_IDLE,
                        memory_storage: true,
                        num_replicas: 1,
                        ..Default::default()
                    };
                    let made = patiently(
                        || stream.create_consumer(config.clone()),
                        consumer_transient,
                    )
                    .await
                    .map_err(|e| failed(&e))?;
                    self.consumer = Some(made.clone());
                    made
                }
            };
            let fetched = async {
                let mut batch = consumer.fetch().max_messages(n).messages().await?;
                let mut out = Vec::with_capacity(n);
                while let Some(message) = batch.next().await {
                    out.push(consumed(&message?)?);
                }
                Ok::<_, async_nats::Error>(out)
            }
            .await;
            match fetched {
                Ok(out) => return Ok(out),
                // Dropped by the server (idle too long, its node restarted):
                // made again from where this cursor is.
                Err(_) if tries < 3 => {
                    self.consumer = None;
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => return Err(failed(&e)),
            }
        }
    }

    /// Deletes its consumer (the server would after `CURSOR_IDLE`).
    pub(crate) async fn close(&mut self, stream: &stream::Stream) {
        if let Some(c) = self.consumer.take() {
            let _ = stream.delete_consumer(&c.cached_info().name).await;
        }
    }
}

/// One log on the hub.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LogEntry {
    /// The log's id.
    pub id: String,
    /// The host that pushed its last record.
    pub host: String,
    /// The seq of its last record on the hub (0 when its last message is not
    /// cmdlog's: `hub audit` and `clone` find its chain).
    pub head_seq: u64,
    /// That record's chain hash (hex).
    pub head_hash: String,
    /// How many messages the hub holds of it.
    pub messages: u64,
    /// When its last record was stored, RFC 3339.
    pub last_push: String,
}

/// Every log on the hub, by id, in two requests whatever their number: the
/// stream's subjects with their message counts, and the last message of each
/// (a batched direct get, `multi_last`: ADR-31, nats-server 2.11 and later).
/// A server that will not return every subject's last message at once (413:
/// more subjects than it answers in one batch) is asked log by log.
pub async fn list(hub: &Hub, stream: &stream::Stream) -> Result<Vec<LogEntry>, HubError> {
    let mut subjects = stream
        .info_with_subjects(hub.all_logs())
        .await
        .map_err(|e| hub.error(format!("listing logs: {e}")))?;
    let mut counts = Vec::new();
    while let Some(entry) = subjects.next().await {
        let (subject, count) = entry.map_err(|e| hub.error(format!("listing logs: {e}")))?;
        counts.push((subject, count as u64));
    }
    counts.sort();
    let mut heads = match last_of_every_log(hub).await? {
        Some(heads) => heads,
        None => {
            let mut heads = std::collections::HashMap::new();
            for (subject, _) in &counts {
                let id = subject.rsplit('.').next().unwrap_or("");
                if let Some(h) = head(hub, stream, id).await? {
                    heads.insert(subject.clone(), h);
                }
            }
            heads
        }
    };
    let mut out = Vec::new();
    for (subject, messages) in counts {
        // A subject whose last message is not cmdlog's (no seq header) is
        // listed all the same, with no head: hiding it would hide the log.
        let HubHead {
            seq,
            hash,
            host,
            pushed_at,
            ..
        } = heads.remove(&subject).unwrap_or(HubHead {
            seq: 0,
            hash: String::new(),
            stream_seq: 0,
            host: String::new(),
            pushed_at: String::new(),
        });
        out.push(LogEntry {
            id: subject.rsplit('.').next().unwrap_or("").to_string(),
            host,
            head_seq: seq,
            head_hash: hash,
            messages,
            last_push: pushed_at,
        });
    }
    Ok(out)
}

/// A batched direct get (ADR-31, nats-server 2.11 and later): the messages the
/// stream answers `request` with, up to its end-of-batch; `None` when it
/// answers 413 (more than it gives in one batch). A subject with nothing to
/// give answers an empty batch.
async fn direct_batch(
    hub: &Hub,
    request: serde_json::Value,
    what: &str,
) -> Result<Option<Vec<async_nats::Message>>, HubError> {
    let failed = |e: &dyn std::fmt::Display| hub.error(format!("{what}: {e}"));
    let inbox = hub.client.new_inbox();
    let mut replies = hub
        .client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| failed(&e))?;
    hub.client
        .publish_with_reply(
            format!("$JS.API.DIRECT.GET.{}", hub.name),
            inbox,
            request.to_string().into(),
        )
        .await
        .map_err(|e| failed(&e))?;
    let mut out = Vec::new();
    loop {
        let message = tokio::time::timeout(READ_WAIT, replies.next())
            .await
            .map_err(|_| failed(&"the hub did not answer in time"))?
            .ok_or_else(|| failed(&"the connection closed"))?;
        match message.status.map(|s| s.as_u16()) {
            // The end of the batch, or nothing to give.
            Some(204) | Some(404) => return Ok(Some(out)),
            Some(413) => return Ok(None),
            Some(other) => {
                return Err(failed(&format!(
                    "status {other} {}",
                    message.description.unwrap_or_default()
                )));
            }
            None => out.push(message),
        }
    }
}

/// The record a direct get answered with, and when the hub stored it (RFC 3339).
fn direct_record(message: async_nats::Message) -> (HubRecord, String) {
    let headers = message.headers.unwrap_or_default();
    let stream_seq = header(&headers, "Nats-Sequence")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let stored = header(&headers, "Nats-Time-Stamp")
        .and_then(cmdlog_common::time::parse_rfc3339)
        .map(cmdlog_common::time::rfc3339)
        .unwrap_or_default();
    let subject = header(&headers, "Nats-Subject").unwrap_or("");
    (
        record(subject, &headers, &message.payload, stream_seq),
        stored,
    )
}

/// The last message of every log's subject, by subject, in one request; `None`
/// when the server answers 413 (too many subjects for one batch).
async fn last_of_every_log(
    hub: &Hub,
) -> Result<Option<std::collections::HashMap<String, HubHead>>, HubError> {
    let request = serde_json::json!({ "multi_last": [hub.all_logs()] });
    let Some(messages) = direct_batch(hub, request, "listing logs").await? else {
        return Ok(None);
    };
    let mut heads = std::collections::HashMap::new();
    // A last message without cmdlog's seq header gives no head.
    for (r, pushed_at) in messages.into_iter().map(direct_record) {
        if r.seq == 0 {
            continue;
        }
        heads.insert(
            hub.subject(&r.log_id),
            HubHead {
                seq: r.seq,
                hash: r.hash,
                stream_seq: r.stream_seq,
                host: r.host,
                pushed_at,
            },
        );
    }
    Ok(Some(heads))
}

/// What a hub holds of one log, as `verify --against` compares it: the record
/// this log should have reached — the last this machine pushed, when the hub
/// still holds it, else the head of the log's chain on the hub — and the
/// messages that are not the log's.
#[derive(Debug, Clone)]
pub struct LogOnHub {
    /// The seq this log should have reached.
    pub seq: u64,
    /// Its chain hash, hex.
    pub hash: String,
    /// Whether that is this machine's own record of what it pushed.
    pub pushed_from_here: bool,
    /// Messages on the subject that are not the log's (past what this machine
    /// pushed, or out of the chain).
    pub foreign: Vec<crate::chain::Foreign>,
    /// Why the hub holds less of the log than was pushed to it, when it does:
    /// records removed by its stream's limits or retention (or the subject
    /// purged). `seq` and `hash` then say what was pushed.
    pub lost: Option<String>,
}

/// [`LogOnHub`] of `log_id`, if the hub holds anything of it.
pub async fn log_on_hub(
    hub: &Hub,
    stream: &stream::Stream,
    log_id: &str,
) -> Result<Option<LogOnHub>, HubError> {
    let surveyed = survey(hub, stream, log_id).await?;
    let mark = crate::mark::PushMark::read(&hub.name, log_id);
    if let Some(m) = mark.clone()
        && let Some(stream_seq) = surveyed.holds(m.seq, &m.hash)
    {
        let mut foreign: Vec<crate::chain::Foreign> = surveyed
            .after(stream_seq)
            .into_iter()
            .map(|(stream_seq, seq, _)| crate::chain::Foreign {
                stream_seq,
                seq,
                why: "this machine never pushed it",
            })
            .collect();
        for f in surveyed.foreign() {
            if !foreign.iter().any(|g| g.stream_seq == f.stream_seq) {
                foreign.push(f);
            }
        }
        foreign.sort_by_key(|f| f.stream_seq);
        return Ok(Some(LogOnHub {
            seq: m.seq,
            hash: m.hash,
            pushed_from_here: true,
            foreign,
            lost: None,
        }));
    }
    let reach = surveyed.head().map_or(0, |(seq, _, _)| seq);
    let messages = surveyed.messages();
    // This machine pushed further than the hub's chain from seq 1 reaches, or
    // the hub holds messages of the log of which none chains from seq 1: the
    // hub lost records.
    let lost = match &mark {
        Some(m) if m.seq > reach => Some(format!(
            "this machine pushed it through seq {}, but the hub holds {messages} message(s) of it and its chain from seq 1 reaches {}",
            m.seq,
            if reach == 0 {
                "no record".to_string()
            } else {
                format!("seq {reach}")
            }
        )),
        _ if reach == 0 && messages > 0 => Some(format!(
            "the hub holds {messages} message(s) of it, none of them chained from seq 1: its first records are gone"
        )),
        _ => None,
    };
    let lost = lost.map(|why| {
        format!(
            "the hub lost records of log {log_id}: {why}; its stream's limits or retention removed them (`cmdlog hub init` names the setting)"
        )
    });
    if let Some(lost) = lost {
        let (seq, hash) = mark.map_or((0, String::new()), |m| (m.seq, m.hash));
        return Ok(Some(LogOnHub {
            seq,
            hash,
            pushed_from_here: seq > 0,
            foreign: Vec::new(),
            lost: Some(lost),
        }));
    }
    Ok(surveyed.head().map(|(seq, hash, _)| LogOnHub {
        seq,
        hash,
        pushed_from_here: false,
        foreign: surveyed.foreign(),
        lost: None,
    }))
}
