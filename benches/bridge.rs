//! What cmdlog costs between a client and an ACP agent, side by side in one run:
//! the same stdio client talking to the scripted agent (tests/fixtures/acp_agent.py)
//! directly and through `cmdlog acp` (prompt round trip, streamed updates per
//! second), the same agent behind `cmdlog serve --agent` over HTTP + SSE, and SSE
//! fan-out to many subscribers shaped like the qwen SDK's (Last-Event-ID, client
//! id, one JSON envelope per frame).
//!
//! `cargo bench --bench bridge`; CMDLOG_BRIDGE_PROMPTS (200), CMDLOG_BRIDGE_BURST
//! (20000), CMDLOG_BRIDGE_SUBSCRIBERS (100) and CMDLOG_BRIDGE_FANOUT (2000) size it.
//! Every cmdlog path records every message durably; the direct path records nothing.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn agent_words() -> Vec<String> {
    vec![
        "python3".into(),
        format!("{}/tests/fixtures/acp_agent.py", env!("CARGO_MANIFEST_DIR")),
    ]
}

/// A workspace and a home in temp folders.
struct Place {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Place {
    fn new() -> Self {
        Place {
            ws: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, program: &str, args: &[String]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .current_dir(self.ws.path())
            .env("HOME", self.home.path())
            .env_remove("CMDLOG_TOKEN");
        c
    }
}

/// A JSON-RPC conversation over a child's stdio.
struct Conversation {
    child: Child,
    input: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next: u64,
}

impl Conversation {
    fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        Conversation {
            child,
            input,
            lines,
            next: 0,
        }
    }

    /// Sends a request; returns its answer and how many updates came before it.
    fn ask(&mut self, method: &str, params: Value) -> (Value, usize) {
        self.next += 1;
        let id = self.next;
        writeln!(
            self.input,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        self.input.flush().unwrap();
        let mut updates = 0;
        loop {
            let m = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("an answer");
            if m["id"] == id && m.get("method").is_none() {
                return (m, updates);
            }
            if m["method"] == "session/update" {
                updates += 1;
            }
        }
    }

    fn session(&mut self) -> String {
        self.ask(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        let (answer, _) = self.ask("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
        answer["result"]["sessionId"].as_str().unwrap().to_string()
    }

    fn prompt(&mut self, session: &str, text: &str) -> usize {
        let (answer, updates) = self.ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        updates
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prompt round trip (ms, mean) and streamed updates per second over stdio.
fn stdio(command: Command, prompts: usize, burst: usize) -> (f64, f64) {
    let mut c = Conversation::start(command);
    let session = c.session();
    for _ in 0..10 {
        c.prompt(&session, "warm up");
    }
    let started = Instant::now();
    for _ in 0..prompts {
        c.prompt(&session, "hello");
    }
    let round_trip = started.elapsed().as_secs_f64() * 1000.0 / prompts as f64;
    let started = Instant::now();
    let got = c.prompt(&session, &format!("burst {burst}"));
    assert_eq!(got, burst);
    (round_trip, burst as f64 / started.elapsed().as_secs_f64())
}

/// A daemon, killed and reaped when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `cmdlog serve --agent` in `place`; its URL.
fn serve(place: &Place) -> (Served, String) {
    let json_path = place.ws.path().join(".cmdlog/daemon.json");
    let child = Served(
        place
            .command(
                env!("CARGO_BIN_EXE_cmdlog"),
                &[
                    "serve".into(),
                    "--addr".into(),
                    "127.0.0.1:0".into(),
                    "--agent".into(),
                    agent_words().join(" "),
                ],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&json_path)
            && let Ok(info) = serde_json::from_str::<Value>(&text)
        {
            return (child, info["url"].as_str().unwrap().to_string());
        }
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn post(agent: &ureq::Agent, url: &str, body: Value) -> Value {
    let mut res = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    serde_json::from_str(&res.body_mut().read_to_string().unwrap()).unwrap()
}

/// An SDK-shaped subscriber: sends its client id and a cursor, parses every
/// frame's envelope, and passes on each frame's type and update kind.
fn subscribe(url: String, from: u64, client: String) -> mpsc::Receiver<(String, String, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_recv_body(Some(Duration::from_secs(120)))
            .build()
            .into();
        let res = agent
            .get(&url)
            .header("Last-Event-ID", from.to_string())
            .header("X-Qwen-Client-Id", &client)
            .header("Accept", "text/event-stream")
            .call()
            .unwrap();
        for line in BufReader::new(res.into_body().into_reader()).lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data: ") {
                let frame: Value = serde_json::from_str(data).unwrap();
                let kind = frame["type"].as_str().unwrap_or("").to_string();
                let update = frame["data"]["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let prompt = frame["data"]["promptId"].as_str().unwrap_or("").to_string();
                if tx.send((kind, update, prompt)).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// Waits on `rx` for the turn of `prompt` to complete; the agent chunks seen.
fn turn(rx: &mpsc::Receiver<(String, String, String)>, prompt: &str) -> usize {
    let mut chunks = 0;
    loop {
        let (kind, update, id) = rx.recv_timeout(Duration::from_secs(120)).unwrap();
        if update == "agent_message_chunk" {
            chunks += 1;
        }
        if kind == "turn_complete" && id == prompt {
            return chunks;
        }
    }
}

/// Round trip over HTTP + SSE (ms, mean), updates/s reaching a subscriber, and
/// fan-out frames/s to `subscribers`.
fn daemon(prompts: usize, burst: usize, subscribers: usize, fanout: usize) -> (f64, f64, f64) {
    let place = Place::new();
    let (daemon, u) = serve(&place);
    let agent = http();
    let created = post(
        &agent,
        &format!("{u}/session"),
        json!({"sessionScope": "thread"}),
    );
    let s = format!("{u}/session/{}", created["sessionId"].as_str().unwrap());
    let events = subscribe(format!("{s}/events"), 0, "c-bench".into());
    let run = |text: &str| {
        let p = post(
            &agent,
            &format!("{s}/prompt"),
            json!({"prompt": [{"type": "text", "text": text}]}),
        );
        turn(&events, p["promptId"].as_str().unwrap())
    };
    for _ in 0..10 {
        run("warm up");
    }
    let started = Instant::now();
    for _ in 0..prompts {
        run("hello");
    }
    let round_trip = started.elapsed().as_secs_f64() * 1000.0 / prompts as f64;
    let started = Instant::now();
    assert_eq!(run(&format!("burst {burst}")), burst);
    let updates = burst as f64 / started.elapsed().as_secs_f64();

    // Fan-out: many subscribers resume from a recent id (a short replay), then
    // one burst reaches them all.
    let recent = post(
        &agent,
        &format!("{s}/prompt"),
        json!({"prompt": [{"type": "text", "text": "warm up"}]}),
    );
    turn(&events, recent["promptId"].as_str().unwrap());
    let from = recent["lastEventId"].as_u64().unwrap();
    let readers: Vec<_> = (0..subscribers)
        .map(|i| subscribe(format!("{s}/events"), from, format!("c-{i}")))
        .collect();
    for r in &readers {
        loop {
            let (kind, _, _) = r.recv_timeout(Duration::from_secs(120)).unwrap();
            if kind == "replay_complete" {
                break;
            }
        }
    }
    let started = Instant::now();
    let p = post(
        &agent,
        &format!("{s}/prompt"),
        json!({"prompt": [{"type": "text", "text": format!("burst {fanout}")}]}),
    );
    let id = p["promptId"].as_str().unwrap().to_string();
    let mut frames = 0;
    for r in &readers {
        frames += turn(r, &id);
    }
    let fanout_rate = frames as f64 / started.elapsed().as_secs_f64();
    assert_eq!(frames, subscribers * fanout);
    drop(daemon);
    (round_trip, updates, fanout_rate)
}

fn main() {
    let prompts = env_or("CMDLOG_BRIDGE_PROMPTS", 200);
    let burst = env_or("CMDLOG_BRIDGE_BURST", 20_000);
    let subscribers = env_or("CMDLOG_BRIDGE_SUBSCRIBERS", 100);
    let fanout = env_or("CMDLOG_BRIDGE_FANOUT", 2_000);
    let words = agent_words();
    assert!(Path::new(&words[1]).exists());

    let direct_place = Place::new();
    let (direct_rt, direct_updates) =
        stdio(direct_place.command(&words[0], &words[1..]), prompts, burst);
    let proxy_place = Place::new();
    let mut args = vec!["acp".to_string(), "--".to_string()];
    args.extend(words.iter().cloned());
    let (proxy_rt, proxy_updates) = stdio(
        proxy_place.command(env!("CARGO_BIN_EXE_cmdlog"), &args),
        prompts,
        burst,
    );
    let (daemon_rt, daemon_updates, fanout_rate) = daemon(prompts, burst, subscribers, fanout);

    println!(
        "| measure | unit | direct | cmdlog acp | acp/direct | cmdlog serve --agent | serve/direct |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| prompt round trip ({prompts} prompts, mean) | ms | {direct_rt:.3} | {proxy_rt:.3} | {:.2}x | {daemon_rt:.3} | {:.2}x |",
        proxy_rt / direct_rt,
        daemon_rt / direct_rt
    );
    println!(
        "| streamed updates ({burst} in one turn) | updates/s | {direct_updates:.0} | {proxy_updates:.0} | {:.2}x | {daemon_updates:.0} | {:.2}x |",
        proxy_updates / direct_updates,
        daemon_updates / direct_updates
    );
    println!(
        "| SSE fan-out: {subscribers} SDK-shaped subscribers x {fanout} updates | frames/s | - | - | - | {fanout_rate:.0} | - |"
    );
}
