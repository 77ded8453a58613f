//! `cmdlog serve` end to end on a loopback port: routes, security, and SSE
//! resumption from the durable log across dropped connections and restarts.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

mod common;

use common::Workspace;

/// A workspace with two Claude Code commands the daemon tests run.
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", "Review $0\n").put(
        "ws/.claude/commands/describe.md",
        "---\nattachments: true\n---\nDescribe $ARGUMENTS\n",
    );
    w
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn post(url: &str, body: Value) -> (u16, Value) {
    post_with(&agent(), url, body)
}

/// A POST on a given agent, so a loop reuses one keep-alive connection.
fn post_with(agent: &ureq::Agent, url: &str, body: Value) -> (u16, Value) {
    let mut res = agent
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
    // A stream has no overall deadline; a silent one fails after a while.
    let streaming: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_recv_body(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut request = streaming.get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let res = request.call().unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let mut lines = BufReader::new(res.into_body().into_reader()).lines();
    let mut frames = Vec::new();
    let (mut id, mut event, mut data) = (None, String::new(), String::new());
    // `enough` runs once per frame, not per line.
    let mut done = enough(&frames);
    while !done {
        let line = lines.next().expect("the stream stays open").unwrap();
        if line.is_empty() {
            if let Some(seq) = id.take() {
                frames.push((
                    seq,
                    std::mem::take(&mut event),
                    serde_json::from_str(&data).unwrap(),
                ));
                done = enough(&frames);
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
    let w = workspace();
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
    // The daemon answers 413 as soon as it sees the size; the client may still be
    // sending and see the connection close instead. Either way nothing was accepted.
    match agent()
        .post(&format!("{s}/prompt"))
        .header("content-type", "application/json")
        .send(json!({"text": big}).to_string())
    {
        Ok(res) => assert_eq!(res.status().as_u16(), 413),
        Err(e) => assert!(matches!(e, ureq::Error::Io(_)), "{e}"),
    }
    assert_eq!(
        get(&format!("{u}/health")).0,
        200,
        "and the daemon is still there"
    );

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
    let w = workspace();
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

    // The token can come from CMDLOG_TOKEN too.
    let d = w.serve_with("127.0.0.1:0", &[], Some("from-env"));
    assert_eq!(get(&format!("{}/capabilities", d.url)).0, 401);
    let res = agent()
        .get(&format!("{}/capabilities", d.url))
        .header("Authorization", "Bearer from-env")
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    drop(d);

    let o = w
        .cmd(&["serve", "--addr", "0.0.0.0:0"])
        .env_remove("CMDLOG_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("without a token"));
}

fn log_events(w: &Workspace, session: &str) -> Vec<u64> {
    let o = w.run(&["log", "--json", "--session", session]);
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
    let w = workspace();
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

#[test]
fn command_files_reload_while_serving() {
    let w = workspace();
    let d = w.serve(&[]);
    let s = format!("{}/session/s1", d.url);
    post(&format!("{}/session", d.url), json!({"sessionId": "s1"}));
    let url = format!("{s}/events");
    let reader = std::thread::spawn(move || {
        read_events(&url, None, |f| {
            f.iter().any(|(_, e, d)| {
                e == "available_commands_update"
                    && d["data"]["availableCommands"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| c["name"] == "fresh")
            })
        })
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    std::fs::write(w.ws.path().join(".claude/commands/fresh.md"), "Fresh $0\n").unwrap();
    let frames = reader.join().unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(2), "reloaded in {elapsed:?}");
    assert!(
        frames
            .iter()
            .all(|(_, e, _)| e == "available_commands_update")
    );
    let (_, p) = post(&format!("{s}/prompt"), json!({"text": "/fresh x"}));
    assert_eq!(p["text"], "Fresh x");
    eprintln!("hot reload reached SSE subscribers in {elapsed:?}");
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CMDLOG_SSE_SUBSCRIBERS × CMDLOG_SSE_EVENTS (10 × 1,000 by default; the figures in
/// docs/performance.md are 100 × 10,000 with --release).
#[test]
fn many_subscribers_each_get_every_event_in_order() {
    let (subscribers, events) = (
        env_or("CMDLOG_SSE_SUBSCRIBERS", 10),
        env_or("CMDLOG_SSE_EVENTS", 1_000),
    );
    let w = workspace();
    let d = w.serve(&[]);
    let pid = d.child.id();
    post(&format!("{}/session", d.url), json!({"sessionId": "s1"}));
    let s = format!("{}/session/s1", d.url);
    let rss_before = rss_kib(pid);
    let started = Instant::now();
    let readers: Vec<_> = (0..subscribers)
        .map(|_| {
            let url = format!("{s}/events?lastEventId=0");
            std::thread::spawn(move || {
                // Count incrementally: rescanning every frame per line would make the
                // client, not the daemon, the bottleneck.
                let mut updates = 0;
                let frames = read_events(&url, None, move |f| {
                    if f.last().is_some_and(|(_, e, _)| e == "session/update") {
                        updates += 1;
                    }
                    updates >= events
                });
                frames
                    .into_iter()
                    .filter(|(_, e, _)| e == "session/update")
                    .map(|(id, _, d)| (id, d["data"]["n"].as_u64().unwrap()))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let posters: Vec<_> = (0..4)
        .map(|t| {
            let url = format!("{s}/update");
            std::thread::spawn(move || {
                let agent = agent();
                for n in (t..events).step_by(4) {
                    let (status, _) = post_with(&agent, &url, json!({"sessionUpdate": "agent_message_chunk", "n": n, "content": {"type": "text", "text": "x"}}));
                    assert_eq!(status, 200);
                }
            })
        })
        .collect();
    for p in posters {
        p.join().unwrap();
    }
    let appended = started.elapsed();
    let rss_peak = rss_kib(pid);
    let mut expected: Option<Vec<(u64, u64)>> = None;
    for r in readers {
        let got = r.join().unwrap();
        assert_eq!(got.len(), events);
        assert!(
            got.windows(2).all(|w| w[0].0 < w[1].0),
            "ids strictly increase"
        );
        let mut ns: Vec<u64> = got.iter().map(|(_, n)| *n).collect();
        ns.sort_unstable();
        assert_eq!(
            ns,
            (0..events as u64).collect::<Vec<_>>(),
            "every event exactly once"
        );
        match &expected {
            None => expected = Some(got),
            Some(e) => assert_eq!(&got, e, "every subscriber sees the same order"),
        }
    }
    let total = started.elapsed();
    eprintln!(
        "{subscribers} subscribers x {events} events: appended in {appended:.2?} ({:.0} events/s over HTTP), all delivered in {total:.2?} ({:.0} frames/s); daemon RSS {rss_before} KiB before, {rss_peak} KiB after appending",
        events as f64 / appended.as_secs_f64(),
        (subscribers * events) as f64 / total.as_secs_f64()
    );
}

/// Lines a child prints, collected as they come.
struct Output {
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Output {
    fn collect(stream: impl std::io::Read + Send + 'static) -> Self {
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Output { lines }
    }

    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self
            .lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
        {
            assert!(
                Instant::now() < deadline,
                "never saw {needle:?} in {:#?}",
                self.lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn count(&self, needle: &str) -> usize {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn attach_smoke_plan_of_seed_003() {
    use std::io::Write;
    let w = workspace();
    let addr = format!("127.0.0.1:{}", free_port());
    let d = w.serve_at(&addr, &[]);
    let u = d.url.clone();
    let mut client = w
        .cmd(&["attach", "--session", "s1"])
        .env("CMDLOG_DAEMON_URL", &u)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = Output::collect(client.stdout.take().unwrap());
    let err = Output::collect(client.stderr.take().unwrap());
    let mut input = client.stdin.take().unwrap();
    let mut type_line = |line: &str| {
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
    };
    err.wait_for("[attached to session s1");
    let s = format!("{u}/session/s1");

    // A typed prompt reaches the session; the agent's text shows in the client.
    type_line("hello there");
    let until_prompt = read_events(&format!("{s}/events?lastEventId=0"), None, |f| {
        f.iter().any(|(_, e, _)| e == "session/prompt")
    });
    assert!(
        until_prompt
            .iter()
            .any(|(_, _, d)| d["data"]["text"] == "hello there")
    );
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi from the agent\n"}}),
    );
    out.wait_for("Hi from the agent");

    // A permission request can be answered.
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "permission_request", "requestId": "r1", "options": ["allow", "deny"]}),
    );
    out.wait_for("[permission r1 requested");
    type_line("/allow");
    out.wait_for("[permission r1 resolved: \"allow\"]");
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "permission_request", "requestId": "r2", "options": ["allow", "deny"]}),
    );
    out.wait_for("[permission r2 requested");
    type_line("/deny");
    out.wait_for("[permission r2 resolved: \"deny\"]");

    // /model goes to the model route; the status shows it.
    type_line("/model opus");
    out.wait_for("[model: opus]");

    // While the turn streams, a command line is queued as follow-up and expands.
    type_line("/review x.rs");
    out.wait_for("[/review] Review x.rs");

    // Ctrl-C cancels the active prompt: the turn ends.
    Command::new("kill")
        .args(["-INT", &client.id().to_string()])
        .status()
        .unwrap();
    err.wait_for("[cancelled]");
    let cancelled = read_events(&format!("{s}/events?lastEventId=0"), None, |f| {
        f.iter().any(|(_, e, _)| e == "session/cancelled")
    });
    assert!(cancelled.iter().any(|(_, e, _)| e == "session/cancelled"));

    // The daemon restarts; the client resumes from the last id it saw.
    drop(d);
    err.wait_for("[connection lost; reconnecting from event");
    let d = w.serve_at(&addr, &[]);
    post(
        &format!("{}/session/s1/update", d.url),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "after restart\n"}}),
    );
    out.wait_for("after restart");
    assert_eq!(
        out.count("Hi from the agent"),
        1,
        "nothing is shown twice after resuming"
    );
    assert_eq!(out.count("[permission r1 requested"), 1);

    type_line("/quit");
    let status = client.wait().unwrap();
    assert!(status.success());
    drop(d);
}

#[test]
fn attach_refuses_without_a_daemon() {
    let o = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args(["attach"])
        .env_remove("CMDLOG_DAEMON_URL")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--daemon-url"));
    let port = free_port();
    let o = Command::new(env!("CARGO_BIN_EXE_cmdlog"))
        .args([
            "attach",
            "--daemon-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(o.stdout.is_empty(), "nothing is drawn");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cmdlog serve"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A bounded loopback load test: CMDLOG_LOAD_SESSIONS sessions (200) each with an
/// SSE subscriber, while 8 client threads send each session a fixed number of
/// commands and updates. No request may fail, every subscriber must receive exactly
/// its session's events, and the daemon's memory is reported.
#[test]
fn load_many_sessions_with_subscribers() {
    let sessions = env_or("CMDLOG_LOAD_SESSIONS", 200);
    const COMMANDS: usize = 3;
    const UPDATES: usize = 3;
    let w = workspace();
    let d = w.serve(&[]);
    let pid = d.child.id();
    let u = d.url.clone();
    for i in 0..sessions {
        let (status, _) = post(
            &format!("{u}/session"),
            json!({"sessionId": format!("load{i}")}),
        );
        assert_eq!(status, 200);
    }
    let rss_before = rss_kib(pid);
    let started = Instant::now();
    let subscribers: Vec<_> = (0..sessions)
        .map(|i| {
            let url = format!("{u}/session/load{i}/events?lastEventId=0");
            std::thread::spawn(move || {
                read_events(&url, None, |f| {
                    f.last()
                        .is_some_and(|(_, _, d)| d["data"]["sessionUpdate"] == "turn_complete")
                })
                .into_iter()
                .filter(|(_, e, _)| e != "available_commands_update")
                .map(|(id, e, _)| (id, e))
                .collect::<Vec<_>>()
            })
        })
        .collect();
    let clients: Vec<_> = (0..8)
        .map(|t| {
            let u = u.clone();
            std::thread::spawn(move || {
                let agent = agent();
                let mut requests = 0;
                for i in (t..sessions).step_by(8) {
                    let s = format!("{u}/session/load{i}");
                    for c in 0..COMMANDS {
                        let (status, body) = post_with(&agent, &format!("{s}/command"), json!({"line": format!("/review f{c}.rs")}));
                        assert_eq!(status, 200, "{body}");
                        requests += 1;
                    }
                    for n in 0..UPDATES {
                        let (status, _) = post_with(&agent, &format!("{s}/update"), json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{n}")}}));
                        assert_eq!(status, 200);
                        requests += 1;
                    }
                    let (status, _) = post_with(&agent, &format!("{s}/update"), json!({"sessionUpdate": "turn_complete"}));
                    assert_eq!(status, 200);
                    requests += 1;
                }
                requests
            })
        })
        .collect();
    let requests: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let rss_peak = rss_kib(pid);
    // created + (run, done) per command + updates + turn_complete
    let expected = 1 + 2 * COMMANDS + UPDATES + 1;
    for (i, s) in subscribers.into_iter().enumerate() {
        let got = s.join().unwrap();
        assert_eq!(got.len(), expected, "session load{i}: {got:?}");
        assert!(
            got.windows(2).all(|w| w[0].0 < w[1].0),
            "session load{i}: in order"
        );
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{sessions} sessions with subscribers: {requests} requests, {} events delivered in {elapsed:.2?}, no errors; daemon RSS {rss_before} KiB -> {rss_peak} KiB",
        sessions * expected
    );
}
