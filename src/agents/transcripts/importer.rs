//! The import itself: files found, read, filtered against what was imported
//! before, redacted when asked, appended in atomic chunks.

use std::path::PathBuf;

use cmdlog_store::Log;
use serde::Serialize;

use super::{Transcript, batches, files, imported_keys, read};
use crate::agents::{AgentKind, PlannedData};

/// Events per atomic append.
const CHUNK: usize = 2000;

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ImportSummary {
    pub(crate) files: usize,
    pub(crate) lines: usize,
    pub(crate) events: u64,
    /// Items already in the log (or before `--since`).
    pub(crate) skipped: usize,
    /// Lines that did not parse: `file:line`.
    pub(crate) malformed: Vec<String>,
    /// Files that could not be read, with why.
    pub(crate) unreadable: Vec<String>,
    pub(crate) sessions: Vec<String>,
    pub(crate) redacted: u64,
}

/// Imports `agent`'s transcripts under `roots` into `log`. `tick` gets the bytes
/// of each file read.
pub(crate) fn import(
    log: &Log,
    agent: AgentKind,
    roots: &[PathBuf],
    since: Option<u64>,
    redact: bool,
    now: u64,
    mut tick: impl FnMut(u64),
) -> Result<ImportSummary, String> {
    let seen = imported_keys(log, agent).map_err(|e| e.to_string())?;
    let mut summary = ImportSummary::default();
    for file in files(agent, roots, since) {
        summary.files += 1;
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let transcript = match read(agent, &file) {
            Ok(t) => t,
            Err(e) => {
                summary.unreadable.push(format!("{}: {e}", file.display()));
                tick(size);
                continue;
            }
        };
        summary.lines += transcript.lines;
        summary.malformed.extend(
            transcript
                .malformed
                .iter()
                .map(|n| format!("{}:{n}", file.display())),
        );
        let transcript = if redact {
            redacted(transcript, &mut summary.redacted)
        } else {
            transcript
        };
        let (chunks, skipped) = batches(agent, &file, transcript, &seen, since, CHUNK);
        summary.skipped += skipped;
        for mut batch in chunks {
            batch
                .create_sessions(|s| log.has_stream(s).map(|seen| !seen))
                .map_err(|e| e.to_string())?;
            if let Some(s) = batch.events.iter().find_map(|p| p.session.clone())
                && !summary.sessions.contains(&s)
            {
                summary.sessions.push(s);
            }
            let n = batch.events.len() as u64;
            batch
                .append(log, now)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            summary.events += n;
        }
        tick(size);
    }
    if summary.redacted > 0 {
        let mut note = crate::agents::append::Batch::new(agent.name());
        note.note_redaction(
            &format!("{} transcript", agent.name()),
            summary.redacted,
            vec!["secrets".into()],
        );
        note.append(log, now).map_err(|e| e.to_string())?;
        summary.events += 1;
    }
    Ok(summary)
}

/// The transcript with the secrets in its events replaced; counts them.
fn redacted(mut t: Transcript, count: &mut u64) -> Transcript {
    let mut found = cmdlog_replay::Redaction::default();
    for item in &mut t.items {
        if let PlannedData::Ready(data) = &mut item.data {
            let mut value = serde_json::to_value(&*data).unwrap_or_default();
            let before = found.count;
            cmdlog_replay::redact_value(&mut value, &mut found);
            if found.count > before
                && let Ok(back) = redecode(data.type_name(), value)
            {
                *data = back;
            }
        }
        if let PlannedData::DoneOf { outcome, .. } = &mut item.data {
            let mut value = serde_json::to_value(&*outcome).unwrap_or_default();
            cmdlog_replay::redact_value(&mut value, &mut found);
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
) -> Result<cmdlog_engine::EventData, cmdlog_engine::DecodeError> {
    let record = serde_json::json!({"at": 0, "type": type_name, "data": data});
    cmdlog_engine::Event::decode(0, record.to_string().as_bytes()).map(|e| e.data)
}
