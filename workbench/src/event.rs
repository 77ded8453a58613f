//! One event's page: the event as the log holds it (`cmdlog show SEQ`), its
//! place in the log and its session.

use askama::Template;
use cmdlog_engine::Event;
use cmdlog_store::Log;

use crate::proof::{Proven, prove};
use crate::text::{Block, shown, time, url_piece};
use crate::{PageError, Site, log_error};

#[derive(Template)]
#[template(path = "event.html")]
struct EventPage {
    title: String,
    query: String,
    seq: u64,
    kind: String,
    at: String,
    session: String,
    session_href: String,
    agent: String,
    source: String,
    body: Block,
    earlier: String,
    later: String,
    proven: Proven,
    site: Site,
}

/// The page of the event at `seq` in `log`.
pub fn event_page(log: &Log, seq: u64, site: &Site) -> Result<String, PageError> {
    let head = log.head().seq;
    let record = log
        .get(seq)
        .map_err(log_error)?
        .ok_or(PageError::NoEvent { seq, head })?;
    let event = Event::decode(record.seq, &record.bytes).map_err(log_error)?;
    let json = serde_json::to_string_pretty(&event.to_json()).unwrap_or_default();
    let session = event.session.as_deref().unwrap_or("");
    EventPage {
        title: format!("Event {seq}"),
        query: String::new(),
        seq,
        kind: shown(event.data.type_name()),
        at: time(event.time()),
        session: shown(session),
        session_href: if session.is_empty() {
            String::new()
        } else {
            format!("{}session/{}", site.base, url_piece(session))
        },
        agent: shown(event.agent.as_deref().unwrap_or("")),
        source: shown(
            event
                .observed
                .as_ref()
                .map_or("cmdlog", |o| o.source.as_str()),
        ),
        body: Block::open("as recorded", &json),
        earlier: if seq > 1 {
            format!("{}event/{}", site.base, seq - 1)
        } else {
            String::new()
        },
        proven: prove(log, &[seq]),
        site: site.clone(),
        later: if seq < head {
            format!("{}event/{}", site.base, seq + 1)
        } else {
            String::new()
        },
    }
    .render()
    .map_err(PageError::from)
}
