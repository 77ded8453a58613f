//! The team page (`serve --hub`): every log of the hub, machine by machine —
//! the host that pushed it, its sessions and head as its clone stands, or why
//! its clone is not read — each linked to the same pages as this daemon's own
//! log, read-only.

use askama::Template;

use crate::text::{shown, url_piece};
use crate::{PageError, Site};

/// One log of the hub, as the daemon's clone of it stands.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The log's id.
    pub log_id: String,
    /// The host that pushed its last record.
    pub host: String,
    /// Its sessions, when its clone was read.
    pub sessions: Option<usize>,
    /// The seq its clone holds through.
    pub head: u64,
    /// Why its clone is not read, if it is not.
    pub error: Option<String>,
}

struct Row {
    log_id: String,
    host: String,
    href: String,
    sessions: String,
    head: u64,
    error: String,
}

#[derive(Template)]
#[template(path = "team.html")]
struct TeamPage {
    title: String,
    query: String,
    hub: String,
    unreachable: String,
    rows: Vec<Row>,
}

/// The team page of `hub` (as shown), its logs, and why the hub could not
/// be read the last time, if it could not.
pub fn team_page(
    hub: &str,
    machines: &[Machine],
    unreachable: Option<&str>,
) -> Result<String, PageError> {
    TeamPage {
        title: "The team's logs".into(),
        query: String::new(),
        hub: shown(hub),
        unreachable: unreachable.map(shown).unwrap_or_default(),
        rows: machines
            .iter()
            .map(|m| Row {
                log_id: shown(&m.log_id),
                host: shown(&m.host),
                href: Site::mirror(&m.log_id, &m.host).base,
                sessions: m.sessions.map(|n| n.to_string()).unwrap_or_default(),
                head: m.head,
                error: m.error.as_deref().map(shown).unwrap_or_default(),
            })
            .collect(),
    }
    .render()
    .map_err(PageError::from)
}

/// Whether `log_id` can name a mirror (a log id of cmdlog's: hex).
pub fn is_log_id(log_id: &str) -> bool {
    !log_id.is_empty()
        && log_id.len() <= 64
        && log_id.bytes().all(|b| b.is_ascii_hexdigit())
        && url_piece(log_id) == log_id
}
