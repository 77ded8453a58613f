//! `cmdlog drift`: re-expand recorded prompt runs with the template then and today's file.

use std::io::Write;

use clap::Args;
use cmdlog_engine::Event;
use cmdlog_engine::discovery::{DiscoveryConfig, discover};
use cmdlog_replay::DriftStatus;

use super::open::{home, open_existing};
use super::output::print_json;
use super::{CliError, Paths, SETTLED_ERROR, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct DriftArgs {
    /// Only this run (the seq of its command/run)
    run: Option<u64>,
    /// Instead: the slash commands agents expanded themselves (recorded by
    /// `cmdlog hook`), where cmdlog's expansion of the same file disagrees
    #[arg(long, conflicts_with = "run")]
    agents: bool,
}

/// `drift --agents`: the agreement checks the hooks recorded.
fn agents(paths: &Paths, json: bool) -> VerbResult {
    let log = open_existing(paths)?;
    let checks = cmdlog_replay::agent_agreements(&log).map_err(store_failure)?;
    let disagreements: Vec<_> = checks.iter().filter(|c| !c.identical).collect();
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &checks)?;
    } else {
        for c in &disagreements {
            writeln!(
                out,
                "run {} {} ({}, session {}): cmdlog expands {} differently",
                c.run,
                c.command,
                c.agent.as_deref().unwrap_or("agent"),
                c.session.as_deref().unwrap_or("-"),
                c.path
            )?;
            if let Some(diff) = &c.diff {
                write!(out, "{diff}")?;
            }
        }
        writeln!(
            out,
            "checked {} agent expansions: {} identical, {} differ",
            checks.len(),
            checks.len() - disagreements.len(),
            disagreements.len()
        )?;
    }
    Ok(if disagreements.is_empty() {
        0
    } else {
        SETTLED_ERROR
    })
}

pub(crate) fn exec(paths: &Paths, args: DriftArgs, json: bool) -> VerbResult {
    if args.agents {
        return agents(paths, json);
    }
    let today = discover(&DiscoveryConfig::from_env(home()?, &paths.workspace))
        .map_err(|e| CliError::usage(e.to_string()))?;
    let log = open_existing(paths)?;
    if let Some(run) = args.run {
        let is_run = matches!(
            log.get(run)
                .map_err(store_failure)?
                .map(|r| Event::decode(r.seq, &r.bytes)),
            Some(Ok(Event {
                data: cmdlog_engine::EventData::CommandRun(_),
                ..
            }))
        );
        if !is_run {
            return Err(CliError::not_found(format!(
                "seq {run} is not a command/run; `cmdlog audit` lists runs with their seqs"
            )));
        }
    }
    let report = cmdlog_replay::drift(&log, args.run, &today).map_err(store_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &report)?;
    } else {
        for r in &report.runs {
            let verdict = match r.status {
                DriftStatus::Same => "same",
                DriftStatus::Drifted => "template drifted",
                DriftStatus::Regression => {
                    "ENGINE REGRESSION: the recorded template expands differently now"
                }
                DriftStatus::FileGone => "same; the file is gone today",
                DriftStatus::InputNotRecorded => "skipped: input not recorded",
                DriftStatus::TemplateUnavailable => {
                    "skipped: template blob missing or corrupt (run cmdlog verify)"
                }
            };
            writeln!(
                out,
                "run {} /{} (registration {}{}): {verdict}",
                r.run,
                r.command,
                r.registration,
                r.path
                    .as_deref()
                    .map(|p| format!(", {p}"))
                    .unwrap_or_default()
            )?;
            if let Some(diff) = &r.diff {
                write!(out, "{diff}")?;
            }
        }
        writeln!(
            out,
            "checked {} prompt runs: {} same, {} drifted, {} file gone, {} skipped, {} engine regressions",
            report.runs.len(),
            report.count(DriftStatus::Same),
            report.count(DriftStatus::Drifted),
            report.count(DriftStatus::FileGone),
            report.count(DriftStatus::InputNotRecorded)
                + report.count(DriftStatus::TemplateUnavailable),
            report.regressions()
        )?;
    }
    Ok(if report.regressions() > 0 {
        SETTLED_ERROR
    } else {
        0
    })
}
