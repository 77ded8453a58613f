//! The registry page: the commands one agent in one mode could run as of any
//! seq (`cmdlog replay --until`), winners and what they shadow and why —
//! replayed from the log, so an auditor sees what a run could have resolved
//! to when it ran.

use askama::Template;
use cmdlog_engine::Mode;
use cmdlog_replay::{CommandEntry, RegistryView};
use cmdlog_store::Log;
use serde::Deserialize;

use crate::text::shown;
use crate::{PageError, log_error};

/// What the registry page was asked for (its query string).
#[derive(Debug, Default, Deserialize)]
pub struct RegistryParams {
    /// As of this seq; the log's head when absent or past it.
    #[serde(default)]
    pub until: Option<u64>,
    /// The seq typed in the page's field: it wins over the slider's `until`
    /// when it differs from `at`, the position the page showed.
    #[serde(default)]
    pub seq: Option<u64>,
    /// The position the page showed.
    #[serde(default)]
    pub at: Option<u64>,
    /// Whose view (`main` when empty, as `cmdlog replay`).
    #[serde(default)]
    pub agent: String,
    /// `interactive`, `non_interactive` (when empty) or `acp`.
    #[serde(default)]
    pub mode: String,
}

struct Row {
    name: String,
    active: bool,
    shadowed: String,
    registration: u64,
    provider: String,
    scope: String,
    source: String,
    kind: String,
    modes: String,
    description: String,
    path: String,
}

struct ModeChoice {
    value: &'static str,
    selected: bool,
}

#[derive(Template)]
#[template(path = "registry.html")]
struct RegistryPage {
    title: String,
    query: String,
    until: u64,
    head: u64,
    agent: String,
    modes: Vec<ModeChoice>,
    rows: Vec<Row>,
    elsewhere: Vec<Row>,
    error: String,
}

fn row(c: &CommandEntry) -> Row {
    Row {
        name: shown(&c.name),
        active: c.status == "active",
        shadowed: match (c.shadowed_by, &c.why) {
            (Some(by), Some(why)) => format!("shadowed by seq {by}: {}", shown(why)),
            (Some(by), None) => format!("shadowed by seq {by}"),
            _ => String::new(),
        },
        registration: c.registration,
        provider: shown(&format!("{} ({})", c.provider, c.priority)),
        scope: shown(&c.scope),
        source: shown(&c.source_label),
        kind: c
            .command_type
            .map(|t| shown(&format!("{t:?}").to_lowercase()))
            .unwrap_or_default(),
        modes: c
            .modes
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        description: shown(&c.description),
        path: c.path.as_deref().map(shown).unwrap_or_default(),
    }
}

/// The registry page of `log`, as `params` ask.
pub fn registry_page(log: &Log, params: &RegistryParams) -> Result<String, PageError> {
    let head = log.head().seq;
    let until = crate::chosen_position(params.until, params.seq, params.at)
        .unwrap_or(head)
        .min(head);
    let agent = match params.agent.trim() {
        "" => "main",
        a => a,
    };
    let (mode, error) = match params.mode.as_str() {
        "" => (Mode::NonInteractive, String::new()),
        m => match Mode::parse(m) {
            Some(mode) => (mode, String::new()),
            None => (
                Mode::NonInteractive,
                format!(
                    "{:?} is not a mode: interactive, non_interactive or acp",
                    shown(m)
                ),
            ),
        },
    };
    let state = cmdlog_replay::state_at(log, until).map_err(log_error)?;
    let view = RegistryView::new(&state, agent, mode);
    RegistryPage {
        title: format!("Registry as of seq {until}"),
        query: String::new(),
        until,
        head,
        agent: shown(agent),
        modes: Mode::ALL
            .iter()
            .map(|m| ModeChoice {
                value: m.as_str(),
                selected: *m == mode,
            })
            .collect(),
        rows: view.commands.iter().map(row).collect(),
        elsewhere: view.elsewhere.iter().map(row).collect(),
        error,
    }
    .render()
    .map_err(PageError::from)
}
