//! Reading logs back from the hub: one log's records (for `clone`), every log's
//! (for `hub audit`), and the list of logs (for `hub list`), through ordered
//! consumers and direct reads; nothing is kept on the hub afterwards.

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use async_nats::jetstream::stream;
use futures_util::StreamExt;

use super::{HASH, HOST, Hub, HubError, HubHead, SEQ, STREAM_KEY, head, header};

/// One record as the hub holds it.
#[derive(Debug, Clone)]
pub(crate) struct HubRecord {
    /// The log it belongs to (from its subject).
    pub(crate) log_id: String,
    pub(crate) seq: u64,
    /// Hex chain hash.
    pub(crate) hash: String,
    pub(crate) stream: Option<String>,
    pub(crate) host: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) stream_seq: u64,
}

/// Reads every message on `filter` (a log's subject, or all logs') through an
/// ordered consumer, calling `f` with each, until the stream's end as of the
/// start. `f` returns false to stop.
pub(crate) async fn each(
    hub: &Hub,
    stream: &stream::Stream,
    filter: &str,
    mut f: impl FnMut(HubRecord) -> Result<bool, HubError>,
) -> Result<u64, HubError> {
    let mut info = stream.clone();
    let last = info
        .info()
        .await
        .map_err(|e| hub.error(format!("stream info: {e}")))?
        .state
        .last_sequence;
    if last == 0 {
        return Ok(0);
    }
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: filter.to_string(),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|e| hub.error(format!("consumer on {filter}: {e}")))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| hub.error(format!("reading {filter}: {e}")))?;
    let mut count = 0;
    loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(30), messages.next())
            .await
            .map_err(|_| hub.error(format!("reading {filter}: no message for 30 s")))?;
        let Some(message) = next else { break };
        let message = message.map_err(|e| hub.error(format!("reading {filter}: {e}")))?;
        let (stream_seq, pending) = message
            .info()
            .map(|i| (i.stream_sequence, i.pending))
            .map_err(|e| hub.error(format!("message info: {e}")))?;
        let headers = message.headers.clone().unwrap_or_default();
        let record = HubRecord {
            log_id: message
                .subject
                .as_str()
                .rsplit('.')
                .next()
                .unwrap_or("")
                .to_string(),
            seq: header(&headers, SEQ)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
            hash: header(&headers, HASH).unwrap_or("").to_string(),
            stream: header(&headers, STREAM_KEY).map(str::to_string),
            host: header(&headers, HOST).unwrap_or("").to_string(),
            bytes: message.payload.to_vec(),
            stream_seq,
        };
        count += 1;
        if !f(record)? || pending == 0 || stream_seq >= last {
            break;
        }
    }
    Ok(count)
}

/// One log on the hub.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct LogEntry {
    pub(crate) id: String,
    pub(crate) host: String,
    pub(crate) head_seq: u64,
    pub(crate) head_hash: String,
    pub(crate) messages: u64,
    pub(crate) last_push: String,
}

/// Every log on the hub, by id.
pub(crate) async fn list(hub: &Hub, stream: &stream::Stream) -> Result<Vec<LogEntry>, HubError> {
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
    let mut out = Vec::new();
    for (subject, messages) in counts {
        let id = subject.rsplit('.').next().unwrap_or("").to_string();
        let Some(HubHead {
            seq,
            hash,
            host,
            pushed_at,
            ..
        }) = head(hub, stream, &id).await?
        else {
            continue;
        };
        out.push(LogEntry {
            id,
            host,
            head_seq: seq,
            head_hash: hash,
            messages,
            last_push: pushed_at,
        });
    }
    Ok(out)
}
