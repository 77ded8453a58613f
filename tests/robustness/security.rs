//! The attacker's findings of issue 13, one test each: every promise that broke
//! under attack, kept. Tests set HOME and the workspace to temp dirs and reach no
//! network but loopback.

use cmdlog_test_support::Workspace;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use cmdlog_store::{Log, LogConfig, journal_path};
use serde_json::{Value, json};

/// The bytes a terminal would obey: ESC, BEL and the C1 CSI (U+009B as UTF-8).
fn terminal_escapes(bytes: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            0x1b => found.push(format!("ESC at {i}")),
            0x07 => found.push(format!("BEL at {i}")),
            0xc2 if bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)) => {
                found.push(format!("C1 at {i}"))
            }
            _ => {}
        }
    }
    found
}

const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}]52;c;Zm9v\u{7}\u{9b}31m";

#[test]
fn hostile_text_reaches_no_terminal_raw() {
    let w = Workspace::new();
    w.put(
        "ws/.claude/commands/evil.md",
        &format!("---\ndescription: {HOSTILE} desc\n---\nBody {HOSTILE} $ARGUMENTS\n"),
    );
    // A file name with an escape: discovery warns about it, naming the path.
    w.put(&format!("ws/.claude/commands/bad{HOSTILE}.md"), "x\n");
    let run = w.run(&["run", "--session", "s", &format!("/evil {HOSTILE}")]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut outputs = vec![("run".to_string(), run)];
    let verbs: Vec<Vec<&str>> = vec![
        vec!["commands"],
        vec!["commands", "--all"],
        vec!["log"],
        vec!["audit"],
        vec!["replay"],
        vec!["replay", "--session", "s"],
        vec!["sessions"],
        vec!["verify"],
        vec!["drift"],
        vec!["prompt", "--session", "p", HOSTILE],
        vec!["run", "--session", "s", HOSTILE],
    ];
    for args in &verbs {
        outputs.push((args.join(" "), w.run(args)));
    }
    let log: Vec<Value> = w
        .ok(&["log", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let run_seq = log.iter().find(|e| e["type"] == "command/run").unwrap()["seq"]
        .as_u64()
        .unwrap();
    outputs.push(("show".into(), w.run(&["show", &run_seq.to_string()])));
    for (verb, out) in &outputs {
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let found = terminal_escapes(bytes);
            assert!(
                found.is_empty(),
                "{verb} {stream}: {found:?} in {}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    // Shown visibly, and `--json` stays exact.
    let shown = String::from_utf8_lossy(&outputs[0].1.stdout).into_owned();
    assert!(shown.contains("\\u{1b}]0;owned"), "{shown}");
    let exact = w.ok(&["log", "--json", "--type", "command/run"]);
    let raw: Value = serde_json::from_str(exact.lines().next().unwrap()).unwrap();
    assert_eq!(raw["data"]["raw_input"], format!(" {HOSTILE}"));
}

#[test]
fn an_empty_token_is_a_usage_error() {
    let w = Workspace::new();
    for (args, env) in [
        (vec!["serve", "--addr", "127.0.0.1:0", "--token", ""], None),
        (vec!["serve", "--addr", "0.0.0.0:0", "--token", "   "], None),
        (vec!["serve", "--addr", "0.0.0.0:0"], Some("")),
    ] {
        let mut cmd = w.cmd(&args);
        match env {
            Some(v) => cmd.env("CMDLOG_TOKEN", v),
            None => cmd.env_remove("CMDLOG_TOKEN"),
        };
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("token is empty"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// One raw HTTP/1.1 exchange, so that any header can be sent as given.
fn raw_http(url: &str, request_line: &str, headers: &[(&str, &[u8])], body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("{request_line} HTTP/1.1\r\n").into_bytes();
    for (k, v) in headers {
        request.extend_from_slice(k.as_bytes());
        request.extend_from_slice(b": ");
        request.extend_from_slice(v);
        request.extend_from_slice(b"\r\n");
    }
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.extend_from_slice(format!("host: {addr}\r\n").as_bytes());
    }
    request.extend_from_slice(
        format!(
            "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    stream.write_all(&request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn post(url: &str, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = raw_http(url, &format!("POST {path}"), &[], &body.to_string());
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    // Chunked or not, the JSON object is the part between the outer braces.
    let json = match (body.find('{'), body.rfind('}')) {
        (Some(a), Some(b)) => serde_json::from_str(&body[a..=b]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, json)
}

#[test]
fn dns_rebinding_hosts_and_foreign_origins_are_refused() {
    let w = Workspace::new();
    let d = w.serve(&["--allow-host", "cmdlog.internal"]);
    let port = d.url.rsplit(':').next().unwrap().to_string();
    let host = |h: &str| format!("{h}:{port}");
    for (h, status) in [
        (host("evil.example"), 421),
        ("evil.example".to_string(), 421),
        (host("127.0.0.1.evil.example"), 421),
        ("127.0.0.1:1".to_string(), 421),
        (host("127.0.0.1"), 200),
        (host("localhost"), 200),
        (host("cmdlog.internal"), 200),
    ] {
        let (got, text) = raw_http(&d.url, "GET /health", &[("host", h.as_bytes())], "");
        assert_eq!(got, status, "{h}: {text}");
    }
    let (got, text) = raw_http(
        &d.url,
        "POST /session",
        &[("origin", b"http://evil.example")],
        "{}",
    );
    assert_eq!(got, 403, "{text}");
    assert!(text.contains("--allow-origin"), "{text}");
    drop(d);
    let d = w.serve(&["--allow-origin", "http://app.example"]);
    let (got, text) = raw_http(
        &d.url,
        "POST /session",
        &[("origin", b"http://app.example")],
        "{}",
    );
    assert_eq!(got, 200, "{text}");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn slow_sse_subscribers_hold_a_bounded_number_of_bytes() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let (status, _) = post(&d.url, "/session", json!({"sessionId": "s"}));
    assert_eq!(status, 200);
    // Subscribers that never read after the response headers.
    let addr = d.url.trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..10 {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(
            format!("GET /session/s/events HTTP/1.1\r\nhost: {addr}\r\nlast-event-id: 0\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        idle.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kib(d.child.id());
    let chunk = "x".repeat(900_000);
    for i in 0..60 {
        let (status, body) = post(
            &d.url,
            "/session/s/update",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{i} {chunk}")}}),
        );
        assert_eq!(status, 200, "{body}");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let after = rss_kib(d.child.id());
    let grown_mib = after.saturating_sub(before) / 1024;
    eprintln!(
        "daemon RSS {before} KiB -> {after} KiB with 10 idle subscribers over 54 MB of events"
    );
    // Unbounded, each subscriber held its whole batch: 10 x 60 frames of ~0.9 MB.
    assert!(grown_mib < 250, "the daemon grew by {grown_mib} MiB");
    drop(idle);
}

/// A log that acknowledged events after its last checkpoint, left as a crash
/// leaves it in the workspace's `.cmdlog/`.
fn crashed_log(w: &Workspace) -> Vec<u8> {
    assert!(w.run(&["run", "--session", "s", "/help"]).status.success());
    let path = w.log_path();
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("log.redb");
    let log = Log::open(&path, LogConfig::default()).unwrap();
    std::fs::copy(&path, &copy).unwrap();
    log.append(vec![cmdlog_store::NewRecord::new(
        json!({"at": 1, "type": "future/event", "data": {}})
            .to_string()
            .into_bytes(),
    )])
    .unwrap();
    std::fs::copy(journal_path(&path), journal_path(&copy)).unwrap();
    drop(log);
    std::fs::copy(&copy, &path).unwrap();
    std::fs::copy(journal_path(&copy), journal_path(&path)).unwrap();
    std::fs::read(&path).unwrap()
}

#[test]
fn a_crashed_log_is_read_on_read_only_media() {
    let w = Workspace::new();
    let before = crashed_log(&w);
    let dir = w.ws.path().join(".cmdlog");
    let bin = env!("CARGO_BIN_EXE_cmdlog");
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,ro,bind {d} && exec {bin} log --json",
        d = dir.display()
    );
    // As root: a read-only bind mount in a mount namespace of our own; otherwise a
    // folder without write permission.
    let root = cmdlog_test_support::running_as_root();
    let out = if root {
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(["-m", "sh", "-c", &script])
            .current_dir(w.ws.path())
            .env("HOME", w.home.path())
            .env_remove("CMDLOG_LOG")
            .stdin(Stdio::null());
        cmd.output().unwrap()
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let out = w.run(&["log", "--json"]);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        out
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("recovered in memory"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("future/event"),
        "the acknowledged event is read: {stdout}"
    );
    assert_eq!(
        std::fs::read(w.log_path()).unwrap(),
        before,
        "the file stayed as it was"
    );
}

/// Whether this process runs as root (`id -u`).

#[test]
fn a_failed_creation_leaves_no_log_behind() {
    let w = Workspace::new();
    let bin = env!("CARGO_BIN_EXE_cmdlog");
    // Files may not grow past 8 KiB: creating the log fails part-way (as on a full disk).
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("trap '' XFSZ; ulimit -f 8; exec {bin} run /help"),
        ])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .env_remove("CMDLOG_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!w.log_path().exists(), "no half-made log.redb");
    assert!(!journal_path(&w.log_path()).exists());
    // And the next try, with room, works.
    assert!(w.run(&["run", "/help"]).status.success());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.log_path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn imports_are_all_or_nothing_and_need_a_trailer() {
    let w = Workspace::new();
    for i in 0..20 {
        assert!(
            w.run(&["run", "--session", &format!("s{i}"), "/help"])
                .status
                .success()
        );
    }
    let export = w.ok(&["export"]);
    let lines: Vec<&str> = export.lines().collect();
    let target = w.ws.path().join("copy/log.redb");
    let target_arg = target.display().to_string();
    let import = |text: &str| {
        let file = w.write("in.jsonl", text);
        w.run(&["--log", &target_arg, "import", &file.display().to_string()])
    };
    let cut_at_line = lines[..lines.len() / 2].join("\n") + "\n";
    let no_trailer = lines[..lines.len() - 1].join("\n") + "\n";
    let tampered: String = export
        .lines()
        .map(|l| match l.contains("command/done") {
            true => l.replacen("\"elapsed_us\":", "\"elapsed_us\":1", 1),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_ne!(tampered, export);
    let bad_line = lines[..5].join("\n") + "\nnot json\n" + &lines[5..].join("\n");
    for (what, text, code) in [
        ("cut", cut_at_line.as_str(), 1),
        ("no trailer", no_trailer.as_str(), 1),
        ("empty", "", 1),
        ("tampered", tampered.as_str(), 1),
        ("a bad line", bad_line.as_str(), 2),
    ] {
        let out = import(text);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!target.exists(), "{what}: no target is left");
        assert!(!journal_path(&target).exists(), "{what}");
        let leftovers: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(leftovers.is_empty(), "{what}: {leftovers:?}");
    }
    // The whole export imports, and a retry into the same place is refused.
    let out = import(&export);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        w.ok(&["--log", &target_arg, "verify"])
            .contains("ok: no violations")
    );
    assert_eq!(import(&export).status.code(), Some(2));
}

#[test]
fn redaction_covers_keys_numbers_and_ids_and_says_so() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let (status, _) = post(&d.url, "/session", json!({"sessionId": "secret-session"}));
    assert_eq!(status, 200);
    let (status, body) = post(
        &d.url,
        "/session/secret-session/update",
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "rawInput": {"secret-key": "value", "pin": 424242, "nested": ["secret"]}}),
    );
    assert_eq!(status, 200, "{body}");
    drop(d);
    let out = w.ok(&["export", "--redact", "secret", "--redact", "4242"]);
    assert!(!out.contains("secret"), "{out}");
    assert!(!out.contains("424242"), "{out}");
    assert!(out.contains("[REDACTED]-key"), "{out}");
    let trailer: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(trailer["export"]["redacted"], true);
    let file = w.write("redacted.jsonl", &out);
    let target = w.ws.path().join("r/log.redb").display().to_string();
    let refused = w.run(&["--log", &target, "import", &file.display().to_string()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--redact"));
}

#[test]
fn an_oversized_expansion_settles_as_an_error_not_a_crash() {
    let w = Workspace::new();
    w.put("ws/.claude/commands/big.md", &"$ARGUMENTS ".repeat(300));
    let argument = "y".repeat(100_000);
    let out = w.run(&["run", "--session", "s", &format!("/big {argument}")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("more than 4194304 bytes"), "{stderr}");
    // Settled by a done of its own, not closed as interrupted at the next open.
    let dones = w.ok(&["log", "--json", "--type", "command/done"]);
    let done: Value = serde_json::from_str(dones.lines().last().unwrap()).unwrap();
    assert!(done["data"]["outcome"]["interrupted"].is_null(), "{done}");
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
}

/// A session with a permission request offering `allow` and `deny`, a closed
/// session, and a settled command.
#[test]
fn daemon_input_is_validated_and_client_errors_are_4xx() {
    let w = Workspace::new();
    w.put("ws/.claude/commands/hi.md", "Hi $ARGUMENTS\n");
    let d = w.serve(&[]);
    let u = d.url.clone();
    assert_eq!(post(&u, "/session", json!({"sessionId": "s"})).0, 200);
    assert_eq!(post(&u, "/session", json!({"sessionId": "closed"})).0, 200);
    let (status, text) = raw_http(&u, "DELETE /session/closed", &[], "");
    assert_eq!(status, 204, "{text}");
    let request = json!({"sessionUpdate": "permission_request", "requestId": "r1",
        "toolCall": {"toolCallId": "t1", "title": "Edit", "kind": "edit"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "deny", "name": "Deny", "kind": "reject_once"}]});
    assert_eq!(post(&u, "/session/s/update", request.clone()).0, 200);
    let cases = [
        ("/session/s/update", request.clone(), 409, "already waiting"),
        (
            "/session/s/update",
            json!({"sessionUpdate": "made_up_kind"}),
            400,
            "unknown sessionUpdate",
        ),
        (
            "/session/s/update",
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "kind": "weird"}),
            400,
            "kind",
        ),
        (
            "/session/s/permission/r1",
            json!({"outcome": {"outcome": "selected", "optionId": "yolo"}}),
            400,
            "not an option",
        ),
        (
            "/session/s/permission/r1",
            json!({"outcome": {"outcome": "sideways"}}),
            400,
            "`outcome` must be",
        ),
        (
            "/session/closed/command",
            json!({"line": "/hi there"}),
            404,
            "ended",
        ),
        (
            "/session/s/command",
            json!({"line": format!("/hi {}", "z".repeat(2 * 1024 * 1024))}),
            413,
            "over the limit",
        ),
    ];
    for (path, body, status, says) in cases {
        let (got, answer) = post(&u, path, body);
        assert_eq!(got, status, "{path}: {answer}");
        assert!(
            answer["error"].as_str().unwrap_or("").contains(says),
            "{path}: {answer}"
        );
    }
    let (got, answer) = post(
        &u,
        "/permission/r1",
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
    );
    assert_eq!((got, answer), (200, json!({})));
    // A settled command is not cancelled after the fact; cancel answers 204.
    assert_eq!(
        post(&u, "/session/s/command", json!({"line": "/hi"})).0,
        200
    );
    let (got, text) = raw_http(
        &u,
        "POST /session/s/cancel",
        &[("content-type", b"application/json")],
        "{}",
    );
    assert_eq!(got, 204, "{text}");
    // A Last-Event-ID that is not ASCII is as wrong as one that is not a number.
    let (got, text) = raw_http(
        &u,
        "GET /session/s/events",
        &[("last-event-id", "\u{e9}1".as_bytes())],
        "",
    );
    assert_eq!(got, 400, "{text}");
}

#[test]
fn symlinked_command_folders_are_followed_and_links_out_of_them_are_not() {
    let w = Workspace::new();
    // A dotfiles-style folder elsewhere, linked in as the commands folder.
    let dotfiles = tempfile::tempdir().unwrap();
    std::fs::write(dotfiles.path().join("kept.md"), "Kept $ARGUMENTS\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "Secret\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        dotfiles.path().join("leak.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        dotfiles.path().join("kept.md"),
        dotfiles.path().join("alias.md"),
    )
    .unwrap();
    std::fs::create_dir_all(w.ws.path().join(".claude")).unwrap();
    std::os::unix::fs::symlink(dotfiles.path(), w.ws.path().join(".claude/commands")).unwrap();
    let out = w.run(&["commands", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains(&"kept"), "{names:?}");
    assert!(
        names.contains(&"alias"),
        "a link inside the folder is read: {names:?}"
    );
    assert!(!names.contains(&"leak"), "{names:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("outside") && stderr.contains("not followed"),
        "{stderr}"
    );
}

#[test]
fn verify_catches_a_rollback_against_a_recorded_head() {
    let w = Workspace::new();
    assert!(w.run(&["run", "/help"]).status.success());
    let before = w.ok(&["verify"]);
    let head = before
        .lines()
        .find_map(|l| l.strip_prefix("head seq "))
        .unwrap()
        .replace(" hash ", ":");
    // All three files: the write-ahead log holds what short-lived runs appended,
    // the presence file the copy of its acknowledgement mark.
    let wal = cmdlog_store::journal_path(&w.log_path());
    let presence = cmdlog_store::presence_path(&w.log_path());
    let backup = (
        std::fs::read(w.log_path()).unwrap(),
        std::fs::read(&wal).unwrap(),
        std::fs::read(&presence).ok(),
    );
    assert!(w.run(&["run", "/help"]).status.success());
    let later = w.ok(&["verify"]);
    let later_head = later
        .lines()
        .find_map(|l| l.strip_prefix("head seq "))
        .unwrap()
        .replace(" hash ", ":");
    assert!(w.ok(&["verify", "--expect-head", &head]).contains("ok"));
    // The old log and write-ahead log alone put back: the presence file's copy of
    // the mark says later appends were acknowledged, and every verb refuses.
    std::fs::write(w.log_path(), &backup.0).unwrap();
    std::fs::write(&wal, &backup.1).unwrap();
    let out = w.run(&["verify"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("log.redb-lock records that short-lived appenders acknowledged"),
        "{stderr}"
    );
    // All three put back (the first run, a writable open, left no presence file):
    // locally they verify, against the recorded head not.
    match &backup.2 {
        Some(bytes) => std::fs::write(&presence, bytes).unwrap(),
        None => std::fs::remove_file(&presence).unwrap(),
    }
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
    let out = w.run(&["verify", "--expect-head", &later_head]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("rolled back"));
    let started = Instant::now();
    let out = w.run(&["verify", "--expect-head", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A daemon whose log lives on a 24 MiB tmpfs in a mount namespace of its own
/// (root only): the test fills the disk and frees it from inside that namespace.
#[test]
fn the_daemon_reopens_the_log_once_a_full_disk_has_room_again() {
    if !cmdlog_test_support::running_as_root() {
        eprintln!(
            "SKIPPED: needs root to mount a small tmpfs; the store's fault sweeps cover ENOSPC"
        );
        return;
    }
    let w = Workspace::new();
    let disk = w.ws.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let bin = env!("CARGO_BIN_EXE_cmdlog");
    let json_path = disk.join("daemon.json");
    let script = format!(
        "mount -t tmpfs -o size=24m,mode=0700 tmpfs {d} && exec {bin} --log {d}/log.redb serve --addr 127.0.0.1:0",
        d = disk.display()
    );
    let child = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .env_remove("CMDLOG_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut daemon = cmdlog_test_support::daemon::Daemon {
        child,
        url: String::new(),
    };
    let pid = daemon.child.id();
    // The daemon's files are visible only inside its namespace.
    let inside = |command: &str| {
        std::process::Command::new("nsenter")
            .args(["-t", &pid.to_string(), "-m", "sh", "-c", command])
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while daemon.url.is_empty() {
        let out = inside(&format!("cat {}", json_path.display()));
        if let Ok(info) = serde_json::from_slice::<Value>(&out.stdout) {
            daemon.url = info["url"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let u = daemon.url.clone();
    assert_eq!(post(&u, "/session", json!({"sessionId": "s"})).0, 200);
    let update = |i: usize| {
        post(
            &u,
            "/session/s/update",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("chunk {i};")}}),
        )
    };
    assert_eq!(update(0).0, 200);
    // Fill the disk, then write until the store fails.
    inside(&format!(
        "dd if=/dev/zero of={}/fill bs=1M count=64 2>/dev/null; sync",
        disk.display()
    ));
    let mut acknowledged = vec![0usize];
    let mut failed = false;
    for i in 1..2000 {
        let (status, _) = post(
            &u,
            "/session/s/update",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("chunk {i}; {}", "p".repeat(4000))}}),
        );
        if status == 200 {
            acknowledged.push(i);
        } else {
            assert!(status == 503 || status == 500, "{status}");
            failed = true;
            break;
        }
    }
    assert!(failed, "the disk never filled");
    // While the disk is full, /health says so.
    std::thread::sleep(Duration::from_millis(600));
    let (status, text) = raw_http(&u, "GET /health", &[], "");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("degraded"), "{text}");
    // Room again: the daemon reopens the log by itself and takes writes.
    inside(&format!("rm -f {}/fill", disk.display()));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = raw_http(&u, "GET /health", &[], "");
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the daemon never recovered");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(update(9999).0, 200);
    // Every acknowledged update is in the log, in order.
    let mut stream = TcpStream::connect(u.trim_start_matches("http://")).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    write!(
        stream,
        "GET /session/s/events HTTP/1.1\r\nhost: {}\r\nlast-event-id: 0\r\n\r\n",
        u.trim_start_matches("http://")
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 65536];
    while let Ok(n) = stream.read(&mut buffer) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..n]);
        if String::from_utf8_lossy(&seen).contains("chunk 9999;") {
            break;
        }
    }
    let seen = String::from_utf8_lossy(&seen);
    let mut last = 0;
    for i in &acknowledged {
        let at = seen
            .find(&format!("chunk {i};"))
            .unwrap_or_else(|| panic!("acknowledged update {i} is missing"));
        assert!(at >= last, "update {i} out of order");
        last = at;
    }
}

#[test]
fn links_planted_in_a_cloned_log_folder_are_refused_by_name_and_written_through_never() {
    let w = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("authorized_keys");
    let precious = b"ssh-ed25519 AAAA precious\n";
    std::fs::write(&victim, precious).unwrap();
    // What a cloned repository can hold: `.cmdlog/` with a link where the log's
    // write-ahead log goes, and no log yet.
    let folder = w.log_path().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&folder).unwrap();
    let wal = journal_path(&w.log_path());
    std::os::unix::fs::symlink(&victim, &wal).unwrap();
    for args in [&["run", "/help"][..], &["commands"]] {
        let out = w.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} went on through the link");
        assert!(
            stderr.contains(&format!("{} is a symbolic link", wal.display())),
            "{args:?} names the link: {stderr}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), precious, "{args:?}");
    }
    assert!(!w.run(&["log"]).status.success(), "no log to read");
    // A hook never fails its agent: it keeps the payload aside, and writes nothing
    // through the link either.
    let payload = br#"{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":"hi"}"#;
    assert!(w.hook("claude-code", payload).status.success());
    assert_eq!(std::fs::read(&victim).unwrap(), precious);

    // The log file itself as a link; then a real log that others can write.
    std::fs::remove_file(&wal).unwrap();
    std::os::unix::fs::symlink(&victim, w.log_path()).unwrap();
    let out = w.run(&["run", "/help"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a symbolic link"));
    assert_eq!(std::fs::read(&victim).unwrap(), precious);
    std::fs::remove_file(w.log_path()).unwrap();
    assert!(w.run(&["run", "/help"]).status.success());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(w.log_path(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = w.run(&["log"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("is mode 0666: others can write it"),
        "{stderr}"
    );
    std::fs::set_permissions(w.log_path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(w.run(&["log"]).status.success());
}
