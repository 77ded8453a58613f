//! One session's page: the conversation in the order it happened — prompts,
//! the agent's replies and thoughts (folded), tool calls with their input and
//! output (folded past a few lines), permission questions and their answers,
//! command runs, turn ends, and where two capture paths stated a fact
//! differently — each with its seq, linked to the event as recorded.

use std::collections::BTreeSet;

use askama::Template;
use cmdlog_engine::event::Outcome;
use cmdlog_engine::{Event, EventData};
use cmdlog_replay::{Conversation, Entry, SessionsFold};
use cmdlog_store::Log;
use serde::Deserialize;

use crate::limits::PAGE_EVENTS;
use crate::proof::{Proven, prove};
use crate::text::{Block, shown, time, url_piece};
use crate::{PageError, Site, log_error};

/// What a session's page was asked for (its query string).
#[derive(Debug, Default, Deserialize)]
pub struct SessionParams {
    /// Show the entries from this seq on (the page's "later" link).
    #[serde(default)]
    pub from: u64,
    /// Show the session as it stood at this seq (the events up to it).
    #[serde(default)]
    pub until: Option<u64>,
    /// The seq typed in the page's field: it wins over the slider's `until`
    /// when it differs from `at`, the position the page showed.
    #[serde(default)]
    pub seq: Option<u64>,
    /// The position the page showed.
    #[serde(default)]
    pub at: Option<u64>,
}

/// The sessions `id` delegated to, as the fold of the sessions knows them.
fn children_of(known: Option<&SessionsFold>, id: &str, site: &Site) -> Vec<Child> {
    known
        .map(|fold| fold.children(id))
        .unwrap_or_default()
        .into_iter()
        .map(|c| Child {
            id: shown(&c.id),
            href: format!("{}session/{}", site.base, url_piece(&c.id)),
            via: c.via.clone().unwrap_or_default(),
        })
        .collect()
}

/// A session this one delegated to, and the call that started it.
struct Child {
    id: String,
    href: String,
    /// The tool call's id (outside text, compared, never shown raw).
    via: String,
}

struct Item {
    class: &'static str,
    label: String,
    seq: u64,
    blocks: Vec<Block>,
    notes: Vec<String>,
    /// What captured the event (`claude-code hook`, `codex transcript`, …;
    /// `cmdlog` for its own), and every other path that saw the same fact.
    seen_by: String,
    /// When it happened (UTC; the agent's own time for what it reported).
    at: String,
    /// Links to what the entry names: a run's registration.
    links: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "session.html")]
struct SessionPage {
    title: String,
    query: String,
    id: String,
    /// The id as a piece of a URL.
    id_piece: String,
    agents: String,
    sources: String,
    started: String,
    last: String,
    events: usize,
    runs: u64,
    errors: u64,
    conflicts: u64,
    ended: String,
    parent: String,
    parent_href: String,
    items: Vec<Item>,
    /// The events this page shows (1-based, of the session's).
    shown_from: usize,
    shown_to: usize,
    total_events: usize,
    /// Whether the page shows only some of the session's events.
    paged: bool,
    /// The sessions it delegated to (its subagents').
    children: Vec<Child>,
    site: Site,
    earlier: String,
    later: String,
    /// The page's live stream (its last page only): new events refresh it.
    live: String,
    /// The session's seqs, first and last, and the position shown.
    first_seq: u64,
    last_seq: u64,
    position: u64,
    /// Whether the page shows the session as it stood at `position`.
    past: bool,
    proven: Proven,
}

/// The page of session `id` in `log`: the entries of [`PAGE_EVENTS`] of its
/// events from `params.from`, read from the log alone (a long session is
/// never read whole). `known` is the log's sessions when the caller keeps
/// them folded (the daemon does): the session at a glance comes from it, and
/// its subagents' sessions; without it, or for a past position, the session
/// at a glance is made from its events.
pub fn session_page(
    log: &Log,
    id: &str,
    params: &SessionParams,
    known: Option<&SessionsFold>,
    site: &Site,
) -> Result<String, PageError> {
    let mut seqs = log.stream_seqs(id, 0).map_err(log_error)?;
    let (Some(&first_seq), Some(&last_seq)) = (seqs.first(), seqs.last()) else {
        return Err(PageError::NoSession { id: shown(id) });
    };
    let until = crate::chosen_position(params.until, params.seq, params.at)
        .filter(|u| *u < last_seq)
        .map(|u| u.max(first_seq));
    if let Some(until) = until {
        seqs.retain(|s| *s <= until);
    }
    let children = children_of(known, id, site);
    let summary = match known.and_then(|f| f.get(id)).filter(|_| until.is_none()) {
        Some(summary) => summary.clone(),
        None => cmdlog_replay::summary_of(id, &decode(log, &seqs)?),
    };
    let start = seqs.partition_point(|s| *s < params.from);
    let end = (start + PAGE_EVENTS).min(seqs.len());
    let mut events = decode(log, &seqs[start..end])?;
    let mut sources = BTreeSet::new();
    for e in &events {
        sources.extend(e.observed.as_ref().map(|o| o.source.clone()));
    }
    let page_seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    // In the order it happened, the session's creation first (as the report).
    events.sort_by_key(|e| (!matches!(e.data, EventData::SessionCreated(_)), e.time()));
    let mut conversation = Conversation::default();
    for e in &events {
        conversation.apply(e);
    }
    let entries = conversation.entries;
    let href = format!("{}session/{}", site.base, url_piece(id));
    let earlier = match start {
        0 => String::new(),
        _ => format!("{href}?from={}", seqs[start.saturating_sub(PAGE_EVENTS)]),
    };
    let later = match seqs.get(end) {
        Some(next) => format!("{href}?from={next}"),
        None => String::new(),
    };
    let live = match seqs.get(end) {
        None if until.is_none() && site.local => {
            format!("{href}/live?after={}", seqs[seqs.len() - 1])
        }
        _ => String::new(),
    };
    SessionPage {
        title: format!("Session {}", shown(id)),
        query: String::new(),
        id: shown(id),
        id_piece: url_piece(id),
        agents: shown(
            &summary
                .agents
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        ),
        sources: shown(&sources.into_iter().collect::<Vec<_>>().join(", ")),
        started: time(summary.first_at),
        last: time(summary.last_at),
        events: summary.events as usize,
        runs: summary.runs,
        errors: summary.errors,
        conflicts: summary.conflicts,
        ended: summary.ended.as_deref().map(shown).unwrap_or_default(),
        parent: summary.parent.as_deref().map(shown).unwrap_or_default(),
        parent_href: summary
            .parent
            .as_deref()
            .map(|p| format!("{}session/{}", site.base, url_piece(p)))
            .unwrap_or_default(),
        items: items(log, &entries, &events, &children, site),
        children,
        site: site.clone(),
        shown_from: start + 1,
        shown_to: end,
        total_events: seqs.len(),
        paged: end - start < seqs.len(),
        earlier,
        later,
        live,
        first_seq,
        last_seq,
        position: until.unwrap_or(last_seq),
        past: until.is_some(),
        proven: prove(log, &page_seqs),
    }
    .render()
    .map_err(PageError::from)
}

fn seq_of(entry: &Entry) -> u64 {
    match entry {
        Entry::Prompt { seq, .. }
        | Entry::Message { seq, .. }
        | Entry::Thought { seq, .. }
        | Entry::ToolCall { seq, .. }
        | Entry::Permission { seq, .. }
        | Entry::Setting { seq, .. }
        | Entry::Run { seq, .. }
        | Entry::Conflict { seq, .. }
        | Entry::TurnEnd { seq, .. } => *seq,
    }
}

type Parts = (&'static str, String, Vec<Block>, Vec<String>);

fn tool_call(
    id: &str,
    title: &str,
    status: &str,
    input: Option<&serde_json::Value>,
    output: Option<&str>,
) -> Parts {
    let mut blocks = Vec::new();
    if let Some(input) = input {
        let text = match input {
            serde_json::Value::String(s) => s.clone(),
            v => serde_json::to_string_pretty(v).unwrap_or_default(),
        };
        blocks.push(Block::new("input", &text, false));
    }
    if let Some(output) = output {
        blocks.extend(output_blocks(output));
    }
    (
        if status == "failed" {
            "tool failed"
        } else {
            "tool"
        },
        format!("tool call · {} · {}", shown(title), shown(status)),
        blocks,
        vec![format!("call {}", shown(id))],
    )
}

/// A tool call's output as a reader wants it: a shell's result (an object
/// with `stdout`, as Claude Code's hooks report it) as its streams' text, any
/// other JSON indented, text as it is.
fn output_blocks(output: &str) -> Vec<Block> {
    let parsed: Option<serde_json::Value> = output
        .trim_start()
        .starts_with(['{', '['])
        .then(|| serde_json::from_str(output).ok())
        .flatten();
    let Some(value) = parsed else {
        return vec![Block::new("output", output, false)];
    };
    let stream = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
    match (stream("stdout"), stream("stderr")) {
        (Some(out), err) => {
            let mut blocks = vec![Block::new("output", out, false)];
            if let Some(err) = err.filter(|e| !e.is_empty()) {
                blocks.push(Block::new("stderr", err, false));
            }
            blocks
        }
        _ => vec![Block::new(
            "output",
            &serde_json::to_string_pretty(&value).unwrap_or_default(),
            false,
        )],
    }
}

fn permission(entry: &Entry) -> Parts {
    let Entry::Permission {
        about,
        options,
        answer,
        ..
    } = entry
    else {
        unreachable!("called for a permission entry")
    };
    (
        if answer.is_none() {
            "permission open"
        } else {
            "permission"
        },
        "permission asked".into(),
        vec![],
        vec![
            format!(
                "about: {}",
                shown(about.as_deref().unwrap_or("(no tool call named)"))
            ),
            format!("options: {}", shown(&options.join(", "))),
            shown(&cmdlog_replay::permission_answer(entry)),
        ],
    )
}

/// The page's items: each entry, with what captured it and, for a run, its
/// registration.
fn items(
    log: &Log,
    entries: &[Entry],
    events: &[Event],
    children: &[Child],
    site: &Site,
) -> Vec<Item> {
    entries
        .iter()
        .map(|e| {
            let mut it = item(e);
            if let Entry::ToolCall { id, .. } = e {
                for c in children
                    .iter()
                    .filter(|c| !c.via.is_empty() && c.via == *id)
                {
                    it.links
                        .push((format!("its subagent's session {}", c.id), c.href.clone()));
                }
            }
            it.seen_by = shown(&seen_by(e, events).join(", "));
            if let Some(event) = events.iter().find(|ev| ev.seq == it.seq) {
                it.at = time(event.time());
                if let EventData::CommandRun(run) = &event.data {
                    it.links = registration_links(log, run.registration, site);
                    if site.local {
                        it.links.push((
                            "drift against today's file".into(),
                            format!("/ui/drift?run={}", event.seq),
                        ));
                    }
                }
            }
            it
        })
        .collect()
}

/// The capture paths that saw an entry, among the page's events: what
/// recorded its event (and, for a tool call, each update of the call), and
/// each path that stated the same fact again (`agent/observed` of one of
/// them). `cmdlog` for what cmdlog itself recorded.
fn seen_by(entry: &Entry, events: &[Event]) -> Vec<String> {
    let seq = seq_of(entry);
    let call = match entry {
        Entry::ToolCall { id, .. } if !id.is_empty() => Some(id.as_str()),
        _ => None,
    };
    let of_entry = |e: &Event| {
        e.seq == seq
            || matches!((&e.data, call), (EventData::SessionUpdate(u), Some(id)) if u["toolCallId"] == id)
    };
    let seqs: BTreeSet<u64> = events
        .iter()
        .filter(|e| of_entry(e))
        .map(|e| e.seq)
        .collect();
    let source = |e: &Event| {
        e.observed
            .as_ref()
            .map_or("cmdlog", |o| o.source.as_str())
            .to_string()
    };
    let mut paths: Vec<String> = Vec::new();
    for e in events {
        let counts = seqs.contains(&e.seq)
            || matches!(&e.data, EventData::AgentObserved(o) if seqs.contains(&o.of));
        if counts && !paths.contains(&source(e)) {
            paths.push(source(e));
        }
    }
    paths
}

/// How a command run settled, as its entry says it.
fn settled(outcome: Option<&Outcome>) -> String {
    match outcome {
        None => "not settled".to_string(),
        Some(Outcome::Success {
            prompt: Some(_), ..
        }) => "expanded (above: what the model received)".to_string(),
        Some(Outcome::Success { text: Some(t), .. }) => format!("answered: {}", shown(t)),
        Some(Outcome::Success { .. }) => "done".to_string(),
        Some(Outcome::Error { text, .. }) => format!("error: {}", shown(text)),
    }
}

fn item(entry: &Entry) -> Item {
    let seq = seq_of(entry);
    let (class, label, blocks, notes): Parts = match entry {
        Entry::Prompt { text, .. } => (
            "prompt",
            "prompt".to_string(),
            vec![Block::new("", text, false)],
            vec![],
        ),
        Entry::Message { text, .. } => (
            "reply",
            "agent".into(),
            vec![Block::new("", text, false)],
            vec![],
        ),
        Entry::Thought { text, .. } => (
            "thought",
            "agent's thought".into(),
            vec![Block::new("thought", text, true)],
            vec![],
        ),
        Entry::ToolCall {
            id,
            title,
            status,
            input,
            output,
            ..
        } => tool_call(id, title, status, input.as_ref(), output.as_deref()),
        Entry::Permission { .. } => permission(entry),
        Entry::Setting { what, refused, .. } => (
            if refused.is_some() {
                "setting failed"
            } else {
                "setting"
            },
            format!("{what} change"),
            vec![],
            vec![shown(&cmdlog_replay::setting_text(entry))],
        ),
        Entry::Run { line, outcome, .. } => {
            let mut blocks = vec![Block::new("", line, false)];
            if let Some(Outcome::Success {
                prompt: Some(expansion),
                ..
            }) = outcome
            {
                blocks.push(Block::new(
                    "the expansion the model received",
                    expansion,
                    true,
                ));
            }
            (
                "run",
                "command run".into(),
                blocks,
                vec![settled(outcome.as_ref())],
            )
        }
        Entry::Conflict {
            of,
            source,
            fact,
            fields,
            ..
        } => (
            "conflict",
            format!(
                "capture paths disagree · {} states {} differently from seq {of}",
                shown(source),
                shown(fact)
            ),
            fields
                .iter()
                .map(|(k, v)| Block::new(k, v, false))
                .collect(),
            vec![],
        ),
        Entry::TurnEnd { how, error, .. } => (
            if *error { "end failed" } else { "end" },
            if *error { "turn failed" } else { "turn ended" }.into(),
            vec![],
            vec![shown(how)],
        ),
    };
    Item {
        class,
        label,
        seq,
        blocks,
        notes,
        seen_by: String::new(),
        at: String::new(),
        links: Vec::new(),
    }
}

/// The events at `seqs`, decoded.
fn decode(log: &Log, seqs: &[u64]) -> Result<Vec<Event>, PageError> {
    let records = log.records_at(seqs).map_err(log_error)?;
    records
        .iter()
        .map(|r| Event::decode(r.seq, &r.bytes).map_err(log_error))
        .collect()
}

/// A run's registration, as links: the event that registered the command,
/// and the command's file when it came from one.
fn registration_links(log: &Log, registration: u64, site: &Site) -> Vec<(String, String)> {
    let mut links = vec![(
        format!("registered at seq {registration}"),
        format!("{}event/{registration}", site.base),
    )];
    let registered = log
        .get(registration)
        .ok()
        .flatten()
        .and_then(|r| Event::decode(r.seq, &r.bytes).ok());
    if let Some(Event {
        data: EventData::Registered(r),
        ..
    }) = registered
        && let Some(origin) = &r.origin
        && site.local
    {
        links.push((
            format!("from {}", shown(&origin.path)),
            format!("/ui/registry?until={registration}"),
        ));
    }
    links
}
