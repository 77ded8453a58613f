//! The red team's findings against the capture paths (`docs/security.md`,
//! "Hostile workspaces"): each case is what an attacker planted or did, and what
//! must hold afterwards.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

use cmdlog_test_support::Workspace;
use serde_json::Value;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// N1: a repository ships a settings file and, beside it, a "backup" that links to
/// the user's `authorized_keys`; installing the hooks must not write through it.
#[test]
fn hooks_install_writes_through_no_planted_link() {
    let w = Workspace::new();
    let keys = w.home.path().join(".ssh/authorized_keys");
    std::fs::create_dir_all(keys.parent().unwrap()).unwrap();
    std::fs::write(&keys, "ssh-ed25519 AAAA mine\n").unwrap();
    let settings =
        "{\n  \"note\": \"\\nssh-ed25519 AAAA attacker\\n\",\n  \"model\": \"opus\"\n}\n";
    w.put("ws/.claude/settings.json", settings);
    let dir = w.ws.path().join(".claude");
    symlink(&keys, dir.join("settings.json.cmdlog-backup")).unwrap();
    // Every name a writer might use beside the file, planted too.
    symlink(&keys, dir.join(".settings.json.cmdlog-tmp")).unwrap();
    let o = w.run(&["hooks", "install", "claude-code"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        read(&keys),
        "ssh-ed25519 AAAA mine\n",
        "authorized_keys untouched"
    );
    let after = read(&dir.join("settings.json"));
    assert!(after.contains("hook claude-code"), "{after}");
    assert!(
        std::fs::symlink_metadata(dir.join("settings.json"))
            .unwrap()
            .file_type()
            .is_file()
    );
}

/// N1: a settings folder that links out of the workspace is not written into.
#[test]
fn hooks_install_refuses_a_settings_folder_that_leads_out_of_the_workspace() {
    let w = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(elsewhere.path(), w.ws.path().join(".claude")).unwrap();
    let o = w.run(&["hooks", "install", "claude-code"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("outside"), "{err}");
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none()
    );
}

/// N11: a settings file that is a link (a dotfiles repository) stays a link; the
/// file it points to is edited.
#[test]
fn hooks_install_edits_what_a_dotfiles_link_points_to() {
    let w = Workspace::new();
    let dotfiles = w.home.path().join("dotfiles/claude.json");
    std::fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    std::fs::write(&dotfiles, "{\"model\": \"opus\"}\n").unwrap();
    std::fs::set_permissions(&dotfiles, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = w.home.path().join(".claude/settings.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(&dotfiles, &link).unwrap();
    w.ok(&["hooks", "install", "claude-code", "--scope", "user"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let edited = read(&dotfiles);
    assert!(edited.contains("hook claude-code"), "{edited}");
    assert_eq!(
        std::fs::metadata(&dotfiles).unwrap().mode() & 0o777,
        0o640,
        "the file keeps its mode"
    );
    let v: Value = serde_json::from_str(&edited).unwrap();
    assert_eq!(v["model"], "opus");
    w.ok(&["hooks", "uninstall", "claude-code", "--scope", "user"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!read(&dotfiles).contains("hook claude-code"));
}

/// Runs `cmdlog hook <agent>` with `payload` on stdin in `w`; returns how long it
/// took. The hook must stay silent and exit 0 whatever it found.
fn hook(w: &Workspace, agent: &str, payload: &[u8], env: &[(&str, &str)]) -> std::time::Duration {
    use std::io::Write;
    let started = std::time::Instant::now();
    let mut child = w
        .cmd(&["hook", agent])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "the hook printed"
    );
    started.elapsed()
}

fn prompt(w: &Workspace, session: &str, text: &str) -> Vec<u8> {
    serde_json::json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": "UserPromptSubmit", "prompt": text})
        .to_string()
        .into_bytes()
}

/// The log's events as JSON (`cmdlog log --json`).
fn events(w: &Workspace) -> Vec<Value> {
    w.ok(&["log", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn prompts(w: &Workspace) -> Vec<String> {
    events(w)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A loopback HTTP server that answers every request with `answer` (after
/// `stall`) and keeps what it was sent.
struct FakeDaemon {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeDaemon {
    fn start(answer: impl Fn(&str) -> String + Send + 'static, stall: std::time::Duration) -> Self {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut buf = vec![0u8; 1 << 20];
                let n = stream.read(&mut buf).unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                kept.lock().unwrap().push(request.clone());
                if request.starts_with("POST") {
                    std::thread::sleep(stall);
                }
                let body = answer(&request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakeDaemon { url, seen }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// N2: a `daemon.json` a repository planted (mode 0644), or a stale one of ours
/// whose port another program now holds, gets neither the payload nor the token;
/// the payload is recorded in the log.
#[test]
fn a_planted_or_stale_daemon_file_gets_no_payload_and_no_token() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let fake = FakeDaemon::start(|_| "{}".into(), std::time::Duration::ZERO);
    let daemon_json = w.ws.path().join(".cmdlog/daemon.json");
    std::fs::write(
        &daemon_json,
        serde_json::json!({"url": fake.url, "pid": 1, "log_id": "x", "key": "00".repeat(32)})
            .to_string(),
    )
    .unwrap();
    std::fs::set_permissions(&daemon_json, std::fs::Permissions::from_mode(0o644)).unwrap();
    hook(
        &w,
        "claude-code",
        &prompt(&w, "p1", "planted"),
        &[("CMDLOG_TOKEN", "s3cret")],
    );
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
    // Ours (0600), but stale: whatever answers there cannot prove the key.
    let stale = cmdlog_agents::DaemonFile::new(&fake.url, "x");
    stale.write(&w.log_path()).unwrap();
    hook(
        &w,
        "claude-code",
        &prompt(&w, "p1", "stale"),
        &[("CMDLOG_TOKEN", "s3cret")],
    );
    let requests = fake.requests();
    assert!(
        requests.iter().all(|r| r.starts_with("GET /hook-proof")),
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .all(|r| !r.contains("s3cret") && !r.contains("stale"))
    );
    assert_eq!(
        prompts(&w),
        ["planted", "stale"],
        "both recorded in the log"
    );
}

/// N8: a daemon that proves itself and then stalls holds the hook no longer than
/// its second; the payload is recorded once.
#[test]
fn a_stalled_daemon_holds_the_hook_a_second_and_nothing_doubles() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let file = std::sync::Arc::new(std::sync::Mutex::new(None::<cmdlog_agents::DaemonFile>));
    let answer = {
        let file = std::sync::Arc::clone(&file);
        move |request: &str| {
            let nonce = request
                .split("nonce=")
                .nth(1)
                .and_then(|r| r.split([' ', '&']).next())
                .unwrap_or("");
            let f = file.lock().unwrap().clone().unwrap();
            serde_json::json!({"logId": f.log_id, "proof": f.proof(nonce)}).to_string()
        }
    };
    let fake = FakeDaemon::start(answer, std::time::Duration::from_secs(5));
    let daemon = cmdlog_agents::DaemonFile::new(&fake.url, "x");
    daemon.write(&w.log_path()).unwrap();
    *file.lock().unwrap() = Some(daemon);
    let took = hook(&w, "codex", &prompt(&w, "s8", "once"), &[]);
    assert!(
        took < std::time::Duration::from_millis(1800),
        "the hook took {took:?}"
    );
    assert!(fake.requests().iter().any(|r| r.starts_with("POST")));
    std::fs::remove_file(w.ws.path().join(".cmdlog/daemon.json")).unwrap();
    hook(&w, "codex", &prompt(&w, "s8", "next"), &[]);
    assert_eq!(prompts(&w), ["once", "next"]);
}

/// N8: the same delivery, posted twice to a real daemon or left in the spill
/// folder after the daemon took it, is recorded once.
#[test]
fn a_delivery_is_recorded_once_whichever_way_it_comes() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let daemon = cmdlog_agents::DaemonFile::read(&w.log_path()).expect("the daemon's file");
    let body = prompt(&w, "s9", "twice");
    let post = || {
        cmdlog_test_support::daemon::http()
            .post(format!(
                "{}/hook/codex?receivedAt=5&delivery=d-0123456789abcdef",
                d.url
            ))
            .header("x-cmdlog-hook-key", &daemon.key)
            .send(&body[..])
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(post(), 200);
    assert_eq!(post(), 200);
    // The same delivery, as a hook that gave up waiting would have spilled it.
    let mut spilled = cmdlog_agents::HookDelivery::new("codex", false, 5, body.clone());
    spilled.delivery = "d-0123456789abcdef".into();
    cmdlog_agents::Spill::for_log(&w.log_path())
        .keep(&spilled)
        .unwrap();
    hook(&w, "codex", &prompt(&w, "s9", "after"), &[]);
    drop(d);
    assert_eq!(prompts(&w), ["twice", "after"]);
    assert!(
        cmdlog_agents::Spill::for_log(&w.log_path())
            .pending()
            .is_empty()
    );
}

/// N3: spill entries a repository shipped (folders 0755, files 0644), links (to a
/// private key, to /dev/zero) and FIFOs are never read; the hook neither hangs
/// nor grows, and `verify` names what it ignored.
#[test]
fn planted_spill_entries_are_never_read() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let spill = w.ws.path().join(".cmdlog/spill");
    std::fs::create_dir_all(&spill).unwrap();
    std::fs::set_permissions(&spill, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted = cmdlog_agents::HookDelivery::new("codex", false, 1, prompt(&w, "s3", "planted"));
    std::fs::write(
        spill.join("0000000000000001-1-1.json"),
        serde_json::to_vec(&planted).unwrap(),
    )
    .unwrap();
    hook(&w, "codex", &prompt(&w, "s3", "mine"), &[]);
    assert_eq!(prompts(&w), ["mine"]);
    let verify = w.ok(&["verify"]);
    assert!(
        verify.contains("spill: ignored") && verify.contains("0755"),
        "{verify}"
    );
    // The folder made private again (as cmdlog makes it), with links and a FIFO.
    std::fs::remove_file(spill.join("0000000000000001-1-1.json")).unwrap();
    std::fs::set_permissions(&spill, std::fs::Permissions::from_mode(0o700)).unwrap();
    let key = w.home.path().join(".ssh/id_ed25519");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "PRIVATE KEY MATERIAL").unwrap();
    symlink(&key, spill.join("0000000000000002-1-1.json")).unwrap();
    symlink("/dev/zero", spill.join("0000000000000003-1-1.json")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        spill.join("0000000000000004-1-1.json"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let took = hook(&w, "codex", &prompt(&w, "s3", "again"), &[]);
    assert!(
        took < std::time::Duration::from_secs(3),
        "the hook took {took:?}"
    );
    let all = w.ok(&["log", "--json"]);
    assert!(
        !all.contains("PRIVATE KEY"),
        "a link's target reached the log"
    );
    assert_eq!(prompts(&w), ["mine", "again"]);
}

/// N6, N7: a payload of any size is recorded whole (its large string as a blob),
/// and one that is not UTF-8 keeps its content and its raw bytes; nothing waits.
#[test]
fn large_and_non_utf8_payloads_are_recorded_whole() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let output = "y".repeat(20 * 1024 * 1024);
    let big = serde_json::json!({"session_id": "s6", "cwd": w.ws.path(), "hook_event_name": "PostToolUse",
        "tool_name": "Read", "tool_use_id": "t1", "tool_input": {"file_path": "a"}, "tool_response": output})
    .to_string();
    hook(&w, "claude-code", big.as_bytes(), &[]);
    let evs = events(&w);
    let note = evs
        .iter()
        .find(|e| e["data"]["event"] == "payload strings in blobs")
        .expect("the move is said");
    let hashes: Vec<String> = note["data"]["data"]["/tool_response"]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect();
    let mut whole = Vec::new();
    for h in &hashes {
        let o = w.run(&["blob", h]);
        assert!(o.status.success());
        whole.extend(o.stdout);
    }
    assert_eq!(
        whole,
        output.as_bytes(),
        "the 20 MiB string, whole, in blobs"
    );
    let mut bytes = prompt(&w, "s7", "caf#");
    let at = bytes.iter().position(|b| *b == b'#').unwrap();
    bytes[at] = 0xe9;
    hook(&w, "qwen", &bytes, &[]);
    assert!(prompts(&w).contains(&"caf\u{fffd}".to_string()));
    let evs = events(&w);
    let raw = evs
        .iter()
        .find(|e| e["data"]["event"] == "payload not UTF-8")
        .expect("said");
    let hash = raw["data"]["data"]["rawBlobs"][0].as_str().unwrap();
    assert_eq!(w.run(&["blob", hash]).stdout, bytes, "the raw bytes kept");
    let verify = w.ok(&["verify"]);
    assert!(
        verify.contains("ok: no violations") && !verify.contains("spill"),
        "{verify}"
    );
}

/// N12: a payload's `cwd` that does not exist makes no folder and no log there.
#[test]
fn a_payload_cwd_makes_no_folders() {
    let w = Workspace::new();
    let ghost = w.home.path().join("nowhere/deep");
    let payload = serde_json::json!({"session_id": "s12", "cwd": ghost, "hook_event_name": "UserPromptSubmit", "prompt": "where"})
        .to_string();
    hook(&w, "codex", payload.as_bytes(), &[]);
    assert!(!w.home.path().join("nowhere").exists());
    assert_eq!(
        prompts(&w),
        ["where"],
        "recorded in the folder the hook ran in"
    );
}

/// N4, N5: behind `cmdlog acp`, an agent's line over 32 MiB is recorded by its
/// size and hash and the stream goes on (every update and the turn's end reach
/// the editor); what is not JSON-RPC never reaches the editor's stdout; when the
/// editor closes stdin the proxy ends, even if the agent stays.
#[test]
fn a_hostile_agent_cannot_stop_or_pollute_the_proxy() {
    use std::io::{BufRead, BufReader, Write};
    let w = Workspace::new();
    let agent = format!(
        "{}/tests/fixtures/hostile_agent.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut child = w
        .cmd(&["acp", "--", "python3", &agent, "20000"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        for line in BufReader::new(output).split(b'\n') {
            let _ = lines_tx.send(line.unwrap());
        }
    });
    for m in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": w.ws.path(), "mcpServers": []}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "h1", "prompt": [{"type": "text", "text": "go"}]}}),
    ] {
        writeln!(input, "{m}").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Read until the turn's end, as an editor would, then close.
    let mut updates = 0;
    loop {
        let line = lines_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the turn's end reaches the editor");
        assert!(!line.contains(&0x1b), "an escape reached the editor");
        let v: Value = serde_json::from_slice(&line).expect("only JSON-RPC reaches the editor");
        if v["params"]["update"]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with('u'))
        {
            updates += 1;
        }
        if v["id"] == 3 {
            assert_eq!(v["result"]["stopReason"], "end_turn");
            break;
        }
    }
    assert_eq!(
        updates, 20000,
        "every update after the oversized line arrived"
    );
    let closed = std::time::Instant::now();
    drop(input);
    child.wait().unwrap();
    assert!(
        closed.elapsed() < std::time::Duration::from_secs(15),
        "the proxy outlived its editor by {:?}",
        closed.elapsed()
    );
    for line in lines_rx.try_iter() {
        assert!(!line.contains(&0x1b), "an escape reached the editor");
    }
    let log = w.ok(&["log", "--json"]);
    assert!(
        log.contains("line over the limit"),
        "the oversized line is recorded"
    );
    assert!(
        log.contains("not a protocol message"),
        "the stray line is recorded"
    );
}

/// N10: a transcript item over a record's size (a tool result of 17 MiB) is stored
/// as blobs; the import goes on, and a second import adds nothing.
#[test]
fn a_huge_transcript_item_is_kept_and_the_import_goes_on() {
    let w = Workspace::new();
    let big = "z".repeat(17 * 1024 * 1024);
    let lines = [
        r#"{"type":"user","uuid":"u1","sessionId":"cs-9","timestamp":"2026-08-01T10:00:00.000Z","message":{"role":"user","content":"hello"}}"#.to_string(),
        r#"{"type":"assistant","uuid":"a1","sessionId":"cs-9","timestamp":"2026-08-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}],"stop_reason":"tool_use"}}"#.to_string(),
        format!(r#"{{"type":"user","uuid":"u2","sessionId":"cs-9","timestamp":"2026-08-01T10:00:02.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"{big}"}}]}}}}"#),
        r#"{"type":"user","uuid":"u3","sessionId":"cs-9","timestamp":"2026-08-01T10:01:00.000Z","message":{"role":"user","content":"after"}}"#.to_string(),
    ];
    let file = w.home.path().join(".claude/projects/-p/cs-9.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let first = w.json(&["import", "--from", "claude-code", "--json"]);
    assert!(first["events"].as_u64().unwrap() >= 4, "{first}");
    assert_eq!(prompts(&w), ["hello", "after"]);
    let evs = events(&w);
    let kept = evs
        .iter()
        .find(|e| e["data"]["event"] == "item stored as blobs")
        .expect("the item is kept as blobs");
    let mut whole = Vec::new();
    for h in kept["data"]["data"]["blobs"].as_array().unwrap() {
        whole.extend(w.run(&["blob", h.as_str().unwrap()]).stdout);
    }
    assert!(
        whole.windows(big.len()).any(|win| win == big.as_bytes()),
        "the result, whole"
    );
    let again = w.json(&["import", "--from", "claude-code", "--json"]);
    assert_eq!(again["events"], 0, "{again}");
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// F5: 40 events of ~1 MB, then 40 subscribers from `Last-Event-ID: 0` that never
/// read: the daemon holds a bounded number of bytes for them, drops them once
/// their writes stall, and a subscriber that comes back with its last id reads
/// the rest from the log.
#[test]
fn subscribers_that_never_read_are_bounded_then_dropped() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let w = Workspace::new();
    let d = w.serve(&[]);
    let url = |p: &str| format!("{}{p}", d.url);
    let http = cmdlog_test_support::daemon::http();
    let (status, _) =
        cmdlog_test_support::daemon::post(&url("/session"), serde_json::json!({"sessionId": "f5"}));
    assert_eq!(status, 200);
    let chunk = "x".repeat(900_000);
    for i in 0..40 {
        let res = http
            .post(url("/session/f5/update"))
            .header("content-type", "application/json")
            .send(
                serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{i} {chunk}")}})
                    .to_string(),
            )
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = rss_kib(d.child.id());
    let addr = d.url.trim_start_matches("http://").to_string();
    // A subscriber from `Last-Event-ID: 0` that does not read, with a small
    // receive buffer (set before connecting, so the window stays small), as a slow
    // client over a real network has: the daemon's writes stall instead of all
    // landing in the kernel.
    let stalled = || {
        let fd = rustix::net::socket(
            rustix::net::AddressFamily::INET,
            rustix::net::SocketType::STREAM,
            None,
        )
        .unwrap();
        rustix::net::sockopt::set_socket_recv_buffer_size(&fd, 64 * 1024).unwrap();
        let target: std::net::SocketAddr = addr.parse().unwrap();
        rustix::net::connect(&fd, &target).unwrap();
        let mut s = TcpStream::from(fd);
        s.write_all(
            format!("GET /session/f5/events HTTP/1.1\r\nhost: {addr}\r\nlast-event-id: 0\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        s
    };
    let idle: Vec<TcpStream> = (0..40).map(|_| stalled()).collect();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let held = rss_kib(d.child.id()).saturating_sub(before) / 1024;
    eprintln!("40 never-reading subscribers over 36 MB: the daemon grew by {held} MiB");
    assert!(held < 200, "the daemon grew by {held} MiB");
    drop(idle);
    // Past the write deadline a stalled connection is closed: reading it then gets
    // what the kernel held, and its end.
    // The deadline counts from when the daemon's writes stall, which on a loaded
    // machine (CI builds and tests beside it) can be seconds after the connection:
    // wait three deadlines, not one and a half.
    let mut first = stalled();
    std::thread::sleep(std::time::Duration::from_secs(30));
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ended = loop {
        match first.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
        if std::time::Instant::now() > give_up {
            break false;
        }
    };
    eprintln!("f5: read {} bytes, ended {ended}", got.len());
    let text = String::from_utf8_lossy(&got);
    assert!(ended, "the stalled subscriber was not dropped");
    assert!(
        !text.contains("replay_complete"),
        "it got everything: not a stalled one"
    );
    let last_id: u64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .filter_map(|v| v.trim().parse().ok())
        .max()
        .unwrap_or(0);
    // It comes back with the last id it saw and reads the rest from the log.
    let rest = cmdlog_test_support::daemon::read_frames(
        &url("/session/f5/events"),
        Some(&last_id.to_string()),
        |frames| frames.iter().any(|f| f.kind == "replay_complete"),
    );
    let ids: Vec<u64> = rest.iter().filter_map(|f| f.id).collect();
    assert_eq!(
        ids.first().copied(),
        Some(last_id + 1),
        "gapless after the drop"
    );
}
