//! The recorder of a bridged ACP connection: events go to the log in the order
//! they are given, a batch per durable commit, without holding up the messages
//! they record. `flush` waits until everything given so far is durable — the
//! bridge flushes before it tells a client a turn ended.

use std::sync::Arc;

use cmdlog_engine::event::{AcpDirection, AcpMessage};
use cmdlog_engine::{Engine, EventData};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::limits::{
    BLOB_PART_BYTES, MESSAGE_INLINE_BYTES_MAX, MESSAGE_VALUE_INLINE_BYTES_MAX,
    RECORD_BATCH_EVENTS_MAX as BATCH_MAX, RECORD_INLINE_BYTES_MAX,
};

/// Gives the engine to record with: the daemon's engine can be swapped while a
/// failed store reopens.
pub type EngineSource = Arc<dyn Fn() -> Option<Engine> + Send + Sync>;

enum Item {
    Event {
        session: Option<String>,
        agent: Option<String>,
        data: Box<EventData>,
    },
    Flush(oneshot::Sender<()>),
}

/// Appends events in order from a task of its own.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<Item>,
}

impl Recorder {
    /// Starts the recording task.
    pub fn start(engine: EngineSource) -> Recorder {
        let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            let mut waiters = Vec::new();
            while let Some(first) = rx.recv().await {
                let mut next = Some(first);
                while let Some(item) = next.take() {
                    match item {
                        Item::Event {
                            session,
                            agent,
                            data,
                        } => batch.push((session, agent, *data)),
                        Item::Flush(done) => waiters.push(done),
                    }
                    if batch.len() < BATCH_MAX {
                        next = rx.try_recv().ok();
                    }
                }
                if !batch.is_empty() {
                    append(&engine, std::mem::take(&mut batch)).await;
                }
                for done in waiters.drain(..) {
                    let _ = done.send(());
                }
            }
        });
        Recorder { tx }
    }

    /// Records `data` in `session` (or log-wide).
    pub fn record(&self, session: Option<&str>, agent: Option<&str>, data: EventData) {
        let _ = self.tx.send(Item::Event {
            session: session.map(str::to_string),
            agent: agent.map(str::to_string),
            data: Box::new(data),
        });
    }

    /// Records a JSON-RPC message no typed event covers.
    pub fn message(
        &self,
        session: Option<&str>,
        agent: Option<&str>,
        direction: AcpDirection,
        message: Value,
    ) {
        self.record(
            session,
            agent,
            EventData::AcpMessage(AcpMessage { direction, message }),
        );
    }

    /// Waits until everything recorded so far is appended (or failed).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Item::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Where a large value of a message was: a marker naming its blob.
fn blob_marker(hash: &cmdlog_store::BlobHash, bytes: usize) -> Value {
    json!({"cmdlog": "value stored as a blob", "blob": hash.to_hex(), "bytes": bytes})
}

/// Replaces, within `value` (to `depth` levels of objects), each value whose JSON is over
/// [`MESSAGE_VALUE_INLINE_BYTES_MAX`] by a blob marker; the bytes to store are
/// pushed onto `blobs`.
fn extract_large(value: &mut Value, depth: usize, blobs: &mut Vec<Vec<u8>>) {
    let children: Vec<&mut Value> = match value {
        Value::Object(map) => map.values_mut().collect(),
        Value::Array(items) => items.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        let Ok(bytes) = serde_json::to_vec(child) else {
            continue;
        };
        if bytes.len() <= MESSAGE_VALUE_INLINE_BYTES_MAX {
            continue;
        }
        // Into objects (a result, its fields); a list is stored whole.
        if depth > 1 && child.is_object() {
            extract_large(child, depth - 1, blobs);
            continue;
        }
        let hash = cmdlog_store::BlobHash::of(&bytes);
        *child = blob_marker(&hash, bytes.len());
        blobs.push(bytes);
    }
}

/// A large `acp/message` (over [`MESSAGE_INLINE_BYTES_MAX`]: an agent's model
/// catalogue on each `session/new`, its skills' bodies on each command list)
/// keeps its shape, its large values stored as blobs — content-addressed, so
/// what every session repeats is stored once.
async fn large_values_in_blobs(engine: &Engine, data: EventData) -> EventData {
    let EventData::AcpMessage(m) = &data else {
        return data;
    };
    if serde_json::to_vec(&m.message).map_or(0, |b| b.len()) <= MESSAGE_INLINE_BYTES_MAX {
        return data;
    }
    let mut message = m.message.clone();
    let mut blobs = Vec::new();
    extract_large(&mut message, 4, &mut blobs);
    if blobs.is_empty() {
        return data;
    }
    match engine.log().put_blobs_async(blobs).await {
        Ok(_) => EventData::AcpMessage(AcpMessage {
            direction: m.direction,
            message,
        }),
        // Kept whole (or in blobs as a whole, below) when the parts cannot be stored.
        Err(_) => data,
    }
}

/// An event too large for a record (a message the editor or the agent sent of
/// many megabytes) is stored as blobs; an `acp/message` naming them takes its
/// place, so the event is kept whole and the batch around it is not lost.
async fn in_blobs_if_large(engine: &Engine, data: EventData) -> EventData {
    let Ok(bytes) = serde_json::to_vec(&data) else {
        return data;
    };
    if bytes.len() <= RECORD_INLINE_BYTES_MAX {
        return data;
    }
    let direction = match &data {
        EventData::AcpMessage(m) => m.direction,
        _ => AcpDirection::FromAgent,
    };
    let type_name = data.type_name();
    let parts: Vec<Vec<u8>> = bytes.chunks(BLOB_PART_BYTES).map(<[u8]>::to_vec).collect();
    let message = match engine.log().put_blobs_async(parts).await {
        Ok(hashes) => {
            json!({"cmdlog": "event stored as blobs", "type": type_name, "bytes": bytes.len(),
            "blobs": hashes.iter().map(|h| h.to_hex()).collect::<Vec<_>>()})
        }
        Err(e) => {
            json!({"cmdlog": "event too large and not stored", "type": type_name, "bytes": bytes.len(),
            "blake3": blake3::hash(&bytes).to_hex().to_string(), "error": e.to_string()})
        }
    };
    EventData::AcpMessage(AcpMessage { direction, message })
}

/// Appends a batch. Events of a session that ended meanwhile are dropped (a
/// session that died takes its stragglers with it), the rest kept; a storage
/// failure is reported and the batch lost from the log, not from the connection.
async fn append(engine: &EngineSource, batch: Vec<(Option<String>, Option<String>, EventData)>) {
    let Some(engine) = engine() else {
        eprintln!(
            "cmdlog: {} ACP event(s) not recorded: the log is being reopened",
            batch.len()
        );
        return;
    };
    let open: Vec<_> = batch
        .into_iter()
        .filter(|(session, _, data)| match session {
            None => true,
            Some(s) => match engine.check_session(s) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!(
                        "cmdlog: a {} event was not recorded: {}",
                        data.type_name(),
                        cmdlog_common::terminal::clean(&e.to_string())
                    );
                    false
                }
            },
        })
        .collect();
    if open.is_empty() {
        return;
    }
    let mut kept = Vec::with_capacity(open.len());
    for (session, agent, data) in open {
        let data = large_values_in_blobs(&engine, data).await;
        kept.push((session, agent, in_blobs_if_large(&engine, data).await));
    }
    let open = kept;
    let count = open.len();
    if let Err(e) = engine.append_events(open).await {
        eprintln!(
            "cmdlog: {count} ACP event(s) not recorded: {}",
            cmdlog_common::terminal::clean(&e.to_string())
        );
    }
}
