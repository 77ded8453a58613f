//! The auditor's workbench (issue 42): the pages `cmdlog serve` serves under
//! `/ui/` — every session of a log at a glance, one session's conversation,
//! one event as recorded, the registry as of any seq, and search over the
//! log's index — rendered here,
//! on the server, from typed templates (askama): a template that names a
//! field a page does not have does not compile, and every value is escaped
//! for HTML unless a page marks it safe (none does with outside text).
//!
//! Text from outside (prompts, replies, tool input and output, file names,
//! session ids) is hostile: each page's view holds it with its control and
//! bidirectional characters shown visibly ([`text::shown`]), and the
//! template escapes it. The pages need no script to be read; the daemon sends
//! them with [`CONTENT_SECURITY_POLICY`], which lets none in but the
//! workbench's own.
//!
//! This crate knows nothing of HTTP: the daemon (`cmdlog-server`) calls a
//! page's function with the log and what the request asked, and sends what
//! it returns. The same functions render in-process in `benches/`.

mod assets;
mod blob;
mod drift;
mod event;
mod limits;
mod list;
mod login;
mod proof;
mod registry;
mod search;
mod session;
mod team;
mod text;

pub use assets::{Asset, asset};
pub use blob::{blob_bytes, blob_page};
pub use drift::drift_page;
pub use event::event_page;
pub use limits::{
    BLOB_PARTS_MAX, BLOB_SHOWN_BYTES_MAX, FOLD_LINES, LIST_ROWS, PAGE_EVENTS, PROVEN_MAX,
    SEARCH_HITS,
};
pub use list::{ListParams, sessions_page};
pub use login::{login_page, message_page};
pub use registry::{RegistryParams, registry_page};
pub use search::{SearchParams, search_page, team_search_page};
pub use session::{SessionParams, session_page};
pub use team::{Machine, is_log_id, team_page};

/// What the daemon sends with every workbench page: nothing runs, loads or
/// submits but what the workbench itself serves (no inline script or style,
/// no other origin), and no other site may frame it.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Where a page is and where its links point: this daemon's own log
/// (`/ui/`), or the mirror of a log of a hub (`/ui/hub/<log id>/`), read
/// only, whose pages have no registry, drift, live stream or proof download.
#[derive(Debug, Clone)]
pub struct Site {
    /// The path its pages are under, ending in `/`.
    pub base: String,
    /// Whether it is this daemon's own log.
    pub local: bool,
    /// What it is called: the machine a mirrored log came from (its host and
    /// log id, shown).
    pub name: String,
    /// The machine its sessions ran on (shown), when known.
    pub machine: String,
    /// The workspace whose log it is (shown), when known: each workspace
    /// keeps its own log, so every session of a log ran in it.
    pub workspace: String,
    /// What the witnesses asked for cosigned of the log, checked.
    pub witnessed: Vec<Witnessed>,
}

/// One witness's cosignature of a log's checkpoint, as its badge shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    /// The witness (its key's name, shown).
    pub witness: String,
    /// The size of the checkpoint it cosigned, checked against the log.
    pub size: Option<u64>,
    /// Why there is none that checks, when there is none.
    pub why: String,
}

impl Witnessed {
    /// A witness's outcome: the size it cosigned, or why none checks.
    pub fn new(witness: &str, outcome: Result<u64, impl std::fmt::Display>) -> Witnessed {
        let (size, why) = match outcome {
            Ok(size) => (Some(size), String::new()),
            Err(why) => (None, text::shown(&why.to_string())),
        };
        Witnessed {
            witness: text::shown(witness),
            size,
            why,
        }
    }
}

impl Site {
    /// This daemon's own log.
    pub fn local() -> Site {
        Site {
            base: "/ui/".into(),
            local: true,
            name: String::new(),
            machine: String::new(),
            workspace: String::new(),
            witnessed: Vec::new(),
        }
    }

    /// The same, with what its witnesses cosigned.
    pub fn witnessed(self, witnessed: Vec<Witnessed>) -> Site {
        Site { witnessed, ..self }
    }

    /// This daemon's own log, of `workspace` on `machine`.
    pub fn local_at(machine: &str, workspace: &str) -> Site {
        Site {
            machine: text::shown(machine),
            workspace: text::shown(workspace),
            ..Site::local()
        }
    }

    /// The mirror of the hub's log `log_id`, last pushed from `host`.
    pub fn mirror(log_id: &str, host: &str) -> Site {
        Site {
            base: format!("/ui/hub/{}/", text::url_piece(log_id)),
            local: false,
            name: text::shown(&format!("{host} (log {log_id})")),
            machine: text::shown(host),
            workspace: String::new(),
            witnessed: Vec::new(),
        }
    }
}

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// No session of that id is in the log.
    #[error("no session {id:?} in this log: the sessions page lists them")]
    NoSession {
        /// The id asked for (as shown).
        id: String,
    },
    /// No event at that seq.
    #[error("no event at seq {seq}: the log's head is {head}")]
    NoEvent {
        /// The seq asked for.
        seq: u64,
        /// The log's head.
        head: u64,
    },
    /// No mirrored log of the hub by that id can be shown.
    #[error("the hub's log {log_id:?} is not shown: {why} (the team page lists the logs)")]
    NoMirror {
        /// The id asked for (as shown).
        log_id: String,
        /// Why: none by that id, or its clone failed its checks.
        why: String,
    },
    /// No blob of that hash can be shown.
    #[error("blob {hash}: {why}")]
    NoBlob {
        /// The hash asked for (as shown).
        hash: String,
        /// Why.
        why: String,
    },
    /// The log could not be read.
    #[error("reading the log: {0}")]
    Log(String),
    /// The search index could not be used.
    #[error("{0}")]
    Index(#[from] cmdlog_index::IndexError),
    /// A template failed (a bug: templates are checked when built).
    #[error("rendering the page: {0}")]
    Render(#[from] askama::Error),
}

impl PageError {
    /// Whether the request named something the log does not hold (HTTP 404)
    /// rather than the daemon failing to read it.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            PageError::NoSession { .. }
                | PageError::NoEvent { .. }
                | PageError::NoMirror { .. }
                | PageError::NoBlob { .. }
        )
    }
}

/// The position a page with a slider (`until`) and a seq field (`seq`) was
/// asked for: the typed seq when it differs from `at`, the position the page
/// showed (the reader typed it), else the slider's.
fn chosen_position(until: Option<u64>, seq: Option<u64>, at: Option<u64>) -> Option<u64> {
    seq.filter(|s| at != Some(*s)).or(until)
}

fn log_error(e: impl std::fmt::Display) -> PageError {
    PageError::Log(e.to_string())
}
