//! Every verb while a cmdlog process holds the log (issue 39): the holder
//! answers the reads of other cmdlog processes and appends their writes in its
//! own group commit, and each verb prints what it prints once the holder has
//! stopped (or, for a write, what it prints with no holder at all).

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::post;
use serde_json::{Value, json};

/// The verbs compared, with their arguments; `SESSION`, `BLOB`, `CHECKPOINT`
/// and `TILES` are replaced by a session, a blob, a saved checkpoint and a
/// folder.
const VERBS: &[&[&str]] = &[
    &["log"],
    &["log", "--json", "--all"],
    &["log", "--session", "SESSION"],
    &["sessions"],
    &["sessions", "--json"],
    &["audit"],
    &["audit", "--json"],
    &["show", "3"],
    &["replay", "--session", "SESSION"],
    &["verify"],
    &["verify", "--json"],
    &["verify", "--checkpoint", "CHECKPOINT"],
    &["export"],
    &["export", "-o", "-"],
    &["report", "--session", "SESSION", "-o", "-"],
    &["drift"],
    &["key"],
    &["prove", "3"],
    &["checkpoint"],
    &["tiles", "-o", "TILES"],
    &["blob", "BLOB"],
    &["gc", "--dry-run"],
    &["gc", "--dry-run", "--json"],
    &["hooks", "status"],
];

/// What the verbs above print: the command, its exit code, its stdout (and,
/// for `tiles`, the files it wrote).
fn outputs(w: &Workspace, session: &str, blob: &str) -> Vec<(String, i32, String)> {
    let checkpoint = w.ws.path().join("saved.checkpoint");
    let tiles = w.ws.path().join("tiles");
    VERBS
        .iter()
        .map(|verb| {
            let args: Vec<&str> = verb
                .iter()
                .map(|a| match *a {
                    "SESSION" => session,
                    "BLOB" => blob,
                    "CHECKPOINT" => checkpoint.to_str().unwrap(),
                    "TILES" => tiles.to_str().unwrap(),
                    a => a,
                })
                .collect();
            let _ = std::fs::remove_dir_all(&tiles);
            let o = w.run(&args);
            let mut out = String::from_utf8_lossy(&o.stdout).into_owned();
            if tiles.exists() {
                out.push_str(&folder(&tiles));
            }
            (args.join(" "), o.status.code().unwrap_or(-1), out)
        })
        .collect()
}

/// Each file under `dir`, with the hash of its bytes, in order.
fn folder(dir: &std::path::Path) -> String {
    let mut files: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            format!("{name} {}\n", cmdlog_store::BlobHash::of(&bytes).to_hex())
        })
        .collect();
    files.sort();
    files.concat()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => out.extend(walk(&path)),
            false => out.push(path),
        }
    }
    out
}

/// A workspace with a prompt command that takes attachments, a Claude Code
/// transcript to import, and a first run with an attachment (a blob).
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.write(
        ".cmdlog/commands/greet.md",
        "---\nattachments: true\n---\nSay hello to $1.\n",
    );
    w.write("notes.txt", "notes for the run\n");
    let transcript = w.home.path().join(".claude/projects/-p/old-1.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(
        &transcript,
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"old-1","timestamp":"2025-03-04T05:06:07.000Z","message":{"role":"user","content":"hello"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","sessionId":"old-1","timestamp":"2025-03-04T05:06:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}}"#,
            "\n",
        ),
    )
    .unwrap();
    w.ok(&[
        "run",
        "--session",
        "first",
        "--attach",
        "notes.txt",
        "/greet you",
    ]);
    w.ok(&["run", "--session", "first", "/help"]);
    let checkpoint = w.ws.path().join("saved.checkpoint");
    w.ok(&["checkpoint", "-o", checkpoint.to_str().unwrap()]);
    w
}

fn blob_of(w: &Workspace) -> String {
    w.blobs()[0].to_hex()
}

/// Exit code, stdout and stderr of a write.
fn said(o: &Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The events of the log, as `log --json --all` prints them.
fn events(w: &Workspace) -> Vec<Value> {
    w.ok(&["log", "--json", "--all"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count(events: &[Value], kind: &str, session: &str) -> usize {
    events
        .iter()
        .filter(|e| e["type"] == kind && e["session"] == session)
        .count()
}

#[test]
fn every_verb_answers_the_same_while_serve_holds_the_log() {
    let w = workspace();
    let blob = blob_of(&w);
    let daemon = w.serve(&[]);
    // A session recorded through the daemon.
    let (status, _) = post(
        &format!("{}/session", daemon.url),
        json!({"sessionId": "through"}),
    );
    assert_eq!(status, 200);
    let (status, _) = post(
        &format!("{}/session/through/command", daemon.url),
        json!({"line": "/help"}),
    );
    assert_eq!(status, 200);

    // Writes go through the daemon, as they go without one.
    let run = said(&w.run(&["run", "--session", "cli", "/help"]));
    let unknown = said(&w.run(&["run", "--session", "cli", "/nosuch"]));
    let attached = said(&w.run(&[
        "run",
        "--session",
        "cli",
        "--attach",
        "notes.txt",
        "/greet cli",
    ]));
    let imported: Value = w.json(&["import", "--from", "claude-code", "--json"]);
    let gc = said(&w.run(&["gc"]));
    // The daemon folded what the CLI appended: the session it made is one it knows.
    let (status, answer) = post(
        &format!("{}/session/cli/command", daemon.url),
        json!({"line": "/help"}),
    );
    assert_eq!(status, 200, "{answer}");

    let held = outputs(&w, "through", &blob);
    drop(daemon);
    let after = outputs(&w, "through", &blob);
    for ((verb, code, out), (_, code_after, out_after)) in held.iter().zip(&after) {
        assert_eq!(
            (code, out),
            (code_after, out_after),
            "`cmdlog {verb}` while serve held the log, then after it stopped"
        );
        assert_eq!(*code, 0, "`cmdlog {verb}`: {out}");
    }

    // The same writes with nobody holding the log: the same answers.
    assert_eq!(run, said(&w.run(&["run", "--session", "cli2", "/help"])));
    assert_eq!(
        unknown,
        said(&w.run(&["run", "--session", "cli2", "/nosuch"]))
    );
    assert_eq!(unknown.0, 3, "{unknown:?}");
    assert_eq!(
        attached,
        said(&w.run(&[
            "run",
            "--session",
            "cli2",
            "--attach",
            "notes.txt",
            "/greet cli"
        ]))
    );
    assert_eq!(attached.0, 0, "{attached:?}");
    assert_eq!(gc, said(&w.run(&["gc"])));
    // Each landed once: the import found nothing new the second time.
    assert!(imported["events"].as_u64().unwrap() > 0, "{imported}");
    let again: Value = w.json(&["import", "--from", "claude-code", "--json"]);
    assert_eq!(again["events"], 0, "{again}");
    let all = events(&w);
    assert_eq!(count(&all, "session/created", "cli"), 1);
    assert_eq!(count(&all, "command/run", "cli"), 3);
    assert_eq!(count(&all, "command/run", "through"), 1);
    assert_eq!(count(&all, "session/prompt", "old-1"), 1);
    w.ok(&["verify"]);
}

#[test]
fn log_follow_sees_what_the_holder_appends_at_once() {
    let w = workspace();
    let daemon = w.serve(&[]);
    let (status, _) = post(
        &format!("{}/session", daemon.url),
        json!({"sessionId": "live"}),
    );
    assert_eq!(status, 200);
    let mut follow = w
        .cmd(&["log", "--follow", "--session", "live"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let out = follow.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send((Instant::now(), line));
        }
    });
    let wait = |what: &str| loop {
        let (at, line) = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no line with {what:?}"));
        if line.contains(what) {
            return at;
        }
    };
    wait("session/created");
    for _ in 0..3 {
        let sent = Instant::now();
        let (status, _) = post(
            &format!("{}/session/live/command", daemon.url),
            json!({"line": "/help"}),
        );
        let acknowledged = Instant::now();
        assert_eq!(status, 200);
        let seen = wait("command/done");
        // Far inside the bench's bar (benches/held.rs): a poll would take 200 ms.
        assert!(
            seen.saturating_duration_since(acknowledged) < Duration::from_millis(150),
            "seen {:?} after it was sent",
            seen - sent
        );
    }
    // The holder stops as asked (SIGTERM), at once though a follower waits on
    // it; follow goes on reading the log itself.
    let mut daemon = daemon;
    std::process::Command::new("kill")
        .args(["-TERM", &daemon.child.id().to_string()])
        .status()
        .unwrap();
    let asked = Instant::now();
    while daemon.child.try_wait().unwrap().is_none() {
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "serve did not stop while log --follow waited on it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    w.ok(&["run", "--session", "live", "/help"]);
    wait("command/done");
    let _ = follow.kill();
    let _ = follow.wait();
}

#[test]
fn every_verb_answers_the_same_while_cmdlog_acp_holds_the_log() {
    let w = workspace();
    let blob = blob_of(&w);
    let mut acp = crate::bridge::acp_proxy(&w, &w.ws.path().join("agent.jsonl"));
    acp.initialize();
    let sid = acp.new_session(2);
    acp.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/greet proxy"}]}}));
    assert_eq!(
        acp.until(|m| m["id"] == 3)["result"]["stopReason"],
        "end_turn"
    );

    let run = said(&w.run(&["run", "--session", "cli", "/help"]));
    assert_eq!(run.0, 0, "{run:?}");
    let imported: Value = w.json(&["import", "--from", "claude-code", "--json"]);
    let held = outputs(&w, &sid, &blob);
    // Killed, so that it appends nothing on its way out.
    let _ = acp.child.kill();
    let _ = acp.child.wait();
    let after = outputs(&w, &sid, &blob);
    for ((verb, code, out), (_, code_after, out_after)) in held.iter().zip(&after) {
        assert_eq!(
            (code, out),
            (code_after, out_after),
            "`cmdlog {verb}` while acp held the log, then after it stopped"
        );
        assert_eq!(*code, 0, "`cmdlog {verb}`: {out}");
    }
    // The agent's commands are in the registry only while acp runs.
    assert!(
        run.1.contains("/compress") && run.1.contains("/greet"),
        "{run:?}"
    );
    let again: Value = w.json(&["import", "--from", "claude-code", "--json"]);
    assert!(imported["events"].as_u64().unwrap() > 0, "{imported}");
    assert_eq!(again["events"], 0, "{again}");
    let all = events(&w);
    assert_eq!(count(&all, "command/run", "cli"), 1);
    assert_eq!(count(&all, "command/run", &sid), 1);
}
