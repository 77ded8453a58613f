//! The audit index: a timeline of runs, one event in its context (sessions at
//! a glance: `sessions.rs`). Reads only the log; no clock, no filesystem.

use std::collections::HashMap;

use serde::Serialize;

use cmdlog_engine::event::{CommandRun, DecodeError, Outcome};
use cmdlog_engine::{Event, EventData, Mode, Seq};
use cmdlog_store::{BlobHash, Log, ReadError};

/// Reading for the audit failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// Reading the log failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A record is not a valid event.
    #[error("{0}; run `cmdlog verify`")]
    Decode(#[from] DecodeError),
}

/// Scans `from..=until` (or one session's events) and calls `f` with each event.
pub(crate) fn each_event(
    log: &Log,
    session: Option<&str>,
    mut f: impl FnMut(Event),
    mut progress: impl FnMut(Seq),
) -> Result<(), AuditError> {
    let mut failure = None;
    let mut visit = |seq: Seq, bytes: &[u8]| match Event::decode(seq, bytes) {
        Ok(e) => {
            progress(seq);
            f(e);
            true
        }
        Err(e) => {
            failure = Some(e);
            false
        }
    };
    match session {
        Some(s) => {
            for record in log.stream(s, 0)? {
                if !visit(record.seq, &record.bytes) {
                    break;
                }
            }
        }
        None => log.scan(1, log.head().seq, |r| visit(r.seq, &r.bytes))?,
    }
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Which runs an audit shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this session (read through the session index).
    pub session: Option<String>,
    /// Only runs at or after this time, unix ms.
    pub since_ms: Option<u64>,
    /// Only this command.
    pub command: Option<String>,
    /// Only runs that settled as errors.
    pub errors_only: bool,
}

/// One run in the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRow {
    /// Seq of the run (the command id).
    pub seq: Seq,
    /// When it started, unix ms (the agent's time for a run an agent reported).
    pub at: u64,
    /// Its session.
    pub session: Option<String>,
    /// Its agent.
    pub agent: Option<String>,
    /// Its mode.
    pub mode: Mode,
    /// The command.
    pub command: String,
    /// The registration that ran.
    pub registration: Seq,
    /// The raw input; `None` when the command does not record it.
    pub input: Option<String>,
    /// Names of the admitted attachments.
    pub attachments: Vec<String>,
    /// How it settled; `None` while it has no done.
    pub outcome: Option<Outcome>,
    /// Seq of its done.
    pub done: Option<Seq>,
    /// Handler time.
    pub elapsed_us: Option<u64>,
    /// Injections in its expansion that its agent would run or read and cmdlog did not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<String>,
}

impl AuditRow {
    /// Whether it settled as an error.
    pub fn is_error(&self) -> bool {
        self.outcome.as_ref().is_some_and(Outcome::is_error)
    }
}

/// Runs folded into audit rows, one event at a time in seq order: each run with
/// its attachments' names, settled by its done. One fold per log. Rows that
/// will not change can be taken as it goes (`take_settled`), so a fold holds
/// the runs still open rather than the whole log.
#[derive(Debug, Default)]
pub struct AuditFold {
    /// Rows not yet taken, by their run's seq.
    rows: std::collections::BTreeMap<Seq, AuditRow>,
    attachment_names: HashMap<Seq, String>,
}

impl AuditFold {
    /// Folds `e`; a run is kept when `keep` says so (its done then settles it).
    pub fn add(&mut self, e: &Event, keep: impl FnOnce(&Event, &CommandRun) -> bool) {
        match &e.data {
            EventData::AttachmentAdmitted(a) => {
                self.attachment_names.insert(e.seq, a.name.clone());
            }
            EventData::CommandRun(run) => {
                let attachments: Vec<String> = run
                    .attachments
                    .iter()
                    .map(|s| {
                        self.attachment_names
                            .remove(s)
                            .unwrap_or_else(|| format!("seq {s}"))
                    })
                    .collect();
                if !keep(e, run) {
                    return;
                }
                let row = AuditRow {
                    seq: e.seq,
                    at: e.time(),
                    session: e.session.clone(),
                    agent: e.agent.clone(),
                    mode: run.mode,
                    command: run.name.clone(),
                    registration: run.registration,
                    input: run.raw_input.clone(),
                    attachments,
                    outcome: None,
                    done: None,
                    elapsed_us: None,
                    injections: run.injections.clone(),
                };
                self.rows.insert(e.seq, row);
            }
            EventData::CommandDone(done) => {
                if let Some(row) = self.rows.get_mut(&done.run)
                    && row.done.is_none()
                {
                    row.done = Some(e.seq);
                    row.outcome = Some(done.outcome.clone());
                    row.elapsed_us = Some(done.elapsed_us);
                }
            }
            // Not a run or its settling.
            EventData::Registered(_)
            | EventData::Unregistered(_)
            | EventData::DiscoveryWarning(_)
            | EventData::SessionCreated(_)
            | EventData::SessionClosed(_)
            | EventData::SessionDied(_)
            | EventData::SessionEnded(_)
            | EventData::SessionPrompt(_)
            | EventData::SessionUpdate(_)
            | EventData::PermissionRequested(_)
            | EventData::PermissionResolved(_)
            | EventData::PermissionAlreadyResolved(_)
            | EventData::ModelSwitched(_)
            | EventData::ModelSwitchFailed(_)
            | EventData::ModeSet(_)
            | EventData::SessionCancelled(_)
            | EventData::WalDiscarded(_)
            | EventData::AcpMessage(_)
            | EventData::AgentEvent(_)
            | EventData::AgentObserved(_)
            | EventData::ModelRequest(_)
            | EventData::Redacted(_)
            | EventData::LogIdentity(_)
            | EventData::ImportCheckpoint(_)
            | EventData::Unknown(_) => {}
        }
    }

    /// The rows, in seq order.
    pub fn rows(self) -> Vec<AuditRow> {
        self.rows.into_values().collect()
    }

    /// The rows from the first on while they are settled (a done came): they
    /// will not change. A run still open keeps the rows after it.
    pub fn take_settled(&mut self) -> Vec<AuditRow> {
        let mut out = Vec::new();
        while let Some(first) = self.rows.first_entry() {
            if first.get().done.is_none() {
                break;
            }
            out.push(first.remove());
        }
        out
    }

    /// Every settled row, in seq order; the runs still open stay.
    pub fn take_every_settled(&mut self) -> Vec<AuditRow> {
        let settled: Vec<Seq> = self
            .rows
            .iter()
            .filter(|(_, r)| r.done.is_some())
            .map(|(&seq, _)| seq)
            .collect();
        settled
            .into_iter()
            .filter_map(|seq| self.rows.remove(&seq))
            .collect()
    }

    /// Every row not yet taken, settled or not, in seq order.
    pub fn take_all(&mut self) -> Vec<AuditRow> {
        std::mem::take(&mut self.rows).into_values().collect()
    }
}

/// A fact a later source stated differently from the event that first stated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The `agent/observed` that holds the later source's content.
    pub seq: Seq,
    /// The event that first stated the fact.
    pub of: Seq,
    /// The session.
    pub session: String,
    /// The fact (`prompt:<id>`, `tool_call:<id>`, …).
    pub fact: String,
    /// The later source (`claude-code hook`, `claude-code telemetry`, …).
    pub source: String,
    /// The fields it states differently.
    pub fields: Vec<String>,
}

impl std::fmt::Display for Conflict {
    /// `seq N: <source> states <fact> differently from seq M (<fields>) in session S`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seq {}: {} states {} differently from seq {} ({}) in session {}; both are kept (`cmdlog show {}`)",
            self.seq,
            self.source,
            self.fact,
            self.of,
            self.fields.join(", "),
            self.session,
            self.seq
        )
    }
}

impl Conflict {
    /// The conflict `event` records, if it is an `agent/observed` with `differs`.
    pub fn of(event: &Event) -> Option<Conflict> {
        let EventData::AgentObserved(o) = &event.data else {
            return None;
        };
        (!o.differs.is_empty()).then(|| Conflict {
            seq: event.seq,
            of: o.of,
            session: event.session.clone().unwrap_or_default(),
            fact: o.fact.clone(),
            source: event
                .observed
                .as_ref()
                .map(|s| s.source.clone())
                .unwrap_or_default(),
            fields: o.differs.keys().cloned().collect(),
        })
    }
}

/// The timeline of runs that pass `filter`, in seq order.
pub fn audit(
    log: &Log,
    filter: &AuditFilter,
    progress: impl FnMut(Seq),
) -> Result<Vec<AuditRow>, AuditError> {
    Ok(audit_with_conflicts(log, filter, progress)?.0)
}

/// [`audit`], and the facts stated differently by two capture paths in the
/// same sessions and time (design R15).
pub fn audit_with_conflicts(
    log: &Log,
    filter: &AuditFilter,
    progress: impl FnMut(Seq),
) -> Result<(Vec<AuditRow>, Vec<Conflict>), AuditError> {
    let mut fold = AuditFold::default();
    let mut conflicts = Vec::new();
    each_event(
        log,
        filter.session.as_deref(),
        |e| {
            if let Some(conflict) = Conflict::of(&e)
                && !filter
                    .since_ms
                    .is_some_and(|since| e.time() < since && e.at < since)
            {
                conflicts.push(conflict);
            }
            fold.add(&e, |e, run| {
                // Recorded since, by the agent's clock or by the log's: an agent
                // time that is back-dated (telemetry saying 1970) hides nothing.
                !(filter
                    .since_ms
                    .is_some_and(|since| e.time() < since && e.at < since)
                    || filter.command.as_deref().is_some_and(|c| c != run.name))
            })
        },
        progress,
    )?;
    let mut rows = fold.rows();
    if filter.errors_only {
        rows.retain(AuditRow::is_error);
    }
    Ok((rows, conflicts))
}

/// An event with the events it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    /// The event, as `cmdlog log --json` prints it.
    pub event: serde_json::Value,
    /// Related events: `done`, `run`, `registration`, `attachment`, `ended_by`.
    pub related: Vec<Related>,
    /// The template text of the registration involved (prompt commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// A related event and what it is to the shown one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Related {
    /// What it is: `done`, `run`, `registration`, `attachment`, `unregistered`.
    pub role: &'static str,
    /// The event.
    pub event: serde_json::Value,
}

fn load(log: &Log, seq: Seq) -> Result<Option<Event>, AuditError> {
    match log.get(seq)? {
        Some(r) => Ok(Some(Event::decode(r.seq, &r.bytes)?)),
        None => Ok(None),
    }
}

/// The first event after `seq` (in its session when it has one) that `matches`.
fn find_after(
    log: &Log,
    session: Option<&str>,
    seq: Seq,
    mut matches: impl FnMut(&Event) -> bool,
) -> Result<Option<Event>, AuditError> {
    let mut found = None;
    let mut failure = None;
    let mut visit = |s: Seq, bytes: &[u8]| match Event::decode(s, bytes) {
        Ok(e) if matches(&e) => {
            found = Some(e);
            false
        }
        Ok(_) => true,
        Err(e) => {
            failure = Some(e);
            false
        }
    };
    match session {
        Some(s) => {
            for r in log.stream(s, seq)? {
                if !visit(r.seq, &r.bytes) {
                    break;
                }
            }
        }
        None => log.scan(seq + 1, log.head().seq, |r| visit(r.seq, &r.bytes))?,
    }
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(found),
    }
}

fn template_text(log: &Log, registration: &Event) -> Option<String> {
    let EventData::Registered(r) = &registration.data else {
        return None;
    };
    let hash = BlobHash::from_hex(r.template.as_deref()?)?;
    let bytes = log.get_blob(&hash).ok()??;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Event `seq` with its context: for a run, its done, its registration as it was
/// (with the template text) and its attachments; for a done, its run; for an
/// unregister, the registration it ended; for a registration, its template and
/// what ended it. `None` when there is no such seq.
pub fn show(log: &Log, seq: Seq) -> Result<Option<Shown>, AuditError> {
    let Some(event) = load(log, seq)? else {
        return Ok(None);
    };
    let mut related = Vec::new();
    let mut template = None;
    let mut push = |role, e: Option<Event>| {
        if let Some(e) = e {
            related.push(Related {
                role,
                event: e.to_json(),
            });
        }
    };
    match &event.data {
        EventData::CommandRun(run) => {
            let done = find_after(
                log,
                event.session.as_deref(),
                seq,
                |e| matches!(&e.data, EventData::CommandDone(d) if d.run == seq),
            )?;
            push("done", done);
            let registration = load(log, run.registration)?;
            template = registration.as_ref().and_then(|r| template_text(log, r));
            push("registration", registration);
            for a in &run.attachments {
                push("attachment", load(log, *a)?);
            }
        }
        EventData::CommandDone(done) => {
            let run = load(log, done.run)?;
            if let Some(EventData::CommandRun(r)) = run.as_ref().map(|e| &e.data) {
                let registration = load(log, r.registration)?;
                template = registration
                    .as_ref()
                    .and_then(|reg| template_text(log, reg));
            }
            push("run", run);
        }
        EventData::Unregistered(u) => push("registration", load(log, u.registration)?),
        EventData::Registered(_) => {
            template = template_text(log, &event);
            let ended = find_after(
                log,
                None,
                seq,
                |e| matches!(&e.data, EventData::Unregistered(u) if u.registration == seq),
            )?;
            push("unregistered", ended);
        }
        EventData::AttachmentAdmitted(_) => {
            let run = find_after(
                log,
                event.session.as_deref(),
                seq,
                |e| matches!(&e.data, EventData::CommandRun(r) if r.attachments.contains(&seq)),
            )?;
            push("run", run);
        }
        // Linked to nothing else.
        EventData::DiscoveryWarning(_)
        | EventData::SessionCreated(_)
        | EventData::SessionClosed(_)
        | EventData::SessionDied(_)
        | EventData::SessionEnded(_)
        | EventData::SessionPrompt(_)
        | EventData::SessionUpdate(_)
        | EventData::PermissionRequested(_)
        | EventData::PermissionResolved(_)
        | EventData::PermissionAlreadyResolved(_)
        | EventData::ModelSwitched(_)
        | EventData::ModelSwitchFailed(_)
        | EventData::ModeSet(_)
        | EventData::SessionCancelled(_)
        | EventData::WalDiscarded(_)
        | EventData::AcpMessage(_)
        | EventData::AgentEvent(_)
        | EventData::AgentObserved(_)
        | EventData::ModelRequest(_)
        | EventData::Redacted(_)
        | EventData::LogIdentity(_)
        | EventData::ImportCheckpoint(_)
        | EventData::Unknown(_) => {}
    }
    Ok(Some(Shown {
        event: event.to_json(),
        related,
        template,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdlog_engine::event::{CommandDone, InvocationSource};

    fn event(seq: Seq, data: EventData) -> Event {
        Event {
            seq,
            at: 1_000 + seq,
            observed: None,
            session: None,
            agent: None,
            data,
        }
    }

    fn run(seq: Seq) -> Event {
        event(
            seq,
            EventData::CommandRun(CommandRun {
                registration: 1,
                name: "review".into(),
                mode: Mode::NonInteractive,
                source: InvocationSource::User,
                raw_input: None,
                attachments: vec![],
                injections: vec![],
                release: None,
            }),
        )
    }

    fn done(seq: Seq, run: Seq) -> Event {
        event(
            seq,
            EventData::CommandDone(CommandDone {
                run,
                outcome: Outcome::text("ok"),
                elapsed_us: 1,
                agent_check: None,
            }),
        )
    }

    fn seqs(rows: &[AuditRow]) -> Vec<Seq> {
        rows.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn settled_rows_are_taken_in_order_and_an_open_run_holds_the_rest_back() {
        let mut fold = AuditFold::default();
        for e in [run(1), done(2, 1), run(3), run(4), done(5, 4)] {
            fold.add(&e, |_, _| true);
        }
        // Run 3 is open: only 1 is taken; 4 waits behind it.
        assert_eq!(seqs(&fold.take_settled()), [1]);
        assert!(fold.take_settled().is_empty());
        // Every settled row, the open run left.
        assert_eq!(seqs(&fold.take_every_settled()), [4]);
        // Its done settles it; nothing is given twice.
        fold.add(&done(6, 3), |_, _| true);
        let rows = fold.take_settled();
        assert_eq!(seqs(&rows), [3]);
        assert_eq!(rows[0].done, Some(6));
        assert!(fold.take_all().is_empty());
    }

    #[test]
    fn take_all_gives_the_open_runs_unsettled() {
        let mut fold = AuditFold::default();
        for e in [run(1), run(2), done(3, 2)] {
            fold.add(&e, |_, _| true);
        }
        let rows = fold.take_all();
        assert_eq!(seqs(&rows), [1, 2]);
        assert_eq!((rows[0].outcome.is_none(), rows[1].done), (true, Some(3)));
    }
}
