//! The agents cmdlog reads, and what their payloads and transcripts share: the
//! log key of an agent's session id, JSON fields, ACP tool kinds.

use serde_json::Value;

/// A name that is not one of the agents cmdlog reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent {0:?}: use claude-code, codex, gemini or qwen")]
pub struct UnknownAgent(pub String);

/// An agent cmdlog reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
    /// Qwen Code.
    Qwen,
}

impl AgentKind {
    /// Every agent cmdlog knows.
    pub const ALL: [AgentKind; 4] = [
        AgentKind::ClaudeCode,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Qwen,
    ];

    /// Reads an agent's name, as the verbs take it.
    pub fn parse(name: &str) -> Result<AgentKind, UnknownAgent> {
        match name {
            "claude-code" | "claude" => Ok(AgentKind::ClaudeCode),
            "codex" => Ok(AgentKind::Codex),
            "gemini" | "gemini-cli" => Ok(AgentKind::Gemini),
            "qwen" | "qwen-code" => Ok(AgentKind::Qwen),
            other => Err(UnknownAgent(other.to_string())),
        }
    }

    /// Its name in the log (the sessions' agent).
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Qwen => "qwen",
        }
    }

    /// Its product name, for messages to a person.
    pub fn display_name(self) -> &'static str {
        match self {
            AgentKind::ClaudeCode => "Claude Code",
            AgentKind::Codex => "Codex",
            AgentKind::Gemini => "Gemini CLI",
            AgentKind::Qwen => "Qwen Code",
        }
    }

    /// The environment variable the agent sets to its project folder for hooks.
    pub fn project_dir_env(self) -> Option<&'static str> {
        match self {
            AgentKind::ClaudeCode => Some("CLAUDE_PROJECT_DIR"),
            AgentKind::Codex => None,
            AgentKind::Gemini => Some("GEMINI_PROJECT_DIR"),
            AgentKind::Qwen => Some("QWEN_PROJECT_DIR"),
        }
    }

    /// The discovery providers whose files this agent reads its commands from.
    pub fn providers(self) -> &'static [&'static str] {
        match self {
            AgentKind::ClaudeCode => &["claude", "claude-plugins"],
            AgentKind::Codex => &["codex"],
            AgentKind::Gemini => &["gemini"],
            AgentKind::Qwen => &["qwen"],
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use cmdlog_common::time::parse_rfc3339 as parse_time;

    #[test]
    fn names_times_and_keys() {
        for a in AgentKind::ALL {
            assert_eq!(AgentKind::parse(a.name()), Ok(a));
        }
        assert!(
            AgentKind::parse("cursor")
                .unwrap_err()
                .to_string()
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
