//! The import itself: files found, read, filtered against what was imported
//! before, redacted when asked, appended in atomic chunks.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use cmdlog_store::Log;
use serde::Serialize;

use super::batches::{batches, session_of};
use super::checkpoint::{Checkpoints, hash};
use super::files::{files, parse};
use super::transcript::Transcript;
use crate::facts::{Facts, Keys};
use crate::kind::AgentKind;
use crate::plan::PlannedData;

use crate::limits::{IMPORT_CHUNK_EVENTS as CHUNK, IMPORT_IN_FLIGHT_MAX as IN_FLIGHT};

/// Why an import stopped. What was appended before stays (each append is
/// atomic, and keyed, so importing again goes on where it stopped).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] cmdlog_store::ReadError),
    /// An append of a file's items failed.
    #[error("{}: {source}", .file.display())]
    Append {
        /// The transcript whose items were appended.
        file: PathBuf,
        /// Why.
        source: cmdlog_store::AppendError,
    },
    /// The import's own note could not be appended.
    #[error(transparent)]
    Note(cmdlog_store::AppendError),
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportSummary {
    /// Transcript files read.
    pub files: usize,
    /// Lines read.
    pub lines: usize,
    /// Events appended (not counting the files' checkpoints).
    pub events: u64,
    /// Items already in the log (or before `--since`).
    pub skipped: usize,
    /// Files unchanged since an import read them whole: not read again.
    pub unchanged: usize,
    /// Lines that did not parse: `file:line`.
    pub malformed: Vec<String>,
    /// Files that could not be read, with why.
    pub unreadable: Vec<String>,
    /// Sessions the import started.
    pub sessions: Vec<String>,
    /// Secrets redacted.
    pub redacted: u64,
    /// Items the log held already from another source (a hook, the agent's
    /// telemetry): recorded as `agent/observed` of the event that has them.
    pub observed: usize,
}

/// Imports `agent`'s transcripts under `roots` into `log`. `tick` gets the bytes
/// of each file read. Reading the next file overlaps with the log writing the
/// last one; the import returns once everything is durable.
pub fn import(
    log: &Log,
    agent: AgentKind,
    roots: &[PathBuf],
    since: Option<u64>,
    redact: bool,
    now: u64,
    mut tick: impl FnMut(u64),
) -> Result<ImportSummary, ImportError> {
    let mut summary = ImportSummary::default();
    let mut checkpoints = Checkpoints::read(log, &format!("{} transcript", agent.name()))?;
    let mut created: HashSet<String> = HashSet::new();
    let mut seen_by_session: HashMap<String, HashSet<String>> = HashMap::new();
    // What each session states already (its hooks' and telemetry's prompts and
    // tool calls): the transcript's items of the same facts are folded into them.
    let mut facts_by_session: HashMap<String, Facts> = HashMap::new();
    let source = format!("{} transcript", agent.name());
    let mut in_flight: VecDeque<(PathBuf, cmdlog_store::AppendTicket)> = VecDeque::new();
    let settle = |(file, ticket): (PathBuf, cmdlog_store::AppendTicket)| {
        ticket
            .wait()
            .map(|_| ())
            .map_err(|source| ImportError::Append { file, source })
    };
    for file in files(agent, roots, since) {
        summary.files += 1;
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                summary.unreadable.push(format!("{}: {e}", file.display()));
                tick(size);
                continue;
            }
        };
        let read_bytes = bytes.len() as u64;
        let file_hash = hash(&bytes);
        if checkpoints.unchanged(&file, read_bytes, &file_hash) {
            summary.unchanged += 1;
            tick(size);
            continue;
        }
        let transcript = parse(agent, &file, bytes);
        summary.lines += transcript.lines;
        summary.malformed.extend(
            transcript
                .malformed
                .iter()
                .map(|n| format!("{}:{n}", file.display())),
        );
        // What the log holds of this session, read once; what this import adds
        // joins it (two files can hold one session: Gemini's .json and .jsonl).
        let session = session_of(agent, &file, &transcript).unwrap_or_default();
        if !seen_by_session.contains_key(&session) {
            let mut facts = if log.has_stream(&session)? {
                Facts::read(log, &session, Keys::Of(source.clone()))?
            } else {
                Facts::default()
            };
            seen_by_session.insert(session.clone(), facts.take_keys(&source));
            facts_by_session.insert(session.clone(), facts);
        }
        let seen = seen_by_session.get_mut(&session).expect("inserted above");
        let transcript = if redact {
            redacted(transcript, &mut summary.redacted)
        } else {
            transcript
        };
        let (mut chunks, skipped) = batches(agent, &file, transcript, seen, since, CHUNK);
        summary.skipped += skipped;
        // The file is checkpointed with its last items (alone when it adds
        // none): durable together, or not at all. Not when `--since` left
        // items out: a later import without it must read them.
        if since.is_none() {
            let checkpoint = checkpoints.record(&file, read_bytes, file_hash);
            match chunks.last_mut() {
                Some(last) => last.events.push(checkpoint),
                None => {
                    let mut alone = crate::append::Batch::new(agent.name());
                    alone.events.push(checkpoint);
                    chunks.push(alone);
                }
            }
        }
        for batch in &chunks {
            seen.extend(
                batch
                    .events
                    .iter()
                    .filter_map(|p| p.observed.as_ref()?.key.clone()),
            );
        }
        let facts = facts_by_session.get_mut(&session).expect("inserted above");
        for mut batch in chunks {
            summary.observed += facts.fold_into(&session, &mut batch.events);
            batch.create_sessions(|s| Ok(!created.contains(s) && !log.has_stream(s)?))?;
            for s in batch.events.iter().filter_map(|p| p.session.clone()) {
                if created.insert(s.clone()) {
                    summary.sessions.push(s);
                }
            }
            summary.events += batch.events.iter().filter(|p| !p.is_checkpoint()).count() as u64;
            let ticket = batch
                .submit(log, now)
                .map_err(|source| ImportError::Append {
                    file: file.clone(),
                    source,
                })?;
            in_flight.push_back((file.clone(), ticket));
            if in_flight.len() > IN_FLIGHT
                && let Some(oldest) = in_flight.pop_front()
            {
                settle(oldest)?;
            }
        }
        tick(size);
    }
    while let Some(oldest) = in_flight.pop_front() {
        settle(oldest)?;
    }
    if summary.redacted > 0 {
        let mut note = crate::append::Batch::new(agent.name());
        note.note_redaction(
            &format!("{} transcript", agent.name()),
            summary.redacted,
            vec!["secrets".into()],
        );
        note.append(log, now).map_err(ImportError::Note)?;
        summary.events += 1;
    }
    Ok(summary)
}

/// The transcript with the secrets in its events replaced; counts them.
fn redacted(mut t: Transcript, count: &mut u64) -> Transcript {
    let mut found = cmdlog_common::secrets::Redaction::default();
    for item in &mut t.items {
        if let PlannedData::Ready(data) = &mut item.data {
            let mut value = serde_json::to_value(&*data).unwrap_or_default();
            let before = found.count;
            cmdlog_common::secrets::redact_value(&mut value, &mut found);
            if found.count > before
                && let Ok(back) = redecode(data.type_name(), value)
            {
                *data = back;
            }
        }
        if let PlannedData::Update(update) = &item.data {
            let mut value = serde_json::to_value(update).unwrap_or_default();
            let before = found.count;
            cmdlog_common::secrets::redact_value(&mut value, &mut found);
            if found.count > before {
                item.data = PlannedData::Ready(cmdlog_engine::EventData::SessionUpdate(value));
            }
        }
        if let PlannedData::DoneOf { outcome, .. } = &mut item.data {
            let mut value = serde_json::to_value(&*outcome).unwrap_or_default();
            cmdlog_common::secrets::redact_value(&mut value, &mut found);
            if let Ok(back) = serde_json::from_value(value) {
                *outcome = back;
            }
        }
    }
    *count += found.count;
    t
}

/// An event's data decoded again after redaction.
fn redecode(
    type_name: &str,
    data: serde_json::Value,
) -> Result<cmdlog_engine::EventData, cmdlog_engine::event::DecodeError> {
    let record = serde_json::json!({"at": 0, "type": type_name, "data": data});
    cmdlog_engine::Event::decode(0, record.to_string().as_bytes()).map(|e| e.data)
}
