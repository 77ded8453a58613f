//! `cmdlog search` over what the agents' hooks, transcripts and a daemon
//! recorded: each field and filter finds what it should and nothing else,
//! redacted text is not found, a bad query is refused with where, `verify`
//! checks the index, and `cmdlog serve` keeps it current as it appends.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use cmdlog_test_support::Workspace;

use super::{assert_silent, claude_session, codex_session, hook, hook_text};

/// `cmdlog search ARGS --json`: the hits, or the exit code and stderr.
fn search(w: &Workspace, args: &[&str]) -> Result<Vec<Value>, (i32, String)> {
    let mut all = vec!["search", "--json", "--limit", "100"];
    all.extend(args);
    let o = w.run(&all);
    if !o.status.success() {
        return Err((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into(),
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect())
}

/// The (type, session) of each hit of `query`, sorted (none: exit 3).
fn found(w: &Workspace, query: &str) -> Vec<(String, String)> {
    let hits = match search(w, &[query]) {
        Err((3, _)) => return Vec::new(),
        found => found.unwrap_or_else(|e| panic!("{query}: {e:?}")),
    };
    let mut hits: Vec<(String, String)> = hits
        .iter()
        .map(|h| {
            (
                h["type"].as_str().unwrap().to_string(),
                h["session"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    hits.sort();
    hits
}

fn record_sessions(w: &Workspace) {
    let cwd = w.ws.path().to_str().unwrap().to_string();
    for payload in claude_session(&cwd) {
        assert_silent(&hook(w, "claude-code", &payload), "claude");
    }
    for payload in codex_session(&cwd) {
        assert_silent(&hook(w, "codex", &payload), "codex");
    }
}

#[test]
fn search_finds_what_the_hooks_and_an_import_recorded_by_each_field() {
    let w = Workspace::new();
    record_sessions(&w);

    // Words from a shell command, in the permission asked and refused for it.
    let rm = found(&w, "\"rm -rf target\"");
    assert!(!rm.is_empty(), "{rm:?}");
    assert!(rm.iter().all(|(_, s)| s == "c1a2-u"), "{rm:?}");
    assert!(
        rm.iter().any(|(t, _)| t.starts_with("permission/")),
        "{rm:?}"
    );
    // type: the prompt as typed, not the tool calls that came after it.
    let prompts = found(&w, "type:prompt review");
    assert_eq!(prompts, [("session/prompt".into(), "c1a2-u".into())]);
    // tool:, file: (a folder above the file), status:, agent:, source:.
    let read = found(&w, "tool:read file:src");
    assert!(
        !read.is_empty() && read.iter().all(|(_, s)| s == "c1a2-u"),
        "{read:?}"
    );
    assert!(found(&w, "file:sr").is_empty());
    let failed = found(&w, "status:error tool:bash");
    assert!(!failed.is_empty(), "{failed:?}");
    let codex = found(&w, "agent:codex");
    assert!(
        !codex.is_empty() && codex.iter().all(|(_, s)| s != "c1a2-u"),
        "{codex:?}"
    );
    assert_eq!(
        found(&w, "source:hook").len(),
        found(&w, "source:\"claude-code hook\"").len() + found(&w, "source:\"codex hook\"").len()
    );
    // session: and a word left out.
    let replies = found(&w, "session:c1a2-u \"review is done\"");
    assert!(!replies.is_empty(), "{replies:?}");
    assert!(found(&w, "session:c1a2-u \"review is done\" -review").is_empty());

    // An import of a transcript: found by its words and its source.
    let file = w.home.path().join(".claude/projects/-p/old-1.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"old-1","timestamp":"2025-03-04T05:06:07.000Z","message":{"role":"user","content":"explain the payments webhook"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","sessionId":"old-1","timestamp":"2025-03-04T05:06:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the webhook retries twice"}],"stop_reason":"end_turn"}}"#,
            "\n",
        ),
    )
    .unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    let webhook = found(&w, "webhook source:transcript");
    assert_eq!(webhook.len(), 2, "{webhook:?}");
    assert_eq!(
        found(&w, "webhook type:reply"),
        [("session/update".into(), "old-1".into())]
    );
    // Each hit names its seq, its time and a snippet with the match marked.
    let hit = &search(&w, &["retries"]).unwrap()[0];
    assert!(hit["seq"].as_u64().unwrap() > 0 && hit["at"].as_u64().unwrap() > 0);
    assert!(
        hit["snippet"].as_str().unwrap().contains("[retries]"),
        "{hit}"
    );
    let shown = w.ok(&["show", &hit["seq"].to_string()]);
    assert!(shown.contains("retries"), "{shown}");

    // --count, --sessions, --since/--until.
    assert_eq!(w.ok(&["search", "--count", "webhook"]).trim(), "2");
    let sessions = search(&w, &["--sessions", "review OR webhook"]).unwrap();
    let named: Vec<&str> = sessions
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert!(
        named.contains(&"old-1") && named.contains(&"c1a2-u"),
        "{named:?}"
    );
    assert_eq!(search(&w, &["webhook", "--since", "1h"]).unwrap().len(), 2);
    assert_eq!(search(&w, &["webhook", "--until", "1h"]).unwrap_err().0, 3);

    // verify checks the index it finds beside the log.
    let verify = w.ok(&["verify"]);
    assert!(verify.contains("index: covers seq 1 through"), "{verify}");
}

#[test]
fn redacted_text_is_not_found_and_a_bad_query_is_refused_with_where() {
    let w = Workspace::new();
    let secret = json!({"session_id": "r1", "cwd": w.ws.path(), "hook_event_name": "BeforeAgent",
        "prompt": "deploy with AKIAABCDEFGHIJKLMNOP and https://me:hunter22@db.example.com"});
    assert_silent(
        &hook_text(&w, "gemini", &secret.to_string(), &["--redact"]),
        "redact",
    );
    assert_eq!(
        found(&w, "deploy"),
        [("session/prompt".into(), "r1".into())]
    );
    for gone in ["AKIAABCDEFGHIJKLMNOP", "hunter22"] {
        let (code, stderr) = search(&w, &[gone]).unwrap_err();
        assert_eq!(code, 3, "{gone}: {stderr}");
        assert!(stderr.contains("no match"), "{stderr}");
    }
    for (query, says) in [
        ("\"deploy with", "character"),
        ("nosuch:x", "nosuch"),
        ("", "empty"),
    ] {
        let (code, stderr) = search(&w, &[query]).unwrap_err();
        assert_eq!(code, 2, "{query}: {stderr}");
        assert!(stderr.contains(says), "{query}: {stderr}");
    }
    let long = "a ".repeat(600);
    let (code, stderr) = search(&w, &[&long]).unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("at most 1000"), "{stderr}");
}

#[test]
fn the_daemon_keeps_the_index_current_as_it_appends() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let cwd = w.ws.path().to_str().unwrap().to_string();
    for i in 0..20 {
        let payload = json!({"session_id": "live-1", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": format!("deploy step {i}")});
        assert_silent(&hook(&w, "codex", &payload), "through the daemon");
    }
    // The daemon's own index reaches the log's head without a search.
    let meta = w.ws.path().join(".cmdlog/index/meta.json");
    let covered = || -> u64 {
        std::fs::read_to_string(&meta)
            .ok()
            .and_then(|m| serde_json::from_str::<Value>(&m).ok())
            .and_then(|m| serde_json::from_str::<Value>(m["payload"].as_str()?).ok())
            .and_then(|p| p["through"].as_u64())
            .unwrap_or(0)
    };
    let head = w.ok(&["verify", "--json"]);
    let head: Value = serde_json::from_str(&head).unwrap();
    let head = head["head_seq"].as_u64().unwrap();
    let start = Instant::now();
    while covered() < head && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(covered(), head, "the daemon's index reached the head");
    // A search while the daemon holds the log and its index.
    assert_eq!(w.ok(&["search", "--count", "deploy step"]).trim(), "20");
    // Once the log is quiet the daemon lets the index's writer go: a rebuild
    // from the command line takes it (it holds it while appends keep coming).
    let start = Instant::now();
    let rebuilt = loop {
        let out = w.run(&["index", "--rebuild"]);
        if out.status.success() || start.elapsed() > Duration::from_secs(10) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        rebuilt.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuilt.stderr)
    );
    assert_eq!(w.ok(&["search", "--count", "deploy step"]).trim(), "20");
    drop(d);
    let verify = w.ok(&["verify"]);
    assert!(verify.contains("ok: no violations"), "{verify}");
}
