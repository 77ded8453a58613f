//! The search page: the log's events that match a query (the syntax of
//! `cmdlog search`: words, "phrases", `field:value`), best first, the words
//! that matched marked, each linked to its event and its session.

use std::path::Path;

use askama::Template;
use cmdlog_index::{Hit, IndexError, Refresh};
use cmdlog_store::Log;
use serde::Deserialize;

use crate::limits::SEARCH_HITS;
use crate::text::{shown, time, url_piece};
use crate::{PageError, Site};

/// What the search page was asked for (its query string).
#[derive(Debug, Default, Deserialize)]
pub struct SearchParams {
    /// The query.
    #[serde(default)]
    pub q: String,
}

/// A piece of a hit's snippet: outside text, marked where it matched.
struct Piece {
    text: String,
    matched: bool,
}

struct Row {
    /// The machine a hub's log came from (the team search); empty for the
    /// daemon's own log.
    machine: String,
    seq: u64,
    event_href: String,
    session: String,
    session_href: String,
    kind: String,
    at: String,
    score: String,
    snippet: Vec<Piece>,
}

#[derive(Template)]
#[template(path = "search.html")]
struct SearchPage {
    title: String,
    query: String,
    error: String,
    rows: Vec<Row>,
    total: usize,
    note: String,
    /// Where the form sends the query.
    action: String,
}

fn pieces(hit: &Hit) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut at = 0;
    for r in &hit.highlights {
        if r.start > at {
            out.push(Piece {
                text: shown(&hit.snippet[at..r.start]),
                matched: false,
            });
        }
        out.push(Piece {
            text: shown(&hit.snippet[r.clone()]),
            matched: true,
        });
        at = r.end;
    }
    if at < hit.snippet.len() {
        out.push(Piece {
            text: shown(&hit.snippet[at..]),
            matched: false,
        });
    }
    out
}

fn row(hit: &Hit, site: &Site) -> Row {
    let session = hit.session.as_deref().unwrap_or("");
    Row {
        machine: site.name.clone(),
        seq: hit.seq,
        event_href: format!("{}event/{}", site.base, hit.seq),
        session: shown(session),
        session_href: if session.is_empty() {
            String::new()
        } else {
            format!("{}session/{}", site.base, url_piece(session))
        },
        kind: shown(&hit.kind),
        at: time(hit.at),
        score: format!("{:.2}", hit.score),
        snippet: pieces(hit),
    }
}

/// The search page for `params` over the index beside the log at
/// `log_path` (brought up to the log's head first, unless another process —
/// the daemon's own indexer — is writing it: then as its last commit
/// stands).
pub fn search_page(log_path: &Path, log: &Log, params: &SearchParams) -> Result<String, PageError> {
    let q = params.q.trim();
    let mut page = SearchPage {
        title: "Search".into(),
        query: shown(q),
        error: String::new(),
        rows: Vec::new(),
        total: 0,
        note: String::new(),
        action: "/ui/search".into(),
    };
    if !q.is_empty() {
        let beside = cmdlog_index::beside(log_path, log, Refresh::Sync)?;
        if beside.busy {
            page.note = format!(
                "the index covers the log through seq {} (the daemon is indexing what came after)",
                beside.through
            );
        }
        match beside.index.search(log, q, SEARCH_HITS) {
            Ok((hits, total)) => {
                let site = Site::local();
                page.rows = hits.iter().map(|h| row(h, &site)).collect();
                page.total = total;
            }
            Err(IndexError::Query(e)) => page.error = shown(&e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    page.render().map_err(PageError::from)
}

/// The team search page: `q` over every mirrored log of a hub, the hits of
/// each `(site, log)` merged best first (each log's scores are its own).
pub fn team_search_page(q: &str, logs: &[(Site, &Log)]) -> Result<String, PageError> {
    let q = q.trim();
    let mut page = SearchPage {
        title: "Search the team's logs".into(),
        query: shown(q),
        error: String::new(),
        rows: Vec::new(),
        total: 0,
        note: String::new(),
        action: "/ui/hub/search".into(),
    };
    if q.is_empty() {
        return page.render().map_err(PageError::from);
    }
    if let Err(e) = cmdlog_index::check_query(q) {
        page.error = shown(&e.to_string());
        return page.render().map_err(PageError::from);
    }
    let mut scored = Vec::new();
    let mut skipped = Vec::new();
    for (site, log) in logs {
        let found = cmdlog_index::beside(log.path(), log, Refresh::Sync)
            .and_then(|b| b.index.search(log, q, SEARCH_HITS));
        match found {
            Ok((hits, total)) => {
                page.total += total;
                scored.extend(hits.iter().map(|h| (h.score, row(h, site))));
            }
            Err(e) => skipped.push(format!("{}: {}", site.name, shown(&e.to_string()))),
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    page.rows = scored
        .into_iter()
        .take(SEARCH_HITS)
        .map(|(_, r)| r)
        .collect();
    if !skipped.is_empty() {
        page.note = format!("not searched: {}", skipped.join("; "));
    }
    page.render().map_err(PageError::from)
}
