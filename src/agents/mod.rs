//! The agents people already run — Claude Code, Codex, Gemini CLI, Qwen Code — as
//! cmdlog records them: their hook payloads (`hook.rs`) and transcripts
//! (`transcripts/`) mapped to cmdlog's events, appended as one atomic unit per
//! payload (`append.rs`), kept in a spill folder when the log cannot take them
//! (`spill.rs`), secrets redacted on request (`redact.rs`), and cmdlog's hook
//! entries written into each agent's settings (`install.rs`). `docs/agents.md`
//! cites each agent's documentation for every field read here.

pub(crate) mod agreement;
pub(crate) mod append;
pub(crate) mod hook;
pub(crate) mod install;
pub(crate) mod spill;
pub(crate) mod transcripts;

use cmdlog_engine::{EventData, Observed, Outcome};
use serde_json::Value;

/// An agent cmdlog reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AgentKind {
    ClaudeCode,
    Codex,
    Gemini,
    Qwen,
}

impl AgentKind {
    #[cfg(test)]
    pub(crate) const ALL: [AgentKind; 4] = [
        AgentKind::ClaudeCode,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Qwen,
    ];

    /// Reads an agent's name, as the verbs take it.
    pub(crate) fn parse(name: &str) -> Result<AgentKind, String> {
        match name {
            "claude-code" | "claude" => Ok(AgentKind::ClaudeCode),
            "codex" => Ok(AgentKind::Codex),
            "gemini" | "gemini-cli" => Ok(AgentKind::Gemini),
            "qwen" | "qwen-code" => Ok(AgentKind::Qwen),
            other => Err(format!(
                "unknown agent {other:?}: use claude-code, codex, gemini or qwen"
            )),
        }
    }

    /// Its name in the log (the sessions' agent).
    pub(crate) fn name(self) -> &'static str {
        match self {
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Qwen => "qwen",
        }
    }

    /// The environment variable the agent sets to its project folder for hooks.
    pub(crate) fn project_dir_env(self) -> Option<&'static str> {
        match self {
            AgentKind::ClaudeCode => Some("CLAUDE_PROJECT_DIR"),
            AgentKind::Codex => None,
            AgentKind::Gemini => Some("GEMINI_PROJECT_DIR"),
            AgentKind::Qwen => Some("QWEN_PROJECT_DIR"),
        }
    }

    /// The discovery providers whose files this agent reads its commands from.
    pub(crate) fn providers(self) -> &'static [&'static str] {
        match self {
            AgentKind::ClaudeCode => &["claude", "claude-plugins"],
            AgentKind::Codex => &["codex"],
            AgentKind::Gemini => &["gemini"],
            AgentKind::Qwen => &["qwen"],
        }
    }
}

/// One event to append, before it has a seq.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    /// Its session (the log key), or log-wide.
    pub(crate) session: Option<String>,
    pub(crate) observed: Option<Observed>,
    pub(crate) data: PlannedData,
}

/// An event's data, or a `command/done` for a run planned in the same append.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlannedData {
    Ready(EventData),
    /// A `session/update` whose update is JSON text already (read from a
    /// transcript): appended as it is, never decoded and encoded again.
    Update(transcripts::Update),
    /// The `command/done` of the run planned at this index of the same append.
    DoneOf {
        run_index: usize,
        outcome: Outcome,
        agent_check: Option<cmdlog_engine::AgentCheck>,
    },
}

/// The log key of an agent's session id: itself when it is a valid cmdlog id,
/// else `<agent>-` and a hash of it.
pub(crate) fn session_key(agent: AgentKind, id: &str) -> String {
    if cmdlog_engine::valid_id(id) {
        id.to_string()
    } else {
        let mut hex = cmdlog_store::BlobHash::of(id.as_bytes()).to_hex();
        hex.truncate(24);
        format!("{}-{hex}", agent.name())
    }
}

/// Unix milliseconds of an RFC 3339 time (`2026-08-01T10:00:00.000Z`).
pub(crate) fn parse_time(text: &str) -> Option<u64> {
    humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
        .ok()
        .or_else(|| humantime::parse_rfc3339(text).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
}

/// A string field of a JSON object.
pub(crate) fn text<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v.get(field).and_then(Value::as_str)
}

/// An ACP tool kind for an agent's tool name.
pub(crate) fn tool_kind(tool: &str) -> &'static str {
    let t = tool.to_ascii_lowercase();
    if t.contains("read") || t == "view" || t == "cat" || t.contains("glob") || t == "ls" {
        "read"
    } else if t.contains("write") || t.contains("edit") || t.contains("patch") || t == "replace" {
        "edit"
    } else if t.contains("grep") || t.contains("search") || t.contains("find") {
        "search"
    } else if t.contains("bash") || t.contains("shell") || t.contains("exec") || t.contains("run") {
        "execute"
    } else if t.contains("fetch") || t.contains("web") {
        "fetch"
    } else if t.contains("think") || t.contains("todo") || t.contains("task") {
        "think"
    } else {
        "other"
    }
}

/// One payload of `agent`, as the text the agent wrote, made ready to append:
/// secrets redacted when asked (and the redaction noted), mapped, and the agent's
/// expansion of a slash command checked against cmdlog's (`discovery` is asked
/// for only then). A payload that is not JSON is kept as text.
pub(crate) fn batch_for(
    agent: AgentKind,
    text_in: &str,
    redact: bool,
    discovery: impl FnOnce() -> Option<cmdlog_engine::Discovery>,
) -> append::Batch {
    let mut batch = append::Batch::new(agent.name());
    let source = format!("{} hook", agent.name());
    let mut found = cmdlog_replay::Redaction::default();
    let Ok(mut payload) = serde_json::from_str::<Value>(text_in) else {
        let mut raw = Value::String(text_in.to_string());
        if redact {
            cmdlog_replay::redact_value(&mut raw, &mut found);
        }
        batch.extend(vec![Planned {
            session: None,
            observed: Some(Observed {
                source: source.clone(),
                key: None,
                at: None,
            }),
            data: PlannedData::Ready(EventData::AgentEvent(cmdlog_engine::AgentEvent {
                agent: agent.name().into(),
                event: "unreadable payload".into(),
                data: raw,
            })),
        }]);
        batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
        return batch;
    };
    if redact {
        cmdlog_replay::redact_value(&mut payload, &mut found);
    }
    let mut plan = hook::plan(agent, &payload);
    if let Some(expansion) = &plan.expansion
        && expansion.prompt.is_some()
        && let Some(discovery) = discovery()
        && let Some(check) = agreement::check(agent, &discovery, expansion)
        && let Some(Planned {
            data: PlannedData::DoneOf { agent_check, .. },
            ..
        }) = plan.events.get_mut(expansion.done_index)
    {
        *agent_check = Some(check);
    }
    batch.extend(plan.events);
    batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
    batch
}

/// Appends `batch` to `log` (blocking), starting the sessions it names that the
/// log has not seen.
pub(crate) fn append_to(
    log: &cmdlog_store::Log,
    mut batch: append::Batch,
    at: u64,
) -> Result<cmdlog_store::Receipt, String> {
    batch
        .create_sessions(|s| log.has_stream(s).map(|seen| !seen))
        .map_err(|e| e.to_string())?;
    batch.append(log, at).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_times_and_keys() {
        for a in AgentKind::ALL {
            assert_eq!(AgentKind::parse(a.name()), Ok(a));
        }
        assert!(
            AgentKind::parse("cursor")
                .unwrap_err()
                .contains("claude-code")
        );
        assert_eq!(parse_time("2026-08-01T10:00:00.000Z"), Some(1785578400000));
        assert_eq!(parse_time("2026-08-01T10:00:00Z"), Some(1785578400000));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(session_key(AgentKind::Codex, "0199a2-x"), "0199a2-x");
        assert!(session_key(AgentKind::Codex, "a b").starts_with("codex-"));
        assert_eq!(tool_kind("Bash"), "execute");
        assert_eq!(tool_kind("write_file"), "edit");
        assert_eq!(tool_kind("Read"), "read");
    }
}
