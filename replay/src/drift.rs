//! The drift check (DESIGN §7): replay-based debugging like Temporal's replayer.
//! Every recorded prompt run is re-expanded twice: with the template recorded at
//! the time, which must give the recorded prompt exactly (anything else is an
//! engine regression), and with today's file, which shows template drift.

use std::collections::HashMap;

use serde::Serialize;

use cmdlog_engine::attachments::{AdmittedBlock, with_attachments};
use cmdlog_engine::discovery::Discovery;
use cmdlog_engine::event::{AttachmentAdmitted, CommandRun, Outcome, Registered};
use cmdlog_engine::expand::{ExpandInput, Version, expand, parse_version};
use cmdlog_engine::{CommandSpec, Dialect, Event, EventData, Seq};
use cmdlog_store::{BlobHash, Log};

use crate::audit::AuditError;

/// What the check found for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// The recorded template re-expands to the recorded prompt, and today's file is the same.
    Same,
    /// The recorded template re-expands identically; today's file expands differently.
    Drifted,
    /// The recorded template no longer expands to the recorded prompt: an engine regression.
    Regression,
    /// The recorded template re-expands identically; the file is gone today.
    FileGone,
    /// The run's input was not recorded (`record_input: false`): nothing to re-expand.
    InputNotRecorded,
    /// The recorded template blob is missing or corrupt: run `cmdlog verify`.
    TemplateUnavailable,
}

/// One prompt run, re-expanded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunDrift {
    /// Seq of the run.
    pub run: Seq,
    /// The command.
    pub command: String,
    /// The registration it ran.
    pub registration: Seq,
    /// The file it came from, for file commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The verdict.
    pub status: DriftStatus,
    /// For a regression: a unified diff from the recorded prompt to today's engine's
    /// expansion of the recorded template. For drift: from the expansion then to the
    /// expansion with today's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The drift check over a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftReport {
    /// Every prompt run checked, in seq order.
    pub runs: Vec<RunDrift>,
}

impl DriftReport {
    /// Runs whose recorded template no longer expands as recorded.
    pub fn regressions(&self) -> usize {
        self.count(DriftStatus::Regression)
    }

    /// Runs with a given status.
    pub fn count(&self, status: DriftStatus) -> usize {
        self.runs.iter().filter(|r| r.status == status).count()
    }
}

fn unified(then: &str, now: &str, then_label: &str, now_label: &str) -> String {
    // Both sides end with a newline so the diff shows content, not line endings.
    let (then, now) = (
        format!("{}\n", then.trim_end_matches('\n')),
        format!("{}\n", now.trim_end_matches('\n')),
    );
    similar::TextDiff::from_lines(&then, &now)
        .unified_diff()
        .context_radius(3)
        .header(then_label, now_label)
        .to_string()
}

/// `command`'s expansion of `raw_input` as a run would record it (an expansion the
/// agent refuses shows as its error).
fn expansion(
    template: &str,
    command: &CommandSpec,
    raw_input: &str,
    blocks: &[AdmittedBlock],
    release: Option<Version>,
) -> String {
    let mut prompt = match expand(
        template,
        command.dialect.unwrap_or(Dialect::Markdown),
        &ExpandInput::new(command, raw_input).at_release(release),
    ) {
        Ok(p) => p,
        Err(e) => return format!("(refused) {e}"),
    };
    with_attachments(&mut prompt, blocks);
    prompt
}

/// Checks every recorded prompt run (or only `only`) against the template recorded
/// then and against `today` (a fresh discovery pass).
pub fn drift(log: &Log, only: Option<Seq>, today: &Discovery) -> Result<DriftReport, AuditError> {
    let mut registrations: HashMap<Seq, Registered> = HashMap::new();
    let mut admissions: HashMap<Seq, AttachmentAdmitted> = HashMap::new();
    let mut runs: HashMap<Seq, CommandRun> = HashMap::new();
    let mut done: Vec<(Seq, String)> = Vec::new();
    let mut failure = None;
    log.scan(1, log.head().seq, |record| {
        let event = match Event::decode(record.seq, &record.bytes) {
            Ok(e) => e,
            Err(e) => {
                failure = Some(e);
                return false;
            }
        };
        match event.data {
            EventData::Registered(r) if r.template.is_some() => {
                registrations.insert(event.seq, *r);
            }
            EventData::AttachmentAdmitted(a) => {
                admissions.insert(event.seq, a);
            }
            EventData::CommandRun(r)
                if registrations.contains_key(&r.registration)
                    && only.is_none_or(|o| o == event.seq) =>
            {
                runs.insert(event.seq, r);
            }
            EventData::CommandDone(d) if runs.contains_key(&d.run) => {
                if let Outcome::Success {
                    prompt: Some(p), ..
                } = d.outcome
                {
                    done.push((d.run, p));
                }
            }
            _ => {}
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    let mut report = DriftReport { runs: Vec::new() };
    for (run_seq, recorded) in done {
        let run = &runs[&run_seq];
        let registered = &registrations[&run.registration];
        let path = registered.origin.as_ref().map(|o| o.path.clone());
        let mut row = RunDrift {
            run: run_seq,
            command: run.name.clone(),
            registration: run.registration,
            path: path.clone(),
            status: DriftStatus::Same,
            diff: None,
        };
        let Some(raw_input) = &run.raw_input else {
            row.status = DriftStatus::InputNotRecorded;
            report.runs.push(row);
            continue;
        };
        let template = registered
            .template
            .as_deref()
            .and_then(BlobHash::from_hex)
            .and_then(|h| log.get_blob(&h).ok().flatten());
        let Some(template) = template else {
            row.status = DriftStatus::TemplateUnavailable;
            report.runs.push(row);
            continue;
        };
        let template = String::from_utf8_lossy(&template);
        let blocks: Vec<AdmittedBlock> = run
            .attachments
            .iter()
            .filter_map(|seq| {
                let a = admissions.get(seq)?;
                Some(AdmittedBlock {
                    seq: *seq,
                    kind: a.kind,
                    name: a.name.clone(),
                    media_type: a.media_type.clone(),
                    size: a.size,
                    blob: BlobHash::from_hex(&a.blob)?,
                })
            })
            .collect();
        // By the rules of the agent release the run was expanded by.
        let release = run
            .release
            .as_ref()
            .and_then(|r| r.version.as_deref())
            .and_then(parse_version);
        let then = expansion(&template, &registered.command, raw_input, &blocks, release);
        if then != recorded {
            row.status = DriftStatus::Regression;
            row.diff = Some(unified(
                &recorded,
                &then,
                &format!("recorded prompt (run {run_seq})"),
                "this engine's expansion of the recorded template",
            ));
            report.runs.push(row);
            continue;
        }
        // Today's command from the same file, as today's engine reads it (its
        // dialect may have changed with the engine: that is drift too, never a
        // regression of the run as recorded).
        let current = path.as_ref().and_then(|p| {
            today
                .commands
                .iter()
                .filter(|d| d.origin.path == *p)
                .find(|d| d.command.name == registered.command.name)
                .or_else(|| today.commands.iter().find(|d| d.origin.path == *p))
        });
        match (path.as_ref(), current) {
            (None, _) => {}
            (Some(_), None) => row.status = DriftStatus::FileGone,
            (Some(p), Some(d)) => {
                let now = expansion(&d.template, &d.command, raw_input, &blocks, release);
                if now != then {
                    row.status = DriftStatus::Drifted;
                    row.diff = Some(unified(
                        &then,
                        &now,
                        &format!("then (run {run_seq})"),
                        &format!("today ({p})"),
                    ));
                }
            }
        }
        report.runs.push(row);
    }
    report.runs.sort_by_key(|r| r.run);
    Ok(report)
}

/// One slash command an agent expanded itself, with cmdlog's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentAgreement {
    /// Seq of the run.
    pub run: Seq,
    /// Its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The command line as the agent ran it.
    pub command: String,
    /// The command file cmdlog resolved it to.
    pub path: String,
    /// Whether cmdlog's expansion is the agent's.
    pub identical: bool,
    /// When not: a unified diff from the agent's expansion to cmdlog's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Every agreement check recorded in the log (`command/done` of runs the agents
/// did, with `agent_check`), in seq order.
pub fn agent_agreements(log: &Log) -> Result<Vec<AgentAgreement>, AuditError> {
    let mut runs: HashMap<Seq, (Option<String>, Option<String>, String)> = HashMap::new();
    let mut out = Vec::new();
    crate::audit::each_event(
        log,
        None,
        |event| match event.data {
            EventData::CommandRun(r)
                if r.source == cmdlog_engine::event::InvocationSource::Agent =>
            {
                let line = format!("/{}{}", r.name, r.raw_input.as_deref().unwrap_or(""));
                runs.insert(event.seq, (event.session, event.agent, line));
            }
            EventData::CommandDone(d) => {
                if let (Some(check), Some((session, agent, command))) =
                    (&d.agent_check, runs.remove(&d.run))
                {
                    let theirs = match &d.outcome {
                        Outcome::Success { prompt, .. } => prompt.clone().unwrap_or_default(),
                        Outcome::Error { text, .. } => text.clone(),
                    };
                    out.push(AgentAgreement {
                        run: d.run,
                        session,
                        agent: agent.clone(),
                        command,
                        path: check.path.clone(),
                        identical: check.identical,
                        diff: check.cmdlog_prompt.as_deref().map(|ours| {
                            unified(
                                &theirs,
                                ours,
                                &format!("{} (run {})", agent.as_deref().unwrap_or("agent"), d.run),
                                &format!("cmdlog ({})", check.path),
                            )
                        }),
                    });
                }
            }
            _ => {}
        },
        |_| {},
    )?;
    Ok(out)
}
