//! `cmdlog import --from <agent>`: the transcripts an agent keeps, read as that
//! agent writes them (one module each; `docs/agents.md` cites the formats), and
//! appended as sessions with their original times (`observed.at`; the events'
//! own `at` stays the time of the import). Every item is keyed by its source
//! (file and line or item id): importing again adds nothing. A line that does not
//! parse is counted and named, never fatal.

pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod gemini;
pub(crate) mod importer;
pub(crate) mod lenient;
pub(crate) mod qwen;
pub(crate) mod updates;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use cmdlog_engine::{
    CommandRun, Delivery, EventData, InvocationSource, Mode, Observed, Outcome, SessionPrompt,
};
use serde_json::Value;

use super::append::Batch;
use super::{AgentKind, Planned, PlannedData, session_key};
pub(crate) use updates::{Update, chunk, tool_call, tool_done};

/// One item of a transcript, before it is an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// What identifies it in its file (`uuid`, item id, or `line N`).
    pub(crate) key: String,
    /// When it happened, unix ms.
    pub(crate) at: Option<u64>,
    pub(crate) data: PlannedData,
}

/// One transcript file, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Transcript {
    /// The agent's session id.
    pub(crate) session: Option<String>,
    pub(crate) items: Vec<Item>,
    /// Lines that did not parse: their 1-based numbers.
    pub(crate) malformed: Vec<usize>,
    /// Lines read.
    pub(crate) lines: usize,
}

impl Transcript {
    /// Adds an item (`run` and its `done` are added with [`Transcript::run`]).
    pub(crate) fn push(&mut self, key: String, at: Option<u64>, data: EventData) {
        self.items.push(Item {
            key,
            at,
            data: PlannedData::Ready(data),
        });
    }

    /// A prompt.
    pub(crate) fn prompt(&mut self, key: String, at: Option<u64>, text: String) {
        self.push(
            key,
            at,
            EventData::SessionPrompt(SessionPrompt {
                text,
                delivery: Delivery::Idle,
                from_run: None,
                injections: Vec::new(),
                prompt_id: None,
                blocks: Vec::new(),
            }),
        );
    }

    /// An ACP session update that is JSON text already.
    pub(crate) fn update_raw(&mut self, key: String, at: Option<u64>, update: Update) {
        self.items.push(Item {
            key,
            at,
            data: PlannedData::Update(update),
        });
    }

    /// An ACP session update.
    pub(crate) fn update(&mut self, key: String, at: Option<u64>, update: Value) {
        self.push(key, at, EventData::SessionUpdate(update));
    }

    /// A slash command the agent ran, and how it settled (its expansion, or the
    /// output of a built-in).
    pub(crate) fn run(
        &mut self,
        key: String,
        at: Option<u64>,
        line: &str,
        prompt: Option<String>,
        text: Option<String>,
    ) {
        let line = line.trim();
        let body = line.strip_prefix('/').unwrap_or(line);
        let (name, rest) = match body.find(char::is_whitespace) {
            Some(i) => (&body[..i], &body[i..]),
            None => (body, ""),
        };
        let run_index = self.items.len();
        self.items.push(Item {
            key: format!("{key}#run"),
            at,
            data: PlannedData::Ready(EventData::CommandRun(CommandRun {
                registration: 0,
                name: name.to_lowercase(),
                mode: Mode::Interactive,
                source: InvocationSource::Agent,
                raw_input: Some(rest.to_string()),
                attachments: Vec::new(),
                injections: Vec::new(),
            })),
        });
        self.items.push(Item {
            key: format!("{key}#done"),
            at,
            data: PlannedData::DoneOf {
                run_index,
                outcome: Outcome::Success {
                    text,
                    prompt,
                    source_event_seq: None,
                },
                agent_check: None,
            },
        });
    }

    /// Something with no typed event, kept as it was.
    pub(crate) fn other(
        &mut self,
        agent: AgentKind,
        key: String,
        at: Option<u64>,
        event: &str,
        data: Value,
    ) {
        self.push(
            key,
            at,
            EventData::AgentEvent(cmdlog_engine::AgentEvent {
                agent: agent.name().into(),
                event: event.into(),
                data,
            }),
        );
    }
}

/// The lines of a JSON-lines transcript that parse, with their 1-based numbers.
/// Each call to [`JsonLines::next`] counts the lines it passes in the transcript
/// and names those that do not parse (invalid UTF-8 included); blank lines are
/// skipped. The file is read whole and each line parsed where it lies.
pub(crate) struct JsonLines {
    text: Vec<u8>,
    at: usize,
    number: usize,
}

impl JsonLines {
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        Ok(JsonLines {
            text: std::fs::read(path)?,
            at: 0,
            number: 0,
        })
    }

    /// The next line that parses.
    pub(crate) fn next(&mut self, t: &mut Transcript) -> Option<std::io::Result<(usize, Value)>> {
        while let Some((number, line)) = self.next_line(t) {
            match serde_json::from_slice::<Value>(line) {
                Ok(v) => return Some(Ok((number, v))),
                Err(_) => t.malformed.push(number),
            }
        }
        None
    }

    /// The next line that is not blank, as bytes, with its number; the reader
    /// parses it (and names it in `t.malformed` when it does not parse).
    pub(crate) fn next_line(&mut self, t: &mut Transcript) -> Option<(usize, &[u8])> {
        while self.at < self.text.len() {
            let rest = &self.text[self.at..];
            let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            let start = self.at;
            self.at += len + 1;
            self.number += 1;
            t.lines += 1;
            let line = &self.text[start..start + len];
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some((self.number, line));
            }
        }
        None
    }
}

/// Reads one transcript file of `agent`.
pub(crate) fn read(agent: AgentKind, path: &Path) -> std::io::Result<Transcript> {
    match agent {
        AgentKind::ClaudeCode => claude::read(path),
        AgentKind::Codex => codex::read(path),
        AgentKind::Gemini => gemini::read(path),
        AgentKind::Qwen => qwen::read(path),
    }
}

/// Where `agent` keeps its transcripts, from its documented defaults.
pub(crate) fn default_roots(agent: AgentKind, home: &Path) -> Vec<PathBuf> {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match agent {
        AgentKind::ClaudeCode => vec![
            env_dir("CLAUDE_CONFIG_DIR")
                .unwrap_or_else(|| home.join(".claude"))
                .join("projects"),
        ],
        AgentKind::Codex => {
            let root = env_dir("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
            vec![root.join("sessions"), root.join("archived_sessions")]
        }
        AgentKind::Gemini => vec![home.join(".gemini/tmp")],
        AgentKind::Qwen => vec![
            env_dir("QWEN_RUNTIME_DIR")
                .unwrap_or_else(|| home.join(".qwen"))
                .join("projects"),
        ],
    }
}

/// Whether `path` is one of `agent`'s transcript files.
pub(crate) fn is_transcript(agent: AgentKind, path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_chats = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "chats");
    match agent {
        AgentKind::ClaudeCode => {
            name.ends_with(".jsonl") && !path.components().any(|c| c.as_os_str() == "subagents")
        }
        AgentKind::Codex => name.starts_with("rollout-") && name.ends_with(".jsonl"),
        AgentKind::Gemini => {
            in_chats
                && name.starts_with("session-")
                && (name.ends_with(".jsonl") || name.ends_with(".json"))
        }
        AgentKind::Qwen => in_chats && name.ends_with(".jsonl"),
    }
}

/// The transcript files under `roots` (files given as they are, folders walked),
/// sorted, changed at or after `since` (unix ms).
pub(crate) fn files(agent: AgentKind, roots: &[PathBuf], since: Option<u64>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        if root.is_file() {
            out.push(root.clone());
            continue;
        }
        for entry in ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .hidden(false)
            .follow_links(false)
            .build()
            .flatten()
        {
            let path = entry.path();
            if entry.file_type().is_some_and(|t| t.is_file()) && is_transcript(agent, path) {
                let recent = since.is_none_or(|s| {
                    std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .is_none_or(|d| d.as_millis() as u64 >= s)
                });
                if recent {
                    out.push(path.to_path_buf());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

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
                }),
                data,
            });
        }
        if pending.len() >= chunk {
            let mut batch = Batch::new(agent.name());
            batch.extend(std::mem::take(&mut pending));
            out.push(batch);
        }
    }
    if !pending.is_empty() {
        let mut batch = Batch::new(agent.name());
        batch.extend(pending);
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

/// The keys of the items of `session` already imported from `agent`'s
/// transcripts: read from that session's stream only, and only the `observed`
/// field of each record.
pub(crate) fn imported_keys(
    log: &cmdlog_store::Log,
    agent: AgentKind,
    session: &str,
) -> Result<HashSet<String>, cmdlog_store::ReadError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        observed: Option<Observed>,
    }
    let source = format!("{} transcript", agent.name());
    let mut keys = HashSet::new();
    for record in log.stream(session, 0)? {
        if let Ok(Probe {
            observed: Some(observed),
        }) = serde_json::from_slice::<Probe>(&record.bytes)
            && observed.source == source
            && let Some(key) = observed.key
        {
            keys.insert(key);
        }
    }
    Ok(keys)
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
