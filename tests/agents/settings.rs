//! `cmdlog hooks install|uninstall` on the agents' settings files: comments,
//! unknown keys and layout kept, broken files refused, and uninstall giving the
//! user's file back byte for byte — the same text, or no file when there was
//! none, through a link as well.

use serde_json::Value;

use cmdlog_test_support::Workspace;

#[test]
fn hooks_install_keeps_comments_and_unknown_keys_and_refuses_broken_files() {
    let w = Workspace::new();
    let original = "{\n  // mine\n  \"model\": \"opus\",\n  \"customThing\": {\"x\": [1, 2]},\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]\n  }\n}\n";
    // Qwen Code reads comments in its settings (it strips them first).
    w.put("ws/.qwen/settings.json", original);
    let path = w.ws.path().join(".qwen/settings.json");
    let dry = w.ok(&["hooks", "install", "qwen", "--dry-run"]);
    assert!(
        dry.contains("+") && dry.contains("hook qwen") && dry.contains("dry run"),
        "{dry}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original,
        "a dry run writes nothing"
    );
    let done = w.ok(&["hooks", "install", "qwen"]);
    assert!(done.contains("hooked 14 event(s)"), "{done}");
    let after = std::fs::read_to_string(&path).unwrap();
    for kept in ["// mine", "\"customThing\"", "notify-send done", "\"opus\""] {
        assert!(after.contains(kept), "{kept}: {after}");
    }
    // The file as it was is kept in the private state folder, and said where.
    let kept = done
        .lines()
        .find_map(|l| l.strip_prefix("the file as it was is kept in "))
        .expect("the copy is named");
    assert!(kept.starts_with(w.home.path().join(".local/state/cmdlog").to_str().unwrap()));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), original);
    assert!(
        !w.ws
            .path()
            .join(".qwen/settings.json.cmdlog-backup")
            .exists()
    );
    assert!(
        w.ok(&["hooks", "install", "qwen"])
            .contains("nothing to do")
    );
    let out = w.ok(&["hooks", "uninstall", "qwen"]);
    assert!(out.contains("unhooked"), "{out}");
    let back = std::fs::read_to_string(&path).unwrap();
    assert!(
        back.contains("notify-send done") && !back.contains("hook qwen"),
        "{back}"
    );
    // The other agents' files, from nothing.
    for (agent, file) in [
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("claude-code", ".claude/settings.json"),
    ] {
        w.ok(&["hooks", "install", agent]);
        let text = std::fs::read_to_string(w.ws.path().join(file)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(
            v["hooks"].as_object().unwrap().len() >= 6,
            "{agent}: {text}"
        );
    }
    // A settings file that does not parse is refused, and left as it was.
    let broken = "{\n  \"general\": {\n    \"x\": 1,,\n  }\n}\n";
    w.put("ws/.qwen/settings.json", broken);
    let o = w.run(&["hooks", "install", "qwen"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(".qwen/settings.json:3:"), "{err}");
    assert_eq!(
        std::fs::read_to_string(w.ws.path().join(".qwen/settings.json")).unwrap(),
        broken
    );
    // A file the agent itself would not load is refused as the agent reads it:
    // Claude Code and Codex read strict JSON (no comments), and no agent reads
    // a missing comma. Refused with where, and left as it was.
    for (agent, file, text, at) in [
        (
            "claude-code",
            ".claude/settings.json",
            "{\n  // mine\n  \"model\": \"opus\"\n}\n",
            ":2:3: ",
        ),
        (
            "codex",
            ".codex/hooks.json",
            "{\"hooks\": {}\n \"x\": 1}",
            ":1:13: ",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "{\"a\": 1\n\"b\": 2}",
            ":1:8: ",
        ),
    ] {
        w.put(&format!("ws/{file}"), text);
        let o = w.run(&["hooks", "install", agent]);
        assert_eq!(o.status.code(), Some(2), "{agent}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("{file}{at}")), "{agent}: {err}");
        assert!(err.contains("would not load it"), "{agent}: {err}");
        assert_eq!(
            std::fs::read_to_string(w.ws.path().join(file)).unwrap(),
            text,
            "{agent}"
        );
    }
}

/// Installs and then uninstalls `agent`'s hooks in the workspace.
fn install_then_uninstall(w: &Workspace, agent: &str) {
    let done = w.ok(&["hooks", "install", agent]);
    assert!(done.contains("hooked"), "{agent}: {done}");
    let out = w.ok(&["hooks", "uninstall", agent]);
    assert!(out.contains("unhooked"), "{agent}: {out}");
}

#[test]
fn uninstall_gives_the_users_file_back_byte_for_byte() {
    use std::os::unix::fs::PermissionsExt;
    let w = Workspace::new();
    // Layouts the syntax-tree edit would not reproduce: tabs, one-line arrays,
    // comments (where the agent reads them), no final newline, an empty hooks
    // object of the user's own.
    let originals = [
        (
            "claude-code",
            ".claude/settings.json",
            "{\n\t\"model\": \"opus\", \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]}\n}",
        ),
        ("codex", ".codex/hooks.json", "{ \"hooks\": {} }\n"),
        (
            "gemini",
            ".gemini/settings.json",
            "{\n    // mine\n    \"ui\": {\"theme\": \"ANSI\"},\n    \"hooks\": {}\n}\n\n",
        ),
        (
            "qwen",
            ".qwen/settings.json",
            "{\"general\":{\"vimMode\":true}}",
        ),
    ];
    for (agent, file, original) in originals {
        w.put(&format!("ws/{file}"), original);
        let path = w.ws.path().join(file);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        install_then_uninstall(&w, agent);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            original,
            "{agent}: uninstall gives the file back as it was"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "{agent}: its mode too");
        assert!(
            w.ok(&["hooks", "uninstall", agent])
                .contains("nothing to do"),
            "{agent}: a second uninstall changes nothing"
        );
    }
}

#[test]
fn uninstall_removes_a_file_and_the_folders_that_were_not_there() {
    let w = Workspace::new();
    for (agent, dir, file) in [
        ("codex", ".codex", "hooks.json"),
        ("claude-code", ".claude", "settings.json"),
        ("gemini", ".gemini", "settings.json"),
        ("qwen", ".qwen", "settings.json"),
    ] {
        let folder = w.ws.path().join(dir);
        assert!(!folder.exists());
        w.ok(&["hooks", "install", agent]);
        assert!(folder.join(file).is_file(), "{agent}: installed");
        let out = w.ok(&["hooks", "uninstall", agent]);
        assert!(out.contains("removed"), "{agent}: {out}");
        assert!(
            !folder.exists(),
            "{agent}: no file and no folder left where there were none"
        );
    }
    // A folder that held something else by then stays, with it.
    w.ok(&["hooks", "install", "claude-code"]);
    w.put("ws/.claude/commands/review.md", "Review $ARGUMENTS\n");
    w.ok(&["hooks", "uninstall", "claude-code"]);
    assert!(!w.ws.path().join(".claude/settings.json").exists());
    assert!(w.ws.path().join(".claude/commands/review.md").is_file());
}

#[test]
fn uninstall_through_a_link_restores_the_linked_file_and_keeps_the_link() {
    let w = Workspace::new();
    let original = "{\n  \"model\": \"sonnet\"\n}\n";
    w.put("ws/dotfiles/claude.json", original);
    std::fs::create_dir_all(w.ws.path().join(".claude")).unwrap();
    let link = w.ws.path().join(".claude/settings.json");
    std::os::unix::fs::symlink("../dotfiles/claude.json", &link).unwrap();
    w.ok(&["hooks", "install", "claude-code"]);
    let installed = std::fs::read_to_string(w.ws.path().join("dotfiles/claude.json")).unwrap();
    assert!(installed.contains("hook claude-code"), "{installed}");
    w.ok(&["hooks", "uninstall", "claude-code"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("../dotfiles/claude.json")
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.path().join("dotfiles/claude.json")).unwrap(),
        original
    );
}

#[test]
fn uninstall_after_the_user_edited_the_file_keeps_their_edit() {
    let w = Workspace::new();
    w.put(
        "ws/.gemini/settings.json",
        "{\n  \"ui\": {\"theme\": \"ANSI\"}\n}\n",
    );
    w.ok(&["hooks", "install", "gemini"]);
    let path = w.ws.path().join(".gemini/settings.json");
    let installed = std::fs::read_to_string(&path).unwrap();
    let edited = installed.replacen('{', "{\n  \"model\": {\"name\": \"gemini-3-pro\"},", 1);
    std::fs::write(&path, &edited).unwrap();
    w.ok(&["hooks", "uninstall", "gemini"]);
    let back = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(value["model"]["name"], "gemini-3-pro", "{back}");
    assert_eq!(value["ui"]["theme"], "ANSI", "{back}");
    assert!(
        value.get("hooks").is_none(),
        "no empty hooks object is left behind: {back}"
    );
}

#[test]
fn hooks_status_says_where_they_are_and_when_a_payload_last_came() {
    let w = Workspace::new();
    let status = w.ok(&["hooks", "status"]);
    assert!(
        status.lines().all(|l| l.contains("not installed")),
        "{status}"
    );
    w.ok(&["hooks", "install", "codex"]);
    w.ok(&["hooks", "install", "qwen"]);
    let status = w.ok(&["hooks", "status"]);
    let line = |agent: &str| {
        status
            .lines()
            .find(|l| l.starts_with(agent))
            .unwrap_or_else(|| panic!("{agent}: {status}"))
            .to_string()
    };
    assert!(
        line("codex").contains(".codex/hooks.json")
            && line("codex").contains("Codex skips hooks it does not trust"),
        "a silent trust gate is named: {status}"
    );
    assert!(
        line("qwen").contains("no payload has arrived yet"),
        "{status}"
    );
    let payload = serde_json::json!({"session_id": "st-1", "cwd": w.ws.path(), "hook_event_name": "UserPromptSubmit", "prompt": "hi"});
    let mut child = w
        .cmd(&["hook", "qwen"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        payload.to_string().as_bytes(),
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    let report: Value = serde_json::from_str(&w.ok(&["hooks", "status", "--json"])).unwrap();
    let qwen = report
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["agent"] == "qwen")
        .unwrap();
    assert_eq!(qwen["last"]["event"], "session/prompt", "{qwen}");
    assert!(
        report
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["agent"] == "codex" && s["last"].is_null())
    );
    let install = w.ok(&["hooks", "install", "claude-code"]);
    assert!(!install.contains("--dangerously-bypass-hook-trust"));
    w.ok(&["hooks", "uninstall", "codex"]);
    let again = w.ok(&["hooks", "install", "codex"]);
    assert!(
        again.contains("--dangerously-bypass-hook-trust") && again.contains("/hooks"),
        "headless and interactive trust explained: {again}"
    );
}

#[test]
fn otel_setup_points_each_agent_at_the_daemon_and_remove_gives_the_file_back() {
    let w = Workspace::new();
    // Claude Code: the user's settings (its project settings cannot turn
    // telemetry on), a file of the user's kept byte for byte.
    let original = "{\n  \"model\": \"opus\",\n  \"env\": {\n    \"MINE\": \"1\"\n  }\n}\n";
    w.put("~/.claude/settings.json", original);
    let path = w.path("~/.claude/settings.json");
    let o = w.run(&["otel", "setup", "claude-code", "--scope", "project"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--scope user"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dry = w.ok(&[
        "otel",
        "setup",
        "claude-code",
        "--url",
        "http://127.0.0.1:4999",
        "--dry-run",
    ]);
    assert!(
        dry.contains("+    \"OTEL_LOGS_EXPORTER\": \"otlp\""),
        "{dry}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    let out = w
        .cmd(&[
            "otel",
            "setup",
            "claude-code",
            "--url",
            "http://127.0.0.1:4999",
        ])
        .env("CMDLOG_TOKEN", "sekrit-token")
        .output()
        .unwrap();
    assert!(out.status.success());
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        !shown.contains("sekrit-token"),
        "the token is not shown: {shown}"
    );
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        set["env"]["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"],
        "http://127.0.0.1:4999/v1/logs"
    );
    assert_eq!(
        set["env"]["OTEL_EXPORTER_OTLP_LOGS_HEADERS"],
        "Authorization=Bearer sekrit-token"
    );
    // Set already: nothing to do.
    assert!(
        w.ok(&[
            "otel",
            "setup",
            "claude-code",
            "--url",
            "http://127.0.0.1:4999"
        ])
        .contains("nothing to do")
    );
    w.ok(&["otel", "remove", "claude-code"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);

    // Hooks and telemetry in one file: each taken out on its own.
    w.ok(&["hooks", "install", "claude-code", "--scope", "user"]);
    w.ok(&["otel", "setup", "claude-code"]);
    w.ok(&["hooks", "uninstall", "claude-code", "--scope", "user"]);
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(left.get("hooks").is_none(), "{left}");
    assert_eq!(left["env"]["OTEL_LOGS_EXPORTER"], "otlp");
    w.ok(&["otel", "remove", "claude-code"]);
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(original).unwrap());

    // A token never goes into a project's settings.
    let o = w
        .cmd(&["otel", "setup", "qwen", "--scope", "project"])
        .env("CMDLOG_TOKEN", "t")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // Codex: an [otel] table appended to a config of the user's, then taken out.
    let config = "model = \"gpt-5\"\n";
    w.put("~/.codex/config.toml", config);
    w.ok(&["otel", "setup", "codex"]);
    let toml = std::fs::read_to_string(w.path("~/.codex/config.toml")).unwrap();
    assert!(
        toml.contains("[otel]") && toml.starts_with(config),
        "{toml}"
    );
    w.ok(&["otel", "remove", "codex"]);
    assert_eq!(
        std::fs::read_to_string(w.path("~/.codex/config.toml")).unwrap(),
        config
    );
}

#[test]
fn otel_setup_keeps_the_daemons_token_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let w = Workspace::new();
    // An existing settings file others can read: tightened, and said so.
    w.put("~/.claude/settings.json", "{}\n");
    let claude = w.path("~/.claude/settings.json");
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o644)).unwrap();
    let setup = |agent: &str| {
        let out = w
            .cmd(&["otel", "setup", agent, "--url", "http://127.0.0.1:4999"])
            .env("CMDLOG_TOKEN", "sekrit-token")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = setup("claude-code");
    assert_eq!(mode(&claude), 0o600);
    assert!(said.contains("was mode 0644; now 0600"), "{said}");
    // A file made for the token (Codex's config) is owner-only from the start.
    setup("codex");
    let codex = w.path("~/.codex/config.toml");
    assert!(
        std::fs::read_to_string(&codex)
            .unwrap()
            .contains("sekrit-token")
    );
    assert_eq!(mode(&codex), 0o600);
    // Without a token nothing secret is written: the mode stays the user's.
    w.ok(&["otel", "remove", "claude-code"]);
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o644)).unwrap();
    w.ok(&[
        "otel",
        "setup",
        "claude-code",
        "--url",
        "http://127.0.0.1:4999",
    ]);
    assert_eq!(mode(&claude), 0o644);
}
