//! The agents people already run, recorded: `cmdlog hook <agent>` for every hook
//! event of Claude Code, Codex, Gemini CLI and Qwen Code; concurrency; the spill
//! folder under a held lock and a full disk; delivery through a daemon;
//! `import --from` idempotence and broken lines; `hooks install|uninstall`
//! (`settings.rs`). Every payload and transcript here is written for
//! these tests from the agents' documented formats (docs/agents.md).

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use cmdlog_test_support::Workspace;

mod fidelity;
mod interactive;
mod kills;
mod modes;
mod real;
mod releases;
mod search;
mod settings;
mod ties;
mod turns;

/// Writes `lines` as the Codex rollout of session `sid` under the test's home,
/// where `import --from codex` finds it.
fn codex_rollout(w: &Workspace, sid: &str, lines: &[String]) {
    let file = w.home.path().join(format!(
        ".codex/sessions/2026/12/07/rollout-2026-12-07T04-22-17-{sid}.jsonl"
    ));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
}

/// Pipes one payload to `cmdlog hook <agent>` in the workspace.
fn hook(w: &Workspace, agent: &str, payload: &Value) -> Output {
    hook_text(w, agent, &payload.to_string(), &[])
}

fn hook_text(w: &Workspace, agent: &str, text: &str, extra: &[&str]) -> Output {
    let mut args = vec!["hook", agent];
    args.extend(extra);
    let mut child = w
        .cmd(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A hook run that stayed out of the agent's way: exit 0, nothing printed.
fn assert_silent(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}");
    assert!(
        o.stdout.is_empty(),
        "{what}: stdout {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        o.stderr.is_empty(),
        "{what}: stderr {:?}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The log's events, as `log --json` prints them.
fn events(w: &Workspace) -> Vec<Value> {
    w.ok(&["log", "--json", "--all"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of the log at `log`, as `log --json` prints them.
fn events_of(w: &Workspace, log: &std::path::Path) -> Vec<Value> {
    w.ok(&["log", "--json", "--all", "--log", log.to_str().unwrap()])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn types_of(events: &[Value], session: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["session"] == session)
        .map(|e| {
            let t = e["type"].as_str().unwrap().to_string();
            match e["data"]["sessionUpdate"].as_str() {
                Some(kind) => format!("{t}:{kind}"),
                None => t,
            }
        })
        .collect()
}

/// Payloads of one session: `(event name, event fields)` with the common fields
/// added.
fn session(common: Value, events: &[(&str, Value)]) -> Vec<Value> {
    events
        .iter()
        .map(|(name, fields)| {
            let mut p = common.clone();
            p["hook_event_name"] = json!(name);
            for (k, v) in fields.as_object().unwrap() {
                p[k] = v.clone();
            }
            p
        })
        .collect()
}

fn claude_session(cwd: &str) -> Vec<Value> {
    let common = json!({"session_id": "c1a2-u", "transcript_path": "/h/.claude/projects/p/c1a2-u.jsonl", "cwd": cwd, "permission_mode": "default"});
    session(
        common,
        &[
            (
                "SessionStart",
                json!({"source": "startup", "model": "claude-sonnet"}),
            ),
            (
                "InstructionsLoaded",
                json!({"file_path": "/p/CLAUDE.md", "memory_type": "Project", "load_reason": "session_start"}),
            ),
            ("UserPromptSubmit", json!({"prompt": "/review src/lib.rs"})),
            (
                "UserPromptExpansion",
                json!({"expansion_type": "slash_command", "command_name": "review", "command_args": "src/lib.rs", "command_source": "project", "prompt": "/review src/lib.rs"}),
            ),
            (
                "PreToolUse",
                json!({"tool_name": "Read", "tool_input": {"file_path": "src/lib.rs"}, "tool_use_id": "toolu_01"}),
            ),
            (
                "PostToolUse",
                json!({"tool_name": "Read", "tool_input": {"file_path": "src/lib.rs"}, "tool_response": {"type": "text"}, "tool_use_id": "toolu_01", "duration_ms": 4}),
            ),
            (
                "PermissionRequest",
                json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}, "tool_use_id": "toolu_02"}),
            ),
            (
                "PermissionDenied",
                json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}, "tool_use_id": "toolu_03", "reason": "auto mode"}),
            ),
            (
                "PostToolUseFailure",
                json!({"tool_name": "Bash", "tool_input": {"command": "false"}, "tool_use_id": "toolu_04", "error": "exit 1"}),
            ),
            (
                "PostToolBatch",
                json!({"tool_calls": [{"tool_name": "Grep", "tool_input": {"pattern": "x"}, "tool_use_id": "toolu_05", "tool_response": {"n": 1}}]}),
            ),
            (
                "Notification",
                json!({"message": "Claude needs your permission", "notification_type": "permission_prompt"}),
            ),
            (
                "SubagentStart",
                json!({"agent_id": "ag1", "agent_type": "Explore"}),
            ),
            (
                "SubagentStop",
                json!({"agent_id": "ag1", "agent_type": "Explore", "stop_hook_active": false, "agent_transcript_path": "/x", "last_assistant_message": "done"}),
            ),
            (
                "PreCompact",
                json!({"trigger": "manual", "custom_instructions": ""}),
            ),
            (
                "PostCompact",
                json!({"trigger": "manual", "compact_summary": "short"}),
            ),
            (
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "The review is done."}),
            ),
            ("StopFailure", json!({"error": "rate_limit"})),
            ("SessionEnd", json!({"reason": "prompt_input_exit"})),
        ],
    )
}

fn codex_session(cwd: &str) -> Vec<Value> {
    let common = json!({"session_id": "0199a2b3-c4d5", "transcript_path": null, "cwd": cwd, "model": "gpt-5-codex", "permission_mode": "default"});
    session(
        common,
        &[
            ("SessionStart", json!({"source": "startup"})),
            (
                "UserPromptSubmit",
                json!({"turn_id": "1", "prompt": "Fix the failing test"}),
            ),
            (
                "PreToolUse",
                json!({"turn_id": "1", "tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "call_1"}),
            ),
            (
                "PermissionRequest",
                json!({"turn_id": "1", "tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "call_1"}),
            ),
            (
                "PostToolUse",
                json!({"turn_id": "1", "tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_response": {"exit_code": 0}, "tool_use_id": "call_1"}),
            ),
            ("PreCompact", json!({"turn_id": "1", "trigger": "auto"})),
            (
                "Stop",
                json!({"turn_id": "1", "stop_hook_active": false, "last_assistant_message": "Fixed."}),
            ),
            ("SessionEnd", json!({"reason": "other"})),
        ],
    )
}

fn gemini_session(cwd: &str) -> Vec<Value> {
    let common = json!({"session_id": "8f2c1a2b-9", "transcript_path": "", "cwd": cwd, "timestamp": "2026-08-20T10:15:03.120Z"});
    session(
        common,
        &[
            ("SessionStart", json!({"source": "startup"})),
            ("BeforeAgent", json!({"prompt": "Review the staged diff"})),
            (
                "BeforeModel",
                json!({"llm_request": {"model": "gemini-2.5-pro", "messages": []}}),
            ),
            (
                "BeforeToolSelection",
                json!({"llm_request": {"model": "gemini-2.5-pro"}}),
            ),
            (
                "AfterModel",
                json!({"llm_request": {}, "llm_response": {"candidates": []}}),
            ),
            (
                "BeforeTool",
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "git diff --staged"}}),
            ),
            (
                "AfterTool",
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "git diff --staged"}, "tool_response": {"llmContent": "diff", "returnDisplay": "diff"}}),
            ),
            (
                "Notification",
                json!({"notification_type": "ToolPermission", "message": "allow?", "details": {}}),
            ),
            (
                "AfterAgent",
                json!({"prompt": "Review the staged diff", "prompt_response": "Two risky changes.", "stop_hook_active": false}),
            ),
            ("PreCompress", json!({"trigger": "auto"})),
            ("SessionEnd", json!({"reason": "exit"})),
        ],
    )
}

fn qwen_session(cwd: &str) -> Vec<Value> {
    let common = json!({"session_id": "3f1a-q", "transcript_path": "/h/.qwen/projects/p/chats/3f1a-q.jsonl", "cwd": cwd, "timestamp": "2026-08-20T10:15:03Z", "permission_mode": "default"});
    session(
        common,
        &[
            (
                "SessionStart",
                json!({"source": "startup", "model": "qwen3-coder"}),
            ),
            (
                "UserPromptExpansion",
                json!({"command_name": "review", "command_args": "src/main.rs", "prompt": "Review src/main.rs for bugs."}),
            ),
            (
                "UserPromptSubmit",
                json!({"prompt": "Review src/main.rs for bugs.", "submitted_prompt": "/review src/main.rs"}),
            ),
            (
                "PreToolUse",
                json!({"tool_name": "read_file", "tool_input": {"path": "src/main.rs"}, "tool_use_id": "t1"}),
            ),
            (
                "PostToolUse",
                json!({"tool_name": "read_file", "tool_input": {"path": "src/main.rs"}, "tool_response": {"ok": true}, "tool_use_id": "t1"}),
            ),
            (
                "PostToolUseFailure",
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "x"}, "tool_use_id": "t2", "error": "not found"}),
            ),
            (
                "PostToolBatch",
                json!({"tool_calls": [{"tool_name": "glob", "tool_input": {}, "tool_use_id": "t3", "status": "success"}]}),
            ),
            (
                "PermissionRequest",
                json!({"tool_name": "write_file", "tool_input": {"path": "a"}}),
            ),
            (
                "PermissionDenied",
                json!({"tool_name": "write_file", "tool_input": {"path": "b"}, "tool_use_id": "t4", "reason": "policy"}),
            ),
            (
                "MessageDisplay",
                json!({"message_id": "m1", "displayed_text": "Two bugs", "is_final": true}),
            ),
            (
                "TodoCreated",
                json!({"todo_id": "1", "todo_content": "fix", "todo_status": "pending", "all_todos": [], "phase": "created"}),
            ),
            (
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "Two bugs found.", "background_tasks": [], "crons": []}),
            ),
            ("StopFailure", json!({"error": "loop_detected"})),
            ("SessionEnd", json!({"reason": "other"})),
            ("SessionDelete", json!({"deleted_session_id": "old"})),
        ],
    )
}

/// The command files the agents would expand, for the agreement check.
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.put(
        "ws/.claude/commands/review.md",
        "Review $ARGUMENTS carefully.\n",
    )
    .put(
        "ws/.qwen/commands/review.md",
        "---\ndescription: Review\n---\nReview {{args}} for bugs.",
    );
    w
}

#[test]
fn every_hook_event_of_each_agent_becomes_a_session_like_a_native_one() {
    let w = workspace();
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let agents: [(&str, Vec<Value>, &str); 4] = [
        ("claude-code", claude_session(&cwd), "c1a2-u"),
        ("codex", codex_session(&cwd), "0199a2b3-c4d5"),
        ("gemini", gemini_session(&cwd), "8f2c1a2b-9"),
        ("qwen", qwen_session(&cwd), "3f1a-q"),
    ];
    for (agent, payloads, _) in &agents {
        for p in payloads {
            assert_silent(
                &hook(&w, agent, p),
                &format!("{agent} {}", p["hook_event_name"]),
            );
        }
    }
    let all = events(&w);
    for (agent, payloads, session) in &agents {
        let types = types_of(&all, session);
        assert_eq!(types[0], "session/created", "{agent}: {types:?}");
        for t in [
            "session/prompt",
            "session/update:tool_call",
            "session/update:tool_call_update",
            "session/update:turn_complete",
            "agent/event",
        ] {
            assert!(types.contains(&t.to_string()), "{agent}: {t} in {types:?}");
        }
        // Every payload left at least one event; the session keeps the agent's name.
        assert!(types.len() > payloads.len(), "{agent}: {types:?}");
        for e in all.iter().filter(|e| e["session"] == *session) {
            assert_eq!(e["agent"], *agent);
            assert_eq!(e["observed"]["source"], format!("{agent} hook"));
        }
    }
    for session in ["c1a2-u", "3f1a-q", "0199a2b3-c4d5"] {
        let types = types_of(&all, session);
        assert!(
            types.contains(&"permission/requested".to_string()),
            "{session}: {types:?}"
        );
    }
    for session in ["c1a2-u", "3f1a-q"] {
        let types = types_of(&all, session);
        for t in [
            "command/run",
            "command/done",
            "permission/resolved",
            "session/update:turn_error",
        ] {
            assert!(
                types.contains(&t.to_string()),
                "{session}: {t} in {types:?}"
            );
        }
    }
    // What the audit verbs make of them, as of a native session.
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let audit = w.ok(&["audit", "--session", "c1a2-u"]);
    assert!(
        audit.contains("/review src/lib.rs") && audit.contains("claude-code"),
        "{audit}"
    );
    let run = all
        .iter()
        .find(|e| e["session"] == "3f1a-q" && e["type"] == "command/run")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let shown = w.ok(&["show", &run.to_string()]);
    assert!(shown.contains("Review src/main.rs for bugs."), "{shown}");
    let report = w.ws.path().join("q.html");
    w.ok(&[
        "report",
        "--session",
        "3f1a-q",
        "-o",
        report.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("/review") && html.contains("3f1a-q"));
    // Qwen sent its expansion: cmdlog expands the same file the same way.
    let done = all
        .iter()
        .find(|e| e["session"] == "3f1a-q" && e["type"] == "command/done")
        .unwrap();
    assert_eq!(done["data"]["agent_check"]["identical"], true, "{done}");
    assert!(w.run(&["drift", "--agents"]).status.success());
}

#[test]
fn drift_agents_lists_expansions_cmdlog_disagrees_with() {
    let w = workspace();
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let payload = json!({"session_id": "q2", "cwd": cwd, "hook_event_name": "UserPromptExpansion",
        "command_name": "review", "command_args": "a.rs", "prompt": "Review a.rs for bugs, and style."});
    assert_silent(&hook(&w, "qwen", &payload), "expansion");
    let o = w.run(&["drift", "--agents"]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("run ") && text.contains("/review a.rs"),
        "{text}"
    );
    assert!(
        text.contains("-Review a.rs for bugs, and style.")
            && text.contains("+Review a.rs for bugs."),
        "{text}"
    );
    assert!(text.contains("1 differ"), "{text}");
}

/// The first hooks of a project start together, and none of them finds a log:
/// each round starts six at once in a fresh workspace. Before the log was made
/// under a temporary name and published by a hard link, a hook that had created
/// the file but lost the race for its lock removed it as a failed creation while
/// another had it open, and everything appended to it vanished.
#[test]
fn hooks_that_create_the_log_at_once_lose_nothing() {
    let rounds = cmdlog_test_support::env_usize("CMDLOG_CREATE_ROUNDS", 12);
    for round in 0..rounds {
        let w = Workspace::new();
        let cwd = w.ws.path().to_str().unwrap().to_string();
        std::thread::scope(|scope| {
            for p in 0..6 {
                let (w, cwd) = (&w, cwd.clone());
                scope.spawn(move || {
                    for i in 0..3 {
                        let payload = json!({"session_id": format!("s{p}"), "cwd": cwd,
                            "hook_event_name": "UserPromptSubmit", "prompt": format!("prompt {p}/{i}")});
                        assert_silent(&hook(w, "claude-code", &payload), "creating hook");
                    }
                });
            }
        });
        let all = events(&w);
        let prompts = all.iter().filter(|e| e["type"] == "session/prompt").count();
        let identities = all.iter().filter(|e| e["type"] == "log/identity").count();
        assert_eq!(
            (prompts, identities),
            (18, 1),
            "round {round}: every payload, one log"
        );
        let leftovers: Vec<_> = std::fs::read_dir(w.log_path().parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cmdlog-tmp"))
            .collect();
        assert!(leftovers.is_empty(), "round {round}: {leftovers:?}");
    }
}

#[test]
fn concurrent_hook_processes_lose_nothing() {
    let processes = 8;
    let payloads = cmdlog_test_support::env_usize("CMDLOG_HOOK_PAYLOADS", 40);
    let w = Workspace::new();
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for p in 0..processes {
            let (w, cwd) = (&w, cwd.clone());
            scope.spawn(move || {
                for i in 0..payloads {
                    let payload = json!({"session_id": format!("s{p}"), "cwd": cwd,
                        "hook_event_name": "UserPromptSubmit", "prompt": format!("prompt {p}/{i}")});
                    assert_silent(&hook(w, "claude-code", &payload), "concurrent hook");
                }
            });
        }
    });
    eprintln!(
        "{processes} processes x {payloads} payloads in {:.2?}",
        started.elapsed()
    );
    let all = events(&w);
    for p in 0..processes {
        let prompts: Vec<&str> = all
            .iter()
            .filter(|e| e["session"] == format!("s{p}") && e["type"] == "session/prompt")
            .map(|e| e["data"]["text"].as_str().unwrap())
            .collect();
        let expected: Vec<String> = (0..payloads).map(|i| format!("prompt {p}/{i}")).collect();
        assert_eq!(prompts, expected, "session s{p}: every payload, in order");
    }
    let verify = w.ok(&["verify"]);
    assert!(
        verify.contains("ok: no violations") && !verify.contains("spilled"),
        "{verify}"
    );
}

#[test]
fn a_held_log_spills_and_the_next_call_appends_it() {
    let w = Workspace::new();
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let prompt = |n: u32| json!({"session_id": "h1", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": format!("p{n}")});
    assert_silent(&hook(&w, "claude-code", &prompt(1)), "first");
    let log_path = w.ws.path().join(".cmdlog/log.redb");
    {
        // Another process holds the log past the hook's wait.
        let held = cmdlog_store::Log::open(&log_path, cmdlog_store::LogConfig::default()).unwrap();
        let started = Instant::now();
        assert_silent(&hook(&w, "claude-code", &prompt(2)), "held");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_silent(&hook(&w, "claude-code", &prompt(3)), "held again");
        held.close();
    }
    let spilled: Vec<_> = std::fs::read_dir(w.ws.path().join(".cmdlog/spill"))
        .unwrap()
        .collect();
    assert_eq!(spilled.len(), 2, "both payloads kept");
    let verify = w.ok(&["verify"]);
    assert!(
        verify.contains("spilled: 2 hook payload(s) not yet appended"),
        "{verify}"
    );
    assert_silent(&hook(&w, "claude-code", &prompt(4)), "after");
    let texts: Vec<String> = events(&w)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        texts,
        ["p1", "p2", "p3", "p4"],
        "spilled ones first, in order"
    );
    let verify = w.ok(&["verify"]);
    assert!(!verify.contains("spilled"), "{verify}");
}

#[test]
fn hooks_that_find_spilled_payloads_at_once_append_each_once() {
    let w = Workspace::new();
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let prompt = |n: u32| json!({"session_id": "h2", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": format!("q{n}")});
    assert_silent(&hook(&w, "claude-code", &prompt(0)), "first");
    let log_path = w.ws.path().join(".cmdlog/log.redb");
    let held = cmdlog_store::Log::open(&log_path, cmdlog_store::LogConfig::default()).unwrap();
    for n in 1..=3 {
        assert_silent(&hook(&w, "claude-code", &prompt(n)), "held");
    }
    held.close();
    // Six hooks start together; each finds the three spilled payloads.
    std::thread::scope(|scope| {
        for n in 4..10 {
            let (w, prompt) = (&w, &prompt);
            scope.spawn(move || assert_silent(&hook(w, "claude-code", &prompt(n)), "racing"));
        }
    });
    let texts: Vec<String> = events(&w)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect();
    for n in 0..10 {
        let q = format!("q{n}");
        assert_eq!(
            texts.iter().filter(|t| **t == q).count(),
            1,
            "{q} once: {texts:?}"
        );
    }
    assert_eq!(texts[..4], ["q0", "q1", "q2", "q3"], "spilled ones first");
}

#[test]
fn a_full_disk_spills_elsewhere_and_nothing_is_lost() {
    if !cmdlog_test_support::running_as_root() {
        eprintln!("SKIPPED: needs root to mount a small tmpfs");
        return;
    }
    let w = Workspace::new();
    let disk = w.ws.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let tmp = w.home.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let bin = env!("CARGO_BIN_EXE_cmdlog");
    let payload = |n: u32| {
        json!({"session_id": "d1", "cwd": w.ws.path(), "hook_event_name": "UserPromptSubmit", "prompt": format!("p{n} {}", "x".repeat(400_000))}).to_string()
    };
    // Payloads large enough that no block the log already holds can take them.
    for n in 1..=4 {
        std::fs::write(w.ws.path().join(format!("p{n}.json")), payload(n)).unwrap();
    }
    // One mount namespace: a 24 MiB tmpfs holds the log; fill it; hook twice; free
    // it; hook once more; print the log.
    let script = format!(
        "set -e; mount -t tmpfs -o size=24m,mode=0700 tmpfs {d}; \
         {bin} --log {d}/log.redb hook claude-code < {out}/p1.json; \
         dd if=/dev/zero of={d}/fill bs=1M count=64 2>/dev/null || true; \
         {bin} --log {d}/log.redb hook claude-code < {out}/p2.json; \
         {bin} --log {d}/log.redb hook claude-code < {out}/p3.json; \
         ls {home}/.local/state/cmdlog/spill > {out}/spilled.txt; \
         rm {d}/fill; \
         {bin} --log {d}/log.redb hook claude-code < {out}/p4.json; \
         {bin} --log {d}/log.redb log --json > {out}/log.json; \
         {bin} --log {d}/log.redb verify > {out}/verify.txt",
        d = disk.display(),
        out = w.ws.path().display(),
        home = w.home.path().display(),
    );
    let o = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env("HOME", w.home.path())
        .env("TMPDIR", &tmp)
        .env_remove("CMDLOG_LOG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stdout.is_empty(),
        "the hook printed {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    let spilled = std::fs::read_to_string(w.ws.path().join("spilled.txt")).unwrap();
    assert_eq!(
        spilled.lines().count(),
        1,
        "the payloads went to the log's folder in the private state folder: {spilled:?}"
    );
    let log = std::fs::read_to_string(w.ws.path().join("log.json")).unwrap();
    let texts: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap()[..2].to_string())
        .collect();
    assert_eq!(texts, ["p1", "p2", "p3", "p4"]);
    let verify = std::fs::read_to_string(w.ws.path().join("verify.txt")).unwrap();
    assert!(
        verify.contains("ok: no violations") && !verify.contains("spilled"),
        "{verify}"
    );
}

#[test]
fn hooks_reach_the_log_through_a_daemon_that_holds_it() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let cwd = w.ws.path().to_str().unwrap().to_string();
    let payload = json!({"session_id": "via-daemon", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "through the daemon"});
    assert_silent(&hook(&w, "codex", &payload), "through the daemon");
    let (status, body) =
        cmdlog_test_support::daemon::get(&format!("{}/session/via-daemon/status", d.url));
    assert_eq!(status, 200, "{body}");
    drop(d);
    let texts: Vec<Value> = events(&w)
        .into_iter()
        .filter(|e| e["session"] == "via-daemon")
        .collect();
    assert_eq!(texts.last().unwrap()["data"]["text"], "through the daemon");
    assert!(
        !w.ws.path().join(".cmdlog/spill").exists(),
        "nothing spilled"
    );
}

#[test]
fn an_unreadable_payload_and_redaction_are_recorded_not_refused() {
    let w = Workspace::new();
    assert_silent(
        &hook_text(&w, "gemini", "this is not json {", &[]),
        "garbage",
    );
    let secret = json!({"session_id": "r1", "cwd": w.ws.path(), "hook_event_name": "BeforeAgent",
        "prompt": "deploy with AKIAABCDEFGHIJKLMNOP and https://me:hunter22@db.example.com"});
    assert_silent(
        &hook_text(&w, "gemini", &secret.to_string(), &["--redact"]),
        "redact",
    );
    let all = events(&w);
    assert!(
        all.iter()
            .any(|e| e["type"] == "agent/event" && e["data"]["event"] == "unreadable payload")
    );
    let text = all.iter().map(|e| e.to_string()).collect::<String>();
    assert!(
        !text.contains("AKIAABCD") && !text.contains("hunter22"),
        "{text}"
    );
    let note = all.iter().find(|e| e["type"] == "log/redacted").unwrap();
    assert_eq!(note["data"]["count"], 2);
    // An unknown agent is the one thing the hook refuses: a misconfiguration.
    let o = hook_text(&w, "cursor", "{}", &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn transcripts_import_once_with_their_slash_commands_and_broken_lines() {
    let w = Workspace::new();
    let home = w.home.path();
    let put = |rel: &str, text: &str| {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(
        ".claude/projects/-p/cs-1.jsonl",
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"cs-1","timestamp":"2026-08-01T10:00:00.000Z","message":{"role":"user","content":"hello"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","sessionId":"cs-1","timestamp":"2026-08-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}],"stop_reason":"tool_use"}}"#,
            "\n",
            "{broken\n",
            r#"{"type":"user","uuid":"u2","sessionId":"cs-1","timestamp":"2026-08-01T10:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"u3","sessionId":"cs-1","timestamp":"2026-08-01T10:01:00.000Z","message":{"role":"user","content":"<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>"}}"#,
            "\n",
            r#"{"type":"system","subtype":"local_command","uuid":"s1","sessionId":"cs-1","timestamp":"2026-08-01T10:01:00.100Z","content":"<local-command-stdout>Set model to opus</local-command-stdout>"}"#,
            "\n",
        ),
    );
    put(
        ".codex/sessions/2026/08/01/rollout-2026-08-01T10-00-00-0199a2b3-c4d5-7e8f-9a0b-1c2d3e4f5a6b.jsonl",
        concat!(
            r#"{"timestamp":"2026-08-01T10:00:00.100Z","type":"session_meta","payload":{"id":"0199a2b3-c4d5-7e8f-9a0b-1c2d3e4f5a6b","cwd":"/p","originator":"codex_cli_rs"}}"#,
            "\n",
            r#"{"timestamp":"2026-08-01T10:00:05.000Z","type":"event_msg","payload":{"type":"user_message","message":"Fix it"}}"#,
            "\n",
            r#"{"timestamp":"2026-08-01T10:00:05.500Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix it"}]}}"#,
            "\n",
            r#"{"timestamp":"2026-08-01T10:00:06.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#,
            "\n",
            r#"{"timestamp":"2026-08-01T10:00:07.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a b"}}"#,
            "\n",
            "not json either\n",
            r#"{"timestamp":"2026-08-01T10:00:08.000Z","type":"event_msg","payload":{"type":"agent_message","message":"Done"}}"#,
            "\n",
            r#"{"timestamp":"2026-08-01T10:00:08.100Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"1"}}"#,
            "\n",
        ),
    );
    put(
        ".gemini/tmp/proj/chats/session-2026-08-20T10-15-8f2c1a2b.jsonl",
        concat!(
            r#"{"sessionId":"8f2c1a2b-aaaa","projectHash":"abc","startTime":"2026-08-20T10:15:00Z","lastUpdated":"2026-08-20T10:16:00Z","kind":"main"}"#,
            "\n",
            r#"{"id":"m1","timestamp":"2026-08-20T10:15:03Z","type":"user","content":[{"text":"Review the staged diff."}],"displayContent":"/review staged"}"#,
            "\n",
            r#"{"id":"m2","timestamp":"2026-08-20T10:15:05Z","type":"gemini","content":"Looking.","toolCalls":[]}"#,
            "\n",
            r#"{"id":"m2","timestamp":"2026-08-20T10:15:06Z","type":"gemini","content":"Two issues.","toolCalls":[{"id":"tc1","name":"run_shell_command","args":{"command":"git diff"},"status":"success","result":[],"timestamp":"2026-08-20T10:15:05Z"}]}"#,
            "\n",
            "{\"id\": truncated\n",
            r#"{"id":"m3","timestamp":"2026-08-20T10:15:09Z","type":"user","content":"and tests?"}"#,
            "\n",
            r#"{"$rewindTo":"m3"}"#,
            "\n",
        ),
    );
    put(
        ".gemini/tmp/old/chats/session-2026-01-02T10-00-11112222.json",
        r#"{"sessionId":"11112222-bbbb","projectHash":"x","startTime":"2026-01-02T10:00:00Z","lastUpdated":"2026-01-02T10:05:00Z","messages":[{"id":"o1","timestamp":"2026-01-02T10:00:01Z","type":"user","content":"old prompt"},{"id":"o2","timestamp":"2026-01-02T10:00:02Z","type":"gemini","content":"old answer"}]}"#,
    );
    put(
        ".qwen/projects/-p/chats/3f1a-qq.jsonl",
        concat!(
            r#"{"uuid":"q1","parentUuid":null,"sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:00Z","type":"system","subtype":"slash_command","cwd":"/p","systemPayload":{"phase":"invocation","rawCommand":"/review src/main.rs"}}"#,
            "\n",
            r#"{"uuid":"q2","parentUuid":"q1","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:00.100Z","type":"user","cwd":"/p","message":{"role":"user","parts":[{"text":"Review src/main.rs for bugs."}]}}"#,
            "\n",
            r#"{"uuid":"q3","parentUuid":"q2","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:02Z","type":"assistant","cwd":"/p","message":{"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"id":"f1","name":"read_file","args":{"path":"src/main.rs"}}}]}}"#,
            "\n",
            r#"{"uuid":"q4","parentUuid":"q3","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:03Z","type":"tool_result","cwd":"/p","toolCallResult":{"callId":"f1","status":"success","resultDisplay":"fn main"}}"#,
            "\n",
            "][\n",
            r#"{"uuid":"q5","parentUuid":"q4","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:04Z","type":"assistant","cwd":"/p","message":{"role":"model","parts":[{"text":"Two bugs."}]}}"#,
            "\n",
            r#"{"uuid":"q6","parentUuid":"q5","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:05Z","type":"system","subtype":"slash_command","cwd":"/p","systemPayload":{"phase":"invocation","rawCommand":"/about"}}"#,
            "\n",
            r#"{"uuid":"q7","parentUuid":"q6","sessionId":"3f1a-qq","timestamp":"2026-08-20T10:00:05.1Z","type":"system","subtype":"slash_command","cwd":"/p","systemPayload":{"phase":"result","rawCommand":"/about","outputHistoryItems":[{"type":"about","text":"Qwen Code 1.0"}]}}"#,
            "\n",
        ),
    );
    let cases = [
        ("claude-code", "cs-1", 1, vec!["model"]),
        ("codex", "0199a2b3-c4d5-7e8f-9a0b-1c2d3e4f5a6b", 1, vec![]),
        ("gemini", "8f2c1a2b-aaaa", 1, vec!["review"]),
        ("qwen", "3f1a-qq", 1, vec!["review", "about"]),
    ];
    for (agent, session, malformed, runs) in &cases {
        let first = w.ok(&["import", "--from", agent, "--json"]);
        let summary: Value = serde_json::from_str(first.trim()).unwrap();
        assert!(
            summary["events"].as_u64().unwrap() > 3,
            "{agent}: {summary}"
        );
        assert_eq!(
            summary["malformed"].as_array().unwrap().len(),
            *malformed,
            "{agent}: {summary}"
        );
        assert!(
            summary["malformed"][0].as_str().unwrap().contains(':'),
            "file:line"
        );
        let again = w.ok(&["import", "--from", agent, "--json"]);
        let again: Value = serde_json::from_str(again.trim()).unwrap();
        assert_eq!(
            again["events"], 0,
            "{agent}: a second import adds nothing: {again}"
        );
        assert!(
            again["unchanged"] == again["files"] && again["lines"] == 0,
            "{agent}: a second import parses no file it checkpointed: {again}"
        );
        let all = events(&w);
        let names: Vec<&str> = all
            .iter()
            .filter(|e| e["session"] == *session && e["type"] == "command/run")
            .map(|e| e["data"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(&names, runs, "{agent}");
        let originals: Vec<u64> = all
            .iter()
            .filter(|e| e["session"] == *session)
            .filter_map(|e| e["observed"]["at"].as_u64())
            .collect();
        assert!(
            !originals.is_empty() && originals.iter().all(|&t| t < 1_790_000_000_000),
            "{agent}: original times kept"
        );
    }
    let all = events(&w);
    let gemini: Vec<String> = types_of(&all, "8f2c1a2b-aaaa");
    assert!(
        !all.iter()
            .any(|e| e["session"] == "8f2c1a2b-aaaa" && e["data"]["text"] == "and tests?"),
        "rewound away"
    );
    assert!(
        gemini.contains(&"session/update:tool_call".to_string()),
        "{gemini:?}"
    );
    assert!(
        all.iter().any(|e| e["session"] == "11112222-bbbb"),
        "the older .json format too"
    );
    let model = all
        .iter()
        .find(|e| e["session"] == "cs-1" && e["type"] == "command/done")
        .unwrap();
    assert_eq!(model["data"]["outcome"]["text"], "Set model to opus");
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
}

#[test]
fn a_transcript_that_grew_is_imported_for_its_new_lines_and_an_unchanged_one_not_read() {
    let w = Workspace::new();
    let dir = w.home.path().join(".codex/sessions/2026/08/01");
    std::fs::create_dir_all(&dir).unwrap();
    let rollout = |id: &str| dir.join(format!("rollout-2026-08-01T10-00-00-{id}.jsonl"));
    let (grows, stays) = (
        rollout("0199a2b3-c4d5-7e8f-9a0b-000000000001"),
        rollout("0199a2b3-c4d5-7e8f-9a0b-000000000002"),
    );
    let prompt = |n: usize, text: &str| {
        format!(
            r#"{{"timestamp":"2026-08-01T10:00:{n:02}.000Z","type":"event_msg","payload":{{"type":"user_message","message":"{text}"}}}}"#
        ) + "\n"
    };
    std::fs::write(&grows, prompt(1, "first") + &prompt(2, "second")).unwrap();
    std::fs::write(&stays, prompt(1, "other")).unwrap();
    let import = || -> Value {
        serde_json::from_str(w.ok(&["import", "--from", "codex", "--json"]).trim()).unwrap()
    };
    let first = import();
    assert_eq!(
        (first["events"].as_u64(), first["unchanged"].as_u64()),
        (Some(5), Some(0)),
        "{first}"
    );

    // One file grows (an agent appending to its rollout); the other is untouched.
    let mut text = std::fs::read_to_string(&grows).unwrap();
    text.push_str(&prompt(3, "third"));
    std::fs::write(&grows, &text).unwrap();
    let second = import();
    assert_eq!(
        second["unchanged"], 1,
        "the untouched file is not read: {second}"
    );
    assert_eq!(
        second["lines"], 3,
        "only the file that grew is read: {second}"
    );
    assert_eq!(second["events"], 1, "its new line, once: {second}");
    assert_eq!(second["skipped"], 2, "{second}");

    // Changed in place at the same size: read again (its hash differs), keyed
    // items not doubled.
    std::fs::write(&grows, text.replace("first", "FIRST")).unwrap();
    let third = import();
    assert_eq!(
        (third["unchanged"].as_u64(), third["events"].as_u64()),
        (Some(1), Some(0)),
        "{third}"
    );
    let fourth = import();
    assert_eq!(fourth["unchanged"], 2, "{fourth}");

    let prompts: Vec<String> = events(&w)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["first", "second", "other", "third"]);
    let checkpoints = events(&w)
        .into_iter()
        .filter(|e| e["type"] == "import/checkpoint")
        .count();
    assert_eq!(checkpoints, 4, "one per file each time it was read");
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
}
