//! Where each agent keeps its transcripts, which files are transcripts, and the
//! reader of each format.

use std::path::{Path, PathBuf};

use super::transcript::{Subagent, Transcript};
use super::{claude, codex, gemini, qwen};
use crate::kind::AgentKind;

/// What reading one transcript file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranscriptRead {
    /// Items it holds.
    pub items: usize,
    /// Lines that did not parse.
    pub malformed: usize,
}

/// Reads one transcript file of `agent`: how many items it holds, how many lines
/// did not parse (what `import --from` reads, without a log; the fuzz targets call
/// it).
pub fn read_transcript(agent: AgentKind, path: &Path) -> std::io::Result<TranscriptRead> {
    let t = read(agent, path)?;
    Ok(TranscriptRead {
        items: t.items.len(),
        malformed: t.malformed.len(),
    })
}

/// Reads one transcript file of `agent`.
pub(crate) fn read(agent: AgentKind, path: &Path) -> std::io::Result<Transcript> {
    Ok(parse(agent, path, std::fs::read(path)?))
}

/// Parses the bytes of `agent`'s transcript file `path`.
pub(crate) fn parse(agent: AgentKind, path: &Path, bytes: Vec<u8>) -> Transcript {
    let sub = subagent_of(agent, path);
    let meta = sub.as_ref().map(|s| s.meta.clone());
    let mut t = match agent {
        AgentKind::ClaudeCode => claude::read(bytes, sub),
        AgentKind::Codex => codex::read(path, bytes),
        AgentKind::Gemini => gemini::read(path, bytes, sub),
        AgentKind::Qwen => qwen::read(bytes, sub),
    };
    // A subagent's session ends where its meta file says it finished.
    if let Some(meta) = meta {
        t.end_subagent(&meta);
    }
    t
}

/// A subagent's own transcript — Claude Code's `<session>/subagents/agent-<id>.jsonl`,
/// Qwen Code's `subagents/<session>/agent-<id>.jsonl`, Gemini CLI's
/// `chats/<session>/<id>.jsonl` — with its parent session (the folder's name)
/// and what says which call started it: the `.meta.json` beside it (read as
/// an untrusted file: no link followed, at most 64 KiB; a file that is not
/// there, or is refused, or is not JSON, says nothing), or for Gemini CLI
/// the parent's chat, whose `invoke_agent` call names the subagent's id.
fn subagent_of(agent: AgentKind, path: &Path) -> Option<Subagent> {
    let folder = path.parent()?;
    let parent = subagent_parent(agent, path)?.to_string();
    let stem = path.file_stem()?.to_str()?;
    if agent == AgentKind::Gemini {
        let meta = super::gemini_chats::delegation(folder.parent()?, &parent, stem);
        return Some(Subagent { parent, meta });
    }
    let expect = cmdlog_common::private_fs::Expect {
        bytes_max: 64 * 1024,
        private: false,
    };
    let meta = cmdlog_common::private_fs::read_untrusted(
        &folder.join(format!("{stem}.meta.json")),
        expect,
    )
    .ok()
    .and_then(|b| serde_json::from_slice(&b).ok())
    .unwrap_or_default();
    Some(Subagent { parent, meta })
}

/// The session a subagent's transcript at `path` works for, by where it is.
fn subagent_parent(agent: AgentKind, path: &Path) -> Option<&str> {
    let folder = path.parent()?;
    let name = path.file_name()?.to_str()?;
    let parent = match agent {
        AgentKind::ClaudeCode if folder.file_name()? == "subagents" => folder.parent()?,
        AgentKind::Qwen if folder.parent()?.file_name()? == "subagents" => folder,
        // Gemini CLI: `chats/<session>/<subagent's session>.jsonl`.
        AgentKind::Gemini
            if folder.parent()?.file_name()? == "chats" && name.ends_with(".jsonl") =>
        {
            return folder.file_name()?.to_str();
        }
        _ => return None,
    };
    if !name.starts_with("agent-") {
        return None;
    }
    parent.file_name()?.to_str()
}

/// Where `agent` keeps its transcripts, from its documented defaults.
pub fn default_roots(agent: AgentKind, home: &Path) -> Vec<PathBuf> {
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
        AgentKind::Gemini => vec![
            env_dir("GEMINI_CLI_HOME")
                .unwrap_or_else(|| home.to_path_buf())
                .join(".gemini/tmp"),
        ],
        // QWEN_RUNTIME_DIR, else QWEN_HOME, else ~/.qwen (Qwen Code's Storage).
        AgentKind::Qwen => vec![
            env_dir("QWEN_RUNTIME_DIR")
                .or_else(|| env_dir("QWEN_HOME"))
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
        AgentKind::ClaudeCode => name.ends_with(".jsonl"),
        AgentKind::Codex => name.starts_with("rollout-") && name.ends_with(".jsonl"),
        AgentKind::Gemini => {
            (in_chats
                && name.starts_with("session-")
                && (name.ends_with(".jsonl") || name.ends_with(".json")))
                || subagent_parent(agent, path).is_some()
        }
        AgentKind::Qwen => {
            name.ends_with(".jsonl") && (in_chats || subagent_parent(agent, path).is_some())
        }
    }
}

/// The transcript files under `roots` (files given as they are, folders walked),
/// sorted, changed at or after `since` (unix ms).
pub fn files(agent: AgentKind, roots: &[PathBuf], since: Option<u64>) -> Vec<PathBuf> {
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
