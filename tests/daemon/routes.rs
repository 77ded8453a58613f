//! `cmdlog serve` end to end on a loopback port, on `qwen serve`'s wire without an
//! agent behind it (an external runtime publishes through `/update`): routes,
//! security, and SSE resumption from the durable log across dropped connections
//! and restarts. `tests/bridge.rs` covers the daemon with an ACP agent behind it;
//! `tests/node` runs the published clients against both.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::{
    Frame, delete, get, http as agent, post, post_with, read_frames, read_to_end,
};

/// A workspace with two Claude Code commands the daemon tests run.
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.put("ws/.claude/commands/review.md", "Review $0\n").put(
        "ws/.claude/commands/describe.md",
        "---\nattachments: true\n---\nDescribe $ARGUMENTS\n",
    );
    w
}

fn text(line: &str) -> Value {
    json!({"prompt": [{"type": "text", "text": line}]})
}

/// The frames up to and including the first that `done` accepts.
fn until(url: &str, from: Option<&str>, done: impl Fn(&Frame) -> bool) -> Vec<Frame> {
    read_frames(url, from, |f| f.last().is_some_and(&done))
}

/// The daemon under test and where its session `s1` lives.
struct Served {
    u: String,
    canonical: std::path::PathBuf,
    s: String,
    events: String,
    /// The event id the session's stream had when its first prompt was sent.
    last: String,
}

#[test]
fn routes_follow_qwen_serve() {
    let w = workspace();
    let d = w.serve(&[]);
    let u = d.url.clone();
    let canonical = std::fs::canonicalize(w.ws.path()).unwrap();
    capabilities(&u, &canonical);
    sessions_are_created_attached_and_scoped(&u, &canonical);
    let s = format!("{u}/session/s1");
    let events = format!("{s}/events");
    let last = a_prompt_streams_its_expansion_and_ends_its_turn(&s, &events);
    let served = Served {
        u,
        canonical,
        s,
        events,
        last,
    };
    cancel_and_handler_commands(&served);
    the_command_route_takes_attachments(&served);
    the_model_route(&served);
    permission_votes(&served);
    listings_and_presence(&served);
    bad_input_is_refused(&served);
    close_ends_the_session(&served);
}

fn capabilities(u: &str, canonical: &std::path::Path) {
    assert_eq!(get(&format!("{u}/health")), (200, json!({"status": "ok"})));
    let (_, caps) = get(&format!("{u}/capabilities"));
    assert_eq!(
        (caps["v"].as_u64(), caps["mode"].as_str()),
        (Some(1), Some("http-bridge"))
    );
    assert_eq!(caps["workspaceCwd"].as_str(), canonical.to_str());
    assert_eq!(caps["modelServices"], json!([]));
    for f in [
        "session_create",
        "session_id_override",
        "session_prompt",
        "session_events",
        "session_cancel",
        "session_set_model",
        "permission_vote",
        "session_close",
    ] {
        assert!(
            caps["features"].as_array().unwrap().contains(&json!(f)),
            "{f}"
        );
    }
}

fn sessions_are_created_attached_and_scoped(u: &str, canonical: &std::path::Path) {
    // Create: a requested id comes back lowercased; asking again attaches.
    let (status, created) = post(
        &format!("{u}/session"),
        json!({"sessionId": "S1", "cwd": canonical}),
    );
    assert_eq!(status, 200, "{created}");
    assert_eq!(
        (created["sessionId"].as_str(), created["attached"].as_bool()),
        (Some("s1"), Some(false))
    );
    assert!(created["clientId"].as_str().is_some_and(|c| !c.is_empty()));
    assert_eq!(created["workspaceCwd"].as_str(), canonical.to_str());
    let (_, again) = post(&format!("{u}/session"), json!({"sessionId": "s1"}));
    assert_eq!(again["attached"], true);
    let (status, e) = post(&format!("{u}/session"), json!({"cwd": "/somewhere/else"}));
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("workspace_mismatch"))
    );
    let (status, e) = post(&format!("{u}/session"), json!({"sessionScope": "galaxy"}));
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("invalid_session_scope"))
    );
    // `single` (the default) reuses one session; `thread` makes a new one.
    let (_, a) = post(&format!("{u}/session"), json!({}));
    let (_, b) = post(&format!("{u}/session"), json!({}));
    let (_, c) = post(&format!("{u}/session"), json!({"sessionScope": "thread"}));
    assert_eq!(a["sessionId"], b["sessionId"]);
    assert_eq!(b["attached"], true);
    assert_ne!(a["sessionId"], c["sessionId"]);
}

/// Returns the stream's event id before the prompt.
fn a_prompt_streams_its_expansion_and_ends_its_turn(s: &str, events: &str) -> String {
    // A prompt is queued (202); the expansion streams as the user message, and the
    // runtime's turn_complete carries the prompt's id.
    let (status, p) = post(&format!("{s}/prompt"), text("/review lib.rs"));
    assert_eq!(status, 202, "{p}");
    let prompt_id = p["promptId"].as_str().unwrap().to_string();
    let last = p["lastEventId"].as_u64().unwrap().to_string();
    let frames = until(events, Some(&last), |f| {
        f.update_kind() == Some("user_message_chunk")
    });
    assert_eq!(
        frames.last().unwrap().data["data"]["update"]["content"]["text"],
        // The Claude command's body with its own final newline, as Claude sends it.
        "Review lib.rs\n"
    );
    let (status, _) = post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}),
    );
    assert_eq!(status, 200);
    assert_eq!(
        post(
            &format!("{s}/update"),
            json!({"sessionUpdate": "turn_complete"})
        )
        .0,
        200
    );
    let frames = until(events, Some(&last), |f| f.kind == "turn_complete");
    let done = &frames.last().unwrap().data["data"];
    assert_eq!(
        (done["promptId"].as_str(), done["stopReason"].as_str()),
        (Some(prompt_id.as_str()), Some("end_turn"))
    );
    // The prompt command's run shows as a tool call, settled.
    assert!(frames.iter().any(|f| f.update_kind() == Some("tool_call")
        && f.data["data"]["update"]["title"] == "/review lib.rs"));
    assert!(
        frames
            .iter()
            .any(|f| f.update_kind() == Some("tool_call_update")
                && f.data["data"]["update"]["status"] == "completed")
    );
    last
}

fn cancel_and_handler_commands(served: &Served) {
    let Served {
        s, events, last, ..
    } = served;
    // Cancel ends the running turn `cancelled` (204); a handler command answers itself.
    let (_, p2) = post(&format!("{s}/prompt"), text("think about it"));
    let p2 = p2["promptId"].as_str().unwrap().to_string();
    until(events, Some(last), |f| {
        f.update_kind() == Some("user_message_chunk")
            && f.data["data"]["update"]["content"]["text"] == "think about it"
    });
    let res = agent()
        .post(&format!("{s}/cancel"))
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(res.status().as_u16(), 204);
    let frames = until(events, Some(last), |f| {
        f.kind == "turn_complete" && f.data["data"]["promptId"] == p2.as_str()
    });
    assert_eq!(
        frames.last().unwrap().data["data"]["stopReason"],
        "cancelled"
    );
    let (_, p3) = post(&format!("{s}/prompt"), text("/help"));
    let p3 = p3["promptId"].as_str().unwrap().to_string();
    let frames = until(events, Some(last), |f| {
        f.kind == "turn_complete" && f.data["data"]["promptId"] == p3.as_str()
    });
    assert!(frames.iter().any(|f| {
        f.update_kind() == Some("agent_message_chunk")
            && f.data["data"]["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("/review"))
    }));
}

fn the_command_route_takes_attachments(served: &Served) {
    let Served { s, .. } = served;
    // cmdlog's own command route, with attachments.
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
}

fn the_model_route(served: &Served) {
    let Served {
        s, events, last, ..
    } = served;
    // Model: through the headless /model command without an agent.
    let (status, m) = post(&format!("{s}/model"), json!({"modelId": "opus"}));
    assert_eq!((status, m["modelId"].as_str()), (200, Some("opus")));
    let frames = until(events, Some(last), |f| f.kind == "model_switched");
    assert_eq!(frames.last().unwrap().data["data"]["modelId"], "opus");
    let (status, e) = post(&format!("{s}/model"), json!({"modelId": "two words"}));
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("model_switch_failed"))
    );
    assert_eq!(post(&format!("{s}/model"), json!({})).0, 400);
}

fn permission_votes(served: &Served) {
    let Served {
        u, s, events, last, ..
    } = served;
    // Permissions: ACP requests from the runtime; ACP votes, the first one wins.
    let ask = |id: &str| {
        json!({"sessionUpdate": "permission_request", "requestId": id,
        "toolCall": {"toolCallId": "t1", "title": "Edit a.rs", "kind": "edit", "status": "pending"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "deny", "name": "Deny", "kind": "reject_once"}]})
    };
    let allow = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
    assert_eq!(post(&format!("{s}/update"), ask("r1")).0, 200);
    assert_eq!(
        post(&format!("{u}/permission/r1"), allow.clone()),
        (200, json!({}))
    );
    let (status, e) = post(&format!("{u}/permission/r1"), allow.clone());
    assert_eq!(status, 404, "the first vote wins: {e}");
    assert_eq!(post(&format!("{s}/update"), ask("r2")).0, 200);
    let (status, e) = post(
        &format!("{s}/permission/r2"),
        json!({"outcome": {"outcome": "selected", "optionId": "maybe"}}),
    );
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("invalid_option_id"))
    );
    assert_eq!(
        post(&format!("{s}/permission/r2"), json!({"outcome": "allow"})).0,
        400
    );
    assert_eq!(
        post(
            &format!("{s}/permission/r2"),
            json!({"outcome": {"outcome": "cancelled"}})
        ),
        (200, json!({}))
    );
    let frames = until(events, Some(last), |f| {
        f.kind == "permission_resolved" && f.data["data"]["requestId"] == "r2"
    });
    assert_eq!(
        frames.last().unwrap().data["data"]["outcome"],
        json!({"outcome": "cancelled"})
    );
    let request = frames
        .iter()
        .find(|f| f.kind == "permission_request")
        .unwrap();
    assert_eq!(request.data["data"]["toolCall"]["toolCallId"], "t1");
    assert_eq!(post(&format!("{s}/update"), json!({"sessionUpdate": "permission_request", "requestId": "r3", "toolCall": {"toolCallId": "t"}, "options": ["allow"]})).0, 400);
    assert_eq!(
        post(
            &format!("{s}/update"),
            json!({"sessionUpdate": "agent_message_chunk"})
        )
        .0,
        400
    );
    assert_eq!(post(&format!("{u}/permission/nope"), allow).0, 404);
}

fn listings_and_presence(served: &Served) {
    let Served {
        u, canonical, s, ..
    } = served;
    // Listings and presence.
    let (status, cmds) = get(&format!("{s}/supported-commands?mode=interactive"));
    assert_eq!((status, cmds["sessionId"].as_str()), (200, Some("s1")));
    assert!(
        cmds["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "review")
    );
    assert_eq!(get(&format!("{s}/supported-commands?mode=sideways")).0, 400);
    let (status, st) = get(&format!("{s}/status"));
    assert_eq!((status, st["sessionId"].as_str()), (200, Some("s1")));
    let encoded = canonical.to_str().unwrap().replace('/', "%2F");
    let (status, list) = get(&format!("{u}/workspace/{encoded}/sessions?size=100"));
    assert_eq!(status, 200, "{list}");
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["sessionId"] == "s1")
    );
    assert_eq!(
        get(&format!("{u}/workspace/{encoded}/sessions?cursor=zz")).1["code"],
        "invalid_cursor"
    );
    // The qualified twin answers the same list.
    let (status, qualified) = get(&format!("{u}/workspaces/{encoded}/sessions?size=100"));
    assert_eq!((status, &qualified["sessions"]), (200, &list["sessions"]));
    let (status, beat) = post(&format!("{s}/heartbeat"), json!({}));
    assert_eq!((status, beat["sessionId"].as_str()), (200, Some("s1")));
    let res = agent()
        .post(&format!("{s}/detach"))
        .header("x-qwen-client-id", "c-1")
        .send_empty()
        .unwrap();
    assert_eq!(res.status().as_u16(), 204);
    let res = agent()
        .post(&format!("{s}/heartbeat"))
        .header("x-qwen-client-id", "bad id!")
        .send_empty()
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
}

fn bad_input_is_refused(served: &Served) {
    let Served { u, s, .. } = served;
    // Bad input: unknown session, malformed JSON, wrong content type, bad ids.
    let (status, e) = post(&format!("{u}/session/ghost/prompt"), text("x"));
    assert_eq!(
        (status, e["code"].as_str(), e["sessionId"].as_str()),
        (404, Some("session_not_found"), Some("ghost"))
    );
    assert_eq!(
        post(&format!("{u}/session/..%2F..%2Fetc/prompt"), text("x")).0,
        404
    );
    assert_eq!(post(&format!("{s}/prompt"), json!({"prompt": []})).0, 400);
    assert_eq!(
        post(&format!("{s}/prompt"), json!({"prompt": ["x"]})).0,
        400
    );
    assert_eq!(
        post(
            &format!("{s}/prompt"),
            json!({"prompt": [{"type": "text"}]})
        )
        .0,
        400
    );
    let (status, e) = post(
        &format!("{s}/prompt"),
        json!({"prompt": [{"type": "text", "text": "x"}], "deadlineMs": -3}),
    );
    assert_eq!(
        (status, e["code"].as_str()),
        (400, Some("invalid_deadline_ms"))
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
        .send(text(&big).to_string())
    {
        Ok(res) => assert_eq!(res.status().as_u16(), 413),
        Err(e) => assert!(matches!(e, ureq::Error::Io(_)), "{e}"),
    }
    assert_eq!(
        get(&format!("{u}/health")).0,
        200,
        "and the daemon is still there"
    );
}

fn close_ends_the_session(served: &Served) {
    let Served { s, events, .. } = served;
    // Close: 204, the stream ends with session_closed, then the session is gone.
    assert_eq!(delete(s).0, 204);
    let (status, e) = delete(s);
    assert_eq!(
        (status, e["code"].as_str()),
        (404, Some("session_not_found"))
    );
    assert_eq!(
        post(
            &format!("{s}/update"),
            json!({"sessionUpdate": "turn_complete"})
        )
        .0,
        404,
        "nothing follows a closed session"
    );
    let all = read_to_end(events, Some("0"));
    let last_frame = all.iter().rev().find(|f| f.id.is_some()).unwrap();
    assert_eq!(
        (
            last_frame.kind.as_str(),
            last_frame.data["data"]["reason"].as_str()
        ),
        ("session_closed", Some("client_close"))
    );
    assert_eq!(get(events).0, 404, "a closed session has no live stream");
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

/// The session's events in the log: (seq, type).
fn log_events(w: &Workspace, session: &str) -> Vec<(u64, String)> {
    let o = w.run(&["log", "--json", "--session", session]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            (
                e["seq"].as_u64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
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
    // From the start (a new client sends 0), then the connection drops.
    let first = read_frames(&format!("{s}/events"), Some("0"), |f| {
        f.iter()
            .filter(|f| f.update_kind() == Some("agent_message_chunk"))
            .count()
            == 3
    });
    let last_seen = first.iter().filter_map(|f| f.id).max().unwrap();
    // While away: a prompt command and a command run.
    post(&format!("{s}/prompt"), text("/review a.rs"));
    post(&format!("{s}/command"), json!({"line": "/help"}));
    // Resume with the header (it wins over the query); the replay says how many.
    let second = read_frames(
        &format!("{s}/events?lastEventId=1"),
        Some(&last_seen.to_string()),
        |f| {
            f.iter().any(|f| f.kind == "replay_complete")
                && f.iter()
                    .filter(|f| f.update_kind() == Some("tool_call_update"))
                    .count()
                    == 2
        },
    );
    let replayed = second.iter().find(|f| f.kind == "replay_complete").unwrap();
    assert!(replayed.id.is_none());
    let count = second
        .iter()
        .take_while(|f| f.kind != "replay_complete")
        .filter(|f| f.id.is_some())
        .count();
    assert_eq!(replayed.data["data"]["replayedCount"], count as u64);
    // Restart the daemon, then resume again.
    drop(d);
    let d = w.serve(&[]);
    let s = format!("{}/session/s1", d.url);
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "turn_complete"}),
    );
    let resume_at = second.iter().filter_map(|f| f.id).max().unwrap();
    let third = until(&format!("{s}/events"), Some(&resume_at.to_string()), |f| {
        f.kind == "turn_complete"
    });
    drop(d);

    let seen: Vec<u64> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .filter_map(|f| f.id)
        .collect();
    let shown = log_events(&w, "s1")
        .into_iter()
        .filter(|(_, t)| t != "session/created")
        .count() as u64;
    assert_eq!(
        seen,
        (1..=shown).collect::<Vec<_>>(),
        "every shown event of the session exactly once, ids gapless from 1"
    );
    for f in first.iter().chain(&second).chain(&third) {
        assert_eq!(f.data["id"].as_u64(), f.id);
        if f.id.is_some() {
            assert!(f.data["_meta"]["cmdlog"]["seq"].is_u64(), "{f:?}");
        }
    }
    // A cursor past the session's last id (another log's) asks the client to resync.
    let d = w.serve(&[]);
    let frames = read_frames(
        &format!("{}/session/s1/events", d.url),
        Some("999999"),
        |f| f.iter().any(|f| f.kind == "replay_complete"),
    );
    assert_eq!(frames[0].kind, "state_resync_required");
    assert_eq!(frames[0].data["data"]["lastDeliveredId"], 999999);
    assert_eq!(
        frames.iter().filter(|f| f.id.is_some()).count() as u64,
        shown
    );
}

#[test]
fn command_files_reload_while_serving() {
    let w = workspace();
    let d = w.serve(&[]);
    let s = format!("{}/session/s1", d.url);
    post(&format!("{}/session", d.url), json!({"sessionId": "s1"}));
    let url = format!("{s}/events");
    let reader = std::thread::spawn(move || {
        until(&url, None, |f| {
            f.update_kind() == Some("available_commands_update")
                && f.data["data"]["update"]["availableCommands"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["name"] == "fresh")
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
            .all(|f| f.update_kind() == Some("available_commands_update"))
    );
    assert!(
        frames.last().unwrap().id.is_some(),
        "a durable session event"
    );
    let (_, p) = post(&format!("{s}/prompt"), text("/fresh x"));
    let from = p["lastEventId"].as_u64().unwrap().to_string();
    let frames = until(&format!("{s}/events"), Some(&from), |f| {
        f.update_kind() == Some("user_message_chunk")
    });
    assert_eq!(
        frames.last().unwrap().data["data"]["update"]["content"]["text"],
        "Fresh x\n"
    );
    eprintln!("hot reload reached SSE subscribers in {elapsed:?}");
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
        cmdlog_test_support::env_usize("CMDLOG_SSE_SUBSCRIBERS", 10),
        cmdlog_test_support::env_usize("CMDLOG_SSE_EVENTS", 1_000),
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
                let frames = read_frames(&url, None, move |f| {
                    if f.last()
                        .is_some_and(|f| f.update_kind() == Some("agent_message_chunk"))
                    {
                        updates += 1;
                    }
                    updates >= events
                });
                frames
                    .into_iter()
                    .filter(|f| f.update_kind() == Some("agent_message_chunk"))
                    .map(|f| {
                        (
                            f.id.unwrap(),
                            f.data["data"]["update"]["n"].as_u64().unwrap(),
                        )
                    })
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
    until(&format!("{s}/events"), Some("0"), |f| {
        f.update_kind() == Some("user_message_chunk")
            && f.data["data"]["update"]["content"]["text"] == "hello there"
    });
    post(
        &format!("{s}/update"),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi from the agent\n"}}),
    );
    out.wait_for("Hi from the agent");

    // A permission request can be answered, with the option of the right kind.
    let ask = |id: &str| {
        json!({"sessionUpdate": "permission_request", "requestId": id,
        "toolCall": {"toolCallId": format!("t-{id}"), "title": "Run tests", "kind": "execute"},
        "options": [{"optionId": "yes-once", "name": "Allow", "kind": "allow_once"}, {"optionId": "no-once", "name": "Deny", "kind": "reject_once"}]})
    };
    post(&format!("{s}/update"), ask("r1"));
    out.wait_for("[permission r1 requested");
    type_line("/allow");
    out.wait_for("[permission r1 resolved: yes-once]");
    post(&format!("{s}/update"), ask("r2"));
    out.wait_for("[permission r2 requested");
    type_line("/deny");
    out.wait_for("[permission r2 resolved: no-once]");

    // /model goes to the model route; the status shows it.
    type_line("/model opus");
    out.wait_for("[model: opus]");

    // A line typed while the turn runs waits its turn: Ctrl-C cancels the running
    // one, and the queued command line then expands.
    type_line("/review x.rs");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(out.count("[/review]"), 0, "queued behind the running turn");
    Command::new("kill")
        .args(["-INT", &client.id().to_string()])
        .status()
        .unwrap();
    err.wait_for("[cancelled]");
    out.wait_for("[/review] Review x.rs");
    let frames = until(&format!("{s}/events"), Some("0"), |f| {
        f.kind == "turn_complete" && f.data["data"]["stopReason"] == "cancelled"
    });
    // The cancel is said before the turn's end, as `qwen serve` says it.
    let at = |kind: &str| frames.iter().rposition(|f| f.kind == kind);
    assert!(at("prompt_cancelled") < at("turn_complete") && at("prompt_cancelled").is_some());

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
    let sessions = cmdlog_test_support::env_usize("CMDLOG_LOAD_SESSIONS", 200);
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
                until(&url, None, |f| f.kind == "turn_complete")
                    .into_iter()
                    .filter_map(|f| Some((f.id?, f.kind)))
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
    // the command list + (run, done) per command + updates + turn_complete
    let expected = 1 + 2 * COMMANDS + UPDATES + 1;
    for (i, s) in subscribers.into_iter().enumerate() {
        let got = s.join().unwrap();
        assert_eq!(got.len(), expected, "session load{i}: {got:?}");
        assert_eq!(
            got.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            (1..=expected as u64).collect::<Vec<_>>(),
            "session load{i}: gapless, in order"
        );
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{sessions} sessions with subscribers: {requests} requests, {} events delivered in {elapsed:.2?}, no errors; daemon RSS {rss_before} KiB -> {rss_peak} KiB",
        sessions * expected
    );
}
