//! A session's mode as the agent says it: `claude -p` and `codex exec` are
//! headless (non-interactive) sessions, in the hook log and in an import alike;
//! where the agent does not say, the mode is left unknown, not guessed.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use super::events;
use cmdlog_test_support::Workspace;

/// Writes `text` at `path` (`~/…` or `ws/…`); returns where.
fn put(w: &Workspace, path: &str, text: impl AsRef<str>) -> std::path::PathBuf {
    w.put(path, text.as_ref());
    w.path(path)
}

/// Runs `cmd` with `input` on its stdin.
fn pipe(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn created_mode(all: &[Value], session: &str) -> Value {
    all.iter()
        .find(|e| e["session"] == session && e["type"] == "session/created")
        .unwrap_or_else(|| panic!("{session} created: {all:#?}"))["data"]["mode"]
        .clone()
}

fn run_modes(all: &[Value], session: &str) -> Vec<Value> {
    all.iter()
        .filter(|e| e["session"] == session && e["type"] == "command/run")
        .map(|e| e["data"]["mode"].clone())
        .collect()
}

fn claude_hook(w: &Workspace, session: &str, entrypoint: Option<&str>) {
    for (name, fields) in [
        ("SessionStart", json!({"source": "startup"})),
        (
            "UserPromptExpansion",
            json!({"expansion_type": "slash_command", "command_name": "review", "command_args": "x", "prompt": "/review x"}),
        ),
    ] {
        let mut p = json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": name});
        for (k, v) in fields.as_object().unwrap() {
            p[k] = v.clone();
        }
        let mut cmd = w.cmd(&["hook", "claude-code"]);
        if let Some(e) = entrypoint {
            cmd.env("CLAUDE_CODE_ENTRYPOINT", e);
        }
        let out = pipe(cmd, p.to_string().as_bytes());
        assert!(out.status.success(), "{name}");
    }
}

#[test]
fn claude_code_says_headless_to_its_hooks_and_in_its_transcript() {
    let w = Workspace::new();
    claude_hook(&w, "c-print", Some("sdk-cli"));
    claude_hook(&w, "c-term", Some("cli"));
    claude_hook(&w, "c-unsaid", None);
    let all = events(&w);
    assert_eq!(created_mode(&all, "c-print"), "non_interactive");
    assert_eq!(run_modes(&all, "c-print"), vec![json!("non_interactive")]);
    assert_eq!(created_mode(&all, "c-term"), "interactive");
    assert_eq!(run_modes(&all, "c-term"), vec![json!("interactive")]);
    assert_eq!(created_mode(&all, "c-unsaid"), Value::Null, "not guessed");

    // The transcript names its entry point on each line.
    let transcript = put(
        &w,
        "~/.claude/projects/p/c-import.jsonl",
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"c-import","timestamp":"2026-12-01T10:00:00.000Z","entrypoint":"sdk-cli","version":"2.1.332","message":{"role":"user","content":"hello"}}"#,
            "\n"
        ),
    );
    w.ok(&[
        "import",
        "--from",
        "claude-code",
        transcript.to_str().unwrap(),
    ]);
    assert_eq!(created_mode(&events(&w), "c-import"), "non_interactive");
}

#[test]
fn codex_exec_is_headless_from_its_rollout() {
    let w = Workspace::new();
    let codex_home = w.home.path().join(".codex");
    let meta = |source: &str, id: &str| {
        format!(
            "{}\n",
            json!({"timestamp": "2026-12-02T01:18:50.368Z", "type": "session_meta", "payload": {
                "id": id, "cwd": w.ws.path(), "originator": "codex_exec", "cli_version": "0.171.0",
                "source": source, "base_instructions": {"text": "x".repeat(20_000)}}})
        )
    };
    let rollout = put(
        &w,
        "~/.codex/sessions/2026/12/02/rollout-2026-12-02T01-18-50-0001.jsonl",
        meta("exec", "0001"),
    );
    // A payload naming a rollout elsewhere (a workspace's planted file) is not read.
    let planted = put(&w, "ws/rollout-planted.jsonl", meta("exec", "0002"));
    for (session, path) in [("0001", &rollout), ("0002", &planted)] {
        let p = json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": "SessionStart",
            "source": "startup", "transcript_path": path});
        let mut cmd = w.cmd(&["hook", "codex"]);
        cmd.env("CODEX_HOME", &codex_home);
        assert!(pipe(cmd, p.to_string().as_bytes()).status.success());
    }
    let all = events(&w);
    assert_eq!(created_mode(&all, "0001"), "non_interactive");
    assert_eq!(created_mode(&all, "0002"), Value::Null);

    // The import reads the same line.
    let interactive = put(
        &w,
        "~/elsewhere/rollout-2026-12-02T01-19-00-0003.jsonl",
        meta("cli", "0003"),
    );
    w.ok(&["import", "--from", "codex", interactive.to_str().unwrap()]);
    assert_eq!(created_mode(&events(&w), "0003"), "interactive");
}
