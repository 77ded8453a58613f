//! Claude Code changed how it expands a command between releases (2.1.210: a
//! `$N` with no argument kept as written; before, empty text). cmdlog expands by
//! the release the user runs — named in `CMDLOG_AGENT_RELEASES`, asked of the
//! `claude` on PATH (once per binary), announced to a hook (`AI_AGENT`), or read
//! from a transcript — records it on the run, and says which rules it assumed
//! when the release is not known.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::{events, hook};
use cmdlog_test_support::Workspace;

const BODY: &str = "R: one=[$1] two=[$2] p150=[$150]\n";

fn workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", BODY);
    w
}

fn run_json(w: &Workspace, envs: &[(&str, &str)]) -> (Value, String) {
    let mut cmd = w.cmd(&["run", "--json", "/review a b"]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        serde_json::from_slice(&o.stdout).unwrap(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn last_run(w: &Workspace) -> Value {
    events(w)
        .into_iter()
        .rfind(|e| e["type"] == "command/run")
        .unwrap()
}

#[test]
fn each_claude_release_expands_by_its_own_rules_and_the_run_says_which() {
    let w = workspace();
    let (old, _) = run_json(&w, &[("CMDLOG_AGENT_RELEASES", "claude-code=2.1.197")]);
    assert_eq!(old["outcome"]["prompt"], "R: one=[b] two=[] p150=[]\n");
    assert_eq!(
        last_run(&w)["data"]["release"],
        json!({"agent": "claude-code", "version": "2.1.197", "from": "CMDLOG_AGENT_RELEASES", "rules": "Claude Code before 2.1.210"})
    );
    let (new, _) = run_json(&w, &[("CMDLOG_AGENT_RELEASES", "claude-code=2.1.332")]);
    assert_eq!(
        new["outcome"]["prompt"],
        "R: one=[b] two=[$2] p150=[$150]\n"
    );
    // Not known: the current rules, said on stderr and on the run.
    let bare = tempfile::tempdir().unwrap();
    let (assumed, stderr) = run_json(&w, &[("PATH", bare.path().to_str().unwrap())]);
    assert_eq!(assumed["outcome"]["prompt"], new["outcome"]["prompt"]);
    assert!(
        stderr.contains("Claude Code 2.1.210 and later")
            && stderr.contains("CMDLOG_AGENT_RELEASES"),
        "{stderr}"
    );
    assert_eq!(last_run(&w)["data"]["release"]["from"], "assumed");
    // drift re-expands each run by the rules it was made with: no regression.
    let drift = w.ok(&["drift"]);
    assert!(drift.contains("0 engine regressions"), "{drift}");
}

#[test]
fn the_claude_on_path_is_asked_once_per_binary() {
    let w = workspace();
    let bin = tempfile::tempdir().unwrap();
    let asked = bin.path().join("asked");
    let claude = bin.path().join("claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\necho x >> {}\necho '2.1.197 (Claude Code)'\n",
            asked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    for _ in 0..3 {
        let (out, _) = run_json(&w, &[("PATH", &path)]);
        assert_eq!(out["outcome"]["prompt"], "R: one=[b] two=[] p150=[]\n");
    }
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap().lines().count(),
        1,
        "asked once, then remembered"
    );
    assert_eq!(last_run(&w)["data"]["release"]["from"], "claude --version");
    // A new binary (another size) is asked again.
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\necho x >> {}\necho '2.1.332 (Claude Code)' # upgraded\n",
            asked.display()
        ),
    )
    .unwrap();
    let (out, _) = run_json(&w, &[("PATH", &path)]);
    assert_eq!(
        out["outcome"]["prompt"],
        "R: one=[b] two=[$2] p150=[$150]\n"
    );
}

#[test]
fn a_hook_and_an_import_record_the_release_the_agent_named() {
    let w = workspace();
    let payload = json!({"session_id": "rel-1", "cwd": w.ws.path(), "hook_event_name": "UserPromptExpansion",
        "command_name": "review", "command_args": "a b", "prompt": "/review a b"});
    let mut cmd = w.cmd(&["hook", "claude-code"]);
    cmd.env("AI_AGENT", "claude-code_2-1-197_harness");
    let o = {
        use std::io::Write;
        let mut child = cmd.stdin(std::process::Stdio::piped()).spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(o.status.success());
    assert_eq!(last_run(&w)["data"]["release"]["version"], "2.1.197");
    assert_eq!(last_run(&w)["data"]["release"]["from"], "AI_AGENT");
    // Without the variable, nothing is claimed.
    assert!(hook(&w, "claude-code", &payload).status.success());
    assert_eq!(last_run(&w)["data"]["release"]["from"], "assumed");
    let file = w.home.path().join(".claude/projects/-p/rel-2.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"rel-2","version":"2.1.197","timestamp":"2026-11-06T10:00:00.000Z","message":{"role":"user","content":"<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>a b</command-args>"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","sessionId":"rel-2","version":"2.1.197","isMeta":true,"timestamp":"2026-11-06T10:00:00.010Z","message":{"role":"user","content":[{"type":"text","text":"R: one=[b] two=[] p150=[]\n"}]}}"#,
            "\n",
        ),
    )
    .unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    let run = last_run(&w);
    assert_eq!(run["session"], "rel-2");
    assert_eq!(run["data"]["release"]["version"], "2.1.197");
    assert_eq!(run["data"]["release"]["from"], "transcript");
    let prompts: Vec<_> = events(&w)
        .into_iter()
        .filter(|e| e["session"] == "rel-2" && e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].clone())
        .collect();
    assert_eq!(
        prompts,
        [json!("/review a b")],
        "the line as submitted, as the hooks record it"
    );
}
