//! `cmdlog serve` end to end on a loopback port: routes, security, and SSE
//! resumption from the durable log across dropped connections and restarts.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

struct Daemon {
    child: Child,
    url: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Workspace {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        let w = Workspace {
            ws: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        let dir = w.ws.path().join(".claude/commands");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("review.md"), "Review $1\n").unwrap();
        std::fs::write(
            dir.join("describe.md"),
            "---\nattachments: true\n---\nDescribe $ARGUMENTS\n",
        )
        .unwrap();
        w
    }

    fn daemon_json(&self) -> PathBuf {
        self.ws.path().join(".cmdlog/daemon.json")
    }

    fn serve(&self, extra: &[&str]) -> Daemon {
        let _ = std::fs::remove_file(self.daemon_json());
        let child = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .current_dir(self.ws.path())
            .env("HOME", self.home.path())
            .env_remove("CMDLOG_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The guard kills and reaps the child on every path, a failed start included.
        let mut daemon = Daemon {
            child,
            url: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(self.daemon_json())
                && let Ok(info) = serde_json::from_str::<Value>(&text)
            {
                daemon.url = info["url"].as_str().unwrap().to_string();
                return daemon;
            }
            assert!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn post(url: &str, body: Value) -> (u16, Value) {
    let mut res = agent()
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    let status = res.status().as_u16();
    let text = res.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn get(url: &str) -> (u16, Value) {
    let mut res = agent().get(url).call().unwrap();
    let status = res.status().as_u16();
    let text = res.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Reads SSE frames (`id`, `event`, parsed `data`) until `enough` says stop.
fn read_events(
    url: &str,
    last_event_id: Option<&str>,
    mut enough: impl FnMut(&[(u64, String, Value)]) -> bool,
) -> Vec<(u64, String, Value)> {
    let mut request = agent().get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let res = request.call().unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let mut lines = BufReader::new(res.into_body().into_reader()).lines();
    let mut frames = Vec::new();
    let (mut id, mut event, mut data) = (None, String::new(), String::new());
    while !enough(&frames) {
        let line = lines.next().expect("the stream stays open").unwrap();
        if line.is_empty() {
            if let Some(seq) = id.take() {
                frames.push((
                    seq,
                    std::mem::take(&mut event),
                    serde_json::from_str(&data).unwrap(),
                ));
            }
            data.clear();
        } else if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.parse::<u64>().unwrap());
        } else if let Some(v) = line.strip_prefix("event: ") {
            event = v.to_string();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
    frames
}

#[test]
fn routes_behave_like_qwen_serve() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let u = &d.url;
    assert_eq!(get(&format!("{u}/health")), (200, json!({"status": "ok"})));
    let (_, caps) = get(&format!("{u}/capabilities"));
    for f in ["session_create", "session_prompt", "session_events"] {
        assert!(caps["features"].as_array().unwrap().contains(&json!(f)));
    }
    let (status, created) = post(&format!("{u}/session"), json!({"sessionId": "s1"}));
    assert_eq!((status, created["created"].as_bool()), (200, Some(true)));
    let (_, again) = post(&format!("{u}/session"), json!({"sessionId": "s1"}));
    assert_eq!(
        again["created"], false,
        "POST /session attaches to an existing session"
    );

    let s = format!("{u}/session/s1");
    let (status, p) = post(&format!("{s}/prompt"), json!({"text": "/review lib.rs"}));
    assert_eq!(
        (status, p["text"].as_str(), p["delivery"].as_str()),
        (200, Some("Review lib.rs"), Some("idle"))
    );
    let (status, busy) = post(&format!("{s}/prompt"), json!({"text": "more"}));
    assert_eq!(status, 409, "{busy}");
    let (status, steer) = post(
        &format!("{s}/prompt"),
        json!({"text": "more", "streamingBehavior": "steer"}),
    );
    assert_eq!((status, steer["delivery"].as_str()), (200, Some("steer")));
    let (status, _) = post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "turn_complete"}),
    );
    assert_eq!(status, 200);
    let (_, idle) = post(&format!("{s}/prompt"), json!({"text": "again"}));
    assert_eq!(idle["delivery"], "idle");
    let (status, cancelled) = post(&format!("{s}/cancel"), json!({}));
    assert_eq!(status, 200, "{cancelled}");

    let png = [
        0x89u8, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let (status, ex) = post(
        &format!("{s}/command"),
        json!({"line": "/describe these", "attachments": [
            {"name": "a.png", "mediaType": "image/png", "data": b64(&png)},
            {"name": "n.txt", "data": b64(b"notes")}]}),
    );
    assert_eq!(status, 200, "{ex}");
    let prompt = ex["outcome"]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("- a.png (image/png, 16 bytes")
            && prompt.contains("- n.txt (text/plain, 5 bytes"),
        "{prompt}"
    );
    assert_eq!(
        post(&format!("{s}/command"), json!({"line": "/nope"})).0,
        404
    );
    assert_eq!(
        post(
            &format!("{s}/command"),
            json!({"line": "/describe", "attachments": [{"name": "x", "data": "***"}]})
        )
        .0,
        400
    );

    let (status, m) = post(&format!("{s}/model"), json!({"model": "opus"}));
    assert_eq!((status, m["model"].as_str()), (200, Some("opus")));
    assert_eq!(
        post(&format!("{s}/model"), json!({"model": "two words"})).0,
        400
    );

    assert_eq!(post(&format!("{s}/update"), json!({"sessionUpdate": "permission_request", "requestId": "r1", "options": ["allow", "deny"]})).0, 200);
    assert_eq!(
        post(
            &format!("{s}/permission"),
            json!({"requestId": "r1", "decision": "allow"})
        )
        .0,
        200
    );
    let (status, second) = post(
        &format!("{s}/permission"),
        json!({"requestId": "r1", "decision": "deny"}),
    );
    assert_eq!(status, 409, "the first vote wins: {second}");
    assert_eq!(
        post(
            &format!("{s}/permission"),
            json!({"requestId": "nope", "decision": "allow"})
        )
        .0,
        404
    );

    let (status, cmds) = get(&format!("{s}/supported-commands?mode=interactive"));
    assert_eq!(status, 200);
    assert!(
        cmds["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "review")
    );
    assert_eq!(get(&format!("{s}/supported-commands?mode=sideways")).0, 400);

    // Bad input: unknown session, malformed JSON, wrong content type, bad ids.
    assert_eq!(
        post(&format!("{u}/session/ghost/prompt"), json!({"text": "x"})).0,
        404
    );
    assert_eq!(
        post(
            &format!("{u}/session/..%2F..%2Fetc/prompt"),
            json!({"text": "x"})
        )
        .0,
        404
    );
    let res = agent()
        .post(&format!("{s}/prompt"))
        .header("content-type", "application/json")
        .send("{bad")
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let res = agent()
        .post(&format!("{s}/prompt"))
        .header("content-type", "text/plain")
        .send("{}")
        .unwrap();
    assert_eq!(res.status().as_u16(), 415);
    for bad in ["-1", "abc", "99999999999999999999999"] {
        let res = agent()
            .get(&format!("{s}/events"))
            .header("Last-Event-ID", bad)
            .call()
            .unwrap();
        assert_eq!(res.status().as_u16(), 400, "{bad}");
    }
    let big = "x".repeat(2 * 1024 * 1024);
    assert_eq!(post(&format!("{s}/prompt"), json!({"text": big})).0, 413);

    let mut res = agent().delete(&s).call().unwrap();
    assert_eq!(
        res.status().as_u16(),
        200,
        "{}",
        res.body_mut().read_to_string().unwrap()
    );
    assert_eq!(
        post(
            &format!("{s}/update"),
            json!({"sessionUpdate": "turn_complete"})
        )
        .0,
        409,
        "nothing follows a closed session"
    );
}

#[test]
fn tokens_are_required_and_non_loopback_needs_one() {
    let w = Workspace::new();
    let d = w.serve(&["--token", "s3cret"]);
    let u = &d.url;
    assert_eq!(get(&format!("{u}/health")).0, 200, "health is open");
    assert_eq!(get(&format!("{u}/capabilities")).0, 401);
    let res = agent()
        .get(&format!("{u}/capabilities"))
        .header("Authorization", "Bearer wrong")
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let res = agent()
        .get(&format!("{u}/capabilities"))
        .header("Authorization", "Bearer s3cret")
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    drop(d);

    let o = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["serve", "--addr", "0.0.0.0:0"])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .env_remove("CMDLOG_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("without a token"));
}

fn log_events(w: &Workspace, session: &str) -> Vec<u64> {
    let o = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["log", "--json", "--session", session])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn sse_resumes_from_the_log_across_drops_and_restarts() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let s = format!("{}/session/s1", d.url);
    post(&format!("{}/session", d.url), json!({"sessionId": "s1"}));
    for i in 0..5 {
        post(
            &format!("{s}/update"),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("chunk {i} ")}}),
        );
    }
    // Everything so far, then the connection drops.
    let first = read_events(&format!("{s}/events?lastEventId=0"), None, |f| {
        f.iter().filter(|(_, e, _)| e == "session/update").count() == 3
    });
    let last_seen = first.last().unwrap().0;
    // While away: more events, a prompt and a command.
    post(&format!("{s}/prompt"), json!({"text": "/review a.rs"}));
    post(&format!("{s}/command"), json!({"line": "/help"}));
    // Resume with the header (it wins over the query).
    let second = read_events(
        &format!("{s}/events?lastEventId=1"),
        Some(&last_seen.to_string()),
        |f| f.last().is_some_and(|(_, e, _)| e == "command/done"),
    );
    // Restart the daemon, then resume again.
    drop(d);
    let d = w.serve(&[]);
    let s = format!("{}/session/s1", d.url);
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "turn_complete"}),
    );
    let resume_at = second.last().unwrap().0;
    let third = read_events(&format!("{s}/events?lastEventId={resume_at}"), None, |f| {
        f.last()
            .is_some_and(|(_, _, d)| d["data"]["sessionUpdate"] == "turn_complete")
    });
    drop(d);

    let seen: Vec<u64> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .filter(|(_, e, _)| e != "available_commands_update")
        .map(|(id, _, _)| *id)
        .collect();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicates: {seen:?}"
    );
    assert_eq!(
        seen,
        log_events(&w, "s1"),
        "every event of the session exactly once"
    );
    for (id, event, data) in first.iter().chain(&second).chain(&third) {
        assert_eq!(data["id"].as_u64(), Some(*id));
        assert_eq!(data["v"], 1);
        assert_eq!(data["type"].as_str(), Some(event.as_str()));
    }
}
