//! What of an event is found: every text it holds, in `text`, and the facets
//! read from its type and data — the kinds a query names (`type:prompt`,
//! `type:reply`, `type:tool`, `type:command`, `type:permission`,
//! `type:model`, `type:error`, besides the event's own type), the tools and
//! files it names, its statuses.

use serde::Deserialize;
use serde_json::Value;
use tantivy::TantivyDocument;

use crate::fields::Fields;
use crate::limits::TEXT_BYTES_MAX;

/// An event as the index reads it: its envelope, and its data as recorded
/// (every field, known to this version or not), parsed once.
#[derive(Debug, Deserialize)]
pub(crate) struct View {
    #[serde(skip)]
    pub(crate) seq: u64,
    pub(crate) at: u64,
    #[serde(rename = "type")]
    pub(crate) type_name: String,
    #[serde(default)]
    pub(crate) session: Option<String>,
    #[serde(default)]
    pub(crate) agent: Option<String>,
    #[serde(default)]
    observed: Option<Observer>,
    #[serde(default)]
    data: Value,
}

/// What observed an event (`observed.source`).
#[derive(Debug, Deserialize)]
struct Observer {
    source: String,
}

impl View {
    /// The record at `seq` read as an event; `None` for one that is not.
    pub(crate) fn read(seq: u64, bytes: &[u8]) -> Option<View> {
        let mut view: View = serde_json::from_slice(bytes).ok()?;
        view.seq = seq;
        Some(view)
    }
}

/// Reads a blob's bytes by its hash (hex), when the log has it.
pub(crate) type Blobs<'a> = &'a dyn Fn(&str) -> Option<Vec<u8>>;

/// The index's document of `event`; values it keeps as blobs are read
/// through `blobs` and indexed as its text.
pub(crate) fn document(f: &Fields, event: &View, blobs: Blobs<'_>) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_u64(f.seq, event.seq);
    doc.add_i64(f.at, i64::try_from(event.at).unwrap_or(i64::MAX));
    if let Some(session) = &event.session {
        doc.add_text(f.session, session);
    }
    if let Some(agent) = &event.agent {
        doc.add_text(f.agent, agent);
    }
    let type_name = event.type_name.as_str();
    doc.add_text(f.kind, type_name);
    let data = &event.data;
    let update = data["sessionUpdate"].as_str().unwrap_or("");
    let kinds = kinds(type_name, update);
    for kind in &kinds {
        doc.add_text(f.kind, kind);
    }
    for source in sources(event, type_name) {
        doc.add_text(f.source, source);
    }
    let mut found = Found::default();
    found.walk(data, None, 0);
    found.read_blobs(blobs);
    for tool in &found.tools {
        doc.add_text(f.tool, tool);
    }
    for file in &found.files {
        for prefix in prefixes(file) {
            doc.add_text(f.file, prefix);
        }
    }
    let failed = kinds.contains(&"error") || found.failed;
    for status in &found.statuses {
        doc.add_text(f.status, status);
    }
    if failed {
        doc.add_text(f.status, "error");
    }
    doc.add_text(f.text, &found.text);
    doc
}

/// Where `event` came from, as `source:` finds it: what observed it whole
/// (`claude-code hook`) and each of its words (`hook`, `claude-code`); `acp`
/// for a message between an ACP client and agent that cmdlog passed on;
/// `cmdlog` for what cmdlog itself recorded (its runs, the daemon's and the
/// proxy's typed events).
fn sources<'a>(event: &'a View, type_name: &str) -> Vec<&'a str> {
    match &event.observed {
        Some(o) => std::iter::once(o.source.as_str())
            .chain(o.source.split_whitespace())
            .collect(),
        None if type_name == "acp/message" => vec!["acp"],
        None => vec!["cmdlog"],
    }
}

/// The text of `event` as it is indexed (for a hit's snippet).
pub(crate) fn text_of(event: &View, blobs: Blobs<'_>) -> String {
    let mut found = Found::default();
    found.walk(&event.data, None, 0);
    found.read_blobs(blobs);
    found.text
}

/// The kinds a query names, for an event of `type_name` (and, for a
/// `session/update`, its `sessionUpdate`).
fn kinds(type_name: &str, update: &str) -> Vec<&'static str> {
    match (type_name, update) {
        ("session/prompt", _) | ("session/update", "user_message_chunk") => vec!["prompt"],
        ("command/run" | "command/done", _) => vec!["command"],
        ("session/update", "agent_message_chunk") => vec!["reply"],
        ("session/update", "agent_thought_chunk") => vec!["thought"],
        ("session/update", "tool_call" | "tool_call_update") => vec!["tool"],
        ("session/update", "turn_error") => vec!["error"],
        ("permission/requested" | "permission/resolved" | "permission/already_resolved", _) => {
            vec!["permission"]
        }
        ("session/model_switched", _) => vec!["model"],
        ("session/model_switch_failed", _) => vec!["model", "error"],
        ("session/died", _) => vec!["error"],
        _ => Vec::new(),
    }
}

/// `src/payments/webhook.ts` → itself and `src/payments`, `src`: a query for
/// a folder finds the files in it.
fn prefixes(path: &str) -> impl Iterator<Item = &str> {
    let trimmed = path.trim_end_matches('/');
    std::iter::once(trimmed).chain(
        trimmed
            .match_indices('/')
            .map(move |(i, _)| &trimmed[..i])
            .filter(|p| !p.is_empty()),
    )
}

/// What a walk over an event's data found.
#[derive(Default)]
struct Found {
    text: String,
    /// Hashes of blobs that hold the event's values (`blob`, `blobs`,
    /// a prompt command's `template`).
    blob_hashes: Vec<String>,
    tools: Vec<String>,
    files: Vec<String>,
    statuses: Vec<String>,
    failed: bool,
}

/// Keys whose string values name a tool.
const TOOL_KEYS: [&str; 3] = ["tool_name", "toolName", "tool"];
/// Keys whose string values name a file.
const FILE_KEYS: [&str; 4] = ["file_path", "filePath", "path", "notebook_path"];

/// Keys whose values (a hash, or a list of them) name blobs of text.
const BLOB_KEYS: [&str; 3] = ["blob", "blobs", "template"];

impl Found {
    /// Adds the text of the blobs the event names (lossily, within the cap).
    fn read_blobs(&mut self, blobs: Blobs<'_>) {
        for hash in std::mem::take(&mut self.blob_hashes) {
            if self.text.len() >= TEXT_BYTES_MAX {
                return;
            }
            if let Some(bytes) = blobs(&hash) {
                self.push_text(&String::from_utf8_lossy(&bytes));
            }
        }
    }

    fn push_text(&mut self, s: &str) {
        if self.text.len() < TEXT_BYTES_MAX {
            let room = TEXT_BYTES_MAX - self.text.len();
            let mut end = s.len().min(room);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.text.push('\n');
        }
    }

    fn walk(&mut self, value: &Value, key: Option<&str>, depth: usize) {
        if depth > 32 {
            return;
        }
        match value {
            Value::String(s) => {
                if let Some(key) = key {
                    // A tool call's title is its tool's name when it is one
                    // word (hooks title a call `Read`, `Bash`, `mcp__x__y`).
                    let named =
                        key == "title" && s.len() <= 128 && !s.contains(char::is_whitespace);
                    if TOOL_KEYS.contains(&key) || named {
                        self.tools.push(s.clone());
                    } else if FILE_KEYS.contains(&key) {
                        self.files.push(s.clone());
                    } else if BLOB_KEYS.contains(&key)
                        && s.len() == 64
                        && s.bytes().all(|b| b.is_ascii_hexdigit())
                    {
                        self.blob_hashes.push(s.clone());
                        return;
                    } else if key == "status" {
                        let status = s.to_lowercase();
                        self.failed |= matches!(status.as_str(), "failed" | "error");
                        self.statuses.push(status);
                    }
                }
                self.push_text(s);
            }
            Value::Number(n) => {
                let nonzero = n.as_i64().is_some_and(|n| n != 0);
                if matches!(key, Some("exit_code" | "exitCode")) && nonzero {
                    self.failed = true;
                }
            }
            Value::Bool(true) if matches!(key, Some("is_error" | "isError")) => {
                self.failed = true;
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(item, key, depth + 1);
                }
            }
            Value::Object(map) => {
                for (k, v) in map {
                    self.walk(v, Some(k), depth + 1);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefixes;

    #[test]
    fn a_file_is_found_by_each_folder_above_it() {
        assert_eq!(
            prefixes("src/payments/webhook.ts").collect::<Vec<_>>(),
            ["src/payments/webhook.ts", "src", "src/payments"]
        );
        assert_eq!(
            prefixes("/abs/a.rs").collect::<Vec<_>>(),
            ["/abs/a.rs", "/abs"]
        );
    }
}
