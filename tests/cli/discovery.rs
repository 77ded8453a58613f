//! Command files of every agent, as a person sees them through the CLI.

use cmdlog_test_support::Workspace;

fn agents_workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", "---\ndescription: Review a file\nargument-hint: <file> [focus...]\n---\nReview $0. Focus on: $1 and $2\n")
        .put("~/.codex/prompts/review.md", "Codex review of $ARGUMENTS\n")
        .put("~/.codex/prompts/plan.md", "---\nname: plan-work\n---\nPlan the work for $ARGUMENTS\n")
        .put("ws/.gemini/commands/git/commit.toml", "description = \"Commit message\"\nprompt = \"Write a commit message for {{args}}\"\n")
        .put("ws/.qwen/commands/summarize.toml", "prompt = \"Summarize the thread.\"\n")
        .put("ws/.opencode/command/test.md", "Run the $1 tests and report failures\n");
    w
}

#[test]
fn every_agents_files_are_listed_with_source_label_modes_and_shadowing() {
    let w = agents_workspace();
    let all = w.json(&["commands", "--all", "--json"]);
    let entries = all.as_array().unwrap();
    let find = |name: &str, provider: &str| {
        entries
            .iter()
            .find(|e| e["name"] == name && e["provider"] == provider)
            .unwrap_or_else(|| panic!("/{name} from {provider} in {all:#}"))
            .clone()
    };
    let claude = find("review", "claude");
    assert_eq!(
        (
            claude["status"].as_str(),
            claude["source"].as_str(),
            claude["source_label"].as_str()
        ),
        (Some("active"), Some("skill-dir-command"), Some("Custom"))
    );
    assert_eq!(
        claude["modes"],
        serde_json::json!(["interactive", "non_interactive", "acp"])
    );
    // Codex prompts are `/prompts:<name>`, so they never collide with Claude's.
    assert_eq!(find("prompts:review", "codex")["status"], "active");
    let bundled = find("review", "bundled");
    assert_eq!(bundled["status"], "shadowed");
    assert_eq!(bundled["shadowed_by"], claude["registration"]);
    assert!(
        bundled["why"]
            .as_str()
            .unwrap()
            .contains("priority 80 > -1000"),
        "{bundled}"
    );
    // Codex ignores a frontmatter `name`.
    assert_eq!(find("prompts:plan", "codex")["status"], "active");
    assert_eq!(
        find("git:commit", "gemini")["description"],
        "Commit message"
    );
    assert_eq!(
        find("summarize", "qwen")["description"],
        "Custom command from summarize.toml"
    );
    assert_eq!(find("test", "opencode")["description"], "");

    // What each agent lets its model invoke: Claude's commands; never Codex's,
    // Gemini's or OpenCode's files; Qwen's unless disabled.
    let invocable = w.json(&["commands", "--model-invocable", "--json"]);
    let names: Vec<&str> = invocable
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"review") && names.contains(&"summarize"),
        "{names:?}"
    );
    for never in ["prompts:review", "prompts:plan", "git:commit", "test"] {
        assert!(!names.contains(&never), "{never} in {names:?}");
    }

    let acp = w.json(&["commands", "--format", "acp"]);
    let review = acp
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review")
        .unwrap()
        .clone();
    assert_eq!(
        review,
        serde_json::json!({"name": "review", "description": "Review a file", "input": {"hint": "<file> [focus...]"}})
    );
}

#[test]
fn run_prints_the_prompt_the_agent_would_build() {
    let w = agents_workspace();
    for (line, prompt) in [
        (
            "/review src/lib.rs errors 'edge cases'",
            "Review src/lib.rs. Focus on: errors and edge cases",
        ),
        ("/prompts:plan the release", "Plan the work for the release"),
        (
            "/git:commit  the parser fix ",
            "Write a commit message for the parser fix",
        ),
        (
            "/summarize please be brief",
            "Summarize the thread.\n\n/summarize please be brief",
        ),
        ("/test unit", "Run the unit tests and report failures"),
    ] {
        assert_eq!(
            w.ok(&["run", "--session", "s", line]).trim_end(),
            prompt,
            "{line}"
        );
    }
    let o = w.run(&["run", "--session", "s", "--json", "/test unit"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["outcome"]["prompt"],
        "Run the unit tests and report failures"
    );
}

#[test]
fn a_line_that_meant_a_command_file_says_which_and_why() {
    let w = agents_workspace();
    w.put(
        "ws/.claude/commands/frontend/component.md",
        "Make $ARGUMENTS\n",
    )
    .put(
        "ws/.claude/commands/notes.markdown",
        "Not read by Claude Code\n",
    );
    // `/component` is `/frontend:component` in Claude Code; `/plan` is a Codex prompt.
    for (line, says) in [
        ("/component x", "loaded as /frontend:component"),
        ("/plan x", "loaded as /prompts:plan"),
        (
            "/notes",
            "notes.markdown is in a command folder but is not read",
        ),
    ] {
        let o = w.run(&["run", "--session", "s", line]);
        assert_eq!(o.status.code(), Some(3), "{line}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(says), "{line}: {stderr}");
        // The prompt pipeline sends the text on, and says so (a new session each time:
        // a delivered prompt leaves its session streaming).
        let o = w.run(&["prompt", line]);
        assert!(o.status.success(), "{line}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(says) && stderr.contains("sent as typed"),
            "{line}: {stderr}"
        );
    }
}

#[test]
fn injections_are_never_run_and_every_run_says_so() {
    let w = Workspace::new();
    w.put(
        "ws/.claude/commands/status.md",
        "Status:\n!`git status`\nRead @src/main.rs\n",
    )
    .put(
        "ws/.gemini/commands/diff.toml",
        "prompt = \"Diff: !{git diff {{args}}}\"\n",
    );
    let o = w.run(&["run", "--session", "s", "/status"]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("never does") && stderr.contains("!`git status`"),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Status:\n!`git status`\nRead @src/main.rs\n"
    );
    let v = w.json(&["run", "--session", "s", "--json", "/diff HEAD"]);
    assert_eq!(v["injections"], serde_json::json!(["!{git diff HEAD}"]));
    let run: serde_json::Value = serde_json::from_str(
        w.ok(&["log", "--json", "--type", "command/run"])
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        run["data"]["injections"],
        serde_json::json!(["!{git diff HEAD}"])
    );
    let seq = run["seq"].as_u64().unwrap().to_string();
    assert!(
        w.ok(&["show", &seq])
            .contains("not run: its agent would have run or read 1 injection(s)")
    );
    assert!(w.ok(&["audit"]).contains("[1 injection(s) not run]"));
    let prompt = w.json(&["prompt", "--session", "p", "--json", "/status"]);
    assert_eq!(
        prompt["injections"],
        serde_json::json!(["!`git status`", "@src/main.rs"])
    );
    let delivered: serde_json::Value = serde_json::from_str(
        w.ok(&["log", "--json", "--type", "session/prompt"])
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        delivered["data"]["injections"],
        serde_json::json!(["!`git status`", "@src/main.rs"])
    );
}

fn registry_events(w: &Workspace, from: u64) -> Vec<String> {
    w.ok(&[
        "log",
        "--json",
        "--type",
        "registry/",
        "--from",
        &from.to_string(),
    ])
    .lines()
    .map(|l| {
        let e: serde_json::Value = serde_json::from_str(l).unwrap();
        match e["type"].as_str().unwrap() {
            "registry/registered" => format!(
                "registered /{}",
                e["data"]["command"]["name"].as_str().unwrap()
            ),
            _ => format!(
                "unregistered {} {}",
                e["data"]["registration"],
                e["data"]["reason"].as_str().unwrap()
            ),
        }
    })
    .collect()
}

fn head(w: &Workspace) -> u64 {
    w.json(&["verify", "--json"])["head_seq"].as_u64().unwrap()
}

#[test]
fn edits_adds_and_deletes_show_up_as_exactly_the_matching_events() {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", "Review v1: $ARGUMENTS\n")
        .put("ws/.claude/commands/old.md", "Old command\n");
    assert_eq!(
        w.ok(&["run", "--session", "s", "/review a"]).trim(),
        "Review v1: a"
    );
    let before_edit = head(&w);
    let review_v1 = w.json(&["replay", "--json"])["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review" && c["provider"] == "claude")
        .unwrap()["registration"]
        .clone();
    w.ok(&["run", "--session", "s", "/review b"]);
    assert_eq!(
        registry_events(&w, before_edit + 1),
        Vec::<String>::new(),
        "no file change appends no registry event"
    );

    let after_runs = head(&w);
    w.put("ws/.claude/commands/review.md", "Review v2: $ARGUMENTS\n")
        .put("ws/.claude/commands/new.md", "New command\n");
    std::fs::remove_file(w.path("ws/.claude/commands/old.md")).unwrap();
    assert_eq!(
        w.ok(&["run", "--session", "s", "/review c"]).trim(),
        "Review v2: c"
    );
    let events = registry_events(&w, after_runs + 1);
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(
        events.contains(&format!("unregistered {review_v1} file-changed")),
        "{events:?}"
    );
    assert!(events.contains(&"registered /review".to_string()));
    assert!(events.contains(&"registered /new".to_string()));
    assert!(
        events.iter().any(|e| e.ends_with("file-removed")),
        "{events:?}"
    );

    // Before the edit, the old template was the active one.
    let then = w.json(&["replay", "--until", &before_edit.to_string(), "--json"]);
    let active = then["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review" && c["status"] == "active")
        .unwrap()
        .clone();
    assert_eq!(active["registration"], review_v1);
    let now = w.json(&["replay", "--json"]);
    let active_now = now["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review" && c["status"] == "active")
        .unwrap()
        .clone();
    assert_ne!(active_now["template"], active["template"]);
    assert_eq!(
        active["template"].as_str().unwrap(),
        // The body as Claude Code sends it: its final newline kept.
        cmdlog_store::BlobHash::of(b"Review v1: $ARGUMENTS\n").to_hex()
    );
}

#[test]
fn broken_native_frontmatter_fails_with_path_and_line_but_claude_only_warns() {
    let w = Workspace::new();
    let broken = "---\ndescription: Deploy\ntags: [service\n---\nDeploy $1\n";
    w.put("ws/.cmdlog/commands/deploy.md", broken);
    let o = w.run(&["run", "/help"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(".cmdlog/commands/deploy.md:3: invalid frontmatter"),
        "{err}"
    );
    assert!(
        !w.path("ws/.cmdlog/log.redb").exists(),
        "nothing was written"
    );

    let w = Workspace::new();
    w.put("ws/.claude/commands/deploy.md", broken);
    let o = w.run(&["run", "/deploy api"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Claude Code's first argument is `$0`: `$1` has none here, so it stays and the
    // arguments are appended after the body and its own final newline.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "Deploy $1\n\n\nARGUMENTS: api"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning:") && err.contains("deploy.md: line 3: invalid frontmatter"),
        "{err}"
    );
    // The warning is logged once, not on every run.
    let o = w.run(&["run", "/deploy api"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning:"));
    let warnings = w.ok(&["log", "--type", "discovery/warning"]);
    assert_eq!(warnings.lines().count(), 1, "{warnings}");
}

#[test]
fn prompt_verb_expands_passes_through_and_guards_streaming() {
    let w = agents_workspace();
    assert_eq!(
        w.ok(&["prompt", "--session", "p", "/review x.rs speed accuracy"])
            .trim(),
        "Review x.rs. Focus on: speed and accuracy"
    );
    let o = w.run(&["prompt", "--session", "p", "just chatting"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "the session is streaming the first prompt's turn"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--delivery steer or --delivery follow-up")
    );
    let v = w.json(&[
        "prompt",
        "--session",
        "p",
        "--delivery",
        "follow-up",
        "--json",
        "/unknown stays",
    ]);
    assert_eq!(
        (v["text"].as_str(), v["delivery"].as_str()),
        (Some("/unknown stays"), Some("follow_up"))
    );
    let v = w.json(&["prompt", "--json", "/help"]);
    assert_eq!(
        v["delivered"], false,
        "handler commands run instead of being sent"
    );
}
