//! A transcript's items as batches to append, keyed so that importing again
//! adds nothing.

use std::collections::HashSet;
use std::path::Path;

use cmdlog_engine::event::Observed;

use super::transcript::Transcript;
use crate::append::Batch;
use crate::kind::{AgentKind, session_key};
use crate::plan::{Planned, PlannedData};

/// The batches that append `transcript` (read from `file`), leaving out items
/// whose keys are in `seen` and items before `since`; at most `chunk` events
/// each, a run never apart from its settling.
pub(crate) fn batches(
    agent: AgentKind,
    file: &Path,
    transcript: Transcript,
    seen: &HashSet<String>,
    since: Option<u64>,
    chunk: usize,
) -> (Vec<Batch>, usize) {
    let source = format!("{} transcript", agent.name());
    let session = session_of(agent, file, &transcript);
    // Keyed by the agent's session id (stable when the file moves or is copied),
    // else the file's name.
    let file_key = transcript
        .session
        .clone()
        .or_else(|| file.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut transcript = transcript;
    transcript.turn_facts();
    if agent == AgentKind::Gemini {
        crate::facts::said(transcript.items.iter_mut().map(|i| (&i.data, &mut i.fact)));
    }
    let mode = transcript.mode;
    let mut skipped = 0;
    let mut out: Vec<Batch> = Vec::new();
    let mut pending: Vec<Planned> = Vec::new();
    let mut items = transcript.items.into_iter().peekable();
    while let Some(first) = items.next() {
        // A run travels with its settling.
        let second = match items.peek().map(|n| &n.data) {
            Some(PlannedData::DoneOf { .. }) => items.next(),
            _ => None,
        };
        let key = item_key(&file_key, &first.key);
        let too_old = since.is_some_and(|s| first.at.is_some_and(|at| at < s));
        if seen.contains(&key) || too_old {
            skipped += 1 + usize::from(second.is_some());
            continue;
        }
        let run_at = pending.len();
        for (item, key) in std::iter::once((first, key)).chain(second.into_iter().map(|s| {
            let key = item_key(&file_key, &s.key);
            (s, key)
        })) {
            let data = match item.data {
                PlannedData::DoneOf {
                    outcome,
                    agent_check,
                    ..
                } => PlannedData::DoneOf {
                    run_index: run_at,
                    outcome,
                    agent_check,
                },
                d => d,
            };
            pending.push(Planned {
                session: session.clone(),
                observed: Some(Observed {
                    source: source.clone(),
                    key: Some(key),
                    at: item.at,
                    fact: item.fact.or_else(|| crate::facts::of_data(&data)),
                }),
                data,
                tie: None,
            });
        }
        if pending.len() >= chunk {
            let mut batch = Batch::new(agent.name());
            batch.extend(std::mem::take(&mut pending));
            batch.set_mode(mode);
            out.push(batch);
        }
    }
    if !pending.is_empty() {
        let mut batch = Batch::new(agent.name());
        batch.extend(pending);
        batch.set_mode(mode);
        out.push(batch);
    }
    (out, skipped)
}

/// An item's key in the log: its file's key and its own.
fn item_key(file_key: &str, item: &str) -> String {
    let mut key = String::with_capacity(file_key.len() + 1 + item.len());
    key.push_str(file_key);
    key.push(':');
    key.push_str(item);
    key
}

/// The session a transcript appends to.
pub(crate) fn session_of(agent: AgentKind, file: &Path, transcript: &Transcript) -> Option<String> {
    transcript
        .session
        .as_deref()
        .map(|s| session_key(agent, s))
        .or_else(|| {
            file.file_stem()
                .and_then(|s| s.to_str())
                .map(|s| session_key(agent, s))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stay_with_their_settling_and_known_items_are_skipped() {
        let mut t = Transcript::default();
        t.prompt("a".into(), Some(1), "hello".into());
        t.run(
            "b".into(),
            Some(2),
            "/review x.rs",
            Some("Review x.rs".into()),
            None,
        );
        t.prompt("c".into(), Some(3), "more".into());
        let file = Path::new("/t/s1.jsonl");
        let (first, skipped) = batches(
            AgentKind::ClaudeCode,
            file,
            t.clone(),
            &HashSet::new(),
            None,
            2,
        );
        assert_eq!(skipped, 0);
        let sizes: Vec<usize> = first.iter().map(|b| b.events.len()).collect();
        assert_eq!(sizes, [3, 1], "the run and its done are not split");
        match &first[0].events[2].data {
            PlannedData::DoneOf { run_index, .. } => assert_eq!(*run_index, 1),
            other => panic!("{other:?}"),
        }
        let seen: HashSet<String> = ["s1.jsonl:a".to_string(), "s1.jsonl:b#run".to_string()].into();
        let (made, skipped) = batches(AgentKind::ClaudeCode, file, t, &seen, None, 100);
        assert_eq!(skipped, 3);
        assert_eq!(made[0].events.len(), 1);
        assert_eq!(made[0].events[0].session.as_deref(), Some("s1"));
    }
}
