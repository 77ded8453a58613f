//! The audit and replay-debugging verbs on a real session history.

use cmdlog_test_support::Workspace;

use serde_json::Value;

use cmdlog_engine::event::*;
use cmdlog_engine::*;
use cmdlog_store::{Log, LogConfig};

/// Two sessions: prompt runs of a Claude command, a failed /model, an attachment, a
/// file edit, and a run interrupted by a crash.
fn history() -> Workspace {
    let w = Workspace::new();
    w.write(
        ".claude/commands/review.md",
        "---\nattachments: true\n---\nReview $0 carefully\n",
    );
    w.write("notes.txt", "notes\n");
    w.ok(&["run", "--session", "alpha", "/review a.rs"]);
    w.ok(&[
        "run",
        "--session",
        "alpha",
        "--attach",
        "notes.txt",
        "/review b.rs",
    ]);
    assert_eq!(
        w.run(&["run", "--session", "alpha", "/model two words"])
            .status
            .code(),
        Some(1)
    );
    w.write(
        ".claude/commands/review.md",
        "---\nattachments: true\n---\nReview $0 with tests\n",
    );
    w.ok(&[
        "run",
        "--session",
        "beta",
        "--agent",
        "helper",
        "/review c.rs",
    ]);
    // A run whose process died: recovery closes it as interrupted at the next open.
    {
        let log = Log::open(w.log_path(), LogConfig::default()).unwrap();
        let help = {
            let mut state = LogState::default();
            fold_log(&log, &mut state, 1, log.head().seq).unwrap();
            state
                .registry
                .resolve("main", Mode::NonInteractive, "help")
                .unwrap()
                .seq
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let run = NewEvent {
            observed: None,
            at: now,
            session: Some("beta".into()),
            agent: Some("main".into()),
            data: EventData::CommandRun(CommandRun {
                injections: Vec::new(),
                registration: help,
                name: "help".into(),
                mode: Mode::NonInteractive,
                source: InvocationSource::User,
                raw_input: Some(String::new()),
                attachments: vec![],
                release: None,
            }),
        };
        log.append(vec![run.to_record()]).unwrap();
    }
    w.ok(&["run", "--session", "beta", "/help"]);
    w
}

#[test]
fn sessions_summarise_runs_errors_interrupted_and_agents() {
    let w = history();
    let list = w.json(&["sessions", "--json"]);
    let alpha = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "alpha")
        .unwrap()
        .clone();
    assert_eq!(
        (
            alpha["runs"].as_u64(),
            alpha["errors"].as_u64(),
            alpha["interrupted"].as_u64()
        ),
        (Some(3), Some(1), Some(0))
    );
    let beta = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "beta")
        .unwrap()
        .clone();
    assert_eq!(
        (
            beta["runs"].as_u64(),
            beta["errors"].as_u64(),
            beta["interrupted"].as_u64()
        ),
        (Some(3), Some(1), Some(1))
    );
    assert_eq!(beta["agents"], serde_json::json!(["helper", "main"]));
    let table = w.ok(&["sessions"]);
    assert!(
        table.lines().next().unwrap().starts_with("session"),
        "{table}"
    );
    assert!(
        !table.contains('\x1b'),
        "no colour when NO_COLOR is set or stdout is not a terminal"
    );
}

#[test]
fn audit_shows_the_timeline_with_filters() {
    let w = history();
    let rows = w.json(&["audit", "--session", "alpha", "--json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["input"], " a.rs");
    assert_eq!(rows[1]["attachments"], serde_json::json!(["notes.txt"]));
    assert_eq!(rows[2]["outcome"]["kind"], "error");
    assert!(rows.iter().all(|r| r["elapsed_us"].is_u64()
        && r["agent"] == "main"
        && r["mode"] == "non_interactive"));

    let errors = w.json(&["audit", "--errors", "--json"]);
    let kinds: Vec<(String, bool)> = errors
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_string(),
                r["outcome"]["interrupted"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![("model".to_string(), false), ("help".to_string(), true)]
    );
    assert_eq!(
        w.json(&["audit", "--command", "/review", "--json"])
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        w.json(&["audit", "--since", "1h", "--json"])
            .as_array()
            .unwrap()
            .len(),
        6
    );
    assert_eq!(
        w.json(&["audit", "--since", "2999-01-01", "--json"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        w.run(&["audit", "--since", "last tuesday"]).status.code(),
        Some(2)
    );
    assert_eq!(
        w.run(&["audit", "--session", "nobody"]).status.code(),
        Some(3)
    );
    let table = w.ok(&["audit", "--session", "alpha"]);
    assert!(
        table.contains("/review b.rs [notes.txt]") && table.contains("error: invalid model id"),
        "{table}"
    );
}

#[test]
fn the_failed_run_and_its_template_in_three_commands() {
    let w = history();
    // 1. What failed recently?
    let failed = w.json(&["audit", "--errors", "--since", "1d", "--json"]);
    let seq = failed[0]["seq"].as_u64().unwrap();
    // 2. Show it: its done, its registration as it was.
    let shown = w.json(&["show", &seq.to_string(), "--json"]);
    let roles: Vec<&str> = shown["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["done", "registration"]);
    // For a prompt command, show prints the template as it was registered.
    let review = w.json(&["audit", "--command", "review", "--json"]);
    let first = review[0]["seq"].as_u64().unwrap();
    let text = w.ok(&["show", &first.to_string()]);
    assert!(
        text.contains("template as registered:\nReview $0 carefully"),
        "{text}"
    );
    let shown = w.json(&["show", &review[1]["seq"].to_string(), "--json"]);
    assert!(
        shown["related"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["role"] == "attachment")
    );
    let done_seq = shown["related"][0]["event"]["seq"].as_u64().unwrap();
    let shown = w.json(&["show", &done_seq.to_string(), "--json"]);
    assert_eq!(shown["related"][0]["role"], "run");
    assert_eq!(w.run(&["show", "999999"]).status.code(), Some(3));
}

#[test]
fn replay_diff_names_the_template_change() {
    let w = history();
    let review = w.json(&["audit", "--command", "review", "--json"]);
    let (before, after) = (
        review[1]["seq"].as_u64().unwrap(),
        review[2]["seq"].as_u64().unwrap(),
    );
    let diff = w.json(&[
        "replay",
        "--diff",
        &before.to_string(),
        &after.to_string(),
        "--json",
    ]);
    let changed = diff["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{diff:#}");
    assert_eq!(changed[0]["before"]["name"], "review");
    assert_eq!(changed[0]["template_changed"], true);
    assert!(
        w.ok(&["replay", "--diff", &before.to_string(), &after.to_string()])
            .contains("~ /review")
    );
}

#[test]
fn export_then_import_reproduces_the_head_hash() {
    let w = history();
    let export = w.ws.path().join("log.jsonl");
    w.ok(&["export", "-o", export.to_str().unwrap()]);
    let head = w.json(&["verify", "--json"])["head_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let copy = w.ws.path().join("copy.redb");
    let out = w.ok(&[
        "--log",
        copy.to_str().unwrap(),
        "import",
        export.to_str().unwrap(),
    ]);
    assert!(
        out.contains(&format!("hash {head}"))
            && out.contains("matches the export's head hash")
            && out.contains("verify: ok"),
        "{out}"
    );
    assert_eq!(
        w.run(&[
            "--log",
            copy.to_str().unwrap(),
            "import",
            export.to_str().unwrap()
        ])
        .status
        .code(),
        Some(2),
        "only into an empty log"
    );
    // The copy answers like the original.
    assert_eq!(
        w.ok(&["--log", copy.to_str().unwrap(), "audit", "--json"]),
        w.ok(&["audit", "--json"])
    );

    let session_only = w.ok(&["export", "--session", "alpha"]);
    let lines: Vec<serde_json::Value> = session_only
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l["session"] == "alpha")
    );
}

#[test]
fn drift_reports_template_drift_and_engine_regressions() {
    let w = history();
    let out = w.ok(&["drift"]);
    assert!(out.contains("template drifted"), "{out}");
    assert!(
        out.contains("-Review a.rs carefully\n+Review a.rs with tests"),
        "{out}"
    );
    assert!(out.contains("0 engine regressions"), "{out}");
    let report = w.json(&["drift", "--json"]);
    let statuses: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["drifted", "drifted", "same"]);

    // A recorded prompt that the recorded template cannot produce: a regression.
    let run = {
        let log = Log::open(w.log_path(), LogConfig::default()).unwrap();
        let reg = {
            let mut state = LogState::default();
            fold_log(&log, &mut state, 1, log.head().seq).unwrap();
            state
                .registry
                .resolve("main", Mode::NonInteractive, "review")
                .unwrap()
                .seq
        };
        let event = |data| NewEvent {
            observed: None,
            at: 2,
            session: Some("alpha".into()),
            agent: Some("main".into()),
            data,
        };
        let run = log
            .append(vec![
                event(EventData::CommandRun(CommandRun {
                    injections: Vec::new(),
                    registration: reg,
                    name: "review".into(),
                    mode: Mode::NonInteractive,
                    source: InvocationSource::User,
                    raw_input: Some(" d.rs".into()),
                    attachments: vec![],
                    release: None,
                }))
                .to_record(),
            ])
            .unwrap()
            .first;
        let done = CommandDone {
            agent_check: None,
            run,
            outcome: Outcome::Success {
                text: None,
                prompt: Some("Review d.rs carelessly".into()),
                source_event_seq: None,
            },
            elapsed_us: 1,
        };
        log.append(vec![event(EventData::CommandDone(done)).to_record()])
            .unwrap();
        run
    };
    let o = w.run(&["drift", &run.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ENGINE REGRESSION")
            && out.contains("-Review d.rs carelessly")
            && out.contains("+Review d.rs with tests"),
        "{out}"
    );
    assert_eq!(
        w.run(&["drift", "1"]).status.code(),
        Some(3),
        "seq 1 is not a run"
    );
}

#[test]
fn report_is_one_self_contained_html_file() {
    let w = history();
    let path = w.ws.path().join("report.html");
    w.ok(&["report", "--session", "alpha", "-o", path.to_str().unwrap()]);
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for external in ["<script", "src=", "href=", "@import", "url("] {
        assert!(
            !html.contains(external),
            "no external resources or scripts: found {external}"
        );
    }
    assert_eq!(
        html.matches("<tr>").count() + html.matches("<tr class").count(),
        html.matches("</tr>").count()
    );
    assert!(
        html.contains("Timeline of runs")
            && html.contains("Registry as of the first event")
            && html.contains("Registry as of the last event")
    );
    assert_eq!(
        html.matches("class=\"bar ").count(),
        3,
        "one duration bar per run"
    );
    assert!(
        html.contains("class=\"err\"")
            && html.contains("error: invalid model id &quot;two words&quot;"),
        "errors are coloured and escaped"
    );
    assert!(html.contains("/review b.rs") && html.contains("attachments: notes.txt"));
    let whole = w.ws.path().join("all.html");
    w.ok(&["report", "-o", whole.to_str().unwrap()]);
    let html = std::fs::read_to_string(&whole).unwrap();
    assert!(html.contains("<h2>Sessions</h2>") && html.contains("beta"));
    assert_eq!(
        w.run(&["report", "--session", "nobody", "-o", "x.html"])
            .status
            .code(),
        Some(3)
    );
}

#[test]
fn export_redact_hides_matches_and_leaves_out_blobs() {
    let w = history();
    w.ok(&["run", "--session", "alpha", "/model sk-live-12345"]);
    let out = w.ok(&["export", "--redact", "sk-live-[0-9]+", "--redact", "b\\.rs"]);
    assert!(
        !out.contains("sk-live-12345") && !out.contains("b.rs"),
        "{out}"
    );
    assert!(out.contains("[REDACTED]"));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().all(|l| l.get("blob").is_none()),
        "blobs are left out"
    );
    assert_eq!(lines.last().unwrap()["export"]["redacted"], true);
    // Its events were changed: it is refused as a log, and nothing is left behind.
    let file = w.ws.path().join("redacted.jsonl");
    std::fs::write(&file, &out).unwrap();
    let copy = w.ws.path().join("redacted.redb");
    let o = w.run(&[
        "--log",
        copy.to_str().unwrap(),
        "import",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(text.contains("--redact"), "{text}");
    assert!(!copy.exists());
    assert_eq!(w.run(&["export", "--redact", "("]).status.code(), Some(2));
}

#[test]
fn dash_as_the_output_file_is_standard_output() {
    let w = history();
    // export -o - is what export prints without -o, and makes no file "-".
    assert_eq!(w.ok(&["export", "-o", "-"]), w.ok(&["export"]));
    // report -o - prints the report; -o FILE writes the same bytes.
    let printed = w.ok(&["report", "--session", "alpha", "-o", "-"]);
    let file = w.ws.path().join("r.html");
    w.ok(&["report", "--session", "alpha", "-o", file.to_str().unwrap()]);
    assert_eq!(printed, std::fs::read_to_string(&file).unwrap());
    assert!(
        printed.starts_with("<!DOCTYPE html>") || printed.starts_with("<!doctype html>"),
        "{}",
        &printed[..80.min(printed.len())]
    );
    assert!(
        !w.ws.path().join("-").exists(),
        "no file named - in the workspace"
    );
}
