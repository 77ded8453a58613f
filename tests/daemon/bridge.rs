//! The ACP bridge with a scripted stdio agent (tests/fixtures/acp_agent.py):
//! `cmdlog serve --agent` and the `cmdlog acp` proxy. The published clients run
//! against the same bridge in tests/node.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::{Frame, delete, get, post, read_frames, read_to_end};

fn agent_script() -> String {
    format!(
        "python3 {}/tests/fixtures/acp_agent.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

pub(crate) fn workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.cmdlog/commands/greet.md", "Say hello to $1.\n");
    w
}

fn text(line: &str) -> Value {
    json!({"prompt": [{"type": "text", "text": line}]})
}

/// Frames from `from` until one `done` accepts.
fn until(url: &str, from: &str, done: impl Fn(&Frame) -> bool) -> Vec<Frame> {
    read_frames(url, Some(from), |f| f.last().is_some_and(&done))
}

/// What the agent read, one message per line.
fn agent_log(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The log's events of a session, as `cmdlog log --json` prints them.
fn logged(w: &Workspace, session: &str) -> Vec<Value> {
    let o = w.run(&["log", "--json", "--session", session]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn serve_agent_bridges_prompts_permissions_models_and_crashes() {
    let w = workspace();
    let log_path = w.ws.path().join("agent.log");
    let d = w.serve_env(
        "127.0.0.1:0",
        &["--agent", &agent_script()],
        None,
        &[("AGENT_LOG", log_path.to_str().unwrap())],
    );
    let u = d.url.clone();
    let (status, created) = post(&format!("{u}/session"), json!({"sessionId": "b1"}));
    assert_eq!(status, 200, "{created}");
    let s = format!("{u}/session/b1");
    let events = format!("{s}/events");
    let ctx = Bridged {
        w: &w,
        log_path,
        u,
        s,
        events,
    };
    agent_commands_join_the_list(&ctx);
    a_plain_prompt_streams_the_answer(&ctx);
    commands_expand_or_pass_through(&ctx);
    a_permission_vote_reaches_the_agent(&ctx);
    cancel_reaches_the_agent(&ctx);
    the_model_goes_through_a_config_option(&ctx);
    a_crash_kills_its_sessions_and_the_next_starts_afresh(&ctx);
    drop(d);
    the_log_holds_both_directions(&ctx);
}

/// What the phases of `serve_agent_bridges_prompts_permissions_models_and_crashes` share.
struct Bridged<'a> {
    w: &'a cmdlog_test_support::Workspace,
    log_path: std::path::PathBuf,
    u: String,
    s: String,
    events: String,
}

fn agent_commands_join_the_list(ctx: &Bridged<'_>) {
    let Bridged { events, .. } = ctx;
    // The agent's command joins cmdlog's; the session hears the merged list.
    let frames = until(events, "0", |f| {
        f.update_kind() == Some("available_commands_update")
            && f.data["data"]["update"]["availableCommands"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "compress")
    });
    let update = &frames.last().unwrap().data["data"]["update"];
    let list = update["availableCommands"].as_array().unwrap();
    assert!(list.iter().any(|c| c["name"] == "greet"));
    // The agent's entries as it sent them, its `_meta` too; cmdlog's built-ins
    // yield to the agent's (issue 24, D1 and D4).
    let model: Vec<&Value> = list.iter().filter(|c| c["name"] == "model").collect();
    assert_eq!(model.len(), 1, "{list:#?}");
    assert_eq!(model[0]["_meta"]["source"], "builtin-command");
    assert!(!list.iter().any(|c| c["name"] == "help"), "{list:#?}");
    assert_eq!(update["_meta"]["availableSkills"], json!(["tidy"]));
    let (_, supported) = get(&format!("{}/supported-commands", ctx.s));
    assert_eq!(supported["availableSkills"], json!(["tidy"]), "{supported}");
}

fn a_plain_prompt_streams_the_answer(ctx: &Bridged<'_>) {
    let Bridged { s, events, .. } = ctx;
    // A plain prompt streams the agent's answer and ends with its stop reason.
    let (status, p) = post(&format!("{s}/prompt"), text("hello there"));
    assert_eq!(status, 202);
    let (pid, from) = (
        p["promptId"].as_str().unwrap().to_string(),
        p["lastEventId"].to_string(),
    );
    let frames = until(events, &from, |f| f.kind == "turn_complete");
    let said: String = frames
        .iter()
        .filter(|f| f.update_kind() == Some("agent_message_chunk"))
        .map(|f| {
            f.data["data"]["update"]["content"]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(said, "echo: hello there");
    let done = &frames.last().unwrap().data["data"];
    assert_eq!(
        (done["stopReason"].as_str(), done["promptId"].as_str()),
        (Some("end_turn"), Some(pid.as_str()))
    );
    // Where the agent said its transcript can be forked, as `qwen serve` passes it.
    assert_eq!(
        done["branchPoint"]["checkpointUuid"],
        "78344aef-d3cf-42e4-a80e-b1db641153b5"
    );
    // Every frame of the turn names its prompt beside `type`, as `qwen serve`
    // does (issue 24, D8): the user's message, what the agent says, the end —
    // also for a stream that resumes in the middle of the turn.
    let shown: Vec<&Frame> = frames.iter().filter(|f| f.id.is_some()).collect();
    for f in &shown {
        assert_eq!(f.data["promptId"], pid.as_str(), "{f:?}");
    }
    let echo = shown[0].id.unwrap().to_string();
    let resumed = until(events, &echo, |f| f.kind == "turn_complete");
    for f in resumed.iter().filter(|f| f.id.is_some()) {
        assert_eq!(f.data["promptId"], pid.as_str(), "resumed: {f:?}");
    }
}

fn commands_expand_or_pass_through(ctx: &Bridged<'_>) {
    let Bridged {
        log_path,
        s,
        events,
        ..
    } = ctx;
    // A cmdlog command expands before the agent sees it; the agent's own command
    // reaches it as typed, logged as a run.
    let (_, p) = post(&format!("{s}/prompt"), text("/greet world"));
    until(events, &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete"
    });
    let (_, p) = post(&format!("{s}/prompt"), text("/compress now"));
    let frames = until(events, &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete"
    });
    // Shown as `qwen serve` shows a slash line (issue 24, D3): the user's
    // message and the agent's answer, no tool call; the run is in the log.
    assert!(
        !frames
            .iter()
            .any(|f| matches!(f.update_kind(), Some("tool_call" | "tool_call_update"))),
        "{frames:#?}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.update_kind() == Some("user_message_chunk")
                && f.data["data"]["update"]["content"]["text"] == "/compress now")
    );
    let prompts: Vec<String> = agent_log(log_path)
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .map(|m| {
            m["params"]["prompt"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        prompts,
        ["hello there", "Say hello to world.", "/compress now"]
    );
    // `/model` typed in a prompt is the agent's: it hears the line as typed.
    let (_, p) = post(&format!("{s}/prompt"), text("/model large"));
    until(events, &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete"
    });
    let last = agent_log(log_path)
        .into_iter()
        .rfind(|m| m["method"] == "session/prompt")
        .unwrap();
    assert_eq!(last["params"]["prompt"][0]["text"], "/model large");
}

fn a_permission_vote_reaches_the_agent(ctx: &Bridged<'_>) {
    let Bridged { u, s, events, .. } = ctx;
    // A permission request goes out on the wire; the first vote reaches the agent.
    let (_, p) = post(&format!("{s}/prompt"), text("permission please"));
    let from = p["lastEventId"].to_string();
    let frames = until(events, &from, |f| f.kind == "permission_request");
    let request = &frames.last().unwrap().data["data"];
    assert_eq!(request["toolCall"]["toolCallId"], "call-1");
    let rid = request["requestId"].as_str().unwrap().to_string();
    let (status, e) = post(
        &format!("{u}/permission/{rid}"),
        json!({"outcome": {"outcome": "selected", "optionId": "nope"}}),
    );
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("invalid_option_id"))
    );
    assert_eq!(
        post(
            &format!("{u}/permission/{rid}"),
            json!({"outcome": {"outcome": "selected", "optionId": "reject"}})
        ),
        (200, json!({}))
    );
    assert_eq!(
        post(
            &format!("{u}/permission/{rid}"),
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
        )
        .0,
        404
    );
    // The late vote is told which answer stands (issue 24, D8), as `qwen serve`
    // tells it.
    let late = until(events, &from, |f| f.kind == "permission_already_resolved");
    let late = &late.last().unwrap().data["data"];
    assert_eq!(
        (&late["requestId"], &late["outcome"]),
        (
            &json!(rid),
            &json!({"outcome": "selected", "optionId": "reject"})
        )
    );
    let frames = until(events, &from, |f| f.kind == "turn_complete");
    let asked = frames
        .iter()
        .find(|f| f.kind == "permission_request")
        .unwrap();
    assert_eq!(asked.data["promptId"], p["promptId"], "{asked:?}");
    assert!(
        frames.iter().any(|f| f.kind == "permission_resolved"
            && f.data["data"]["outcome"]["optionId"] == "reject")
    );
    assert!(
        frames
            .iter()
            .any(|f| f.data["data"]["update"]["content"]["text"] == "chose reject")
    );
}

fn cancel_reaches_the_agent(ctx: &Bridged<'_>) {
    let Bridged { s, events, .. } = ctx;
    // Cancel: the agent hears session/cancel and stops `cancelled`.
    let (_, p) = post(&format!("{s}/prompt"), text("slow please"));
    let from = p["lastEventId"].to_string();
    until(events, &from, |f| {
        f.data["data"]["update"]["content"]["text"] == "tick"
    });
    assert_eq!(post(&format!("{s}/cancel"), json!({})).0, 204);
    let frames = until(events, &from, |f| f.kind == "turn_complete");
    let end = frames.last().unwrap();
    assert_eq!(end.data["data"]["stopReason"], "cancelled");
    // As `qwen serve` says it (issue 24, D8): `prompt_cancelled` first, then the
    // end with `promptCancelled`; both name the prompt in the envelope.
    let prompt_id = p["promptId"].as_str().unwrap();
    let cancelled: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.kind == "prompt_cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{frames:#?}");
    assert_eq!(cancelled[0].data["promptId"], prompt_id);
    assert_eq!(cancelled[0].data["data"]["sessionId"], "b1");
    assert_eq!(end.data["promptId"], prompt_id);
    let c = &end.data["data"]["promptCancelled"];
    assert!(c["cancelledAt"].as_u64().unwrap() > 0, "{c}");
    assert!(c["elapsedMs"].as_u64().is_some(), "{c}");
}

fn the_model_goes_through_a_config_option(ctx: &Bridged<'_>) {
    let Bridged {
        log_path,
        s,
        events,
        ..
    } = ctx;
    // Model: through the agent's model config option.
    let (status, m) = post(&format!("{s}/model"), json!({"modelId": "large"}));
    assert_eq!((status, m["modelId"].as_str()), (200, Some("large")));
    // Refused, as `qwen serve` says it (issue 24, D8): a 500 with the agent's
    // error code, and a `model_switch_failed` event.
    let (status, e) = post(&format!("{s}/model"), json!({"modelId": "huge"}));
    assert_eq!((status, e["code"].as_i64()), (500, Some(-32602)), "{e}");
    assert_eq!(e["requestedModelId"], "huge");
    assert!(
        e["error"].as_str().unwrap().contains("no such model"),
        "{e}"
    );
    let frames = read_frames(events, Some("0"), |f| {
        f.iter().any(|f| f.kind == "model_switch_failed")
    });
    let failed = frames
        .iter()
        .find(|f| f.kind == "model_switch_failed")
        .unwrap();
    assert_eq!(failed.data["data"]["requestedModelId"], "huge");
    assert_eq!(failed.data["data"]["error"], "no such model");
    assert!(
        agent_log(log_path)
            .iter()
            .any(|m| m["method"] == "session/set_config_option" && m["params"]["value"] == "large")
    );
}

fn a_crash_kills_its_sessions_and_the_next_starts_afresh(ctx: &Bridged<'_>) {
    let Bridged { u, s, events, .. } = ctx;
    // A crash: every session on the agent dies, and the stream ends with it.
    post(&format!("{u}/session"), json!({"sessionId": "b2"}));
    let (_, p) = post(&format!("{s}/prompt"), text("crash now"));
    let frames = read_to_end(events, Some(&p["lastEventId"].to_string()));
    let last = frames.iter().rev().find(|f| f.id.is_some()).unwrap();
    assert_eq!(last.kind, "session_died");
    // The turn under way ends before the session does, as `qwen serve` ends it
    // when its agent's channel closes.
    let ended = frames.iter().find(|f| f.kind == "turn_error").unwrap();
    assert_eq!(
        (&ended.data["data"]["code"], &ended.data["data"]["promptId"]),
        (&json!("channel_closed"), &p["promptId"]),
        "{frames:#?}"
    );
    // As `qwen serve` says it: the channel closed, and how the process ended.
    let died = &last.data["data"];
    assert_eq!(
        (&died["reason"], &died["exitCode"], &died["signalCode"]),
        (&json!("channel_closed"), &json!(3), &Value::Null),
        "{last:?}"
    );
    let other = read_to_end(&format!("{u}/session/b2/events"), Some("0"));
    assert_eq!(
        other.iter().rev().find(|f| f.id.is_some()).unwrap().kind,
        "session_died"
    );
    assert_eq!(post(&format!("{s}/prompt"), text("again")).0, 404);
    // The next session starts a new agent process.
    post(&format!("{u}/session"), json!({"sessionId": "b3"}));
    let (_, p) = post(&format!("{u}/session/b3/prompt"), text("after the restart"));
    let frames = until(
        &format!("{u}/session/b3/events"),
        &p["lastEventId"].to_string(),
        |f| f.kind == "turn_complete",
    );
    assert_eq!(
        frames.last().unwrap().data["data"]["stopReason"],
        "end_turn"
    );
    assert_eq!(delete(&format!("{u}/session/b3")).0, 204);
    assert_eq!(get(&format!("{u}/health")).0, 200);
}

fn the_log_holds_both_directions(ctx: &Bridged<'_>) {
    let Bridged { w, .. } = ctx;
    // The log holds both directions: typed events and the raw messages between.
    let events = logged(w, "b1");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "session/created",
        "acp/message",
        "session/prompt",
        "session/update",
        "permission/requested",
        "permission/resolved",
        "session/cancelled",
        "session/model_switched",
        "command/run",
        "session/died",
    ] {
        assert!(types.contains(&t), "{t} in {types:?}");
    }
    let session_new = events
        .iter()
        .find(|e| e["type"] == "acp/message" && e["data"]["message"]["method"] == "session/new")
        .unwrap();
    assert_eq!(session_new["data"]["direction"], "to_agent");
    // Searched while the daemon holds the log: the messages it passed on, and
    // what it recorded of them.
    let count = |q: &str| {
        let o = w.run(&["search", "--count", q]);
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    assert!(count("source:acp session:b1 session/new") >= 1);
    assert!(count("source:cmdlog session:b1 type:prompt") >= 1);
    assert_eq!(count("source:hook session:b1"), 0);
}

/// One side of a line-based JSON-RPC conversation with `cmdlog acp`.
pub(crate) struct Stdio2 {
    pub(crate) child: std::process::Child,
    pub(crate) input: std::process::ChildStdin,
    pub(crate) lines: std::sync::mpsc::Receiver<Value>,
    pub(crate) seen: Vec<Value>,
}

impl Stdio2 {
    /// ACP's `initialize` (id 1): the agent's answer.
    pub(crate) fn initialize(&mut self) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
        self.until(|m| m["id"] == 1)
    }

    /// `session/new` as request `id`: the session's id.
    pub(crate) fn new_session(&mut self, id: u64) -> String {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}));
        self.until(|m| m["id"] == id)["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub(crate) fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Reads messages until one matches; keeps them all.
    pub(crate) fn until(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no match in {:#?}", self.seen));
            self.seen.push(m.clone());
            if matches(&m) {
                return m;
            }
        }
    }
}

#[test]
fn the_acp_proxy_records_the_session_and_adds_cmdlog_commands() {
    let w = workspace();
    let mut c = acp_proxy(&w, &w.ws.path().join("agent.jsonl"));
    let init = c.initialize();
    assert_eq!(init["result"]["agentInfo"]["name"], "scripted-agent");
    let sid = c.new_session(2);
    let list = c.until(|m| {
        m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            && m["params"]["update"]["availableCommands"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "compress")
    });
    assert!(
        list["params"]["update"]["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "greet")
    );

    // A cmdlog prompt command reaches the agent expanded; its answer streams back.
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/greet proxy"}]}}));
    assert_eq!(
        c.until(|m| m["id"] == 3)["result"]["stopReason"],
        "end_turn"
    );
    assert!(
        c.seen
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "Say hello to proxy.")
    );
    // The agent asks permission of the editor; the answer goes back through.
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "permission"}]}}));
    let ask = c.until(|m| m["method"] == "session/request_permission");
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
    assert_eq!(
        c.until(|m| m["id"] == 5)["result"]["stopReason"],
        "end_turn"
    );
    assert!(
        c.seen
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "chose allow")
    );
    // Text from the agent that would be markup or reorder what is shown.
    c.send(json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "<script>alert(1)</script>\u{202e}txt"}]}}));
    c.until(|m| m["id"] == 6);
    c.send(json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "<img src=x onerror=\"document.body.dataset.pwned=1\">"}]}}));
    c.until(|m| m["id"] == 7);
    drop(c.input);
    let status = c.child.wait().unwrap();
    assert!(status.success());

    // The HTML report reads as the conversation went (issue 24).
    let report = w.ws.path().join("session.html");
    w.ok(&["report", "--session", &sid, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    let conversation = &html[html.find("<h2>Conversation</h2>").expect("a conversation")..];
    let at = |needle: &str| {
        conversation
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {conversation}"))
    };
    assert!(at("Say hello to proxy.") < at("echo: Say hello to proxy."));
    assert!(at("permission asked") < at("answered: Allow (allow)"));
    assert!(at("answered: Allow (allow)") < at("chose allow"));
    assert!(at("turn ended") > 0 && conversation.contains("end_turn"));
    assert!(!html.contains("<script"), "markup from outside is escaped");
    assert!(at("&lt;script&gt;alert(1)&lt;/script&gt;\\u{202e}txt") > 0);
    assert!(
        !html.contains('\u{202e}'),
        "a bidi override is shown, not obeyed"
    );
    // In a real browser: the page loads, what was said reads in order, and the
    // agent's markup stays text (its handler never ran).
    let browser = "the_acp_proxy_records_the_session_and_adds_cmdlog_commands (report in Chromium)";
    if let Some(chromium) = cmdlog_test_support::browser::chromium(browser) {
        let dom = cmdlog_test_support::browser::rendered_dom(&chromium, &report);
        let at = |needle: &str| {
            dom.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} in {dom}"))
        };
        assert!(at("<h2>Conversation</h2>") < at("Say hello to proxy."));
        assert!(at("Say hello to proxy.") < at("echo: Say hello to proxy."));
        assert!(at("permission asked") < at("chose allow"));
        assert!(at("echo: &lt;img src=x onerror=") > 0);
        assert!(!dom.contains("data-pwned"), "the agent's markup ran: {dom}");
        assert!(
            !dom.contains("<img"),
            "the agent's markup became an element"
        );
    }

    let events = logged(&w, &sid);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "session/created",
        "session/prompt",
        "session/update",
        "command/run",
        "permission/requested",
        "permission/resolved",
        "session/ended",
    ] {
        assert!(types.contains(&t), "{t} in {types:?}");
    }
    let o = w.run(&["audit", "--session", &sid]);
    let audit = String::from_utf8_lossy(&o.stdout);
    assert!(audit.contains("/greet proxy"), "{audit}");
}

/// Starts `cmdlog acp` in front of the scripted agent, the agent's reads logged
/// to `agent_log`.
pub(crate) fn acp_proxy(w: &Workspace, agent_log: &std::path::Path) -> Stdio2 {
    acp_proxy_env(w, agent_log, &[])
}

fn acp_proxy_env(w: &Workspace, agent_log: &std::path::Path, env: &[(&str, &str)]) -> Stdio2 {
    let mut words = vec!["acp", "--"];
    let script = agent_script();
    words.extend(script.split(' '));
    let mut child = w
        .cmd(&words)
        .envs(env.iter().copied())
        .env("AGENT_LOG", agent_log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input = child.stdin.take().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(serde_json::from_str::<Value>(&line).expect("only JSON-RPC on stdout"));
        }
    });
    Stdio2 {
        child,
        input,
        lines,
        seen: Vec::new(),
    }
}

/// D1, D4, D6, D7 of issue 24: inside `cmdlog acp` the agent's commands win —
/// `/model` and `/help` reach the agent as typed, and so does a command file of
/// cmdlog's that the agent also has; the editor gets one command list, the
/// agent's entries and `_meta` as it sent them; the editor's answers to the
/// agent's requests are logged in their session.
#[test]
fn inside_the_acp_proxy_the_agents_commands_win() {
    let w = workspace();
    w.put(
        "ws/.cmdlog/commands/compress.md",
        "cmdlog's own compress.\n",
    );
    let agent_log_path = w.ws.path().join("agent.jsonl");
    let mut c = acp_proxy(&w, &agent_log_path);
    c.initialize();
    let sid = c.new_session(2);
    let prompt = |c: &mut Stdio2, id: u64, text: &str| {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}}));
        assert_eq!(
            c.until(|m| m["id"] == id)["result"]["stopReason"],
            "end_turn",
            "{text}"
        );
    };
    for (id, line) in [(3, "/model large"), (4, "/help"), (5, "/compress now")] {
        prompt(&mut c, id, line);
        assert!(
            c.seen
                .iter()
                .any(|m| m["params"]["update"]["content"]["text"] == line),
            "{line} reached the agent as typed: {:#?}",
            c.seen
        );
    }
    // The agent asks the editor something; the editor's answer is logged in the session.
    c.send(json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "read"}]}}));
    let ask = c.until(|m| m["method"] == "fs/read_text_file");
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"content": "the notes"}}));
    c.until(|m| m["id"] == 6);
    drop(c.input);
    assert!(c.child.wait().unwrap().success());

    // One command list reached the editor: the agent's entries and `_meta` as
    // sent, cmdlog's command files beside them, no built-in of cmdlog's.
    let lists: Vec<&Value> = c
        .seen
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .map(|m| &m["params"]["update"])
        .collect();
    assert_eq!(lists.len(), 1, "{lists:#?}");
    assert_eq!(lists[0]["_meta"], json!({"availableSkills": ["tidy"]}));
    let commands = lists[0]["availableCommands"].as_array().unwrap();
    let model: Vec<&Value> = commands.iter().filter(|c| c["name"] == "model").collect();
    assert_eq!(model.len(), 1);
    assert_eq!(model[0]["_meta"]["source"], "builtin-command");
    let compress: Vec<&Value> = commands
        .iter()
        .filter(|c| c["name"] == "compress")
        .collect();
    assert_eq!(compress[0]["description"], "Compress the conversation");
    assert!(commands.iter().any(|c| c["name"] == "greet"));
    assert!(
        !commands.iter().any(|c| c["name"] == "help"),
        "{commands:#?}"
    );

    // The agent heard each line as typed; cmdlog switched no model itself.
    let heard: Vec<String> = agent_log(&agent_log_path)
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .map(|m| {
            m["params"]["prompt"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(heard, ["/model large", "/help", "/compress now", "read"]);
    let events = logged(&w, &sid);
    assert!(
        !events.iter().any(|e| e["type"] == "session/model_switched"),
        "{events:#?}"
    );
    let answer = events.iter().find(|e| {
        e["type"] == "acp/message" && e["data"]["message"]["result"]["content"] == "the notes"
    });
    assert!(
        answer.is_some(),
        "the editor's answer in the session: {events:#?}"
    );
}

/// D2 of issue 24: a daemon killed mid-turn and started again ends that turn,
/// durably, with `turn_error` (`daemon_lost`, the turn's `promptId`), so a client
/// resuming the stream sees it end; the session takes prompts again.
#[test]
fn a_turn_the_daemon_died_in_ends_when_it_starts_again() {
    let w = workspace();
    let start = || w.serve_env("127.0.0.1:0", &["--agent", &agent_script()], None, &[]);
    let d = start();
    let (status, created) = post(&format!("{}/session", d.url), json!({"sessionId": "k1"}));
    assert_eq!(status, 200, "{created}");
    let s = format!("{}/session/k1", d.url);
    let (_, p) = post(&format!("{s}/prompt"), text("slow please"));
    let prompt_id = p["promptId"].as_str().unwrap().to_string();
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.data["data"]["update"]["content"]["text"] == "tick"
    });
    let seen = frames.last().unwrap().id.unwrap().to_string();
    drop(d); // SIGKILL, mid-turn

    let d = start();
    let s = format!("{}/session/k1", d.url);
    let frames = until(&format!("{s}/events"), &seen, |f| f.kind == "turn_error");
    let end = &frames.last().unwrap().data["data"];
    assert_eq!(end["code"], "daemon_lost", "{end}");
    assert_eq!(end["promptId"], prompt_id.as_str());
    // Ended in the log: no turn is under way, and a new prompt runs at once.
    let (_, p) = post(&format!("{s}/prompt"), text("hello again"));
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete"
    });
    assert_eq!(
        frames.last().unwrap().data["data"]["stopReason"],
        "end_turn"
    );
    // A second restart adds no second end.
    drop(d);
    drop(start());
    let ends: Vec<Value> = logged(&w, "k1")
        .into_iter()
        .filter(|e| e["data"]["sessionUpdate"] == "turn_error")
        .collect();
    assert_eq!(ends.len(), 1, "{ends:#?}");
}

/// D5 of issue 24: the agent's follow-up suggestion after a turn reaches the
/// session's clients as `qwen serve` sends it, `followup_suggestion`; one longer
/// than 500 characters is dropped, as there.
#[test]
fn the_agents_follow_up_suggestion_reaches_the_client() {
    let w = workspace();
    let d = w.serve_env("127.0.0.1:0", &["--agent", &agent_script()], None, &[]);
    assert_eq!(
        post(&format!("{}/session", d.url), json!({"sessionId": "f1"})).0,
        200
    );
    let s = format!("{}/session/f1", d.url);
    let (_, p) = post(&format!("{s}/prompt"), text("suggest"));
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.kind == "followup_suggestion"
    });
    let data = &frames.last().unwrap().data["data"];
    assert_eq!(data["suggestion"], "run the tests");
    assert_eq!(data["sessionId"], "f1");
    assert!(data["promptId"].as_str().unwrap().ends_with("########1"));
    // The turn ended before it; the long one is not shown.
    let (_, again) = post(&format!("{s}/prompt"), text("hello"));
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete" && f.data["data"]["promptId"] == again["promptId"]
    });
    assert_eq!(
        frames
            .iter()
            .filter(|f| f.kind == "followup_suggestion")
            .count(),
        1
    );
}

/// The agent's title for a session (Qwen Code's `qwen/notify/session/title-update`)
/// reaches its clients as `qwen serve` sends it, `session_metadata_updated` with
/// `displayName` and `titleSource`: the Web Shell lists the session by it. One
/// with a control character is not shown.
#[test]
fn the_agents_session_title_reaches_the_client() {
    let w = workspace();
    let d = w.serve_env("127.0.0.1:0", &["--agent", &agent_script()], None, &[]);
    assert_eq!(
        post(&format!("{}/session", d.url), json!({"sessionId": "t1"})).0,
        200
    );
    let s = format!("{}/session/t1", d.url);
    let (_, p) = post(&format!("{s}/prompt"), text("title"));
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.kind == "session_metadata_updated"
    });
    let data = &frames.last().unwrap().data["data"];
    assert_eq!(data["displayName"], "Fix the flaky webhook test");
    assert_eq!(
        (data["sessionId"].as_str(), data["titleSource"].as_str()),
        (Some("t1"), Some("auto"))
    );
    let (_, again) = post(&format!("{s}/prompt"), text("hello"));
    let frames = until(&format!("{s}/events"), &p["lastEventId"].to_string(), |f| {
        f.kind == "turn_complete" && f.data["data"]["promptId"] == again["promptId"]
    });
    let titles: Vec<_> = frames
        .iter()
        .filter(|f| f.kind == "session_metadata_updated")
        .collect();
    assert_eq!(titles.len(), 1, "{titles:#?}");
    // The session's summary is named by it too (the Web Shell's list).
    let (_, status) = get(&format!("{s}/status"));
    assert_eq!(
        status["displayName"], "Fix the flaky webhook test",
        "{status}"
    );
}

/// Issue 24: an editor reopens a recorded session with `session/load` through a
/// new `cmdlog acp`, in front of an agent that cannot load sessions: it sees the
/// history from the log before the answer, and goes on in the same session.
#[test]
fn an_editor_reopens_a_recorded_session_from_the_log() {
    let w = workspace();
    let agent_log_path = w.ws.path().join("agent.jsonl");
    let start = |c: &mut Stdio2| {
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
        c.until(|m| m["id"] == 1)
    };
    // The first run: two sessions; the second holds a conversation.
    let mut c = acp_proxy(&w, &agent_log_path);
    start(&mut c);
    for id in [2, 3] {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}));
        c.until(|m| m["id"] == id);
    }
    let sid = "scripted-2";
    c.send(json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello one"}]}}));
    c.until(|m| m["id"] == 4);
    drop(c.input);
    assert!(c.child.wait().unwrap().success());

    // The second run: the agent (which does not load sessions) is started
    // afresh; the editor is told cmdlog loads them.
    let mut c = acp_proxy(&w, &agent_log_path);
    let init = start(&mut c);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}}));
    let answer = c.until(|m| m["id"] == 5);
    assert!(answer.get("error").is_none(), "{answer}");
    let replayed: Vec<(String, String)> = c
        .seen
        .iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == sid)
        .map(|m| {
            let u = &m["params"]["update"];
            (
                u["sessionUpdate"].as_str().unwrap().to_string(),
                u["content"]["text"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk".to_string(), "hello one".to_string()),
            ("agent_message_chunk".to_string(), "echo: ".to_string()),
            ("agent_message_chunk".to_string(), "hello one".to_string()),
        ],
        "the history, before the answer"
    );
    // The session goes on under the editor's id.
    c.send(json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello two"}]}}));
    assert_eq!(
        c.until(|m| m["id"] == 6)["result"]["stopReason"],
        "end_turn"
    );
    assert!(c.seen.iter().any(|m| m["params"]["sessionId"] == sid
        && m["params"]["update"]["content"]["text"] == "hello two"));
    drop(c.input);
    assert!(c.child.wait().unwrap().success());
    // The agent heard a fresh session/new, and the prompt under its own id.
    let heard = agent_log(&agent_log_path);
    let last = heard
        .iter()
        .rfind(|m| m["method"] == "session/prompt")
        .unwrap();
    assert_eq!(last["params"]["prompt"][0]["text"], "hello two");
    assert_eq!(last["params"]["sessionId"], "scripted-1");
    // One session in the log, both runs in it.
    let prompts: Vec<String> = logged(&w, sid)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["hello one", "hello two"]);

    // The third run: the editor resumes it (ACP `session/resume`: no replay),
    // which cmdlog offers for every session it recorded, whatever the agent can.
    let mut c = acp_proxy(&w, &agent_log_path);
    let init = start(&mut c);
    assert!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["resume"].is_object(),
        "{init}"
    );
    c.send(json!({"jsonrpc": "2.0", "id": 7, "method": "session/resume", "params": {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}}));
    let answer = c.until(|m| m["id"] == 7);
    assert!(answer.get("error").is_none(), "{answer}");
    assert!(
        !c.seen
            .iter()
            .any(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk"),
        "a resume replays nothing: {:#?}",
        c.seen
    );
    c.send(json!({"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello three"}]}}));
    assert_eq!(
        c.until(|m| m["id"] == 8)["result"]["stopReason"],
        "end_turn"
    );
    drop(c.input);
    assert!(c.child.wait().unwrap().success());
    let prompts: Vec<String> = logged(&w, sid)
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["hello one", "hello two", "hello three"]);
}

/// D7 of issue 24: an agent that answers every `session/new` with a large
/// catalogue (Qwen Code's: 560 kB) has it stored once, as a blob the message
/// names, not in every session's record.
#[test]
fn a_large_answer_every_session_repeats_is_stored_once() {
    let w = workspace();
    let agent_log_path = w.ws.path().join("agent.jsonl");
    let mut c = acp_proxy_env(&w, &agent_log_path, &[("BIG_CATALOG", "1")]);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    c.until(|m| m["id"] == 1);
    for id in [2, 3] {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}));
        let answer = c.until(|m| m["id"] == id);
        // The editor gets the answer whole.
        assert_eq!(
            answer["result"]["models"]["availableModels"]
                .as_array()
                .unwrap()
                .len(),
            500
        );
    }
    drop(c.input);
    assert!(c.child.wait().unwrap().success());
    let mut markers = Vec::new();
    for sid in ["scripted-1", "scripted-2"] {
        let answer = logged(&w, sid)
            .into_iter()
            .find(|e| {
                e["type"] == "acp/message" && e["data"]["message"]["result"]["sessionId"] == sid
            })
            .expect("the answer is recorded");
        let models = &answer["data"]["message"]["result"]["models"];
        let text = answer.to_string();
        assert!(
            text.len() < 4096,
            "the record is small: {} bytes",
            text.len()
        );
        let marker = if models["cmdlog"] == "value stored as a blob" {
            models.clone()
        } else {
            models["availableModels"].clone()
        };
        assert_eq!(marker["cmdlog"], "value stored as a blob", "{answer}");
        markers.push(marker["blob"].as_str().unwrap().to_string());
    }
    assert_eq!(markers[0], markers[1], "one blob for both");
    let o = w.run(&["blob", &markers[0]]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(stored.to_string().contains("Model 499"));
}

/// An agent that exits leaving a process behind that holds its output (a
/// relaunching CLI's child, killed or not): `cmdlog acp` ends with the agent, its
/// session dead, instead of waiting for the output to close.
#[test]
fn the_proxy_ends_with_its_agent_whatever_holds_its_output() {
    let w = workspace();
    let mut c = acp_proxy(&w, &w.ws.path().join("agent.jsonl"));
    c.initialize();
    let sid = c.new_session(2);
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "orphan"}]}}));
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = c.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "cmdlog acp still runs 20 s after its agent exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(3), "the agent's status");
    let died: Vec<Value> = logged(&w, &sid)
        .into_iter()
        .filter(|e| e["type"] == "session/died")
        .collect();
    assert_eq!(died.len(), 1);
    assert!(
        died[0]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("exited with status 3"),
        "{died:?}"
    );
}
