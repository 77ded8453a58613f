//! The `cmdlog` binary as a person uses it: a temp HOME and a temp workspace per test.

use cmdlog_test_support::Workspace;

use std::path::Path;
use std::process::{Output, Stdio};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn head(ws: &Workspace) -> serde_json::Value {
    let o = ws.run(&["verify", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    serde_json::json!([report["head_seq"], report["head_hash"]])
}

#[test]
fn run_help_in_an_empty_folder_creates_the_log() {
    let ws = Workspace::new();
    assert!(!ws.log_path().exists());
    let o = ws.run(&["run", "/help"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("Built-in:"), "{}", stdout(&o));
    assert!(stdout(&o).contains("/model [<model-id>]"));
    assert!(stderr(&o).starts_with("session: s-"), "{}", stderr(&o));
    assert!(ws.log_path().exists());
    // HOME is untouched.
    assert_eq!(std::fs::read_dir(ws.home.path()).unwrap().count(), 0);
}

#[test]
fn exit_codes_follow_the_design() {
    let ws = Workspace::new();
    assert_eq!(code(&ws.run(&["run", "--session", "s", "/help"])), 0);
    let before = head(&ws);

    let o = ws.run(&["run", "--session", "s", "/nope"]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("unknown command /nope") && stderr(&o).contains("nothing was logged")
    );
    assert_eq!(head(&ws), before, "a miss logs nothing");

    let o = ws.run(&["run", "--session", "s", "help"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a slash line"));
    assert_eq!(code(&ws.run(&["run", "--mode", "sideways", "/help"])), 2);
    assert_eq!(code(&ws.run(&["run", "--session", "bad id", "/help"])), 2);
    assert_eq!(code(&ws.run(&["frobnicate"])), 2);

    let o = ws.run(&["run", "--session", "s", "/model two words"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("invalid model id"), "{}", stderr(&o));

    let o = ws.run(&["run", "--session", "s", "--attach", "x.png", "/help"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("does not take attachments"),
        "{}",
        stderr(&o)
    );

    let o = ws.run(&["replay", "--until", "100000"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("past the head"));
    assert_eq!(code(&ws.run(&["replay", "--session", "nobody"])), 3);
    assert_eq!(code(&ws.run(&["log", "--session", "nobody"])), 3);
}

#[test]
fn read_verbs_on_a_missing_log_say_so_and_create_nothing() {
    let ws = Workspace::new();
    for verb in [&["log"][..], &["verify"], &["replay"]] {
        let o = ws.run(verb);
        assert_eq!(code(&o), 3, "{verb:?}");
        assert!(stderr(&o).contains("no log at"), "{}", stderr(&o));
    }
    assert!(!ws.ws.path().join(".cmdlog").exists());
}

#[test]
fn sessions_keep_their_model_across_invocations() {
    let ws = Workspace::new();
    assert_eq!(
        code(&ws.run(&["run", "--session", "work", "/model", "opus"])),
        2,
        "the line is one argument"
    );
    let o = ws
        .cmd(&["run", "/model opus"])
        .env("CMDLOG_SESSION", "work")
        .output()
        .unwrap();
    assert_eq!(stdout(&o).trim(), "Model set to opus", "{}", stderr(&o));
    let o = ws.run(&["run", "--session", "work", "/model"]);
    assert_eq!(stdout(&o).trim(), "Current model: opus");
    let o = ws.run(&["run", "--session", "work", "--json", "/model"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["outcome"]["kind"], "success");
    assert_eq!(v["session"], "work");
    // Interactive mode gets the dialog variant.
    let o = ws.run(&["run", "--session", "tui", "--mode", "interactive", "/model"]);
    assert!(
        stdout(&o).contains("open the model dialog"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn commands_lists_per_mode_and_formats() {
    let ws = Workspace::new();
    let o = ws.run(&["commands", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    // Built-ins and the bundled fallback templates, name-sorted.
    assert_eq!(
        names,
        vec![
            "commit-message",
            "explain",
            "fix-tests",
            "help",
            "model",
            "review"
        ]
    );
    let by_name = |list: &serde_json::Value, name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name(&list, "model")["command_type"], "local");
    assert_eq!(by_name(&list, "review")["source_label"], "Skill");

    let o = ws.run(&["commands", "--mode", "interactive", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(by_name(&list, "model")["command_type"], "local-jsx");

    let o = ws.run(&["commands", "--format", "acp"]);
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        by_name(&list, "model"),
        serde_json::json!({"name": "model", "description": "Show or set the session model", "input": {"hint": "[<model-id>]"}})
    );

    let o = ws.run(&["commands", "--model-invocable", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["commit-message", "explain", "fix-tests", "review"],
        "built-ins are never model-invocable"
    );
    assert_eq!(
        list[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["argument_hint", "description", "name", "when_to_use"]
    );

    let o = ws.run(&["commands", "--all", "--mode", "acp"]);
    assert!(stdout(&o).contains("not available here"), "{}", stdout(&o));
}

#[test]
fn log_prints_json_lines_with_filters() {
    let ws = Workspace::new();
    ws.run(&["run", "--session", "a", "/help"]);
    ws.run(&["run", "--session", "b", "/model x"]);
    let o = ws.run(&["log", "--json"]);
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.len() >= 9);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
        assert!(e["at"].is_u64() && e["type"].is_string() && e["data"].is_object());
    }
    let o = ws.run(&["log", "--json", "--session", "b", "--type", "command/"]);
    let types: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(types, vec!["command/run", "command/done"]);
    let o = ws.run(&["log", "--from", "2", "--until", "3"]);
    assert_eq!(stdout(&o).lines().count(), 2);
}

#[test]
fn a_process_holding_the_log_gives_others_a_clear_lock_error() {
    let ws = Workspace::new();
    ws.run(&["run", "/help"]);
    // Another process (this test) holds the log for longer than the CLI waits.
    let holder = cmdlog_store::Log::open(ws.log_path(), Default::default()).unwrap();
    let o = ws.run(&["run", "/help"]);
    assert_eq!(code(&o), 4);
    assert!(
        stderr(&o).contains("held by another process"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stderr(&o).contains("Database already open"),
        "no raw redb error"
    );
    assert_eq!(
        code(&ws.run(&["verify"])),
        4,
        "readers wait too, then say so"
    );
    drop(holder);
    assert_eq!(code(&ws.run(&["run", "/help"])), 0);
}

#[test]
fn concurrent_runs_wait_for_each_other() {
    let ws = Workspace::new();
    ws.run(&["run", "/help"]);
    let children: Vec<_> = (0..6)
        .map(|i| {
            ws.cmd(&["run", "--session", &format!("c{i}"), "/model m"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(code(&ws.run(&["verify"])), 0);
}

#[test]
fn log_follow_prints_what_other_processes_append() {
    use std::io::BufRead;
    let ws = Workspace::new();
    ws.run(&["run", "--session", "a", "/help"]);
    let mut follower = ws
        .cmd(&["log", "--follow", "--json", "--type", "command/"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follower.stdout.take().unwrap()).lines();
    let first: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["type"], "command/run");
    assert!(lines.next().unwrap().unwrap().contains("command/done"));
    // Appended by another process while the follower waits.
    let o = ws.run(&["run", "--session", "b", "/model follow-me"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.take(2) {
            let _ = tx.send(line.unwrap());
        }
    });
    let run = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the new run is printed");
    let done = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("and its done");
    follower.kill().unwrap();
    follower.wait().unwrap();
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert_eq!(
        (run["type"].as_str(), run["session"].as_str()),
        (Some("command/run"), Some("b"))
    );
    assert!(done.contains("Model set to follow-me"), "{done}");
}

fn tamper(path: &Path, seq: u64) {
    cmdlog_test_support::tamper::edit_record(path, seq, |v| {
        // Change one byte of the record's JSON, keeping it valid: the `at` digits.
        let i = v
            .iter()
            .position(|b| b.is_ascii_digit() && *b != b'0')
            .unwrap_or(v.len() - 1);
        let at = i.max(40);
        v[at] = if v[at] == b'9' {
            b'8'
        } else {
            v[at].wrapping_add(1)
        };
    });
}

#[test]
fn verify_after_hundreds_of_mixed_runs_then_names_a_tampered_seq() {
    let ws = Workspace::new();
    let lines = [
        "/help",
        "/model m1",
        "/model",
        "/nope",
        "/model a b",
        "/HELP extra",
        "/model m2",
    ];
    for i in 0..210 {
        let session = format!("s{}", i % 7);
        let mode = ["non_interactive", "acp", "interactive"][i % 3];
        let o = ws.run(&[
            "run",
            "--session",
            &session,
            "--mode",
            mode,
            lines[i % lines.len()],
        ]);
        assert!([0, 1, 3].contains(&code(&o)), "{}", stderr(&o));
    }
    let o = ws.run(&["verify"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("ok: no violations"), "{out}");
    let head_line = out.lines().find(|l| l.starts_with("head seq")).unwrap();
    assert_eq!(head_line.split_whitespace().last().unwrap().len(), 64);

    let seq = 77;
    tamper(&ws.log_path(), seq);
    let o = ws.run(&["verify"]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains(&format!(
            "violation at seq {seq}: seq {seq}: hash chain broken"
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn replay_until_shows_the_registry_at_that_seq_with_shadowed_entries() {
    use cmdlog_engine::event::*;
    use cmdlog_engine::*;
    let ws = Workspace::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (shadowed_at, disposed_at) = rt.block_on(async {
        let log = cmdlog_store::Log::open(ws.log_path(), Default::default()).unwrap();
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        let prompt = |name: &str| {
            let mut spec = CommandSpec::new(
                CommandName::new(name).unwrap(),
                CommandSource::SkillDirCommand,
                CommandKind::File,
            );
            spec.command_type = Some(CommandType::Prompt);
            spec.description = format!("{name} command");
            spec
        };
        engine
            .register(NewRegistration::prompt(
                prompt("review"),
                "Review $ARGUMENTS",
            ))
            .await
            .unwrap();
        let mut user = NewRegistration::prompt(prompt("review"), "Review carefully: $ARGUMENTS");
        user.provider = ProviderRef {
            id: "native".into(),
            priority: 100,
            level: "project".into(),
            order: 0,
            item: 0,
        };
        let winner = engine.register(user).await.unwrap();
        let shadowed_at = engine.log().head().seq;
        winner.dispose().await.unwrap();
        (shadowed_at, engine.log().head().seq)
    });
    let o = ws.run(&["replay", "--until", &shadowed_at.to_string(), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let view: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(view["until"], shadowed_at);
    let review: Vec<&serde_json::Value> = view["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "review")
        .collect();
    assert_eq!(review.len(), 2);
    assert_eq!(
        (review[0]["provider"].as_str(), review[0]["status"].as_str()),
        (Some("native"), Some("active"))
    );
    assert_eq!(review[1]["status"], "shadowed");
    assert_eq!(review[1]["shadowed_by"], review[0]["registration"]);
    assert!(
        review[1]["why"]
            .as_str()
            .unwrap()
            .contains("priority 100 > 90")
    );

    let o = ws.run(&["replay", "--until", &disposed_at.to_string(), "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let review: Vec<&serde_json::Value> = view["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "review")
        .collect();
    assert_eq!(review.len(), 1);
    assert_eq!(review[0]["provider"], "api");

    let o = ws.run(&["run", "--session", "x", "/review the parser"]);
    assert_eq!(stdout(&o).trim(), "Review the parser");
}
