//! The workbench in a real browser (issue 42): Debian's Chromium, headless,
//! driven through its WebDriver (`chromium-driver`) as an auditor uses it —
//! log in with the token, find a session, search and open a hit, expand a
//! tool call's output, watch a running session gain an event without a
//! reload, move the registry back in time, fetch a proof and check it — and
//! a hostile prompt shown as text with no script run. A screenshot of each
//! main page is kept under `target/workbench-screenshots/`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::browser::{chromedriver, chromium};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

const TOKEN: &str = "wb-browser-81c2";

/// A chromedriver child on a free loopback port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver(path: &std::path::Path) -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(path)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    driver
}

async fn browser(driver: &Driver, chromium: &std::path::Path, profile: &std::path::Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1280,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

fn hook(w: &Workspace, session: &str, name: &str, fields: serde_json::Value) {
    let mut p = json!({"session_id": session, "cwd": w.ws.path(), "transcript_path": "/t", "hook_event_name": name});
    for (k, v) in fields.as_object().unwrap() {
        p[k] = v.clone();
    }
    let out = w.hook("claude-code", p.to_string().as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn shot(client: &Client, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("workbench-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = client.screenshot().await.unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

async fn text_of(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

/// Clicks the element `at` finds.
async fn click(client: &Client, at: Locator<'_>) {
    client
        .find(at)
        .await
        .unwrap_or_else(|e| panic!("{at:?}: {e}"))
        .click()
        .await
        .unwrap();
}

/// Waits until `script` (a JS expression) is true in the page.
/// The file the link at `css` downloads, fetched as the page's link fetches
/// it (same origin, the login's cookie): its address and its text.
async fn fetch_link(client: &Client, css: &str) -> (String, String) {
    let href = client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    let text = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch(arguments[0]).then(r => r.text()).then(done);",
            vec![json!(href)],
        )
        .await
        .unwrap();
    (href, text.as_str().unwrap().to_string())
}

async fn until(client: &Client, what: &str, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = client
            .execute(&format!("return Boolean({script});"), vec![])
            .await
            .unwrap();
        if v == json!(true) {
            return;
        }
        if Instant::now() > deadline {
            let url = client
                .current_url()
                .await
                .map(|u| u.to_string())
                .unwrap_or_default();
            let source = client.source().await.unwrap_or_default();
            panic!("timed out waiting for {what} at {url}:\n{source}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A session of the agent behind the daemon with one prompt answered: its id.
fn bridged_session(u: &str) -> String {
    let bearer = format!("Bearer {TOKEN}");
    let agent = cmdlog_test_support::daemon::http();
    let mut created = agent
        .post(&format!("{u}/session"))
        .header("authorization", &bearer)
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    let created: serde_json::Value =
        serde_json::from_str(&created.body_mut().read_to_string().unwrap()).unwrap();
    let id = created["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let prompted = agent
        .post(&format!("{u}/session/{id}/prompt"))
        .header("authorization", &bearer)
        .header("content-type", "application/json")
        .send(
            json!({"prompt": [{"type": "text", "text": "hello from the browser test"}]})
                .to_string(),
        )
        .unwrap();
    assert_eq!(prompted.status().as_u16(), 202);
    id
}

/// Claude Code's `user_prompt` telemetry (OTLP/HTTP, JSON encoding) for
/// `session`.
fn telemetry_prompt(u: &str, session: &str, prompt: &str) {
    let attr = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let body = json!({"resourceLogs": [{
        "resource": {"attributes": [attr("service.name", "claude-code")]},
        "scopeLogs": [{"logRecords": [{
            "timeUnixNano": "1790000000000000000",
            "body": {"stringValue": "claude_code.user_prompt"},
            "attributes": [attr("event.name", "user_prompt"), attr("prompt.id", "p-browser"),
                           attr("prompt", prompt), attr("session.id", session)],
        }]}],
    }]});
    let sent = cmdlog_test_support::daemon::http()
        .post(&format!("{u}/v1/logs"))
        .header("authorization", &format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    assert_eq!(sent.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_reads_searches_follows_and_proves_in_a_real_browser() {
    let test = "workbench_browser";
    let (Some(chromium), Some(driver_path)) = (chromium(test), chromedriver(test)) else {
        return;
    };
    let w = Workspace::new();
    let s = "wb-browser-1";
    hook(
        &w,
        s,
        "UserPromptSubmit",
        json!({"prompt": "rotate the keys <img src=x onerror=\"window.__xss=1\"> and \u{202e}txt.exe"}),
    );
    let output: String = (1..=14)
        .map(|i| format!("rotated key {i} of payments\n"))
        .collect();
    hook(
        &w,
        s,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "tb-1", "tool_input": {"command": "scripts/rotate-keys --all"}}),
    );
    hook(
        &w,
        s,
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "tb-1", "tool_input": {"command": "scripts/rotate-keys --all"},
            "tool_response": {"stdout": output, "stderr": "", "interrupted": false}}),
    );
    // A tool output too large for its record: kept as blobs, loaded on demand.
    let huge = format!(
        "{}the last line \u{202e}<b>bold</b>",
        "a line of a very long log\n".repeat(45_000)
    );
    hook(
        &w,
        "wb-browser-blob",
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "tb-big", "tool_input": {"command": "cat build.log"},
            "tool_response": {"stdout": huge, "stderr": "", "interrupted": false}}),
    );
    std::fs::create_dir_all(w.ws.path().join(".claude/commands")).unwrap();
    std::fs::write(
        w.ws.path().join(".claude/commands/rotate.md"),
        "Rotate $ARGUMENTS\n",
    )
    .unwrap();
    let agent = format!(
        "python3 {}/tests/fixtures/acp_agent.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let d = w.serve_env(
        "127.0.0.1:0",
        &["--no-web", "--agent", &agent],
        Some(TOKEN),
        &[],
    );
    let u = d.url.clone();
    // A session through the ACP bridge (the scripted agent answers), and one
    // through Claude Code's telemetry.
    let acp_session = bridged_session(&u);
    telemetry_prompt(&u, "tel-session-1", "what changed in billing");
    let driver = start_driver(&driver_path);
    let profile = tempfile::tempdir().unwrap();
    let client = browser(&driver, &chromium, profile.path()).await;

    // Log in with the token: the login page first, then the sessions.
    client.goto(&format!("{u}/ui/")).await.unwrap();
    shot(&client, "login").await;
    client
        .find(Locator::Css("input[name=token]"))
        .await
        .unwrap()
        .send_keys(TOKEN)
        .await
        .unwrap();
    click(&client, Locator::Css("form.login button")).await;
    until(
        &client,
        "the sessions page",
        "document.querySelector('table.sessions')",
    )
    .await;
    shot(&client, "sessions").await;
    let table = text_of(&client, "table.sessions").await;
    for (session, how) in [
        (s, "hooks"),
        ("tel-session-1", "telemetry"),
        (acp_session.as_str(), "the ACP bridge"),
    ] {
        assert!(
            table.contains(session),
            "the session recorded through {how}: {table}"
        );
    }
    // Each says what captured it.
    client
        .goto(&format!("{u}/ui/session/tel-session-1"))
        .await
        .unwrap();
    assert!(text_of(&client, "dl.facts").await.contains("telemetry"));
    assert!(
        text_of(&client, "ol.conversation")
            .await
            .contains("what changed in billing")
    );
    client
        .goto(&format!("{u}/ui/session/{acp_session}"))
        .await
        .unwrap();
    let bridged = text_of(&client, "ol.conversation").await;
    assert!(bridged.contains("hello from the browser test"), "{bridged}");
    client.goto(&format!("{u}/ui/")).await.unwrap();

    // One session: the hostile prompt is text, no script ran, U+202E shown.
    click(&client, Locator::LinkText(s)).await;
    until(
        &client,
        "the session page",
        "document.querySelector('ol.conversation')",
    )
    .await;
    let prompt = text_of(&client, "li.prompt pre").await;
    assert!(prompt.contains("<img src=x onerror="), "{prompt}");
    assert!(prompt.contains("\\u{202e}txt.exe"), "{prompt}");
    let ran = client
        .execute(
            "return [window.__xss === undefined, document.querySelectorAll('main img').length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(ran, json!([true, 0]), "a script from the log ran");
    // The tool call's long output is folded; a click opens it.
    let details = client.find(Locator::Css("li.tool details")).await.unwrap();
    assert_eq!(details.attr("open").await.unwrap(), None);
    click(&client, Locator::Css("li.tool details summary")).await;
    until(
        &client,
        "the output opened",
        "document.querySelector('li.tool details').open",
    )
    .await;
    assert!(
        text_of(&client, "li.tool details pre")
            .await
            .contains("rotated key 14 of payments")
    );
    shot(&client, "session").await;

    // Live: the page gains the next prompt without a reload.
    until(
        &client,
        "the live stream",
        "document.getElementById('live').textContent.includes('following')",
    )
    .await;
    client
        .execute("window.__same_page = 1; return 1;", vec![])
        .await
        .unwrap();
    hook(
        &w,
        s,
        "UserPromptSubmit",
        json!({"prompt": "and now the staging keys"}),
    );
    until(
        &client,
        "the new prompt on the page",
        "document.querySelector('ol.conversation').textContent.includes('and now the staging keys')",
    )
    .await;
    let same = client
        .execute("return window.__same_page;", vec![])
        .await
        .unwrap();
    assert_eq!(same, json!(1), "the page was reloaded instead of updated");

    // Search from the bar, open the hit's event.
    let search = client
        .find(Locator::Css("form.search input[name=q]"))
        .await
        .unwrap();
    search.send_keys("rotate tool:Bash").await.unwrap();
    click(&client, Locator::Css("form.search button")).await;
    until(
        &client,
        "search hits",
        "document.querySelector('ol.hits mark')",
    )
    .await;
    shot(&client, "search").await;
    click(&client, Locator::Css("ol.hits a.seq")).await;
    until(
        &client,
        "the event page",
        "document.querySelector('.badge.ok')",
    )
    .await;
    let event_text = text_of(&client, "main").await;
    assert!(
        event_text.contains("scripts/rotate-keys --all"),
        "{event_text}"
    );
    shot(&client, "event").await;

    // The proof, fetched as the page's link fetches it, checks out.
    let (href, proof) = fetch_link(&client, "a[download]").await;
    let seq: u64 = href.split('/').nth(3).unwrap().parse().unwrap();
    let vkey = String::from_utf8(w.run(&["key"]).stdout).unwrap();
    super::workbench::check_tlog_proof(&proof, vkey.trim(), seq);

    // The registry now, then before the daemon registered its commands.
    client.goto(&format!("{u}/ui/registry")).await.unwrap();
    assert!(text_of(&client, "table.registry").await.contains("/rotate"));
    shot(&client, "registry").await;
    client
        .execute(
            "const r = document.querySelector('input[name=until]'); r.value = 2; r.form.submit(); return 1;",
            vec![],
        )
        .await
        .unwrap();
    until(
        &client,
        "the older registry",
        "document.querySelector('h1').textContent.includes('seq 2')",
    )
    .await;
    assert!(!text_of(&client, "main").await.contains("/rotate"));

    // A value kept as blobs loads in place when its link is clicked.
    client
        .goto(&format!("{u}/ui/session/wb-browser-blob"))
        .await
        .unwrap();
    assert!(text_of(&client, "li.tool").await.contains("stored as blob"));
    click(&client, Locator::Css("a.blob")).await;
    until(
        &client,
        "the value loaded in place",
        "document.querySelector('a.blob').closest('.block').querySelector('pre').textContent.includes('the last line')",
    )
    .await;
    let loaded = client
        .execute(
            "return document.querySelector('a.blob').closest('.block').querySelector('pre').textContent;",
            vec![],
        )
        .await
        .unwrap();
    let loaded = loaded.as_str().unwrap();
    assert!(
        loaded.ends_with("the last line \\u{202e}<b>bold</b>"),
        "shown as text"
    );
    assert_eq!(loaded.matches("a line of a very long log").count(), 45_000);
    let marked = client
        .execute("return document.querySelectorAll('main b').length;", vec![])
        .await
        .unwrap();
    assert_eq!(marked, json!(0), "the value's markup became an element");
    assert_eq!(
        client.current_url().await.unwrap().path(),
        "/ui/session/wb-browser-blob",
        "loaded in place, not by leaving the page"
    );
    shot(&client, "blob").await;

    // The session's events with their proofs, fetched as its link fetches
    // them, check offline.
    client.goto(&format!("{u}/ui/session/{s}")).await.unwrap();
    let (_, bundle) = fetch_link(&client, "a[href$='/proofs']").await;
    let file = w.ws.path().join("browser.proofs.jsonl");
    std::fs::write(&file, bundle).unwrap();
    let checked = w.run(&[
        "verify",
        "--proofs",
        file.to_str().unwrap(),
        "--vkey",
        vkey.trim(),
    ]);
    let said = String::from_utf8_lossy(&checked.stdout).to_string();
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(
        said.starts_with(&format!("ok: 5 events of session {s}")),
        "{said}"
    );

    client.close().await.unwrap();
}
