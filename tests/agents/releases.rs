//! Claude Code changed how it expands a command between releases (2.1.210: a
//! `$N` with no argument kept as written; before, empty text). cmdlog expands by
//! the release the user runs — named in `CMDLOG_AGENT_RELEASES`, read from the
//! installed package of the `claude` on PATH (never run: design R11), announced
//! to a hook (`AI_AGENT`), or read from a transcript — records it on the run, and
//! says which rules it assumed when the release is not known.

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

/// A `claude` that leaves a mark if anything runs it.
fn marking_claude(path: &std::path::Path, marker: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\necho ran >> {}\necho '2.1.197 (Claude Code)'\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_release_is_read_from_the_installed_package_and_nothing_is_run() {
    let w = workspace();
    let marker = w.home.path().join("ran");
    // npm's layout: bin/claude links to the package's executable.
    let prefix = tempfile::tempdir().unwrap();
    let package = prefix
        .path()
        .join("lib/node_modules/@anthropic-ai/claude-code");
    marking_claude(&package.join("bin/claude.exe"), &marker);
    let manifest = |version: &str| {
        std::fs::write(
            package.join("package.json"),
            json!({"name": "@anthropic-ai/claude-code", "version": version}).to_string(),
        )
        .unwrap()
    };
    manifest("2.1.197");
    std::fs::create_dir_all(prefix.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(
        package.join("bin/claude.exe"),
        prefix.path().join("bin/claude"),
    )
    .unwrap();
    let path = format!("{}:/usr/bin:/bin", prefix.path().join("bin").display());
    let (out, _) = run_json(&w, &[("PATH", &path)]);
    assert_eq!(out["outcome"]["prompt"], "R: one=[b] two=[] p150=[]\n");
    let from = last_run(&w)["data"]["release"]["from"].clone();
    assert!(
        from.as_str().unwrap().ends_with("claude-code/package.json"),
        "{from}"
    );
    // An upgrade is read at the next run.
    manifest("2.1.332");
    let (out, _) = run_json(&w, &[("PATH", &path)]);
    assert_eq!(
        out["outcome"]["prompt"],
        "R: one=[b] two=[$2] p150=[$150]\n"
    );
    // The native installer's layout: the executable named by its release.
    let native = tempfile::tempdir().unwrap();
    marking_claude(
        &native.path().join("share/claude/versions/2.1.197"),
        &marker,
    );
    std::fs::create_dir_all(native.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(
        native.path().join("share/claude/versions/2.1.197"),
        native.path().join("bin/claude"),
    )
    .unwrap();
    let path = format!("{}:/usr/bin:/bin", native.path().join("bin").display());
    let (out, _) = run_json(&w, &[("PATH", &path)]);
    assert_eq!(out["outcome"]["prompt"], "R: one=[b] two=[] p150=[]\n");
    assert!(!marker.exists(), "cmdlog ran the agent's executable");
}

#[test]
fn a_claude_planted_in_the_workspace_or_a_strangers_folder_is_never_run_nor_read() {
    let w = workspace();
    let ws = w.ws.path().to_path_buf();
    let marker = w.home.path().join("ran");
    // Each with a package.json that claims an old release.
    let plant = |dir: &std::path::Path| {
        marking_claude(&dir.join("claude"), &marker);
        std::fs::write(
            dir.join("package.json"),
            json!({"name": "@anthropic-ai/claude-code", "version": "2.1.197"}).to_string(),
        )
        .unwrap();
    };
    plant(&ws.join("bin"));
    plant(&ws.join("node_modules/.bin"));
    plant(&ws);
    let mut shapes = vec![
        (
            "direnv's PATH_add bin",
            ws.join("bin").display().to_string(),
        ),
        (
            "node_modules/.bin",
            ws.join("node_modules/.bin").display().to_string(),
        ),
        (
            "relative node_modules/.bin",
            "node_modules/.bin".to_string(),
        ),
        (".", ".".to_string()),
        ("an empty entry", String::new()),
    ];
    // A folder of another user (root can make one).
    let stranger = tempfile::tempdir().unwrap();
    let theirs = stranger.path().join("bin");
    plant(&theirs);
    if std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_ok() {
        shapes.push(("another user's folder", theirs.display().to_string()));
    } else {
        eprintln!("SKIPPED (shape): another user's folder needs root to make");
    }
    for (shape, dir) in shapes {
        let path = format!("{dir}:/usr/bin:/bin");
        let (out, _) = run_json(&w, &[("PATH", &path)]);
        assert_eq!(
            out["outcome"]["prompt"], "R: one=[b] two=[$2] p150=[$150]\n",
            "{shape}: the current rules, assumed"
        );
        assert_eq!(
            last_run(&w)["data"]["release"]["from"],
            "assumed",
            "{shape}"
        );
        assert!(!marker.exists(), "{shape}: cmdlog ran a planted claude");
    }
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
