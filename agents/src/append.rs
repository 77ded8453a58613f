//! Planned events → records, appended as one atomic unit: the session's
//! `session/created` first when the log has not seen it, a `log/redacted` when
//! secrets were replaced, then the payload's events; a `command/done` names the
//! seq its run gets in the same append.

use cmdlog_engine::event::{AgentEvent, CommandDone, NewEvent, Observed, Redacted, SessionCreated};
use cmdlog_engine::{EventData, Mode};
use cmdlog_store::{AppendError, AppendTicket, Log, NewRecord, ReadError, Receipt, Seq};

use crate::limits::{BLOB_PART_BYTES, EVENT_INLINE_BYTES_MAX};
use crate::plan::{Planned, PlannedData};

/// What a payload (or a transcript's items) appends, ready to build.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The agent, as the events name it.
    pub(crate) agent: String,
    /// The events, in append order.
    pub(crate) events: Vec<Planned>,
    /// Blob bodies stored before the events (large parts of a payload).
    pub(crate) blobs: Vec<Vec<u8>>,
    /// The mode of the sessions it starts, when the agent said it.
    pub(crate) mode: Option<Mode>,
}

impl Batch {
    /// An empty batch of `agent`'s events.
    pub(crate) fn new(agent: &str) -> Self {
        Batch {
            agent: agent.to_string(),
            events: Vec::new(),
            blobs: Vec::new(),
            mode: None,
        }
    }

    /// Says the session runs in `mode` (when known): the mode of the sessions it
    /// starts and of its command runs.
    pub(crate) fn set_mode(&mut self, mode: Option<Mode>) {
        let Some(mode) = mode else { return };
        self.mode = Some(mode);
        for p in &mut self.events {
            if let PlannedData::Ready(EventData::CommandRun(run)) = &mut p.data {
                run.mode = mode;
            }
        }
    }

    /// How many events it appends.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it appends nothing.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Adds events after the ones already there (their `DoneOf` indices are
    /// relative to `events`).
    pub(crate) fn extend(&mut self, events: Vec<Planned>) {
        let offset = self.events.len();
        self.events.extend(events.into_iter().map(|mut p| {
            if let PlannedData::DoneOf { run_index, .. } = &mut p.data {
                *run_index += offset;
            }
            p
        }));
    }

    /// Puts `events` first (their indices are relative to themselves).
    pub(crate) fn prepend(&mut self, events: Vec<Planned>) {
        let mut rest = std::mem::take(&mut self.events);
        self.events = events;
        let offset = self.events.len();
        for p in &mut rest {
            if let PlannedData::DoneOf { run_index, .. } = &mut p.data {
                *run_index += offset;
            }
        }
        self.events.extend(rest);
    }

    /// Starts the session with `session/created` (in the batch's mode, when the
    /// agent said it) when `is_new` says the log has not seen it.
    pub(crate) fn create_sessions(
        &mut self,
        mut is_new: impl FnMut(&str) -> Result<bool, ReadError>,
    ) -> Result<(), ReadError> {
        let mut sessions: Vec<String> = Vec::new();
        for p in &self.events {
            if let Some(s) = &p.session
                && !sessions.contains(s)
            {
                sessions.push(s.clone());
            }
        }
        let mut created = Vec::new();
        for s in sessions {
            // A session the batch begins itself (a subagent's, naming its
            // parent) needs no other beginning.
            let begun = self
                .events
                .iter()
                .find(|p| p.session.as_ref() == Some(&s))
                .is_some_and(|p| {
                    matches!(p.data, PlannedData::Ready(EventData::SessionCreated(_)))
                });
            if !begun && is_new(&s)? {
                created.push(Planned {
                    session: Some(s),
                    // Seen by the same source, stating no fact of its own.
                    observed: self
                        .events
                        .first()
                        .and_then(|p| p.observed.clone())
                        .map(|o| Observed { fact: None, ..o }),
                    data: PlannedData::Ready(EventData::SessionCreated(SessionCreated {
                        mode: self.mode,
                        parent: None,
                    })),
                    tie: None,
                });
            }
        }
        self.prepend(created);
        Ok(())
    }

    /// Folds each event that states a fact its session already holds into an
    /// `agent/observed` of the event that stated it (`facts.rs`); with
    /// `source`, also leaves out the events whose `observed.key` that source
    /// delivered before. `cache` keeps what the sessions state between calls.
    /// Returns how many were left out, and how many folded.
    pub(crate) fn fold_facts(
        &mut self,
        log: &Log,
        source: Option<&str>,
        cache: &mut crate::facts::FactCache,
    ) -> Result<(usize, usize), ReadError> {
        if !crate::facts::states_facts(&self.events) && source.is_none() {
            return Ok((0, 0));
        }
        let (mut left_out, mut folded) = (0, 0);
        for session in crate::facts::sessions_of(&self.events) {
            if !log.has_stream(&session)? {
                continue;
            }
            let facts = cache.facts(log, &session)?;
            if let Some(source) = source {
                left_out += self.retain(|p| {
                    p.session.as_deref() != Some(session.as_str())
                        || !p
                            .observed
                            .as_ref()
                            .and_then(|o| o.key.as_deref())
                            .is_some_and(|k| facts.delivered(source, k))
                });
            }
            folded += facts.fold_into(&session, &mut self.events);
        }
        Ok((left_out, folded))
    }

    /// Keeps the events `keep` says to (a `command/done` goes with its run),
    /// their runs' indices kept right; returns how many left.
    fn retain(&mut self, mut keep: impl FnMut(&Planned) -> bool) -> usize {
        let before = self.events.len();
        let mut new_index: Vec<Option<usize>> = Vec::with_capacity(before);
        let mut kept: Vec<Planned> = Vec::with_capacity(before);
        for mut p in std::mem::take(&mut self.events) {
            let run_kept = match &mut p.data {
                PlannedData::DoneOf { run_index, .. } => match new_index[*run_index] {
                    Some(i) => {
                        *run_index = i;
                        true
                    }
                    None => false,
                },
                _ => true,
            };
            if run_kept && keep(&p) {
                new_index.push(Some(kept.len()));
                kept.push(p);
            } else {
                new_index.push(None);
            }
        }
        self.events = kept;
        before - self.events.len()
    }

    /// Says, first, that `count` secrets of `kinds` were replaced.
    pub(crate) fn note_redaction(&mut self, source: &str, count: u64, kinds: Vec<String>) {
        if count == 0 {
            return;
        }
        self.prepend(vec![Planned {
            session: None,
            observed: None,
            data: PlannedData::Ready(EventData::Redacted(Redacted {
                source: source.to_string(),
                count,
                kinds,
            })),
            tie: None,
        }]);
    }

    /// Starts the append: the events are encoded here, on the caller's thread;
    /// only a `command/done` that names its run's seq is encoded by the writer,
    /// once the seqs are known.
    pub(crate) fn submit(self, log: &Log, at: u64) -> Result<AppendTicket, AppendError> {
        let agent = Some(self.agent);
        let slots: Vec<Slot> = self
            .events
            .into_iter()
            .map(|p| match p.data {
                PlannedData::Ready(data) => Slot::Ready(
                    NewEvent {
                        at,
                        observed: p.observed,
                        session: p.session,
                        agent: agent.clone(),
                        data,
                    }
                    .to_record(),
                ),
                PlannedData::Update(update) => Slot::Ready(
                    cmdlog_engine::event::SessionUpdateRef {
                        at,
                        session: p.session.as_deref(),
                        agent: agent.as_deref(),
                        observed: p.observed.as_ref(),
                        update: &update,
                    }
                    .to_record(),
                ),
                PlannedData::DoneOf {
                    run_index,
                    outcome,
                    agent_check,
                } => Slot::Done(
                    Box::new(NewEvent {
                        at,
                        observed: p.observed,
                        session: p.session,
                        agent: agent.clone(),
                        data: EventData::CommandDone(CommandDone {
                            run: 0,
                            outcome,
                            elapsed_us: 0,
                            agent_check,
                        }),
                    }),
                    run_index,
                ),
            })
            .collect();
        // An item too large for a record (a transcript's tool result of many
        // megabytes) is stored as blobs, an agent/event naming them in its place.
        let slots = slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Ready(record) if record.bytes.len() > EVENT_INLINE_BYTES_MAX => {
                    in_blobs(log, record, agent.as_deref(), at).map(Slot::Ready)
                }
                other => Ok(other),
            })
            .collect::<Result<Vec<Slot>, AppendError>>()?;
        log.submit_built(move |first| {
            slots
                .iter()
                .map(|slot| match slot {
                    Slot::Ready(record) => record.clone(),
                    Slot::Done(event, run_index) => {
                        let mut event = event.clone();
                        if let EventData::CommandDone(done) = &mut event.data {
                            done.run = first + *run_index as Seq;
                        }
                        event.to_record()
                    }
                })
                .collect()
        })
    }

    /// Appends it to `log` as one unit (blocking); the receipt names its seqs.
    pub(crate) fn append(self, log: &Log, at: u64) -> Result<Receipt, AppendError> {
        if self.events.is_empty() {
            return Ok(Receipt {
                first: log.head().seq + 1,
                last: log.head().seq,
            });
        }
        self.submit(log, at)?.wait()
    }
}

/// `record` (too large to append) as blobs, and the record of an `agent/event`
/// that names them, in the same session, with the same `observed`.
fn in_blobs(
    log: &Log,
    record: NewRecord,
    agent: Option<&str>,
    at: u64,
) -> Result<NewRecord, AppendError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        type_name: String,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        observed: Option<Observed>,
    }
    let probe: Option<Probe> = serde_json::from_slice(&record.bytes).ok();
    let mut hashes = Vec::new();
    for part in record.bytes.chunks(BLOB_PART_BYTES) {
        let hash = log
            .put_blob(part.to_vec())
            .map_err(|e| AppendError::Storage {
                message: format!(
                    "an item too large for a record could not be stored as blobs: {e}"
                ),
            })?;
        hashes.push(hash.to_hex());
    }
    let agent_name = agent.unwrap_or("agent").to_string();
    Ok(NewEvent {
        at,
        observed: probe.as_ref().and_then(|p| p.observed.clone()),
        session: probe.as_ref().and_then(|p| p.session.clone()),
        agent: Some(agent_name.clone()),
        data: EventData::AgentEvent(AgentEvent {
            agent: agent_name,
            event: "item stored as blobs".into(),
            data: serde_json::json!({
                "type": probe.map(|p| p.type_name),
                "bytes": record.bytes.len(),
                "blobs": hashes,
            }),
            bookkeeping: false,
        }),
    }
    .to_record())
}

/// An event encoded ahead, or a `command/done` waiting for its run's seq.
#[derive(Clone)]
enum Slot {
    Ready(NewRecord),
    Done(Box<NewEvent>, usize),
}
