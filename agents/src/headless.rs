//! Whether an agent's session runs headless (`claude -p`, `codex exec`) or with a
//! person at it: the mode of the session and its runs. Each agent says it its
//! own way, and two do not say it to a hook at all:
//!
//! - Claude Code sets `CLAUDE_CODE_ENTRYPOINT` for its hooks — `cli` in the
//!   terminal, `sdk-cli` for `-p` (`sdk-ts`, `sdk-py` from the SDKs) — and writes
//!   the same `entrypoint` on each transcript line;
//! - Codex names its session's `source` (`cli`, `vscode`, `exec`, `mcp`) in the
//!   first line of its rollout, the file a hook payload's `transcript_path` names;
//! - Gemini CLI 0.61 and Qwen Code 0.24 tell neither their hooks nor their
//!   transcripts: their sessions' mode is left unknown rather than guessed.
//!
//! Checked against the pinned CLIs (`tests/agents-real`).

use std::path::{Path, PathBuf};

use cmdlog_engine::Mode;
use serde_json::Value;

use crate::kind::AgentKind;
use crate::limits::ROLLOUT_HEAD_BYTES_MAX;

/// The mode Claude Code's entry point means.
pub(crate) fn claude_entrypoint_mode(entrypoint: &str) -> Option<Mode> {
    match entrypoint {
        "" => None,
        e if e.starts_with("sdk") => Some(Mode::NonInteractive),
        _ => Some(Mode::Interactive),
    }
}

/// The mode a Codex session `source` means.
pub(crate) fn codex_source_mode(source: &str) -> Option<Mode> {
    match source {
        "cli" | "vscode" => Some(Mode::Interactive),
        "exec" | "mcp" => Some(Mode::NonInteractive),
        _ => None,
    }
}

/// The mode of the session a hook `payload` of `agent` comes from, as the agent
/// tells its hook (its environment, or for Codex the rollout the payload names,
/// read only under `$CODEX_HOME/sessions`); `None` when it does not say.
pub fn hook_mode(agent: AgentKind, payload: &[u8]) -> Option<Mode> {
    match agent {
        AgentKind::ClaudeCode => {
            claude_entrypoint_mode(&std::env::var("CLAUDE_CODE_ENTRYPOINT").ok()?)
        }
        AgentKind::Codex => {
            let payload: Value = serde_json::from_slice(payload).ok()?;
            let rollout = Path::new(payload["transcript_path"].as_str()?);
            codex_source_mode(&rollout_source(rollout, &codex_sessions()?)?)
        }
        AgentKind::Gemini | AgentKind::Qwen => None,
    }
}

/// Where Codex keeps its rollouts: `$CODEX_HOME/sessions`, else `~/.codex/sessions`.
fn codex_sessions() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = non_empty("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".codex")))?;
    Some(home.join("sessions"))
}

/// The `source` in the `session_meta` line that starts a Codex rollout, when
/// `path` is a rollout file under `sessions` (no link followed, the head read).
fn rollout_source(path: &Path, sessions: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let root = std::fs::canonicalize(sessions).ok()?;
    let name = real.file_name()?.to_str()?;
    if real != path || !real.starts_with(&root) || !name.starts_with("rollout-") {
        return None;
    }
    let head =
        cmdlog_common::private_fs::read_untrusted_head(&real, ROLLOUT_HEAD_BYTES_MAX).ok()?;
    let first = head.split(|b| *b == b'\n').next()?;
    let line: Value = serde_json::from_slice(first).ok()?;
    (line["type"] == "session_meta")
        .then(|| line["payload"]["source"].as_str().map(str::to_string))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_and_sources() {
        assert_eq!(claude_entrypoint_mode("cli"), Some(Mode::Interactive));
        assert_eq!(
            claude_entrypoint_mode("sdk-cli"),
            Some(Mode::NonInteractive)
        );
        assert_eq!(claude_entrypoint_mode("sdk-ts"), Some(Mode::NonInteractive));
        assert_eq!(claude_entrypoint_mode(""), None);
        assert_eq!(codex_source_mode("exec"), Some(Mode::NonInteractive));
        assert_eq!(codex_source_mode("cli"), Some(Mode::Interactive));
        assert_eq!(codex_source_mode("something-new"), None);
    }

    #[test]
    fn a_rollout_is_read_only_under_the_sessions_folder_and_not_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions/2026/12/02");
        std::fs::create_dir_all(&sessions).unwrap();
        let rollout = sessions.join("rollout-x.jsonl");
        std::fs::write(
            &rollout,
            "{\"type\":\"session_meta\",\"payload\":{\"source\":\"exec\",\"base_instructions\":{\"text\":\"long\"}}}\n{}\n",
        )
        .unwrap();
        let root = dir.path().join("sessions");
        assert_eq!(rollout_source(&rollout, &root).as_deref(), Some("exec"));
        // Outside the folder, or by a link: not read.
        let outside = dir.path().join("rollout-y.jsonl");
        std::fs::copy(&rollout, &outside).unwrap();
        assert_eq!(rollout_source(&outside, &root), None);
        let link = sessions.join("rollout-link.jsonl");
        std::os::unix::fs::symlink(&rollout, &link).unwrap();
        assert_eq!(rollout_source(&link, &root), None);
        // Not a rollout's name.
        let other = sessions.join("history.jsonl");
        std::fs::copy(&rollout, &other).unwrap();
        assert_eq!(rollout_source(&other, &root), None);
    }
}
