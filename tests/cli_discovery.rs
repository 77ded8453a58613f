//! Command files of every agent, as a person sees them through the CLI.

mod common;

use common::Workspace;

fn agents_workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", "---\ndescription: Review a file\nargument-hint: <file> [focus...]\n---\nReview $1. Focus on: ${@:2}\n")
        .put("~/.codex/prompts/review.md", "Codex review of $ARGUMENTS\n")
        .put("~/.codex/commands/plan.md", "---\nname: plan-work\n---\nPlan the work for $ARGUMENTS\n")
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
    let codex = find("review", "codex");
    assert_eq!(codex["status"], "shadowed");
    assert_eq!(codex["shadowed_by"], claude["registration"]);
    assert!(codex["why"].as_str().unwrap().contains("priority 80 > 70"));
    assert_eq!(find("review", "bundled")["status"], "shadowed");
    assert_eq!(find("plan-work", "codex")["status"], "active");
    assert_eq!(
        find("git:commit", "gemini")["description"],
        "Commit message"
    );
    assert_eq!(find("summarize", "gemini")["status"], "active");
    assert_eq!(
        find("test", "opencode")["description"],
        "Run the $1 tests and report failures"
    );

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
            "Review src/lib.rs. Focus on: errors edge cases",
        ),
        ("/plan-work the release", "Plan the work for the release"),
        (
            "/git:commit  the parser fix ",
            "Write a commit message for the parser fix",
        ),
        (
            "/summarize please be brief",
            "Summarize the thread.\n\nplease be brief",
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
        cmdlog_store::BlobHash::of(b"Review v1: $ARGUMENTS").to_hex()
    );
}

#[test]
fn broken_native_frontmatter_fails_with_path_and_line_but_claude_only_warns() {
    let w = Workspace::new();
    let broken = "---\ndescription: Deploy\nargument-hint: [service\n---\nDeploy $1\n";
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
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "Deploy api");
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
        w.ok(&["prompt", "--session", "p", "/review x.rs speed"])
            .trim(),
        "Review x.rs. Focus on: speed"
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
