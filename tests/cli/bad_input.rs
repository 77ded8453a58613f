//! The bad input catalogue: CLI arguments, command files and HTTP requests that
//! must each get a clear error (exit code or status, and a message that names the
//! thing), leaving the log untouched wherever nothing should be written.

use cmdlog_test_support::Workspace;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A workspace with a prompt command that takes attachments, a file, and a log
/// holding one session `s`.
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.write(
        ".claude/commands/describe.md",
        "---\nattachments: true\n---\nDescribe $ARGUMENTS\n",
    );
    w.write("notes.txt", "notes\n");
    assert!(w.run(&["run", "--session", "s", "/help"]).status.success());
    w
}

/// One CLI case: arguments, the exit code, words the error must contain, and
/// whether the log may change (a refused run is a logged run/done pair by design).
struct Case<'a> {
    args: Vec<String>,
    code: i32,
    says: &'a str,
    writes: bool,
}

fn case<'a>(args: &[&str], code: i32, says: &'a str) -> Case<'a> {
    Case {
        args: args.iter().map(|a| a.to_string()).collect(),
        code,
        says,
        writes: false,
    }
}

fn logged<'a>(args: &[&str], code: i32, says: &'a str) -> Case<'a> {
    Case {
        writes: true,
        ..case(args, code, says)
    }
}

#[test]
fn cli_catalogue() {
    let w = workspace();
    let dir = w.ws.path().join("a-folder");
    std::fs::create_dir_all(&dir).unwrap();
    let text_log = w.write("not-a-log.redb", "plain text, not a database");
    let garbage = w.write("garbage.jsonl", "{\"seq\":1,\"at\":1}\nthis is not json\n");
    let long_line = format!("/nope {}", "x".repeat(100_000));
    let absent_blob = "ab".repeat(32);
    let cases = cli_cases(&Inputs {
        dir: dir.to_str().unwrap(),
        text_log: text_log.to_str().unwrap(),
        garbage: garbage.to_str().unwrap(),
        long_line: &long_line,
        absent_blob: &absent_blob,
    });
    let mut checked = 0;
    for c in &cases {
        check(&w, c);
        checked += 1;
    }
    assert!(checked >= 45);
}

/// The paths and texts the CLI cases name.
struct Inputs<'a> {
    dir: &'a str,
    text_log: &'a str,
    garbage: &'a str,
    long_line: &'a str,
    absent_blob: &'a str,
}

/// Every CLI case of the catalogue.
fn cli_cases(inputs: &Inputs<'_>) -> Vec<Case<'static>> {
    let Inputs {
        dir,
        text_log,
        garbage,
        long_line,
        absent_blob,
    } = inputs;
    vec![
        case(&["run", "help"], 2, "not a slash line"),
        case(
            &["run", "--session", "s", "/nope"],
            3,
            "unknown command /nope",
        ),
        case(
            &["run", "--session", "brand-new", "/nope"],
            3,
            "nothing was logged",
        ),
        case(&["run", "--session", "s", "/"], 3, "unknown command"),
        case(&["run", "--session", "s", "/a/b"], 3, "unknown command"),
        case(&["run", "--session", "s", "/ｈelp"], 3, "unknown command"),
        case(&["run", "--session", "s", "/hélp"], 3, "unknown command"),
        case(
            &["run", "--session", "s", "/HELP\u{200b}"],
            3,
            "unknown command",
        ),
        case(
            &["run", "--session", "s", long_line],
            3,
            "unknown command /nope",
        ),
        case(
            &["run", "--session", "bad id", "/help"],
            2,
            "invalid session id",
        ),
        case(
            &["run", "--session", "../../etc/passwd", "/help"],
            2,
            "invalid session id",
        ),
        case(
            &["run", "--session", &"s".repeat(200), "/help"],
            2,
            "invalid session id",
        ),
        case(&["run", "--agent", "a b", "/help"], 2, "invalid agent id"),
        case(&["run", "--mode", "sideways", "/help"], 2, "sideways"),
        logged(
            &[
                "run",
                "--session",
                "s",
                "--attach",
                "/dev/null",
                "/describe",
            ],
            1,
            "not a regular file",
        ),
        logged(
            &[
                "run",
                "--session",
                "s",
                "--attach",
                "../../escape.txt",
                "/describe",
            ],
            1,
            "cannot attach",
        ),
        logged(
            &[
                "run",
                "--session",
                "s",
                "--attach",
                "missing.txt",
                "/describe",
            ],
            1,
            "No such file",
        ),
        logged(
            &["run", "--session", "s", "--attach", "notes.txt", "/help"],
            1,
            "does not take attachments",
        ),
        logged(
            &[
                "run",
                "--session",
                "s",
                &format!("/model {}", "x".repeat(200)),
            ],
            1,
            "invalid model id",
        ),
        logged(
            &["run", "--session", "s", "/model a\u{7}b"],
            1,
            "invalid model id",
        ),
        case(&["prompt", "--delivery", "sideways", "hi"], 2, "sideways"),
        case(&["log", "--session", "nobody"], 3, "no events for session"),
        case(&["log", "--from", "abc"], 2, "invalid value"),
        case(&["log", "--until", "-5"], 2, "unexpected argument"),
        case(&["replay", "--until", "999999"], 3, "past the head"),
        case(&["replay", "--diff", "1"], 2, "2 values"),
        case(&["replay", "--session", "nobody"], 3, "no events"),
        case(&["show", "0"], 3, "no event at seq 0"),
        case(&["show", "abc"], 2, "invalid value"),
        case(&["show", "99999999999999999999"], 2, "invalid value"),
        case(&["blob", "xyz"], 2, "not a blob hash"),
        case(&["blob", absent_blob], 3, "no blob"),
        case(&["drift", "1"], 3, "not a command/run"),
        case(&["audit", "--since", "last tuesday"], 2, "--since"),
        case(
            &["audit", "--session", "nobody"],
            3,
            "no events for session",
        ),
        case(&["export", "--redact", "("], 2, "not a regular expression"),
        case(
            &["export", "--session", "nobody"],
            3,
            "no events for session",
        ),
        case(&["import", "missing.jsonl"], 3, "cannot open"),
        case(&["import", garbage], 2, "already holds"),
        case(
            &["--log", "fresh.redb", "import", garbage],
            2,
            "line 2: not JSON",
        ),
        case(&["gc", "--grace", "banana"], 2, "banana"),
        case(&["commands", "--mode", "x"], 2, "invalid value"),
        case(&["commands", "--format", "yaml"], 2, "invalid value"),
        case(&["--log", text_log, "verify"], 4, "not-a-log.redb"),
        case(&["--log", dir, "verify"], 4, "a-folder"),
        case(&["--log", "/nonexistent/x.redb", "verify"], 3, "no log at"),
        case(
            &["report", "-o", "/nonexistent/dir/x.html"],
            2,
            "cannot write",
        ),
        case(&["attach"], 2, "--daemon-url"),
        case(&["serve", "--addr", "0.0.0.0:0"], 2, "without a token"),
        case(&["frobnicate"], 2, "unrecognized subcommand"),
    ]
}

/// Runs one case: its exit code, its words on stderr, no panic, and the log
/// unchanged unless the case may write.
fn check(w: &Workspace, c: &Case<'_>) {
    let before = w.head();
    let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
    let o = w.run(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let shown = |a: &[&str]| {
        a.iter()
            .map(|s| s.chars().take(40).collect::<String>())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(o.status.code(), Some(c.code), "{}: {stderr}", shown(&args));
    assert!(
        stderr.contains(c.says),
        "{}: expected {:?} in {stderr}",
        shown(&args),
        c.says
    );
    assert!(!stderr.contains("panicked"), "{}: {stderr}", shown(&args));
    if !c.writes {
        assert_eq!(
            w.head(),
            before,
            "{}: the log must not change",
            shown(&args)
        );
    }
}

#[test]
fn command_file_catalogue() {
    let w = workspace();
    let before = w.head();
    // Broken native frontmatter: fatal, with the path and line, before anything is written.
    w.write(
        ".cmdlog/commands/broken.md",
        "---\ndescription: x\nargument-hint: [oops\n---\nbody\n",
    );
    let o = w.run(&["run", "--session", "s", "/help"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("broken.md:3: invalid frontmatter"));
    assert_eq!(w.head(), before);
    std::fs::remove_file(w.ws.path().join(".cmdlog/commands/broken.md")).unwrap();

    // Odd entries in a command folder: skipped with warnings, never a hang or a crash.
    let folder = w.ws.path().join(".claude/commands");
    std::os::unix::fs::symlink(&folder, folder.join("loop")).unwrap();
    std::os::unix::fs::symlink(folder.join("loop"), folder.join("loop2")).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(folder.join("fifo.md"))
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(folder.join("binary.md"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    std::fs::write(folder.join("huge.md"), vec![b'x'; 2 * 1024 * 1024]).unwrap();
    std::fs::write(folder.join("Has Space.md"), "x").unwrap();
    std::fs::write(folder.join("nul.md"), b"before\0after").unwrap();
    let started = Instant::now();
    let o = w.run(&["run", "--session", "s", "/describe ok"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no hang on FIFOs or symlink loops"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    for words in [
        "binary.md: not UTF-8",
        "huge.md: file is 2097152 bytes",
        "invalid command name \"has space\"",
    ] {
        assert!(stderr.contains(words), "expected {words:?} in {stderr}");
    }
}

struct Daemon {
    child: std::process::Child,
    url: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(w: &Workspace, token: Option<&str>) -> Daemon {
    let json_path = w.ws.path().join(".cmdlog/daemon.json");
    let _ = std::fs::remove_file(&json_path);
    let mut command = Command::new(env!("CARGO_BIN_EXE_cmdlog"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(t) = token {
        command.args(["--token", t]);
    }
    let mut daemon = Daemon {
        child: command.spawn().unwrap(),
        url: String::new(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&json_path)
            && let Ok(info) = serde_json::from_str::<Value>(&text)
        {
            daemon.url = info["url"].as_str().unwrap().to_string();
            return daemon;
        }
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Sends a request; returns the status and body (a closed connection counts as 413
/// for an oversized body, which the daemon refuses before reading).
fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<String>) -> (u16, String) {
    let a = agent();
    let result = match method {
        "GET" => {
            let mut r = a.get(url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call()
        }
        _ => {
            let mut r = a.post(url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.send(body.unwrap_or_default())
        }
    };
    match result {
        Ok(mut res) => (
            res.status().as_u16(),
            res.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(ureq::Error::Io(_)) => (413, "connection closed before the body was read".into()),
        Err(e) => panic!("{url}: {e}"),
    }
}

/// The log's head seq, from `/health?deep=1`.
fn head_seq(u: &str) -> u64 {
    let (_, body) = send("GET", &format!("{u}/health?deep=1"), &[], None);
    serde_json::from_str::<Value>(&body).unwrap()["logHead"]["seq"]
        .as_u64()
        .unwrap()
}

/// Method, URL, headers, body, the expected status, and words the answer must contain.
type HttpCase<'a> = (
    &'a str,
    String,
    Vec<(&'a str, &'a str)>,
    Option<String>,
    u16,
    &'a str,
);

#[test]
fn http_catalogue() {
    let w = workspace();
    let d = serve(&w, None);
    let u = d.url.clone();
    let s = format!("{u}/session/s");
    let ct = ("content-type", "application/json");
    send(
        "POST",
        &format!("{u}/session"),
        &[ct],
        Some(json!({"sessionId": "s"}).to_string()),
    );
    let before = head_seq(&u);
    let cases: Vec<HttpCase> = vec![
        ("POST", format!("{u}/session/ghost/prompt"), vec![ct], Some(json!({"text": "x"}).to_string()), 404, "session_not_found"),
        ("POST", format!("{u}/session/..%2F..%2Fetc/prompt"), vec![ct], Some(json!({"text": "x"}).to_string()), 404, "session_not_found"),
        ("POST", format!("{u}/session/{}/prompt", "a".repeat(300)), vec![ct], Some(json!({"text": "x"}).to_string()), 404, "session_not_found"),
        ("POST", format!("{s}/prompt"), vec![ct], Some("{bad".into()), 400, "Invalid JSON"),
        ("POST", format!("{s}/prompt"), vec![("content-type", "text/plain")], Some("{}".into()), 415, "Content-Type"),
        ("POST", format!("{s}/prompt"), vec![ct], Some(json!({"txt": "x"}).to_string()), 400, "`prompt` is required"),
        ("POST", format!("{s}/prompt"), vec![ct], Some(json!({"prompt": [{"type": "video"}]}).to_string()), 400, "unknown content block type"),
        ("POST", format!("{s}/prompt"), vec![ct], Some(json!({"text": "x".repeat(2 * 1024 * 1024)}).to_string()), 413, ""),
        ("POST", format!("{s}/prompt"), vec![ct], Some(json!({"text": "x", "deadlineMs": "soon"}).to_string()), 400, "invalid_deadline_ms"),
        ("POST", format!("{u}/permission/nope"), vec![ct], Some(json!({"outcome": {"outcome": "selected", "optionId": "allow"}}).to_string()), 404, "No pending permission request"),
        ("POST", format!("{s}/permission/nope"), vec![ct], Some(json!({"decision": "allow"}).to_string()), 400, "outcome"),
        ("POST", format!("{s}/command"), vec![ct], Some(json!({"line": "/nope"}).to_string()), 404, "not a command"),
        ("POST", format!("{s}/command"), vec![ct], Some(json!({"line": "/describe", "attachments": [{"name": "x", "data": "*** not base64"}]}).to_string()), 400, "base64"),
        ("POST", format!("{s}/update"), vec![ct], Some(json!({"nothing": true}).to_string()), 400, "sessionUpdate"),
        ("POST", format!("{s}/update"), vec![ct], Some(json!({"sessionUpdate": "permission_request"}).to_string()), 400, "toolCall"),
        ("POST", format!("{s}/update"), vec![ct], Some(json!({"sessionUpdate": "turn_complete", "stopReason": "bored"}).to_string()), 400, "stopReason"),
        ("POST", format!("{u}/session"), vec![ct], Some(json!({"mode": "sideways"}).to_string()), 400, "unknown mode"),
        ("POST", format!("{u}/session"), vec![ct], Some(json!({"agent": "a b"}).to_string()), 400, "invalid agent id"),
        ("POST", format!("{u}/session"), vec![ct], Some(json!({"sessionId": "bad id"}).to_string()), 400, "invalid sessionId"),
        ("POST", format!("{u}/session"), vec![ct], Some(json!({"cwd": "relative/path"}).to_string()), 400, "absolute"),
        ("POST", format!("{s}/model"), vec![ct], Some(json!({"modelId": 5}).to_string()), 400, "modelId"),
        ("POST", format!("{s}/heartbeat"), vec![ct, ("x-qwen-client-id", "no spaces allowed")], Some("{}".into()), 400, "invalid_client_id"),
        ("GET", format!("{s}/supported-commands?mode=sideways"), vec![], None, 400, "unknown mode"),
        ("GET", format!("{s}/events"), vec![("last-event-id", "-1")], None, 400, "Last-Event-ID"),
        ("GET", format!("{s}/events"), vec![("last-event-id", "0x10")], None, 400, "Last-Event-ID"),
        ("GET", format!("{s}/events"), vec![("last-event-id", "123456789012345678901234567890")], None, 400, "Last-Event-ID"),
        ("GET", format!("{s}/events?lastEventId=abc"), vec![], None, 400, "Last-Event-ID"),
        ("GET", format!("{u}/session/ghost/events"), vec![], None, 404, "session_not_found"),
        ("GET", format!("{u}/workspace/%2Fnot%2Fhere/sessions"), vec![], None, 400, "workspace_mismatch"),
        ("GET", format!("{u}/nope"), vec![], None, 404, ""),
    ];
    for (method, url, headers, body, status, says) in &cases {
        let (got, text) = send(method, url, headers, body.clone());
        let shown: String = url.chars().take(80).collect();
        assert_eq!(got, *status, "{method} {shown}: {text}");
        assert!(
            text.contains(says),
            "{method} {shown}: expected {says:?} in {text}"
        );
    }
    assert_eq!(head_seq(&u), before, "no bad request wrote to the log");
    drop(d);

    // Tokens: missing or wrong is a 401 and writes nothing.
    let d = serve(&w, Some("t0k3n"));
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("t0k3n"),
        Some("Basic dDBrM24="),
    ] {
        let mut headers = vec![ct];
        if let Some(a) = auth {
            headers.push(("authorization", a));
        }
        let (got, text) = send(
            "POST",
            &format!("{}/session", d.url),
            &headers,
            Some("{}".into()),
        );
        assert_eq!(got, 401, "{auth:?}: {text}");
        assert!(text.contains("bearer token"));
    }
    assert!(cases.len() + 4 >= 28);
}
