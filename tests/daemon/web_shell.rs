//! What Qwen Code's Web Shell asks of the daemon on every connect (issue 40),
//! answered as `qwen serve` 0.24.4 answers a workspace without that feature:
//! the session source it sends, the routes it always calls, and its own
//! requests from the daemon's origin.

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::{get, http, post, read_frames};
use serde_json::{Value, json};

/// A request as the Web Shell makes it from a page at `origin`.
fn from_page(url: &str, origin: &str, body: Value) -> u16 {
    http()
        .post(url)
        .header("content-type", "application/json")
        .header("origin", origin)
        .send(body.to_string())
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn the_web_shells_connect_is_answered_as_qwen_serve_answers_it() {
    let w = Workspace::new();
    let d = w.serve(&[]);
    let u = &d.url;
    let cwd = std::fs::canonicalize(w.ws.path()).unwrap();
    let cwd = cwd.to_str().unwrap();

    // The page refuses to create a session unless the daemon lists this.
    let (_, caps) = get(&format!("{u}/capabilities"));
    assert!(
        caps["features"]
            .as_array()
            .unwrap()
            .contains(&json!("session_source_metadata")),
        "{caps}"
    );
    let (status, created) = post(
        &format!("{u}/session"),
        json!({"cwd": cwd, "sessionScope": "thread", "sourceType": "default", "approvalMode": "default"}),
    );
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["sourceType"], "default");
    assert_eq!(created["sourcePersisted"], false);
    let session = created["sessionId"].as_str().unwrap().to_string();
    let (status, refused) = post(
        &format!("{u}/session"),
        json!({"sourceType": "not a source"}),
    );
    assert_eq!(
        (status, refused["code"].as_str()),
        (400, Some("invalid_session_source"))
    );

    // The routes it calls on every connect: 200 with every array it reads.
    let answers = [
        ("/brand", json!({})),
        ("/workspace/settings", json!({"v": 1, "settings": []})),
        ("/workspace/models", json!({"models": []})),
        (
            "/workspace/skills",
            json!({"v": 1, "workspaceCwd": cwd, "initialized": false, "skills": []}),
        ),
        (
            "/workspace/providers",
            json!({"v": 1, "workspaceCwd": cwd, "initialized": false, "providers": []}),
        ),
        (
            "/workspace/git",
            json!({"v": 2, "workspaceCwd": cwd, "branch": null}),
        ),
        (
            &format!("/session/{session}/goal"),
            json!({"snapshot": {"v": 2, "goal": null, "activity": "idle"}}),
        ),
    ];
    for (path, expected) in answers {
        assert_eq!(get(&format!("{u}{path}")), (200, expected), "{path}");
    }
    let encoded: String = cwd.replace('/', "%2F");
    let (status, git) = get(&format!("{u}/workspaces/{encoded}/git"));
    assert_eq!((status, &git["branch"]), (200, &Value::Null), "{git}");
    let (status, other) = get(&format!("{u}/workspaces/%2Fnowhere/git"));
    assert_eq!(
        (status, other["code"].as_str()),
        (404, Some("workspace_not_found"))
    );
    assert_eq!(get(&format!("{u}/session/nosuch/goal")).0, 404);

    // The echo of a prompt names the client that sent it: the page that drew
    // the message already shows it once.
    let sent = http()
        .post(&format!("{u}/session/{session}/prompt"))
        .header("content-type", "application/json")
        .header("x-qwen-client-id", "webui_page")
        .send(json!({"prompt": [{"type": "text", "text": "hello"}]}).to_string())
        .unwrap();
    assert_eq!(sent.status().as_u16(), 202);
    let echo = |f: &cmdlog_test_support::daemon::Frame| {
        f.data["data"]["update"]["sessionUpdate"] == "user_message_chunk"
    };
    let frames = read_frames(&format!("{u}/session/{session}/events"), Some("0"), |f| {
        f.iter().any(echo)
    });
    let frame = frames.iter().find(|f| echo(f)).unwrap();
    assert_eq!(
        frame.data["originatorClientId"], "webui_page",
        "{:?}",
        frame.data
    );

    // Its own requests come from the daemon's origin: answered without a
    // token; a page elsewhere is still refused.
    let port = u.rsplit(':').next().unwrap();
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let status = from_page(
            &format!("{u}/session/{session}/heartbeat"),
            &origin,
            json!({}),
        );
        assert!(status < 300, "{origin}: {status}");
    }
    for origin in [
        "http://evil.example".to_string(),
        format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() + 1),
    ] {
        let status = from_page(
            &format!("{u}/session/{session}/heartbeat"),
            &origin,
            json!({}),
        );
        assert_eq!(status, 403, "{origin}");
    }
}

/// A Qwen Code package as npm installs it, written by us: `bin/qwen` a link
/// to the package's script, the package's `web-shell/` beside it. Returns the
/// `bin` folder.
fn installed_qwen(root: &std::path::Path) -> std::path::PathBuf {
    let package = root.join("lib/node_modules/@qwen-code/qwen-code");
    let shell = package.join("web-shell");
    std::fs::create_dir_all(shell.join("assets")).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name": "@qwen-code/qwen-code", "version": "9.9.9"}"#,
    )
    .unwrap();
    std::fs::write(package.join("cli.js"), "#!/usr/bin/env node\n").unwrap();
    std::fs::write(
        shell.join("index.html"),
        "<!doctype html><title>Qwen Code</title>",
    )
    .unwrap();
    std::fs::write(shell.join("assets/index-AbCd1234.js"), "console.log(1)").unwrap();
    std::fs::write(
        shell.join("sw.js"),
        "self.addEventListener('fetch', () => {})",
    )
    .unwrap();
    std::fs::write(package.join("secret.txt"), "not served").unwrap();
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(package.join("cli.js"), bin.join("qwen")).unwrap();
    bin
}

#[test]
fn the_installed_web_shell_is_served_at_the_root_without_the_token() {
    let w = Workspace::new();
    let install = tempfile::tempdir().unwrap();
    let bin = installed_qwen(install.path());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let d = w.serve_env("127.0.0.1:0", &[], Some("secret-token"), &[("PATH", &path)]);
    let u = &d.url;
    let page = http().get(&format!("{u}/")).call().unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert!(
        page.into_body()
            .read_to_string()
            .unwrap()
            .contains("Qwen Code")
    );
    let asset = http()
        .get(&format!("{u}/assets/index-AbCd1234.js"))
        .call()
        .unwrap();
    assert_eq!(asset.status().as_u16(), 200);
    assert!(
        asset.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/javascript")
    );
    assert!(
        asset.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let worker = http().get(&format!("{u}/sw.js")).call().unwrap();
    assert_eq!(worker.headers()["service-worker-allowed"], "/");
    // A session's page loads as the page; the API behind it still needs the token.
    let session_page = http()
        .get(&format!("{u}/session/s1"))
        .header("accept", "text/html")
        .header("sec-fetch-mode", "navigate")
        .call()
        .unwrap();
    assert_eq!(session_page.status().as_u16(), 200);
    assert_eq!(get(&format!("{u}/session/s1")).0, 401);
    assert_eq!(get(&format!("{u}/capabilities")).0, 401);
    // Only the page's own files.
    for path in [
        "/assets/../package.json",
        "/assets/%2e%2e/secret.txt",
        "/assets/.hidden",
    ] {
        assert_eq!(
            http()
                .get(&format!("{u}{path}"))
                .call()
                .unwrap()
                .status()
                .as_u16(),
            404,
            "{path}"
        );
    }
    drop(d);

    // --no-web: the root opens cmdlog's workbench instead (its login page,
    // behind the token).
    let d = w.serve_env(
        "127.0.0.1:0",
        &["--no-web"],
        Some("secret-token"),
        &[("PATH", &path)],
    );
    let mut root = http().get(&format!("{}/", d.url)).call().unwrap();
    assert_eq!(root.status().as_u16(), 401);
    let page = root.body_mut().read_to_string().unwrap();
    assert!(page.contains("Log in to the workbench"), "{page}");
}

/// The agent behind the daemon: the scripted one (`tests/fixtures/acp_agent.py`).
fn agent_script() -> String {
    format!(
        "python3 {}/tests/fixtures/acp_agent.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn the_approval_mode_asked_is_set_on_the_agent_and_logged_with_who_asked() {
    let w = Workspace::new();
    let d = w.serve_env("127.0.0.1:0", &["--agent", &agent_script()], None, &[]);
    let u = &d.url;
    let created = http()
        .post(&format!("{u}/session"))
        .header("content-type", "application/json")
        .header("x-qwen-client-id", "webui_page")
        .send(
            json!({"sessionScope": "thread", "sourceType": "default", "approvalMode": "yolo"})
                .to_string(),
        )
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let created: Value = serde_json::from_str(&created).unwrap();
    let session = created["sessionId"].as_str().unwrap().to_string();
    // The answer names the agent's modes, the one asked for current, and its
    // models (here a config option, as ACP's standard agents give them).
    assert_eq!(created["modes"]["currentModeId"], "yolo", "{created}");
    assert_eq!(
        created["configOptions"][0]["category"], "model",
        "{created}"
    );
    // The page reads the agent's models and modes from the context.
    let (status, context) = get(&format!("{u}/session/{session}/context"));
    assert_eq!(status, 200, "{context}");
    assert_eq!(
        context["state"]["modes"]["currentModeId"], "yolo",
        "{context}"
    );
    let models = &context["state"]["configOptions"][0];
    assert_eq!(models["category"], "model", "{context}");
    // A switch of model is what the context says next.
    assert_eq!(
        post(
            &format!("{u}/session/{session}/model"),
            json!({"modelId": "large"})
        )
        .0,
        200
    );
    let (_, context) = get(&format!("{u}/session/{session}/context"));
    assert_eq!(
        context["state"]["configOptions"][0]["currentValue"],
        "large"
    );
    // Before its next session, a page picks among the agent's models, from
    // the agent's own current model and mode: not the ones this session set.
    let (status, providers) = get(&format!("{u}/workspace/providers"));
    assert_eq!(status, 200, "{providers}");
    assert_eq!(providers["initialized"], true, "{providers}");
    assert_eq!(providers["current"]["modelId"], "small", "{providers}");
    assert_eq!(providers["approvalMode"], "default", "{providers}");
    let models = &providers["providers"][0]["models"];
    assert_eq!(
        (
            models[0]["modelId"].as_str(),
            models[0]["isCurrent"].as_bool()
        ),
        (Some("small"), Some(true)),
        "{providers}"
    );
    assert_eq!(models[1]["name"], "Large", "{providers}");
    // The mode route: set, refused for a mode the agent lacks or qwen never names.
    let (status, changed) = post(
        &format!("{u}/session/{session}/approval-mode"),
        json!({"mode": "default"}),
    );
    assert_eq!(
        (status, &changed["previous"]),
        (200, &json!("yolo")),
        "{changed}"
    );
    for (mode, allowed) in [
        ("auto-edit", json!(["default", "yolo"])),
        (
            "sideways",
            json!(["plan", "default", "auto-edit", "auto", "yolo"]),
        ),
    ] {
        let (status, refused) = post(
            &format!("{u}/session/{session}/approval-mode"),
            json!({"mode": mode}),
        );
        assert_eq!(
            (status, refused["code"].as_str()),
            (400, Some("invalid_approval_mode")),
            "{refused}"
        );
        assert_eq!(refused["allowed"], allowed);
    }
    // Each set is in the log, with who asked; on the wire as qwen says it.
    let events: Vec<Value> = w
        .ok(&["log", "--json", "--all", "--session", &session])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let set: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session/mode_set")
        .collect();
    assert_eq!(set.len(), 2, "{events:?}");
    assert_eq!(
        set[0]["data"],
        json!({"mode": "yolo", "previous": "default", "client_id": "webui_page"})
    );
    assert_eq!(set[1]["data"]["mode"], "default");
    let frames = read_frames(&format!("{u}/session/{session}/events"), Some("0"), |f| {
        f.iter()
            .filter(|f| f.kind == "approval_mode_changed")
            .count()
            == 2
    });
    let changed = frames
        .iter()
        .find(|f| f.kind == "approval_mode_changed")
        .unwrap();
    assert_eq!(changed.data["data"]["next"], "yolo");
    assert_eq!(changed.data["originatorClientId"], "webui_page");

    // The page reloaded: it takes the session up with a client id of its own
    // (its earlier prompts' echoes then show), and its history whole: the
    // frames the stream gives from event 0, numbered alike, up to
    // `lastEventId`, after which its stream resumes.
    let (status, loaded) = post(&format!("{u}/session/{session}/load"), json!({}));
    assert_eq!(status, 200, "{loaded}");
    assert_ne!(loaded["clientId"], created["clientId"]);
    assert_eq!(loaded["attached"], true);
    assert_eq!(loaded["hasActivePrompt"], false, "{loaded}");
    let journal: Vec<(u64, String)> = loaded["liveJournal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_u64().unwrap(),
                e["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    let replayed: Vec<(u64, String)> =
        read_frames(&format!("{u}/session/{session}/events"), Some("0"), |f| {
            f.iter().any(|f| f.kind == "replay_complete")
        })
        .into_iter()
        .filter_map(|f| Some((f.id?, f.kind)))
        .collect();
    assert!(journal.len() >= 3, "{loaded}");
    assert_eq!(journal, replayed);
    assert_eq!(
        loaded["lastEventId"].as_u64(),
        journal.last().map(|(id, _)| *id)
    );
    assert_eq!(
        loaded["state"]["modes"]["currentModeId"], "default",
        "{loaded}"
    );
    assert_eq!(post(&format!("{u}/session/nosuch/load"), json!({})).0, 404);
}

#[test]
fn pending_prompts_list_the_running_turn_and_the_queue_behind_it() {
    let w = Workspace::new();
    let d = w.serve_env("127.0.0.1:0", &["--agent", &agent_script()], None, &[]);
    let u = &d.url;
    let (_, created) = post(&format!("{u}/session"), json!({"sessionId": "q1"}));
    assert_eq!(created["sessionId"], "q1");
    let prompt = |text: &str| {
        let sent = http()
            .post(&format!("{u}/session/q1/prompt"))
            .header("content-type", "application/json")
            .header("x-qwen-client-id", "webui_page")
            .send(json!({"prompt": [{"type": "text", "text": text}]}).to_string())
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap();
        serde_json::from_str::<Value>(&sent).unwrap()["promptId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let slow = prompt("slow please");
    let next = prompt("after the slow one");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let listed = loop {
        let (status, listed) = get(&format!("{u}/session/q1/pending-prompts"));
        assert_eq!(status, 200, "{listed}");
        if listed["pendingPrompts"][0]["state"] == "running" {
            break listed;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pending = listed["pendingPrompts"].as_array().unwrap();
    assert_eq!(pending.len(), 2, "{listed}");
    assert_eq!(pending[0]["promptId"], slow.as_str());
    assert_eq!(
        (
            pending[1]["promptId"].as_str(),
            pending[1]["state"].as_str()
        ),
        (Some(next.as_str()), Some("queued"))
    );
    assert_eq!(pending[1]["text"], "after the slow one");
    assert_eq!(pending[1]["originatorClientId"], "webui_page");
    // A queued prompt taken off the queue never runs; the running one stays.
    let third = prompt("never runs");
    let remove = |id: &str| {
        let answer = http()
            .delete(&format!("{u}/session/q1/pending-prompts/{id}"))
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap();
        serde_json::from_str::<Value>(&answer).unwrap()["removed"].clone()
    };
    assert_eq!(remove(&third), json!(true));
    assert_eq!(remove(&slow), json!(false));
    assert_eq!(remove(&third), json!(false));
    // Cancelled, the slow turn ends; the next runs and ends; nothing is left.
    assert!(post(&format!("{u}/session/q1/cancel"), json!({})).0 < 300);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while get(&format!("{u}/session/q1/pending-prompts")).1["pendingPrompts"] != json!([]) {
        assert!(
            std::time::Instant::now() < deadline,
            "the queue did not drain"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let said = w.ok(&["log", "--session", "q1"]);
    assert!(said.contains("after the slow one"), "{said}");
    assert!(!said.contains("never runs"), "{said}");
}
