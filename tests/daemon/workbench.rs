//! The auditor's workbench under `/ui/` (issue 42), over HTTP as a browser
//! meets it: the token given once for a cookie only the pages accept, the
//! sessions of a log recorded through hooks, one session's conversation with
//! its hostile text shown as text, search linked to the event, and the
//! headers that keep other sites and scripts out.

use cmdlog_test_support::Workspace;
use serde_json::json;

const TOKEN: &str = "wb-token-3f9c";

/// An HTTP client that neither follows redirects nor fails on 4xx/5xx.
fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(std::time::Duration::from_secs(30)))
        .build()
        .into()
}

struct Answer {
    status: u16,
    headers: ureq::http::HeaderMap,
    body: String,
}

fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = client().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut res = req.call().unwrap();
    Answer {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        body: res.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn post_form(url: &str, headers: &[(&str, &str)], form: &str) -> Answer {
    let mut req = client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut res = req.send(form).unwrap();
    Answer {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        body: res.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn header<'a>(a: &'a Answer, name: &str) -> &'a str {
    a.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// A Claude Code session through its hooks: a hostile prompt, a Bash call
/// and its result.
fn record_session(w: &Workspace, session: &str) {
    let common = json!({"session_id": session, "cwd": w.ws.path(), "transcript_path": "/t"});
    let with = |name: &str, fields: serde_json::Value| {
        let mut p = common.clone();
        p["hook_event_name"] = json!(name);
        for (k, v) in fields.as_object().unwrap() {
            p[k] = v.clone();
        }
        p.to_string()
    };
    for p in [
        with(
            "UserPromptSubmit",
            json!({"prompt": "clean up <img src=x onerror=alert(1)> then \u{202e}gnp.exe"}),
        ),
        with(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "tu-1", "tool_input": {"command": "rm -rf build/payments"}}),
        ),
        with(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "tu-1", "tool_input": {"command": "rm -rf build/payments"}, "tool_response": {"stdout": "removed 12 files", "stderr": "", "interrupted": false}}),
        ),
    ] {
        let out = w.hook("claude-code", p.as_bytes());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The session's events with their proofs download, and `cmdlog verify
/// --proofs` checks the file offline: every event of the session proven, in
/// order; a changed event, or one left out of the count, is refused naming
/// its line.
fn check_session_bundle(w: &Workspace, u: &str, as_browser: &[(&str, &str)], vkey: &str) {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as B64;
    let page = get(&format!("{u}/ui/session/wb-session-1"), as_browser);
    assert!(
        page.body
            .contains("href=\"/ui/session/wb-session-1/proofs\" download"),
        "{}",
        page.body
    );
    let bundle = get(&format!("{u}/ui/session/wb-session-1/proofs"), as_browser);
    assert_eq!(bundle.status, 200, "{}", bundle.body);
    assert!(header(&bundle, "content-disposition").starts_with("attachment;"));
    // `verify --proofs` of a bundle's text: its exit code and what it said.
    let file = w.ws.path().join("session.proofs.jsonl");
    let verified = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let out = w.run(&["verify", "--proofs", file.to_str().unwrap(), "--vkey", vkey]);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.code(), said)
    };
    let (code, said) = verified(&bundle.body);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.starts_with("ok: 4 events of session wb-session-1"),
        "{said}"
    );
    // Each line is a tlog proof as well: any verifier checks it with the header's checkpoint.
    let lines: Vec<&str> = bundle.body.lines().collect();
    let header_line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let event: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let proof = format!(
        "c2sp.org/tlog-proof@v1\nextra {}\nindex {}\n{}\n{}",
        event["leaf"].as_str().unwrap(),
        event["index"],
        event["proof"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| format!("{}\n", h.as_str().unwrap()))
            .collect::<String>(),
        header_line["checkpoint"].as_str().unwrap()
    );
    check_tlog_proof(&proof, vkey, event["seq"].as_u64().unwrap());
    // A prompt changed after the download: its proof fails, on its line.
    let leaf = String::from_utf8(B64.decode(event["leaf"].as_str().unwrap()).unwrap()).unwrap();
    let mut forged: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let changed = leaf.replacen("\"at\":", "\"at\":1", 1);
    forged["leaf"] = json!(B64.encode(changed.as_bytes()));
    forged["event"] = serde_json::from_str(&changed).unwrap();
    let mut text = vec![lines[0].to_string(), forged.to_string()];
    text.extend(lines[2..].iter().map(|l| l.to_string()));
    let (code, said) = verified(&text.join("\n"));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("NOT PROVEN") && said.contains("line 2: seq"),
        "{said}"
    );
    // An event left out: the count it states does not hold.
    let mut short: Vec<&str> = lines.clone();
    short.remove(2);
    let (code, said) = verified(&short.join("\n"));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("line 1: it says it holds 4 events; 3 follow it"),
        "{said}"
    );
}

/// Checks a `c2sp.org/tlog-proof@v1` with `signed_note` and `tlog_tiles`
/// (ports of Go's `sumdb/note` and `sumdb/tlog`): the checkpoint signed by
/// `vkey`, the leaf at `seq` included in its tree.
pub(crate) fn check_tlog_proof(text: &str, vkey: &str, seq: u64) {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as B64;
    let (proof, note) = text
        .split_once("\n\n")
        .expect("a proof, then its checkpoint");
    let mut lines = proof.lines();
    assert_eq!(lines.next(), Some("c2sp.org/tlog-proof@v1"));
    let leaf = B64
        .decode(lines.next().unwrap().strip_prefix("extra ").unwrap())
        .unwrap();
    let index: u64 = lines
        .next()
        .unwrap()
        .strip_prefix("index ")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(index, seq - 1);
    let path: Vec<tlog_tiles::Hash> = lines
        .map(|l| tlog_tiles::Hash(B64.decode(l).unwrap().try_into().unwrap()))
        .collect();
    let verifier = signed_note::StandardVerifier::new(vkey).unwrap();
    let note = signed_note::Note::from_bytes(note.as_bytes()).unwrap();
    note.verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
        .expect("the checkpoint is signed by the log's key");
    let checkpoint = tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap();
    tlog_tiles::check_record(
        &path,
        checkpoint.size(),
        *checkpoint.hash(),
        index,
        tlog_tiles::record_hash(&leaf),
    )
    .expect("the event is in the signed tree");
}

#[test]
fn a_browser_logs_in_once_and_reads_sessions_conversations_and_search() {
    let w = Workspace::new();
    record_session(&w, "wb-session-1");
    let before_commands = 4;
    std::fs::create_dir_all(w.ws.path().join(".claude/commands")).unwrap();
    std::fs::write(
        w.ws.path().join(".claude/commands/ship-it.md"),
        "---\ndescription: Ship the branch\n---\nShip $ARGUMENTS\n",
    )
    .unwrap();
    let none = w.run(&["ui"]);
    assert_eq!(none.status.code(), Some(3), "no daemon: not found");
    assert!(String::from_utf8_lossy(&none.stderr).contains("cmdlog serve"));
    let d = w.serve_with("127.0.0.1:0", &["--no-web"], Some(TOKEN));
    let u = &d.url;
    // `cmdlog ui` says where the workbench is.
    let ui = w.run(&["ui"]);
    assert_eq!(String::from_utf8_lossy(&ui.stdout), format!("{u}/ui/\n"));

    // Without the token: the login page, 401, under the workbench's policy.
    let first = get(&format!("{u}/ui/"), &[]);
    assert_eq!(first.status, 401, "{}", first.body);
    assert!(first.body.contains("name=\"token\""), "{}", first.body);
    assert!(header(&first, "content-security-policy").contains("script-src 'self'"));
    assert_eq!(header(&first, "x-frame-options"), "DENY");
    // Every data route of the workbench.
    let blob = "ab".repeat(32);
    for path in [
        "/ui/session/wb-session-1",
        "/ui/session/wb-session-1/live?after=1",
        "/ui/session/wb-session-1/proofs",
        "/ui/search?q=rm",
        "/ui/event/1",
        "/ui/event/1/proof",
        "/ui/registry",
        "/ui/drift",
        "/ui/checkpoint",
        &format!("/ui/blob/{blob}"),
        &format!("/ui/blob/{blob}/raw"),
        "/ui/hub/",
        "/ui/hub/search?q=rm",
        &format!("/ui/hub/{blob}/session/wb-session-1"),
        &format!("/ui/hub/{blob}/blob/{blob}/raw"),
    ] {
        let a = get(&format!("{u}{path}"), &[]);
        assert_eq!(a.status, 401, "{path}");
        assert!(
            !a.body.contains("rm -rf"),
            "{path} shows data without the token"
        );
    }
    // `/` opens the workbench when the Web Shell is not served.
    let root = get(&format!("{u}/"), &[]);
    assert_eq!((root.status, header(&root, "location")), (303, "/ui/"));

    // A wrong token: 401, no cookie; the same answer for another wrong one.
    let wrong = post_form(&format!("{u}/ui/login"), &[], "token=nope&next=%2Fui%2F");
    let wrong2 = post_form(
        &format!("{u}/ui/login"),
        &[],
        "token=wb-token-3f9&next=%2Fui%2F",
    );
    assert_eq!((wrong.status, header(&wrong, "set-cookie")), (401, ""));
    assert_eq!(wrong.body, wrong2.body);
    // A form posted from another site's page is refused, right token or not.
    let forged = post_form(
        &format!("{u}/ui/login"),
        &[("origin", "http://evil.example")],
        &format!("token={TOKEN}"),
    );
    assert_eq!((forged.status, header(&forged, "set-cookie")), (403, ""));
    for (name, value) in [("sec-fetch-site", "cross-site"), ("origin", "null")] {
        let forged = post_form(
            &format!("{u}/ui/login"),
            &[(name, value)],
            &format!("token={TOKEN}"),
        );
        assert_eq!(
            (forged.status, header(&forged, "set-cookie")),
            (403, ""),
            "{name}"
        );
    }

    // The right token: a cookie for the pages alone, then back where it was.
    let port = u.rsplit(':').next().unwrap();
    let login = post_form(
        &format!("{u}/ui/login"),
        &[("origin", &format!("http://127.0.0.1:{port}"))],
        &format!("token={TOKEN}&next=%2Fui%2Fsession%2Fwb-session-1"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    assert_eq!(header(&login, "location"), "/ui/session/wb-session-1");
    let set = header(&login, "set-cookie").to_string();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age="] {
        assert!(set.contains(attribute), "{set}");
    }
    let cookie = set.split(';').next().unwrap().to_string();
    let as_browser = [("cookie", cookie.as_str())];

    // The sessions page lists it, with its agent.
    let list = get(&format!("{u}/ui/"), &as_browser);
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(
        list.body.contains("href=\"/ui/session/wb-session-1\""),
        "{}",
        list.body
    );
    assert!(list.body.contains("claude-code"));
    // Where its sessions ran: this machine, the daemon's workspace.
    let workspace = w.ws.path().canonicalize().unwrap();
    assert!(
        list.body.contains(&format!(
            "in workspace <strong>{}</strong>",
            workspace.display()
        )),
        "{}",
        list.body
    );
    // One prompt, one tool call (its PreToolUse and PostToolUse are one call).
    let row = list
        .body
        .split("href=\"/ui/session/wb-session-1\"")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap()
        .to_string();
    let numbers: Vec<&str> = row
        .split("<td class=\"n")
        .skip(1)
        .map(|c| {
            c.split('>')
                .nth(1)
                .unwrap_or("")
                .split('<')
                .next()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(&numbers[1..3], ["1", "1"], "prompts and tool calls: {row}");
    let filtered = get(&format!("{u}/ui/?agent=codex"), &as_browser);
    assert!(
        !filtered.body.contains("wb-session-1"),
        "the agent filter keeps only codex's"
    );

    // One session: the prompt as text, never as markup; U+202E visible.
    let page = get(&format!("{u}/ui/session/wb-session-1"), &as_browser);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("4 hash chain links and inclusion proofs checked"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("&#60;img src=x onerror=alert(1)&#62;")
            || page.body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("<img"),
        "markup from a prompt reached the page"
    );
    assert!(!page.body.contains('\u{202e}') && page.body.contains("\\u{202e}"));
    assert!(
        page.body.contains("rm -rf build/payments"),
        "the tool call's input"
    );
    assert!(
        page.body.contains("removed 12 files"),
        "the tool call's output"
    );
    assert_eq!(
        get(&format!("{u}/ui/session/nosuch"), &as_browser).status,
        404
    );

    // Search finds the tool call, marks the word, links the event and session.
    // (The daemon indexes beside the log, shortly after each append: the
    // page says how far the index is while it catches up.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let found = loop {
        let found = get(
            &format!("{u}/ui/search?q=payments+tool%3ABash"),
            &as_browser,
        );
        assert_eq!(found.status, 200, "{}", found.body);
        if !found.body.contains("the daemon is indexing") || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        found.body.contains("<mark>payments</mark>"),
        "{}",
        found.body
    );
    assert!(found.body.contains("href=\"/ui/session/wb-session-1\""));
    let seq: String = found
        .body
        .split("href=\"/ui/event/")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let event = get(&format!("{u}/ui/event/{seq}"), &as_browser);
    assert_eq!(event.status, 200);
    assert!(
        event.body.contains("rm -rf build/payments"),
        "{}",
        event.body
    );
    assert!(
        event.body.contains("✓ in the log's Merkle tree"),
        "{}",
        event.body
    );
    // Its inclusion proof downloads, and verifiers we did not write check it
    // against the log's public key.
    let proof = get(&format!("{u}/ui/event/{seq}/proof"), &as_browser);
    assert_eq!(proof.status, 200, "{}", proof.body);
    assert!(header(&proof, "content-disposition").starts_with("attachment;"));
    let vkey = String::from_utf8(w.run(&["key"]).stdout).unwrap();
    check_tlog_proof(&proof.body, vkey.trim(), seq.parse().unwrap());
    check_session_bundle(&w, u, &as_browser, vkey.trim());
    let bad = get(&format!("{u}/ui/search?q=%22unclosed"), &as_browser);
    assert_eq!(bad.status, 200);
    assert!(bad.body.contains("class=\"error\""), "{}", bad.body);

    // The cookie opens the pages only: the API still wants the bearer token.
    let api = client()
        .post(&format!("{u}/session"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(api.status().as_u16(), 401);
    // The bearer token opens the pages too (for scripts).
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        get(&format!("{u}/ui/"), &[("authorization", &bearer)]).status,
        200
    );

    // The registry as of any seq: the command the daemon registered at its
    // start is there at the head, and not before it.
    let registry = get(&format!("{u}/ui/registry"), &as_browser);
    assert_eq!(registry.status, 200, "{}", registry.body);
    assert!(registry.body.contains("/ship-it"), "{}", registry.body);
    let earlier = get(
        &format!("{u}/ui/registry?until={before_commands}"),
        &as_browser,
    );
    assert!(earlier.body.contains("as of seq 4") && !earlier.body.contains("/ship-it"));
    // The session as it stood at its prompt: the tool call is not there yet.
    let prompt_seq: String = page
        .body
        .split("class=\"prompt\" id=\"seq-")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let then = get(
        &format!("{u}/ui/session/wb-session-1?until={prompt_seq}"),
        &as_browser,
    );
    assert!(then.body.contains("onerror=alert(1)"), "{}", then.body);
    assert!(
        !then.body.contains("rm -rf build/payments"),
        "{}",
        then.body
    );
    assert!(
        !then.body.contains("data-live"),
        "a past position is not followed"
    );

    // A slash command run through the API: its page shows the line as
    // typed, the expansion the model received, the command's file and its
    // registration.
    let bearer_h = format!("Bearer {TOKEN}");
    let created: serde_json::Value = {
        let mut res = client()
            .post(&format!("{u}/session"))
            .header("authorization", &bearer_h)
            .header("content-type", "application/json")
            .send("{}")
            .unwrap();
        serde_json::from_str(&res.body_mut().read_to_string().unwrap()).unwrap()
    };
    let sid = created["sessionId"].as_str().unwrap().to_string();
    let ran = client()
        .post(&format!("{u}/session/{sid}/command"))
        .header("authorization", &bearer_h)
        .header("content-type", "application/json")
        .send(json!({"line": "/ship-it the release branch"}).to_string())
        .unwrap();
    assert_eq!(ran.status().as_u16(), 200);
    let run_page = get(&format!("{u}/ui/session/{sid}"), &as_browser);
    assert!(
        run_page.body.contains("/ship-it the release branch"),
        "{}",
        run_page.body
    );
    assert!(run_page.body.contains("the expansion the model received"));
    assert!(
        run_page.body.contains("Ship the release branch"),
        "{}",
        run_page.body
    );
    assert!(run_page.body.contains(".claude/commands/ship-it.md"));
    assert!(run_page.body.contains("registered at seq"));
    // Its drift against today's file, once the file changed.
    let drift_href = run_page
        .body
        .split("href=\"/ui/drift?run=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the run links its drift")
        .to_string();
    let same = get(&format!("{u}/ui/drift?run={drift_href}"), &as_browser);
    assert!(same.body.contains("expands the same"), "{}", same.body);
    std::fs::write(
        w.ws.path().join(".claude/commands/ship-it.md"),
        "---\ndescription: Ship the branch\n---\nShip $ARGUMENTS carefully\n",
    )
    .unwrap();
    let drifted = get(&format!("{u}/ui/drift?run={drift_href}"), &as_browser);
    assert!(
        drifted.body.contains("expands differently"),
        "{}",
        drifted.body
    );
    assert!(drifted.body.contains("carefully"), "{}", drifted.body);

    // Repeated wrong tokens are answered more slowly: past 5 a minute (two
    // were tried above), each waits half a second more.
    for _ in 0..3 {
        post_form(&format!("{u}/ui/login"), &[], "token=guess");
    }
    let started = std::time::Instant::now();
    let slowed = post_form(&format!("{u}/ui/login"), &[], "token=guess");
    assert_eq!(slowed.status, 401);
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(400),
        "the sixth wrong token in a minute was answered in {:?}",
        started.elapsed()
    );

    // Logging out ends the cookie.
    let out = post_form(&format!("{u}/ui/logout"), &as_browser, "");
    assert_eq!(out.status, 303);
    assert_eq!(get(&format!("{u}/ui/"), &as_browser).status, 401);
}

/// A tool output too large for its record is kept as blobs: the session's
/// page links it, its page shows the text (hostile characters visible), and
/// its bytes download whole; a hash the log does not hold is named.
#[test]
fn a_value_stored_as_blobs_loads_when_asked_for() {
    let w = Workspace::new();
    let big = format!("{}\u{202e}<b>end</b>", "line of output\n".repeat(80_000));
    let payload = json!({"session_id": "wb-blob", "cwd": w.ws.path(), "transcript_path": "/t",
        "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "tu-big",
        "tool_input": {"command": "cat huge.log"}, "tool_response": {"stdout": big, "stderr": ""}});
    let out = w.hook("claude-code", payload.to_string().as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = w.serve_with("127.0.0.1:0", &["--no-web"], Some(TOKEN));
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let page = get(&format!("{}/ui/session/wb-blob", d.url), &auth);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("stored as blob"), "{}", page.body);
    let href = page
        .body
        .split("<a class=\"blob\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("a link to the blob in {}", page.body))
        .to_string();
    assert!(href.starts_with("/ui/blob/"), "{href}");
    let blob = get(&format!("{}{href}", d.url), &auth);
    assert_eq!(blob.status, 200, "{}", blob.body);
    assert!(blob.body.contains("line of output\nline of output"));
    assert!(
        blob.body
            .contains("\\u{202e}&#60;b&#62;end&#60;/b&#62;</pre>"),
        "shown visibly, escaped"
    );
    assert!(!blob.body.contains('\u{202e}'));
    let raw = get(&format!("{}{href}/raw", d.url), &auth);
    assert_eq!(raw.status, 200);
    assert_eq!(header(&raw, "content-type"), "application/octet-stream");
    assert!(header(&raw, "content-disposition").starts_with("attachment;"));
    // The hook kept the string whole, as the agent sent it.
    assert_eq!(raw.body, big);
    let missing = get(&format!("{}/ui/blob/{}", d.url, "ab".repeat(32)), &auth);
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("the log holds no such blob"),
        "{}",
        missing.body
    );
    let bad = get(&format!("{}/ui/blob/..%2F..%2Fetc", d.url), &auth);
    assert_eq!(bad.status, 404);
    assert!(bad.body.contains("not a blob hash"), "{}", bad.body);
    // Without the token, nothing.
    assert_eq!(get(&format!("{}{href}/raw", d.url), &[]).status, 401);
}
