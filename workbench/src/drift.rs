//! The drift page: each recorded prompt run re-expanded from the template
//! recorded then and from today's command file (`cmdlog drift`), with the
//! diff of what the model would get today.

use askama::Template;
use cmdlog_engine::discovery::Discovery;
use cmdlog_replay::DriftStatus;
use cmdlog_store::Log;

use crate::text::{Block, shown};
use crate::{PageError, log_error};

struct Row {
    run: u64,
    command: String,
    registration: u64,
    path: String,
    status: &'static str,
    bad: bool,
    diff: Option<Block>,
}

#[derive(Template)]
#[template(path = "drift.html")]
struct DriftPage {
    title: String,
    query: String,
    only: Option<u64>,
    rows: Vec<Row>,
}

fn said(status: DriftStatus) -> (&'static str, bool) {
    match status {
        DriftStatus::Same => ("today's file expands the same", false),
        DriftStatus::Drifted => ("today's file expands differently (the diff below)", true),
        DriftStatus::Regression => (
            "the recorded template no longer expands as recorded: an engine regression",
            true,
        ),
        DriftStatus::FileGone => ("the command's file is gone today", true),
        DriftStatus::InputNotRecorded => {
            ("its input was not recorded: nothing to re-expand", false)
        }
        DriftStatus::TemplateUnavailable => (
            "its recorded template is missing or damaged: run `cmdlog verify`",
            true,
        ),
    }
}

/// The drift page of `log` against `today` (a fresh discovery pass), for
/// every prompt run or only run `only`.
pub fn drift_page(log: &Log, today: &Discovery, only: Option<u64>) -> Result<String, PageError> {
    let report = cmdlog_replay::drift(log, only, today).map_err(log_error)?;
    let rows = report
        .runs
        .iter()
        .map(|r| {
            let (status, bad) = said(r.status);
            Row {
                run: r.run,
                command: shown(&r.command),
                registration: r.registration,
                path: r.path.as_deref().map(shown).unwrap_or_default(),
                status,
                bad,
                diff: r
                    .diff
                    .as_deref()
                    .map(|d| Block::new("the diff", d, only.is_none())),
            }
        })
        .collect();
    DriftPage {
        title: "Drift".into(),
        query: String::new(),
        only,
        rows,
    }
    .render()
    .map_err(PageError::from)
}
