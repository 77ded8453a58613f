//! `GET /session/:id/events`: a session's events on `qwen serve`'s SSE wire, read
//! from the durable log. Event ids count the session's shown events (see
//! `wire.rs`), so `Last-Event-ID` resumes exactly — across dropped connections and
//! daemon restarts — and the replay ends with `replay_complete`. Registry changes
//! arrive as id-less `available_commands_update` session updates.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use cmdlog_engine::Event;
use cmdlog_store::{Log, Seq};
use serde::Deserialize;
use serde_json::json;

use crate::journal::{Numbered, Numbering};
use crate::sse::{Resume, SharedFrame, resume_from};
use crate::state::{ApiError, AppState};
use crate::wire::{self, Envelope, envelope};

use crate::limits::{SSE_BATCH_BYTES_MAX, SSE_BATCH_EVENTS_MAX, SSE_BUSY_EVENTS, SSE_COALESCE};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EventsQuery {
    last_event_id: Option<String>,
    /// `1`: every frame carries its log record in `_meta.cmdlog.event`, and the
    /// events the wire does not show arrive as id-less `cmdlog_event` frames.
    cmdlog: Option<String>,
}

/// Where one subscriber stands.
pub(super) struct Cursor {
    session: String,
    /// Include log records and unshown events.
    full: bool,
    /// The id the next shown event gets, and the turn under way.
    numbering: Numbering,
    /// The last seq read.
    seq: Seq,
    /// Session seqs still to replay, then frames ready to send.
    replay: VecDeque<Seq>,
    replaying: bool,
    replayed: u64,
    pending: VecDeque<SseEvent>,
    head: tokio::sync::watch::Receiver<u64>,
    /// A terminal frame went out: end after the pending ones.
    ended: bool,
    /// The last read was large: wait for more commits before the next.
    busy: bool,
}

pub(super) async fn events(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Result<Response, ApiError> {
    let session = state.any_session(&id)?;
    // A header that is not even ASCII is as wrong as one that is not a number.
    let header = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| {
            ApiError::bad_request(
                "Last-Event-ID is not an event id (it is not ASCII): send the id of the last event you saw (0 for the whole history)",
            )
        })?),
    };
    let resume = resume_from(header, query.last_event_id.as_deref())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    if session.ended.is_some() && resume == Resume::Live {
        return Err(ApiError::session_not_found(&id).because(format!(
            "session {id:?} has ended; send Last-Event-ID to read its events"
        )));
    }
    let log = Arc::clone(state.engine()?.log());
    let head = log.head().seq;
    let (st, sid, reader) = (Arc::clone(&state), id.clone(), Arc::clone(&log));
    let start = tokio::task::spawn_blocking(move || start(&st, &reader, &sid, head, resume))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let mut cursor = Cursor {
        session: id.clone(),
        full: query.cmdlog.as_deref() == Some("1"),
        numbering: Numbering {
            next_id: start.next_id,
            turn: start.turn,
        },
        seq: head,
        replay: start.replay.into(),
        replaying: resume != Resume::Live,
        replayed: 0,
        pending: VecDeque::new(),
        head: log.subscribe(),
        ended: false,
        busy: false,
    };
    cursor.pending.push_back(
        SseEvent::default()
            .retry(Duration::from_secs(3))
            .comment("cmdlog"),
    );
    if let Some(resync) = start.resync {
        cursor
            .pending
            .push_back(synthetic("state_resync_required", &resync));
    }
    // Between reads the stream holds no engine or log: a store reopened after an
    // error ends it (its head channel closes) and the client resumes from the log.
    drop(log);
    let stream = futures_util::stream::unfold(cursor, move |c| next_frame(Arc::clone(&state), c));
    let mut response = Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(Duration::from_secs(15))
                .text("heartbeat"),
        )
        .into_response();
    let h = response.headers_mut();
    h.insert(
        "cache-control",
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The subscriber's next frame: what is pending, then the replay a batch at a
/// time, then live events as the log's head moves; `None` when the stream ends
/// (the session ended, the store closed, the daemon stops).
async fn next_frame(
    state: Arc<AppState>,
    mut c: Cursor,
) -> Option<(Result<SseEvent, Infallible>, Cursor)> {
    loop {
        if let Some(frame) = c.pending.pop_front() {
            return Some((Ok::<_, Infallible>(frame), c));
        }
        if c.ended {
            return None;
        }
        if c.replaying {
            if c.replay.is_empty() {
                c.replaying = false;
                let mut done = json!({"replayedCount": c.replayed});
                if c.replayed > 0 {
                    done["lastReplayedEventId"] = json!(c.numbering.next_id - 1);
                    done["lastEventId"] = json!(c.numbering.next_id - 1);
                }
                c.pending.push_back(synthetic("replay_complete", &done));
                continue;
            }
            let engine = state.engine().ok()?;
            let log = Arc::clone(engine.log());
            let take: Vec<Seq> = c.replay.drain(..c.replay.len().min(256)).collect();
            // At most the batch's bytes in hand (and at least one event): a
            // subscriber that does not read holds no more than that.
            let (events, unread) =
                tokio::task::spawn_blocking(move || read_seqs(&log, &take, SSE_BATCH_BYTES_MAX))
                    .await
                    .ok()?
                    .ok()?;
            for seq in unread.into_iter().rev() {
                c.replay.push_front(seq);
            }
            for e in events {
                let f = SharedFrame::of(&e, state.frames.runs);
                let before = c.numbering.next_id;
                show(&mut c, &f);
                c.replayed += c.numbering.next_id - before;
            }
            continue;
        }
        let head = *c.head.borrow_and_update();
        if head > c.seq {
            let engine = state.engine().ok()?;
            let log = Arc::clone(engine.log());
            let (from, to) = (c.seq + 1, head.min(c.seq + SSE_BATCH_EVENTS_MAX));
            let cache = Arc::clone(&state.frames);
            let (window, through) = tokio::task::spawn_blocking(move || {
                cache.window(&log, from, to, SSE_BATCH_BYTES_MAX)
            })
            .await
            .ok()?
            .ok()?;
            c.busy = through - c.seq >= SSE_BUSY_EVENTS;
            for f in window {
                if f.session.as_deref() == Some(c.session.as_str()) {
                    show(&mut c, &f);
                }
                if c.ended {
                    break;
                }
            }
            c.seq = through;
            continue;
        }
        tokio::select! {
            changed = c.head.changed() => if changed.is_err() { return None },
            // The daemon stops: the client resumes elsewhere or later.
            _ = state.shutdown.cancelled() => return None,
        }
        // Under load, let a burst of commits land so one read serves many of
        // them (each subscriber reads batches, not one event per commit); a
        // quiet session's events go out at once.
        if c.busy {
            tokio::time::sleep(SSE_COALESCE).await;
        }
    }
}

/// Where a subscriber starts.
struct Start {
    next_id: u64,
    replay: Vec<Seq>,
    resync: Option<serde_json::Value>,
    /// The prompt whose turn is under way where the stream starts.
    turn: Option<String>,
}

/// Live: after the head, ids continuing the session's count. With `Last-Event-ID:
/// n`: the session's events after the `n`th shown one; a cursor past the session's
/// last id (another log's, or a rolled-back one) gets `state_resync_required` and
/// the whole session.
fn start(
    state: &AppState,
    log: &Log,
    session: &str,
    head: Seq,
    resume: Resume,
) -> Result<Start, cmdlog_store::ReadError> {
    let count = state.wire.count_through(log, session, head)?;
    let Resume::After(n) = resume else {
        return Ok(Start {
            next_id: count + 1,
            replay: Vec::new(),
            resync: None,
            turn: state.wire.turn_after(log, session, head)?,
        });
    };
    let (from, resync) = if n > count {
        (
            0,
            Some(json!({
                "reason": "epoch_reset",
                "detail": "cursor_ahead_of_log",
                "lastDeliveredId": n,
                "earliestAvailableId": 1,
            })),
        )
    } else {
        (n, None)
    };
    let after = state.wire.seq_of(log, session, from)?.unwrap_or(0);
    let replay = log
        .stream_seqs(session, after)?
        .into_iter()
        .filter(|&s| s <= head)
        .collect();
    Ok(Start {
        next_id: from + 1,
        replay,
        resync,
        turn: state.wire.turn_after(log, session, after)?,
    })
}

/// The events at `seqs`, in order, until they hold `bytes_max` bytes of records
/// (at least one); the seqs not read yet come back too.
fn read_seqs(
    log: &Log,
    seqs: &[Seq],
    bytes_max: usize,
) -> Result<(Vec<Event>, Vec<Seq>), cmdlog_store::ReadError> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for (i, &seq) in seqs.iter().enumerate() {
        if bytes >= bytes_max {
            return Ok((out, seqs[i..].to_vec()));
        }
        if let Some(r) = log.get(seq)? {
            bytes += r.bytes.len();
            if let Ok(e) = Event::decode(r.seq, &r.bytes) {
                out.push(e);
            }
        }
    }
    Ok((out, Vec::new()))
}

/// Queues the frame of one of the session's events: shown ones with the next id,
/// the rest (for cmdlog's clients) id-less.
fn show(c: &mut Cursor, f: &SharedFrame) {
    let record = c.full.then_some(f.record.as_str());
    match c.numbering.take(f, record) {
        Some(Numbered { id, kind, envelope }) => {
            c.pending.push_back(raw(Some(id), kind, envelope));
            if wire::terminal(kind) {
                c.ended = true;
            }
        }
        None if c.full => {
            let source = Some((f.seq, f.type_name.as_str(), f.at));
            c.pending.push_back(raw(
                None,
                "cmdlog_event",
                envelope(
                    None,
                    "cmdlog_event",
                    &f.record,
                    Envelope {
                        source,
                        record,
                        ..Envelope::default()
                    },
                ),
            ));
        }
        None => {}
    }
}

/// An SSE frame of an envelope: `id:` (when it has one), `event:`, `data:`.
fn raw(id: Option<u64>, kind: &str, envelope: String) -> SseEvent {
    let e = SseEvent::default().event(kind).data(envelope);
    match id {
        Some(id) => e.id(id.to_string()),
        None => e,
    }
}

/// An id-less frame the stream itself makes (`replay_complete`, …).
fn synthetic(kind: &str, data: &serde_json::Value) -> SseEvent {
    raw(
        None,
        kind,
        envelope(None, kind, &data.to_string(), Envelope::default()),
    )
}
