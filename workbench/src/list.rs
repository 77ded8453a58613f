//! The sessions page: every session of the log at a glance — its agents,
//! span, events, runs, errors, how it ended — filtered by agent, time and
//! status, sorted by a column; a subagent's session under the one that
//! started it.

use askama::Template;
use cmdlog_replay::{SessionSummary, SessionsFold};
use serde::Deserialize;

use crate::limits::LIST_ROWS;
use crate::text::{shown, time, url_piece};
use crate::{PageError, Site};

/// What the sessions page was asked for (its query string).
#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    /// Only sessions an agent of this name took part in.
    #[serde(default)]
    pub agent: String,
    /// `errors`, `interrupted`, `conflicts`, `open` or `ended`; empty: all.
    #[serde(default)]
    pub status: String,
    /// Only sessions active since: `24h`, `7d`, a date or an RFC 3339 time.
    #[serde(default)]
    pub since: String,
    /// `started` (the default), `last`, `events`, `runs` or `errors`.
    #[serde(default)]
    pub sort: String,
    /// Which page of [`LIST_ROWS`] rows (from 1).
    #[serde(default)]
    pub page: Option<usize>,
}

/// The statuses the filter offers, as `(value, label)`.
const STATUSES: [(&str, &str); 6] = [
    ("", "any status"),
    ("errors", "with errors"),
    ("interrupted", "interrupted"),
    ("conflicts", "capture paths disagree"),
    ("open", "not ended"),
    ("ended", "ended"),
];

/// The sorts the page offers, as `(value, label)`.
const SORTS: [(&str, &str); 5] = [
    ("started", "newest first"),
    ("last", "last active"),
    ("events", "most events"),
    ("runs", "most runs"),
    ("errors", "most errors"),
];

struct Row {
    depth: usize,
    id: String,
    href: String,
    agents: String,
    started: String,
    last: String,
    events: u64,
    prompts: u64,
    tool_calls: u64,
    runs: u64,
    errors: u64,
    interrupted: u64,
    conflicts: u64,
    ended: String,
    via: String,
}

struct Choice {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "sessions.html")]
struct SessionsPage {
    title: String,
    rows: Vec<Row>,
    total: usize,
    agents: Vec<Choice>,
    statuses: Vec<Choice>,
    sorts: Vec<Choice>,
    since: String,
    since_error: String,
    query: String,
    kept: usize,
    first_row: usize,
    site: Site,
    earlier: String,
    later: String,
}

fn choices(options: &[(&str, &str)], chosen: &str) -> Vec<Choice> {
    options
        .iter()
        .map(|(value, label)| Choice {
            value: value.to_string(),
            label: label.to_string(),
            selected: *value == chosen,
        })
        .collect()
}

fn keep(s: &SessionSummary, p: &ListParams, since: Option<u64>) -> bool {
    (p.agent.is_empty() || s.agents.contains(&p.agent))
        && since.is_none_or(|t| s.last_at >= t)
        && match p.status.as_str() {
            "errors" => s.errors > 0,
            "interrupted" => s.interrupted > 0,
            "conflicts" => s.conflicts > 0,
            "open" => s.ended.is_none(),
            "ended" => s.ended.is_some(),
            _ => true,
        }
}

fn row(depth: usize, s: &SessionSummary, site: &Site) -> Row {
    Row {
        depth: depth.min(8),
        id: shown(&s.id),
        href: format!("{}session/{}", site.base, url_piece(&s.id)),
        agents: shown(&s.agents.iter().cloned().collect::<Vec<_>>().join(", ")),
        started: time(s.first_at),
        last: time(s.last_at),
        events: s.events,
        prompts: s.prompts,
        tool_calls: s.tool_calls,
        runs: s.runs,
        errors: s.errors,
        interrupted: s.interrupted,
        conflicts: s.conflicts,
        ended: s.ended.as_deref().map(shown).unwrap_or_default(),
        via: s.via.as_deref().map(shown).unwrap_or_default(),
    }
}

/// The sessions page's link to page `to`, with the same filters.
fn page_link(params: &ListParams, to: usize, site: &Site) -> String {
    let mut q = vec![format!("page={to}")];
    for (k, v) in [
        ("agent", &params.agent),
        ("status", &params.status),
        ("since", &params.since),
        ("sort", &params.sort),
    ] {
        if !v.is_empty() {
            q.push(format!("{k}={}", url_piece(v)));
        }
    }
    format!("{}?{}", site.base, q.join("&"))
}

/// The sessions page of a log's sessions (`sessions`, folded through its
/// head by the caller), as `params` ask.
pub fn sessions_page(
    sessions: &SessionsFold,
    params: &ListParams,
    site: &Site,
) -> Result<String, PageError> {
    let all = sessions.list();
    let now = cmdlog_common::time::now_ms();
    let since = (!params.since.trim().is_empty())
        .then(|| cmdlog_common::time::parse_since(params.since.trim(), now));
    let since_error = match since {
        Some(None) => format!(
            "{:?} is not a time: give a span back from now (24h, 7d), a date (2026-11-28) or an RFC 3339 time",
            shown(&params.since)
        ),
        _ => String::new(),
    };
    let mut agents: Vec<&str> = all
        .iter()
        .flat_map(|s| s.agents.iter().map(String::as_str))
        .collect();
    agents.sort_unstable();
    agents.dedup();
    let mut kept: Vec<SessionSummary> = all
        .iter()
        .filter(|s| keep(s, params, since.flatten()))
        .cloned()
        .collect();
    match params.sort.as_str() {
        "last" => kept.sort_by_key(|s| std::cmp::Reverse(s.last_at)),
        "events" => kept.sort_by_key(|s| std::cmp::Reverse(s.events)),
        "runs" => kept.sort_by_key(|s| std::cmp::Reverse(s.runs)),
        "errors" => kept.sort_by_key(|s| std::cmp::Reverse(s.errors)),
        _ => kept.sort_by_key(|s| std::cmp::Reverse(s.first_at)),
    }
    let tree = cmdlog_replay::as_tree(&kept);
    let pages = tree.len().div_ceil(LIST_ROWS).max(1);
    let page = params.page.unwrap_or(1).clamp(1, pages);
    let start = (page - 1) * LIST_ROWS;
    let link = |to: usize| page_link(params, to, site);
    let earlier = if page > 1 {
        link(page - 1)
    } else {
        String::new()
    };
    let later = if page < pages {
        link(page + 1)
    } else {
        String::new()
    };
    let rows = tree
        .into_iter()
        .skip(start)
        .take(LIST_ROWS)
        .map(|(depth, s)| row(depth, s, site))
        .collect();
    let mut agent_choices = vec![Choice {
        value: String::new(),
        label: "any agent".into(),
        selected: params.agent.is_empty(),
    }];
    agent_choices.extend(agents.iter().map(|a| Choice {
        value: shown(a),
        label: shown(a),
        selected: *a == params.agent,
    }));
    SessionsPage {
        title: "Sessions".into(),
        rows,
        total: all.len(),
        agents: agent_choices,
        statuses: choices(&STATUSES, &params.status),
        sorts: choices(&SORTS, &params.sort),
        since: shown(&params.since),
        since_error,
        query: String::new(),
        kept: kept.len(),
        first_row: start + 1,
        site: site.clone(),
        earlier,
        later,
    }
    .render()
    .map_err(PageError::from)
}
