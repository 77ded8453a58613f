//! The SSE event stream of a session, read from the durable log.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use cmdlog_engine::Mode;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;

use super::sse::{self, Resume, resume_from};
use super::state::{ApiError, AppState};

/// Bytes of frames one SSE read takes from the log before sending them (at least
/// one frame): a subscriber that does not read holds no more than this.
const SSE_BATCH_BYTES_MAX: usize = 256 * 1024;
/// Most events one SSE read takes from the log before sending them.
const SSE_BATCH_EVENTS_MAX: u64 = 1000;
/// How long a woken subscriber waits for more commits before reading.
const SSE_COALESCE: Duration = Duration::from_millis(10);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EventsQuery {
    last_event_id: Option<String>,
}

/// One subscriber: a cursor over the log and at most one batch of frames in hand.
pub(super) struct Cursor {
    seq: u64,
    pending: std::collections::VecDeque<SseEvent>,
    head: tokio::sync::watch::Receiver<u64>,
    greeted: bool,
}

pub(super) async fn events(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let session = state.session(&id)?;
    // A header that is not even ASCII is as wrong as one that is not a number.
    let header = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "Last-Event-ID is not an event id (it is not ASCII): send the decimal seq of the last event you saw (0 for the whole history)",
            )
        })?),
    };
    let resume = resume_from(header, query.last_event_id.as_deref())
        .map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, m))?;
    let log = Arc::clone(state.engine()?.log());
    let start = match resume {
        Resume::Live => log.head().seq,
        Resume::After(n) => n,
    };
    let agent = session.agent.unwrap_or_else(|| "main".into());
    let mode = session.mode.unwrap_or(Mode::Acp);
    let created = session.created.unwrap_or(0);
    let cursor = Cursor {
        seq: start,
        pending: Default::default(),
        head: log.subscribe(),
        greeted: false,
    };
    // Between reads the stream holds no engine or log: a store reopened after an
    // error ends it (its head channel closes) and the client resumes from the log.
    drop(log);
    let frames = Arc::clone(&state.frames);
    let stream = futures_util::stream::unfold(cursor, move |mut c| {
        let (state, id, agent, frames) = (
            Arc::clone(&state),
            id.clone(),
            agent.clone(),
            Arc::clone(&frames),
        );
        async move {
            loop {
                if !c.greeted {
                    c.greeted = true;
                    let hello = SseEvent::default()
                        .comment("cmdlog events")
                        .retry(Duration::from_secs(3));
                    return Some((Ok(hello), c));
                }
                if let Some(frame) = c.pending.pop_front() {
                    return Some((Ok(frame), c));
                }
                let head = *c.head.borrow_and_update();
                if head > c.seq {
                    let engine = state.engine().ok()?;
                    let log = Arc::clone(engine.log());
                    let (from, to) = (c.seq + 1, head.min(c.seq + SSE_BATCH_EVENTS_MAX));
                    let (reader, cache) = (Arc::clone(&log), Arc::clone(&frames));
                    let (window, through) = tokio::task::spawn_blocking(move || {
                        cache.window(&reader, from, to, SSE_BATCH_BYTES_MAX)
                    })
                    .await
                    .ok()?
                    .ok()?;
                    // Registry changes before the session existed are not its news, and
                    // several in one batch collapse into the last (the list is current).
                    let last_registry = window
                        .iter()
                        .rev()
                        .find(|f| f.registry && f.seq > created)
                        .map(|f| f.seq);
                    for frame in window {
                        if frame.registry {
                            if Some(frame.seq) != last_registry {
                                continue;
                            }
                            let data = json!({
                                "id": frame.seq,
                                "v": 1,
                                "type": "available_commands_update",
                                "session": id,
                                "data": {"mode": mode, "availableCommands": sse::available_commands(&engine.list(&agent, mode))},
                            });
                            c.pending.push_back(
                                SseEvent::default()
                                    .id(frame.seq.to_string())
                                    .event("available_commands_update")
                                    .data(data.to_string()),
                            );
                        } else if frame.session.as_deref() == Some(id.as_str()) {
                            c.pending.push_back(
                                SseEvent::default()
                                    .id(frame.seq.to_string())
                                    .event(frame.name.as_str())
                                    .data(frame.data.as_str()),
                            );
                        }
                    }
                    c.seq = through;
                    continue;
                }
                if c.head.changed().await.is_err() {
                    return None;
                }
                // Let a burst of commits land, so one read serves many of them: under
                // load each subscriber reads batches instead of one event per commit.
                tokio::time::sleep(SSE_COALESCE).await;
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(Duration::from_secs(15))
            .text("heartbeat"),
    ))
}
