//! The team hub against a real `nats-server` with JetStream (tests/common/nats.rs):
//! two machines' logs pushed, listed, cloned byte for byte and audited together;
//! a server killed mid-push and a pusher killed mid-push, with nothing lost or
//! duplicated; forks and rollbacks refused with both hashes; deletes and purges
//! denied; blobs stored once. Without a server the tests say SKIPPED loudly
//! (`.ci/run` installs one and sets CMDLOG_REQUIRE_NATS).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use cmdlog_engine::EventData;
use cmdlog_engine::event::{AgentEvent, NewEvent};
use cmdlog_store::{Log, LogConfig, NewRecord};
use serde_json::{Value, json};

use cmdlog_test_support::Workspace;
use cmdlog_test_support::nats::{NatsCluster, NatsServer};

/// Appends `n` log-wide agent events of about `size` bytes to the log at `path`.
fn fill(path: &Path, n: usize, size: usize, tag: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = Log::open(path, LogConfig::default()).unwrap();
    let pad = "x".repeat(size);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let records = chunk
            .iter()
            .map(|i| {
                let event = NewEvent {
                    at: 1_790_000_000_000 + *i as u64,
                    observed: None,
                    session: None,
                    agent: Some("test".into()),
                    data: EventData::AgentEvent(AgentEvent {
                        agent: "test".into(),
                        event: format!("{tag}-{i}"),
                        data: json!({ "pad": pad }),
                        bookkeeping: false,
                    }),
                };
                NewRecord::new(event.encode())
            })
            .collect();
        log.append(records).unwrap();
    }
}

/// Appends `n` runs of `/review`, each settled, at times `first`, `first + step`,
/// …; with `open_last`, the last run has no done yet. Returns the runs' seqs.
fn fill_runs(path: &Path, n: u64, first: u64, step: u64, open_last: bool) -> Vec<u64> {
    use cmdlog_engine::Mode;
    use cmdlog_engine::event::{CommandDone, CommandRun, InvocationSource, Outcome};
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = Log::open(path, LogConfig::default()).unwrap();
    let event = |at: u64, data: EventData| {
        NewRecord::new(
            NewEvent {
                at,
                observed: None,
                session: Some("s".into()),
                agent: Some("test".into()),
                data,
            }
            .encode(),
        )
    };
    let mut runs = Vec::new();
    for i in 0..n {
        let at = first + i * step;
        let run = CommandRun {
            registration: 1,
            name: "review".into(),
            mode: Mode::NonInteractive,
            source: InvocationSource::User,
            raw_input: Some(format!("{i}")),
            attachments: vec![],
            injections: vec![],
            release: None,
        };
        let seq = log
            .append(vec![event(at, EventData::CommandRun(run))])
            .unwrap()
            .first;
        runs.push(seq);
        if open_last && i + 1 == n {
            break;
        }
        let done = CommandDone {
            run: seq,
            outcome: Outcome::text(format!("done {i}")),
            elapsed_us: 5,
            agent_check: None,
        };
        log.append(vec![event(at + 1, EventData::CommandDone(done))])
            .unwrap();
    }
    runs
}

/// What `cmdlog verify --json` says of a log: (log id, head seq, head hash).
fn verified(w: &Workspace, log: &Path) -> (String, u64, String) {
    let v = w.json(&["--log", log.to_str().unwrap(), "verify", "--json"]);
    assert_eq!(v["violations"], json!([]), "{v}");
    (
        v["log_id"].as_str().unwrap_or("").to_string(),
        v["head_seq"].as_u64().unwrap(),
        v["head_hash"].as_str().unwrap().to_string(),
    )
}

/// A log's id and chain head as `cmdlog verify --json` says (whatever else it
/// finds: these logs' runs name no registration).
fn chain_head(w: &Workspace, log: &Path) -> (String, u64, String) {
    let out = w.run(&["--log", log.to_str().unwrap(), "verify", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["log_id"].as_str().unwrap_or("").to_string(),
        v["head_seq"].as_u64().unwrap(),
        v["head_hash"].as_str().unwrap().to_string(),
    )
}

/// `cmdlog hub list --json`, by log id.
fn hub_logs(w: &Workspace, url: &str) -> Vec<Value> {
    w.json(&["hub", "list", url, "--json"])
        .as_array()
        .unwrap()
        .clone()
}

fn hub_log(w: &Workspace, url: &str, id: &str) -> Value {
    hub_logs(w, url)
        .into_iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("log {id} not on the hub"))
}

#[test]
fn two_workspaces_push_list_clone_and_audit_together() {
    let Some(server) = NatsServer::start("two_workspaces_push_list_clone_and_audit_together")
    else {
        return;
    };
    let url = server.url();
    let (a, b) = (Workspace::new(), Workspace::new());
    for w in [&a, &b, &a, &b] {
        w.ok(&["run", "/help"]);
        std::thread::sleep(Duration::from_millis(5));
    }
    let pa = a.json(&["push", &url, "--json"]);
    let pb = b.json(&["push", &url, "--json"]);
    let (ida, seqa, hasha) = verified(&a, &a.log_path());
    let (idb, seqb, hashb) = verified(&b, &b.log_path());
    assert_eq!(pa["log_id"], ida.as_str());
    assert_eq!(
        (pa["head_seq"].as_u64(), pa["head_hash"].as_str()),
        (Some(seqa), Some(hasha.as_str()))
    );
    assert_eq!(pb["head_seq"].as_u64(), Some(seqb));
    assert!(
        pa["blobs"].as_u64().unwrap() > 0,
        "the /help templates are blobs: {pa}"
    );
    assert_eq!(
        pb["blobs"], 0,
        "the same templates are on the hub already: {pb}"
    );

    // Both listed with their heads.
    let logs = hub_logs(&a, &url);
    assert_eq!(logs.len(), 2, "{logs:?}");
    let la = hub_log(&a, &url, &ida);
    assert_eq!(
        (la["head_seq"].as_u64(), la["head_hash"].as_str()),
        (Some(seqa), Some(hasha.as_str()))
    );
    assert_eq!(
        la["messages"].as_u64(),
        Some(seqa),
        "one message per record"
    );
    assert_eq!(hub_log(&a, &url, &idb)["head_hash"], hashb.as_str());

    // Clones verify with the original head hashes, blobs included.
    let out = tempfile::tempdir().unwrap();
    for (id, seq, hash) in [(&ida, seqa, &hasha), (&idb, seqb, &hashb)] {
        let file = out.path().join(format!("{id}.redb"));
        let c = a.json(&["clone", &url, id, "-o", file.to_str().unwrap(), "--json"]);
        assert_eq!(c["head_hash"], hash.as_str());
        assert_eq!(verified(&a, &file), (id.clone(), seq, hash.clone()));
        let audit = a.ok(&["--log", file.to_str().unwrap(), "audit"]);
        assert!(audit.contains("/help"), "{audit}");
    }
    // An unknown log id is said at once, and leaves no file.
    let missing = out.path().join("missing.redb");
    let o = a.run(&[
        "clone",
        &url,
        "0123456789abcdef0123456789abcdef",
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no log"));
    assert!(!missing.exists());
    // A clone into an existing file is refused.
    let again = a.run(&[
        "clone",
        &url,
        &ida,
        "-o",
        out.path().join(format!("{ida}.redb")).to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));

    // One timeline, interleaved by time: a, b, a, b.
    let audit = a.ok(&["hub", "audit", &url, "--json"]);
    let rows: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let logs: Vec<&str> = rows.iter().map(|r| r["log_id"].as_str().unwrap()).collect();
    assert_eq!(
        logs,
        [ida.as_str(), idb.as_str(), ida.as_str(), idb.as_str()],
        "{audit}"
    );
    assert!(
        rows.iter()
            .all(|r| r["command"] == "help" && !r["host"].as_str().unwrap().is_empty())
    );
    let human = a.ok(&["hub", "audit", &url, "--command", "/help"]);
    assert!(
        human.contains(&ida[..8]) && human.contains(&idb[..8]),
        "{human}"
    );
    let none = a.ok(&["hub", "audit", &url, "--agent", "nobody"]);
    assert!(none.contains("no runs match"), "{none}");

    // Pushing again adds nothing; verify --against agrees.
    let p2 = a.json(&["push", &url, "--json"]);
    assert_eq!(
        (p2["pushed"].as_u64(), p2["blobs"].as_u64()),
        (Some(0), Some(0))
    );
    let v = a.run(&["verify", "--against", &url]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// Waits for `child` to exit and returns its output, failing after `limit`.
fn finish(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the push did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Waits until the hub holds some of log `id` (and not all of `total`).
fn wait_for_some(w: &Workspace, url: &str, total: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let out = w.run(&["hub", "list", url, "--json"]);
        let logs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if let Some(log) = logs.as_array().and_then(|l| l.first()) {
            let n = log["head_seq"].as_u64().unwrap();
            return n > 0 && n < total;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn a_server_killed_mid_push_and_restarted_loses_and_duplicates_nothing() {
    let Some(mut server) =
        NatsServer::start("a_server_killed_mid_push_and_restarted_loses_and_duplicates_nothing")
    else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 60_000, 400, "a");
    let child = w
        .cmd(&["push", &url, "--patience", "120", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let midway = wait_for_some(&w, &url, 60_001);
    server.kill();
    std::thread::sleep(Duration::from_millis(700));
    server.up();
    let out = finish(child, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (id, seq, hash) = verified(&w, &w.log_path());
    let log = hub_log(&w, &url, &id);
    assert_eq!(
        (log["head_seq"].as_u64(), log["head_hash"].as_str()),
        (Some(seq), Some(hash.as_str()))
    );
    assert_eq!(
        log["messages"].as_u64(),
        Some(seq),
        "no record twice, none missing"
    );
    if !midway {
        eprintln!(
            "note: the push finished before the server was killed; the restart was still checked"
        );
    }
    let file = w.ws.path().join("clone.redb");
    w.ok(&["clone", &url, &id, "-o", file.to_str().unwrap()]);
    assert_eq!(verified(&w, &file).2, hash);
}

#[test]
fn a_pusher_killed_mid_push_resumes_without_duplicates() {
    let Some(server) = NatsServer::start("a_pusher_killed_mid_push_resumes_without_duplicates")
    else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 60_000, 400, "a");
    let mut child = w
        .cmd(&["push", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_some(&w, &url, 60_001);
    child.kill().unwrap();
    child.wait().unwrap();
    let out = w.json(&["push", &url, "--json"]);
    let (id, seq, hash) = verified(&w, &w.log_path());
    assert_eq!(out["head_hash"], hash.as_str());
    let log = hub_log(&w, &url, &id);
    assert_eq!(
        log["messages"].as_u64(),
        Some(seq),
        "no record twice, none missing"
    );
}

/// Copies a log's files (the log and its write-ahead log) to `to`.
fn copy_log(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
    let wal = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push("-wal");
        std::path::PathBuf::from(s)
    };
    if wal(from).exists() {
        std::fs::copy(wal(from), wal(to)).unwrap();
    }
}

#[test]
fn forks_and_rollbacks_are_refused_with_both_hashes() {
    let Some(server) = NatsServer::start("forks_and_rollbacks_are_refused_with_both_hashes") else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 10, 50, "base");
    w.ok(&["push", &url]);
    // An old copy of the log (a backup), and a second machine with the same id.
    let old = w.ws.path().join("old/log.redb");
    let twin = w.ws.path().join("twin/log.redb");
    copy_log(&w.log_path(), &old);
    copy_log(&w.log_path(), &twin);
    fill(&w.log_path(), 5, 50, "main");
    w.ok(&["push", &url]);
    let (_, seq, hash) = verified(&w, &w.log_path());

    // The twin continued differently: refused at the hub, both hashes named.
    fill(&twin, 5, 50, "twin");
    let (_, _, twin_hash) = verified(&w, &twin);
    let out = w.run(&["--log", twin.to_str().unwrap(), "push", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("forked") && err.contains(&hash) && err.contains(&twin_hash),
        "{err}"
    );

    // The old copy is behind the hub: a rollback, for push and for verify.
    let out = w.run(&["--log", old.to_str().unwrap(), "verify", "--against", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("rolled back"), "{text}");
    let out = w.run(&["--log", old.to_str().unwrap(), "push", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rolled back") && err.contains(&hash), "{err}");

    // Nothing on the hub was overwritten.
    let log = hub_logs(&w, &url).remove(0);
    assert_eq!(
        (log["head_seq"].as_u64(), log["head_hash"].as_str()),
        (Some(seq), Some(hash.as_str()))
    );
    assert_eq!(log["messages"].as_u64(), Some(seq));
}

#[test]
fn the_hub_denies_deletes_and_purges() {
    let Some(server) = NatsServer::start("the_hub_denies_deletes_and_purges") else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 3, 10, "x");
    w.ok(&["push", &url]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let stream = js.get_stream("CMDLOG").await.unwrap();
        let config = &stream.cached_info().config;
        assert!(config.deny_delete && config.deny_purge);
        assert!(
            stream.delete_message(1).await.is_err(),
            "a delete is refused"
        );
        assert!(stream.purge().await.is_err(), "a purge is refused");
        assert_eq!(stream.cached_info().state.messages, 4);
    });
    // A second stream on the same server (its own subjects) holds its own copy.
    w.ok(&["push", &url, "--stream", "TEAM2"]);
    let other = w.json(&["hub", "list", &url, "--stream", "TEAM2", "--json"]);
    assert_eq!(other.as_array().unwrap().len(), 1, "{other}");
    assert_eq!(other[0]["head_seq"], 4);
}

#[test]
fn a_daemon_pushes_as_its_log_grows_and_a_push_after_its_kill_9_completes() {
    let Some(server) =
        NatsServer::start("a_daemon_pushes_as_its_log_grows_and_a_push_after_its_kill_9_completes")
    else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    let d = w.serve(&["--push", &url]);
    let (status, body) = cmdlog_test_support::daemon::post(
        &format!("{}/session", d.url),
        json!({"sessionId": "pushed-1"}),
    );
    assert!(status < 300, "{body}");
    // The session's creation reaches the hub without a push of ours.
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let out = w.run(&["hub", "list", &url, "--json"]);
        let logs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if let Some(log) = logs.as_array().and_then(|l| l.first())
            && log["head_seq"].as_u64().unwrap() >= 3
        {
            break log["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the daemon pushed nothing");
        std::thread::sleep(Duration::from_millis(50));
    };
    // `verify --against` while the daemon holds the log reads through it, and
    // says what it says once the daemon has stopped.
    let (_, held_seq, _) = verified(&w, &w.log_path());
    let deadline = Instant::now() + Duration::from_secs(30);
    while hub_log(&w, &url, &id)["head_seq"].as_u64() != Some(held_seq) {
        assert!(
            Instant::now() < deadline,
            "the daemon did not push its head"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // What it says of the log and the hub (not of the search index, which
    // the daemon keeps current a moment after each append).
    let against = |w: &Workspace| {
        let o = w.run(&["verify", "--against", &url]);
        let said: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("index:"))
            .map(str::to_string)
            .collect();
        (o.status.code(), said.join("\n"))
    };
    let held = against(&w);
    assert_eq!(held.0, Some(0), "{}", held.1);
    // A push of ours reads through it too: nothing is left to push.
    let pushed = w.json(&["push", &url, "--json"]);
    assert_eq!(pushed["pushed"], 0, "{pushed}");
    // SIGKILL (the helper's drop): the log is left for crash recovery, which the
    // next push's open applies; what the hub lacks then goes, and both agree.
    drop(d);
    assert_eq!(against(&w), held);
    w.ok(&["push", &url]);
    let (local_id, seq, hash) = verified(&w, &w.log_path());
    assert_eq!(local_id, id);
    let log = hub_log(&w, &url, &id);
    assert_eq!(
        (log["head_seq"].as_u64(), log["head_hash"].as_str()),
        (Some(seq), Some(hash.as_str()))
    );
    assert_eq!(log["messages"].as_u64(), Some(seq));
}

#[test]
fn credentials_reach_the_server_and_never_the_output() {
    let Some(server) = NatsServer::start_with(
        "credentials_reach_the_server_and_never_the_output",
        &["--user", "team", "--pass", "s3cret-pw"],
    ) else {
        return;
    };
    let w = Workspace::new();
    fill(&w.log_path(), 3, 10, "x");
    let port = server.port;
    // In a URL on the command line (which every user can read in ps): refused
    // before anything is sent, with the way out, and the password never shown.
    let url = format!("nats://team:s3cret-pw@127.0.0.1:{port}");
    for args in [
        vec!["push", url.as_str()],
        vec!["hub", "list", url.as_str()],
        vec!["verify", "--against", url.as_str()],
    ] {
        let o = w.run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("hint:") && err.contains("NATS_URL"), "{err}");
        assert!(!err.contains("s3cret-pw"), "{err}");
    }
    let o = w.run(&[
        "push",
        &server.url(),
        "--password",
        "s3cret-pw",
        "--user",
        "team",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a password flag on the command line"
    );
    // In NATS_URL: works, and the URL is shown without them.
    let o = w.cmd(&["push"]).env("NATS_URL", &url).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !out.contains("s3cret-pw") && out.contains(&format!("nats://127.0.0.1:{port}")),
        "{out}"
    );
    // From a file.
    let secret = w.ws.path().join("nats-password");
    std::fs::write(&secret, "s3cret-pw\n").unwrap();
    w.ok(&[
        "hub",
        "list",
        &server.url(),
        "--user",
        "team",
        "--password-file",
        secret.to_str().unwrap(),
    ]);
    // From the environment.
    let o = w
        .cmd(&["hub", "list", &server.url(), "--json"])
        .env("NATS_USER", "team")
        .env("NATS_PASSWORD", "s3cret-pw")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A wrong password: refused, exit 5, neither password printed.
    let o = w
        .cmd(&["push", "--patience", "1"])
        .env("NATS_URL", format!("nats://team:wrong-pw@127.0.0.1:{port}"))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(5), "{all}");
    assert!(
        !all.contains("wrong-pw") && !all.contains("s3cret-pw"),
        "{all}"
    );
    // No credentials at all: refused the same way.
    let o = w.run(&["hub", "list", &server.url()]);
    assert_eq!(o.status.code(), Some(5));
}

/// N9: anyone who can publish to a log's subject adds a record that continues
/// its chain. The honest log is not blocked: its next push goes past the foreign
/// record (named), `verify --against` blames no rollback, `clone` and `hub audit`
/// leave it out and name it; a real rollback is still told as one.
#[test]
fn a_forged_record_on_the_hub_is_named_and_blocks_nothing() {
    let Some(server) = NatsServer::start("a_forged_record_on_the_hub_is_named_and_blocks_nothing")
    else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 5, 20, "base");
    w.ok(&["push", &url]);
    let old = w.ws.path().join("old/log.redb");
    copy_log(&w.log_path(), &old);
    let (id, seq, hash) = verified(&w, &w.log_path());
    // The forger: the next seq, its chain hash computed as the log would.
    let forged = json!({"at": 1, "type": "agent/event", "agent": "x", "data": {"agent": "x", "event": "FORGED", "data": {}}}).to_string();
    let prev = cmdlog_store::ChainHash::from_hex(&hash).unwrap();
    let forged_hash = cmdlog_store::chain_hash(&prev, seq + 1, forged.as_bytes()).to_hex();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Cmdlog-Seq", (seq + 1).to_string().as_str());
        headers.insert("Cmdlog-Hash", forged_hash.as_str());
        headers.insert("Cmdlog-Host", "attacker");
        js.publish_with_headers(format!("cmdlog.log.{id}"), headers, forged.clone().into())
            .await
            .unwrap()
            .await
            .unwrap();
    });
    // The honest log goes on and pushes past it.
    fill(&w.log_path(), 3, 20, "more");
    let out = w.run(&["push", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("foreign record") && err.contains(&format!("claims seq {}", seq + 1)),
        "{err}"
    );
    let (_, seq2, hash2) = verified(&w, &w.log_path());
    // verify --against: no rollback blamed on the log; the foreign record named.
    let out = w.run(&["verify", "--against", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    assert!(
        !text.contains("rolled back") && err.contains("foreign record"),
        "{err}"
    );
    // clone: the log, whole and the same, without the forged record.
    let copy = w.ws.path().join("copy/log.redb");
    let out = w.run(&["clone", &url, &id, "-o", copy.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("is not the log's"), "{err}");
    assert_eq!(verified(&w, &copy), (id.clone(), seq2, hash2));
    let cloned = w.ok(&["--log", copy.to_str().unwrap(), "log", "--json"]);
    assert!(!cloned.contains("FORGED"));
    // hub audit: works, and names it.
    let out = w.run(&["hub", "audit", &url, "--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not the log's"));
    // A real rollback is still one, and said for certain.
    let out = w.run(&["--log", old.to_str().unwrap(), "push", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("was rolled back (this machine pushed further"),
        "{err}"
    );
    // A message that is not cmdlog's at all, last on the subject: the log is
    // still listed (no head to show) and still audited, the message named.
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        js.publish(format!("cmdlog.log.{id}"), "junk".into())
            .await
            .unwrap()
            .await
            .unwrap();
    });
    let listed = hub_log(&w, &url, &id);
    assert_eq!(
        (listed["head_seq"].as_u64(), listed["messages"].as_u64()),
        (Some(0), Some(seq2 + 2)),
        "{listed}"
    );
    let out = w.run(&["hub", "audit", &url, "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("claims seq 0: its chain hash header is malformed"),
        "{err}"
    );
}

/// The permissions `docs/hub.md` gives each machine keep it to its own log: it
/// pushes, clones and audits, and a record it publishes on another log's subject
/// is refused by the server.
#[test]
fn per_machine_permissions_keep_a_publisher_to_its_own_log() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let id = w.json(&["verify", "--json"])["log_id"]
        .as_str()
        .unwrap()
        .to_string();
    let config = w.ws.path().join("nats.conf");
    std::fs::write(
        &config,
        format!(
            r#"authorization {{
  users = [
    {{ user: "laptop", password: "pw-laptop",
      permissions: {{
        publish: {{ allow: ["cmdlog.log.{id}", "$JS.API.>", "$O.CMDLOG-blobs.>",
                            "$KV.CMDLOG-checkpoints.log.{id}", "$KV.CMDLOG-checkpoints.key.{id}",
                            "_INBOX.>"] }}
        subscribe: {{ allow: ["_INBOX.>"] }}
      }} }}
  ]
}}
"#
        ),
    )
    .unwrap();
    let Some(server) = NatsServer::start_with(
        "per_machine_permissions_keep_a_publisher_to_its_own_log",
        &["-c", config.to_str().unwrap()],
    ) else {
        return;
    };
    let url = server.url();
    let as_laptop = |args: &[&str]| {
        w.cmd(args)
            .env("NATS_USER", "laptop")
            .env("NATS_PASSWORD", "pw-laptop")
            .output()
            .unwrap()
    };
    let o = as_laptop(&["push", &url]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("checkpoint"),
        "the checkpoint was published: {err}"
    );
    let copy = w.ws.path().join("copy/log.redb");
    let vkey = w.ok(&["key"]).trim().to_string();
    let o = as_laptop(&[
        "clone",
        &url,
        &id,
        "-o",
        copy.to_str().unwrap(),
        "--vkey",
        &vkey,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = as_laptop(&["verify", "--against", &url]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // Another log's subject: the server refuses the publish.
    let other = "0123456789abcdef0123456789abcdef";
    let refused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let client = async_nats::ConnectOptions::with_user_and_password(
                "laptop".into(),
                "pw-laptop".into(),
            )
            .connect(&url)
            .await
            .unwrap();
            let js = async_nats::jetstream::new(client);
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Cmdlog-Seq", "1");
            match js
                .publish_with_headers(format!("cmdlog.log.{other}"), headers, "forged".into())
                .await
            {
                Err(_) => true,
                Ok(ack) => tokio::time::timeout(Duration::from_secs(5), ack)
                    .await
                    .map_or(true, |r| r.is_err()),
            }
        });
    assert!(refused, "a machine published on another log's subject");
}

/// The latest checkpoint of `id` in the hub's bucket, as stored.
fn hub_checkpoint_body(url: &str, id: &str) -> Option<String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(url).await.unwrap());
            let kv = js.get_key_value("CMDLOG-checkpoints").await.ok()?;
            let value = kv.get(format!("log.{id}")).await.unwrap()?;
            Some(String::from_utf8(value.to_vec()).unwrap())
        })
}

fn put_hub_checkpoint(url: &str, id: &str, body: &str) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(url).await.unwrap());
            let kv = js.get_key_value("CMDLOG-checkpoints").await.unwrap();
            kv.put(format!("log.{id}"), body.to_string().into())
                .await
                .unwrap();
        });
}

/// (old size, proof, checkpoint read with `tlog_tiles` after `signed_note`
/// verified it with `vkey`) from a stored checkpoint body.
fn read_body(body: &str, vkey: &str) -> (u64, Vec<tlog_tiles::Hash>, tlog_tiles::Checkpoint) {
    use base64::Engine as _;
    let (head, note) = body.split_once("\n\n").unwrap();
    let mut lines = head.lines();
    let old: u64 = lines
        .next()
        .unwrap()
        .strip_prefix("old ")
        .unwrap()
        .parse()
        .unwrap();
    let proof = lines
        .map(|l| {
            let bytes = base64::engine::general_purpose::STANDARD.decode(l).unwrap();
            tlog_tiles::Hash(bytes.try_into().unwrap())
        })
        .collect();
    let note = signed_note::Note::from_bytes(note.as_bytes()).unwrap();
    let verifier = signed_note::StandardVerifier::new(vkey).unwrap();
    note.verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
        .unwrap();
    (
        old,
        proof,
        tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap(),
    )
}

#[test]
fn signed_checkpoints_on_the_hub_prove_rollbacks_and_name_forgeries() {
    let Some(server) =
        NatsServer::start("signed_checkpoints_on_the_hub_prove_rollbacks_and_name_forgeries")
    else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 10, 20, "base");
    w.ok(&["push", &url]);
    let vkey = w.ok(&["key"]).trim().to_string();
    let (id, seq, _) = verified(&w, &w.log_path());
    // The pusher signed what the hub holds, with the log's key.
    let (old, _, first) = read_body(&hub_checkpoint_body(&url, &id).unwrap(), &vkey);
    assert_eq!((old, first.size()), (0, seq));
    let backup = w.ws.path().join("backup/log.redb");
    copy_log(&w.log_path(), &backup);

    // The next push publishes the proof from that checkpoint: a tlog verifier
    // we did not write checks it.
    fill(&w.log_path(), 7, 20, "more");
    w.ok(&["push", &url]);
    let (old, proof, second) = read_body(&hub_checkpoint_body(&url, &id).unwrap(), &vkey);
    assert_eq!((old, second.size()), (seq, seq + 7));
    tlog_tiles::check_tree(&proof, second.size(), *second.hash(), old, *first.hash()).unwrap();
    let out = w.run(&["verify", "--against", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The backup put back: the hub's checkpoint, signed by the log's own key,
    // proves the rollback.
    let out = w.run(&[
        "--log",
        backup.to_str().unwrap(),
        "verify",
        "--against",
        &url,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("checkpoint signed with this log's key")
            && text.contains("shorter than the checkpoint"),
        "{text}"
    );

    // A record published on the log's subject by someone else: covered by no
    // signed checkpoint, so named and left out of a clone.
    let (_, head_seq, head_hash) = verified(&w, &w.log_path());
    let forged = json!({"at": 1, "type": "agent/event", "agent": "x", "data": {"agent": "x", "event": "FORGED", "data": {}}}).to_string();
    let prev = cmdlog_store::ChainHash::from_hex(&head_hash).unwrap();
    let forged_hash = cmdlog_store::chain_hash(&prev, head_seq + 1, forged.as_bytes()).to_hex();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Cmdlog-Seq", (head_seq + 1).to_string().as_str());
            headers.insert("Cmdlog-Hash", forged_hash.as_str());
            js.publish_with_headers(format!("cmdlog.log.{id}"), headers, forged.into())
                .await
                .unwrap()
                .await
                .unwrap();
        });
    let copy = w.ws.path().join("copy/log.redb");
    let out = w.run(&[
        "clone",
        &url,
        &id,
        "-o",
        copy.to_str().unwrap(),
        "--vkey",
        &vkey,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("records {}..={}", head_seq + 1, head_seq + 1))
            && err.contains("reported as forged"),
        "{err}"
    );
    assert_eq!(verified(&w, &copy).1, head_seq);
    assert!(
        !w.ok(&["--log", copy.to_str().unwrap(), "log", "--json"])
            .contains("FORGED")
    );
    let out = w.run(&["verify", "--against", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("claims seq {}", head_seq + 1))
            && err.contains("covered by no signed checkpoint of this log: forged"),
        "{err}"
    );

    // A checkpoint on the hub that the log's key did not sign: named forged by
    // verify --against, refused by clone; the next push replaces it.
    let stranger = cmdlog_tlog::Signer::from_seed(
        &format!("cmdlog/{id}"),
        cmdlog_tlog::KeyKind::Ed25519,
        [7; 32],
    )
    .unwrap();
    let fake = cmdlog_tlog::Checkpoint {
        origin: format!("cmdlog/{id}"),
        size: 1000,
        root: [9; 32],
        extensions: vec![],
    };
    let body = cmdlog_tlog::AddCheckpoint {
        old_size: 0,
        proof: vec![],
        note: stranger.sign(&fake.to_text()).unwrap(),
    }
    .to_text();
    put_hub_checkpoint(&url, &id, &body);
    let out = w.run(&["verify", "--against", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("not signed by this log's key") && text.contains("forged"),
        "{text}"
    );
    let copy2 = w.ws.path().join("copy2/log.redb");
    let out = w.run(&[
        "clone",
        &url,
        &id,
        "-o",
        copy2.to_str().unwrap(),
        "--vkey",
        &vkey,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("forged"));
    assert!(!copy2.exists());
    fill(&w.log_path(), 1, 20, "after");
    w.ok(&["push", &url]);
    let out = w.run(&["verify", "--against", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_witness_cosigns_consistent_checkpoints_and_refuses_a_rewritten_history() {
    let Some(server) = NatsServer::start(
        "a_witness_cosigns_consistent_checkpoints_and_refuses_a_rewritten_history",
    ) else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    fill(&w.log_path(), 5, 20, "base");
    w.ok(&["push", &url]);
    let (id, _, _) = verified(&w, &w.log_path());
    let first = w.json(&["witness", &url, "--once", "--json"]);
    let witness_key = first["witness_key"].as_str().unwrap().to_string();
    assert_eq!(first["checkpoints"][0]["log_id"], id.as_str());
    assert_eq!(first["checkpoints"][0]["cosigned"], true, "{first}");
    w.ok(&["verify", "--against", &url, "--witness", &witness_key]);

    // The log grows; the witness checks the pusher's proof and cosigns again.
    fill(&w.log_path(), 3, 20, "more");
    w.ok(&["push", &url]);
    let (_, seq, _) = verified(&w, &w.log_path());
    let second = w.json(&["witness", &url, "--once", "--json"]);
    assert_eq!(second["checkpoints"][0]["size"], seq, "{second}");
    assert_eq!(second["checkpoints"][0]["cosigned"], true, "{second}");
    // verify checks the cosignature (cosignature/v1: `signed_note` 0.2 has no
    // verifier for it); `signed_note` reads the cosigned note as a valid note
    // of the log's key, the witness's line ignored as an unknown key's.
    w.ok(&["verify", "--against", &url, "--witness", &witness_key]);
    let key_id = cmdlog_tlog::NoteVerifier::parse(&witness_key)
        .unwrap()
        .key_id();
    let cosigned = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
            let kv = js.get_key_value("CMDLOG-checkpoints").await.unwrap();
            kv.get(format!("cosig.{id}.{key_id:08x}"))
                .await
                .unwrap()
                .unwrap()
        });
    let note = signed_note::Note::from_bytes(&cosigned).unwrap();
    let log_key = signed_note::StandardVerifier::new(w.ok(&["key"]).trim()).unwrap();
    let (verified, unknown) = note
        .verify(&signed_note::VerifierList::new(vec![Box::new(log_key)]))
        .unwrap();
    assert_eq!((verified.len(), unknown.len()), (1, 1));

    // The log's owner signs a rewritten history (a bigger tree whose start is
    // not the one cosigned) and a rolled-back one: the witness refuses both.
    let key = cmdlog_tlog::keys::load_signer(&w.path(&format!("~/.config/cmdlog/keys/{id}.key")))
        .unwrap();
    let rewritten = cmdlog_tlog::Checkpoint {
        origin: format!("cmdlog/{id}"),
        size: seq + 5,
        root: [3; 32],
        extensions: vec![],
    };
    let body = cmdlog_tlog::AddCheckpoint {
        old_size: seq,
        proof: vec![[4; 32]],
        note: key.sign(&rewritten.to_text()).unwrap(),
    }
    .to_text();
    put_hub_checkpoint(&url, &id, &body);
    let rolled_back = cmdlog_tlog::Checkpoint {
        origin: format!("cmdlog/{id}"),
        size: 2,
        root: [5; 32],
        extensions: vec![],
    };
    let body = cmdlog_tlog::AddCheckpoint {
        old_size: 0,
        proof: vec![],
        note: key.sign(&rolled_back.to_text()).unwrap(),
    }
    .to_text();
    put_hub_checkpoint(&url, &id, &body);
    let out = w.run(&["witness", &url, "--once", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let pass: Value = serde_json::from_slice(&out.stdout).unwrap();
    let whys: Vec<&str> = pass["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["why"].as_str().unwrap_or(""))
        .collect();
    assert!(whys[0].contains("forked or rewritten"), "{pass}");
    assert!(whys[1].contains("rolled back"), "{pass}");
    // What it cosigned before still stands and matches the log; the bogus
    // checkpoint the log's key signed last is itself named.
    let out = w.run(&["verify", "--against", &url, "--witness", &witness_key]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("checkpoint signed with this log's key")
            && text.contains("not the tree the checkpoint commits to")
            && !text.contains("witness cmdlog-witness"),
        "{text}"
    );
    // A witness that never cosigned: a violation.
    let other =
        cmdlog_tlog::Signer::from_seed("other-witness", cmdlog_tlog::KeyKind::Cosignature, [1; 32])
            .unwrap()
            .verifier()
            .to_string();
    let out = w.run(&["verify", "--against", &url, "--witness", &other]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("has cosigned no checkpoint"), "{text}");
}

#[test]
fn hub_init_makes_the_stream_and_buckets_and_every_verb_takes_a_server_list() {
    let Some(server) = NatsServer::start(
        "hub_init_makes_the_stream_and_buckets_and_every_verb_takes_a_server_list",
    ) else {
        return;
    };
    let w = Workspace::new();
    // A cluster's list, the way every NATS client names one: a server that is
    // down first, the live one after it.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let list = format!("nats://127.0.0.1:{dead},{}", server.url());
    let made = w.ok(&["hub", "init", &list]);
    for line in [
        "created stream CMDLOG, 1 replica(s)",
        "created bucket CMDLOG-blobs, 1 replica(s)",
        "created bucket CMDLOG-checkpoints, 1 replica(s)",
    ] {
        assert!(made.contains(line), "{line}: {made}");
    }
    let again = w.ok(&["hub", "init", &list]);
    assert_eq!(again.matches("kept ").count(), 3, "{again}");
    // Three replicas on one server: refused by the server, named.
    let o = w.run(&["hub", "init", &list, "--replicas", "3"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stream CMDLOG"), "{err}");
    // Push, list and clone through the list.
    w.ok(&["run", "/help"]);
    let pushed = w.json(&["push", &list, "--json"]);
    let (id, seq, hash) = verified(&w, &w.log_path());
    assert_eq!(pushed["head_hash"], hash.as_str());
    let logs = hub_logs(&w, &list);
    assert_eq!(logs.len(), 1, "{logs:?}");
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("c.redb");
    w.ok(&["clone", &list, &id, "-o", file.to_str().unwrap()]);
    assert_eq!(verified(&w, &file), (id, seq, hash));
    // A push that makes a stream says it has one replica, and how to have more.
    let o = w.run(&["push", &list, "--stream", "SOLO"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("created the hub's stream SOLO with one replica")
            && said.contains("hub init"),
        "{said}"
    );
    // A list with a piece that is not a server is named.
    let o = w.run(&["hub", "list", &format!("{},nats://bad host", server.url())]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad host"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The server name of the leader of stream `name` on the cluster at `urls`.
fn stream_leader(urls: &str, name: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let servers: Vec<async_nats::ServerAddr> =
            urls.split(',').map(|u| u.parse().unwrap()).collect();
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .connect(servers)
            .await
            .ok()?;
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream(name).await.ok()?;
        stream.info().await.ok()?.cluster.as_ref()?.leader.clone()
    })
}

/// Logs (twelve) pushed at once to the cluster's server list: each completes by
/// itself, exactly once on the hub, its clone equal to it. `during` acts on the
/// cluster while they push; what the pushes said on stderr is returned.
fn twelve_pushes(
    urls: &str,
    logs: &[Workspace],
    tag: &str,
    during: impl FnOnce(&mut [std::process::Child]),
) -> Vec<String> {
    let mut children: Vec<_> = logs
        .iter()
        .map(|w| {
            fill(&w.log_path(), 1500, 300, tag);
            w.cmd(&["push", urls, "--patience", "120", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    during(&mut children);
    let mut said = Vec::new();
    for (w, child) in logs.iter().zip(children) {
        let out = finish(child, Duration::from_secs(180));
        assert!(
            out.status.success(),
            "a push did not complete by itself: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        said.push(String::from_utf8_lossy(&out.stderr).into_owned());
        let (id, seq, hash) = verified(w, &w.log_path());
        let on_hub = hub_log(w, urls, &id);
        assert_eq!(
            (on_hub["head_seq"].as_u64(), on_hub["head_hash"].as_str()),
            (Some(seq), Some(hash.as_str()))
        );
        assert_eq!(on_hub["messages"].as_u64(), Some(seq), "exactly once");
    }
    let w = &logs[0];
    let (id, _, hash) = verified(w, &w.log_path());
    let file = w.ws.path().join(format!("clone-{tag}.redb"));
    w.ok(&["clone", urls, &id, "-o", file.to_str().unwrap()]);
    assert_eq!(verified(w, &file).2, hash);
    said
}

#[test]
fn a_three_node_cluster_loses_its_leader_and_a_node_and_every_push_completes() {
    let Some(mut cluster) = NatsCluster::start(
        "a_three_node_cluster_loses_its_leader_and_a_node_and_every_push_completes",
    ) else {
        return;
    };
    let urls = cluster.urls();
    let admin = Workspace::new();
    // The cluster elects its JetStream leader first: init waits for it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = admin.run(&["hub", "init", &urls, "--replicas", "3"]);
        if o.status.success() {
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("stream CMDLOG, 3 replica(s)"),
                "{}",
                String::from_utf8_lossy(&o.stdout)
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hub init never succeeded: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let logs: Vec<Workspace> = (0..12).map(|_| Workspace::new()).collect();
    // The stream's leader killed -9 mid-push, then restarted.
    let leader = stream_leader(&urls, "CMDLOG").expect("the stream has a leader");
    twelve_pushes(&urls, &logs, "a", |_| {
        std::thread::sleep(Duration::from_millis(300));
        cluster.node(&leader).kill();
        std::thread::sleep(Duration::from_secs(2));
        cluster.node(&leader).up();
    });
    eprintln!("the leader ({leader}) killed and restarted: every push completed");
    // A node that stays down (two of three alive): the same pushes go on.
    let gone = stream_leader(&urls, "CMDLOG").expect("a leader again");
    cluster.node(&gone).kill();
    twelve_pushes(&urls, &logs, "b", |_| {});
    eprintln!("{gone} stays down: every push completed");
    // A minority partition: one node of three alive. The pushes wait, say
    // why, and complete once a second node is back.
    let alive: Vec<String> = ["n1", "n2", "n3"]
        .into_iter()
        .filter(|n| *n != gone)
        .map(String::from)
        .collect();
    cluster.node(&alive[0]).kill();
    let said = twelve_pushes(&urls, &logs[..3], "c", |pushes| {
        std::thread::sleep(Duration::from_secs(10));
        for p in pushes.iter_mut() {
            if let Some(status) = p.try_wait().unwrap() {
                let mut said = String::new();
                std::io::Read::read_to_string(p.stderr.as_mut().unwrap(), &mut said).unwrap();
                panic!("a push ended without a quorum ({status}): {said}");
            }
        }
        cluster.node(&gone).up();
    });
    // Right after the quorum is back, the whole hub reads as one timeline
    // (no runs in these logs: every log read to its end is what is checked).
    let o = admin.run(&["hub", "audit", &urls, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("a push without a quorum said:\n{}", said[0]);
    assert!(
        said.iter()
            .all(|s| s.contains("quorum") && s.contains("retrying")),
        "a waiting push says why: {said:?}"
    );
}

#[test]
fn hub_audit_merges_every_log_by_time_and_follow_shows_each_run_as_it_settles() {
    let Some(server) = NatsServer::start(
        "hub_audit_merges_every_log_by_time_and_follow_shows_each_run_as_it_settles",
    ) else {
        return;
    };
    let url = server.url();
    // Four machines whose runs interleave in time; the last run of the first
    // is still open.
    let logs: Vec<Workspace> = (0..4).map(|_| Workspace::new()).collect();
    for (k, w) in logs.iter().enumerate() {
        fill_runs(&w.log_path(), 300, 1_790_000_000_000 + k as u64, 10, k == 0);
        w.ok(&["push", &url]);
    }
    let rows: Vec<Value> = logs[0]
        .ok(&["hub", "audit", &url, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1200, "every run once");
    let keys: Vec<(u64, String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["at"].as_u64().unwrap(),
                r["log_id"].as_str().unwrap().to_string(),
                r["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted, "by time, each (log, seq) once");
    assert_eq!(
        rows.iter().filter(|r| r["outcome"].is_null()).count(),
        1,
        "the open run, unsettled"
    );

    // The merge holds a batch of each log (256 records: 128 runs), not the hub.
    let read = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let hub = cmdlog_hub::HubOptions::from_env(&url, "CMDLOG")
            .connect()
            .await
            .unwrap();
        let filter = cmdlog_hub::HubAuditFilter::default();
        cmdlog_hub::hub_audit(&hub, &filter, false, |_| Ok::<_, cmdlog_hub::HubError>(()))
            .await
            .unwrap()
    });
    assert_eq!(
        (read.logs, read.rows, read.messages),
        (4, 1200, 2403),
        "each log also has its identity record"
    );
    assert!(read.rows_held_max <= 4 * 128, "{read:?}");

    // --follow: what is on the hub, then each run pushed afterwards once it
    // settles; the open run once its done lands.
    let mut child = logs[1]
        .cmd(&["hub", "audit", &url, "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if tx
                .send(serde_json::from_str::<Value>(&line).unwrap())
                .is_err()
            {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(30)).expect("a row");
    for _ in 0..1199 {
        assert!(
            !next()["outcome"].is_null(),
            "follow holds the open run back"
        );
    }
    let open = rows.iter().find(|r| r["outcome"].is_null()).unwrap()["seq"]
        .as_u64()
        .unwrap();
    {
        use cmdlog_engine::event::{CommandDone, Outcome};
        let log = Log::open(logs[0].log_path(), LogConfig::default()).unwrap();
        let done = CommandDone {
            run: open,
            outcome: Outcome::text("late"),
            elapsed_us: 9,
            agent_check: None,
        };
        let event = NewEvent {
            at: 1_790_000_100_000,
            observed: None,
            session: Some("s".into()),
            agent: Some("test".into()),
            data: EventData::CommandDone(done),
        };
        log.append(vec![NewRecord::new(event.encode())]).unwrap();
    }
    logs[0].ok(&["push", &url]);
    let late = next();
    assert_eq!(
        (late["seq"].as_u64(), late["log_id"].clone()),
        (
            Some(open),
            rows.iter().find(|r| r["outcome"].is_null()).unwrap()["log_id"].clone()
        )
    );
    assert!(!late["outcome"].is_null(), "{late}");
    // A new machine's first push shows up too.
    let newcomer = Workspace::new();
    fill_runs(&newcomer.log_path(), 2, 1_790_000_200_000, 10, false);
    newcomer.ok(&["push", &url]);
    for _ in 0..2 {
        assert_eq!(next()["at"].as_u64().unwrap() / 100_000, 17_900_002);
    }
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn team_streams_sourced_into_one_read_as_one_hub() {
    // How a company grows past one stream (docs/hub.md): each team pushes to
    // its own stream (its own account, office or region in a real set-up);
    // one stream sources them all, subjects mapped to its own, and the
    // checkpoint buckets likewise. cmdlog reads it as one hub, proofs and all.
    let Some(server) = NatsServer::start("team_streams_sourced_into_one_read_as_one_hub") else {
        return;
    };
    let url = server.url();
    let teams = ["TEAMA", "TEAMB"];
    let logs: Vec<Workspace> = teams.iter().map(|_| Workspace::new()).collect();
    for (k, (w, team)) in logs.iter().zip(teams).enumerate() {
        fill_runs(&w.log_path(), 20, 1_790_000_000_000 + k as u64, 10, false);
        w.ok(&["key"]);
        w.ok(&["push", &url, "--stream", team]);
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use async_nats::jetstream::{kv, stream};
        let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
        let source = |name: &str, from: &str, to: &str| stream::Source {
            name: name.to_string(),
            subject_transforms: vec![stream::SubjectTransform {
                source: from.to_string(),
                destination: to.to_string(),
            }],
            ..Default::default()
        };
        js.create_stream(stream::Config {
            name: "CMDLOG".into(),
            storage: stream::StorageType::File,
            deny_delete: true,
            deny_purge: true,
            allow_direct: true,
            sources: Some(
                teams
                    .iter()
                    .map(|t| {
                        source(
                            t,
                            &format!("cmdlog.{t}.log.*"),
                            "cmdlog.log.{{wildcard(1)}}",
                        )
                    })
                    .collect(),
            ),
            ..Default::default()
        })
        .await
        .unwrap();
        js.create_key_value(kv::Config {
            bucket: "CMDLOG-checkpoints".into(),
            history: 16,
            sources: Some(
                teams
                    .iter()
                    .map(|t| {
                        source(
                            &format!("KV_{t}-checkpoints"),
                            &format!("$KV.{t}-checkpoints.>"),
                            "$KV.CMDLOG-checkpoints.>",
                        )
                    })
                    .collect(),
            ),
            ..Default::default()
        })
        .await
        .unwrap();
        // Sourcing is asynchronous: wait until every record is there.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut s = js.get_stream("CMDLOG").await.unwrap();
            if s.info().await.unwrap().state.messages == 2 * 41 {
                break;
            }
            assert!(Instant::now() < deadline, "the sources never caught up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let listed = hub_logs(&logs[0], &url);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let audit = logs[0].ok(&["hub", "audit", &url, "--json"]);
    assert_eq!(audit.lines().count(), 40, "{audit}");
    for w in &logs {
        let (id, seq, hash) = chain_head(w, &w.log_path());
        let on_hub = hub_log(w, &url, &id);
        assert_eq!(
            (on_hub["head_seq"].as_u64(), on_hub["head_hash"].as_str()),
            (Some(seq), Some(hash.as_str()))
        );
        // The clone is checked against the log's signed checkpoint, sourced
        // with the rest.
        let file = w.ws.path().join("clone.redb");
        let cloned = w.json(&["clone", &url, &id, "-o", file.to_str().unwrap(), "--json"]);
        assert_eq!(cloned["checkpoint_size"].as_u64(), Some(seq), "{cloned}");
        assert_eq!(chain_head(w, &file), (id, seq, hash));
    }
}

#[test]
fn hub_audit_since_reads_each_log_from_what_the_hub_stored_since_then() {
    let Some(server) =
        NatsServer::start("hub_audit_since_reads_each_log_from_what_the_hub_stored_since_then")
    else {
        return;
    };
    let url = server.url();
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let w = Workspace::new();
    fill_runs(&w.log_path(), 50, 1_790_000_000_000, 10, false);
    w.ok(&["push", &url]);
    std::thread::sleep(Duration::from_millis(1100));
    let since = now_ms();
    std::thread::sleep(Duration::from_millis(1100));
    fill_runs(&w.log_path(), 5, now_ms(), 10, false);
    w.ok(&["push", &url]);
    let audit = |skew: Option<u64>| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let hub = cmdlog_hub::HubOptions::from_env(&url, "CMDLOG")
                .connect()
                .await
                .unwrap();
            let filter = cmdlog_hub::HubAuditFilter {
                since: Some(since),
                clock_skew_ms: skew,
                ..Default::default()
            };
            let mut seqs = Vec::new();
            let read = cmdlog_hub::hub_audit(&hub, &filter, false, |found| {
                if let cmdlog_hub::Audited::Row(r) = found {
                    seqs.push(r.row.seq);
                }
                Ok::<_, cmdlog_hub::HubError>(())
            })
            .await
            .unwrap();
            (seqs, read.messages)
        })
    };
    // The runs after `since` (seqs 102, 104, … 110), read from the first
    // record stored after it: ten messages, not 111.
    let (seqs, messages) = audit(Some(0));
    assert_eq!(seqs, [102, 104, 106, 108, 110]);
    assert_eq!(messages, 10);
    // With the default allowance for clocks (an hour), everything here was
    // stored within it: read whole, the same runs shown.
    let (seqs, messages) = audit(None);
    assert_eq!(seqs, [102, 104, 106, 108, 110]);
    assert_eq!(messages, 111);
    // And through the verb.
    let rows = w.ok(&["hub", "audit", &url, "--json", "--since", "1m"]);
    assert_eq!(rows.lines().count(), 5, "{rows}");
}

#[test]
fn a_stream_that_loses_records_is_fixed_or_refused_and_a_hub_that_lost_some_is_named() {
    let Some(server) = NatsServer::start(
        "a_stream_that_loses_records_is_fixed_or_refused_and_a_hub_that_lost_some_is_named",
    ) else {
        return;
    };
    let url = server.url();
    let w = Workspace::new();
    w.ok(&["hub", "init", &url]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let js =
        rt.block_on(async { async_nats::jetstream::new(async_nats::connect(&url).await.unwrap()) });
    // An operator's limit on cmdlog's stream: three messages per subject.
    let limit = |n: i64| {
        rt.block_on(async {
            let mut config = js
                .get_stream("CMDLOG")
                .await
                .unwrap()
                .cached_info()
                .config
                .clone();
            config.max_messages_per_subject = n;
            js.update_stream(config).await.unwrap();
        })
    };
    limit(3);
    let made = w.ok(&["hub", "init", &url]);
    assert!(
        made.contains("set max messages per subject 3 → unlimited"),
        "{made}"
    );
    let per_subject = rt.block_on(async {
        js.get_stream("CMDLOG")
            .await
            .unwrap()
            .cached_info()
            .config
            .max_messages_per_subject
    });
    assert_eq!(per_subject, -1);

    // The limit put back behind init's back: a push that the hub does not keep
    // whole fails and names the loss; verify --against names it too.
    limit(3);
    for _ in 0..4 {
        w.ok(&["run", "/help"]);
    }
    let o = w.run(&["push", &url]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "a lossy hub was reported fine: {stderr}"
    );
    assert!(stderr.contains("the hub lost records"), "{stderr}");
    let o = w.run(&["verify", "--against", &url]);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("the hub lost records"), "{out}");

    // Another application's stream of the name: refused, nothing changed in it.
    rt.block_on(async {
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "QUEUE".into(),
            subjects: vec!["cmdlog.QUEUE.log.*".into()],
            retention: async_nats::jetstream::stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .unwrap();
    });
    let o = w.run(&["hub", "init", &url, "--stream", "ORDERS"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("another application") && stderr.contains("orders.>"),
        "{stderr}"
    );
    let deny_delete = rt.block_on(async {
        js.get_stream("ORDERS")
            .await
            .unwrap()
            .cached_info()
            .config
            .deny_delete
    });
    assert!(
        !deny_delete,
        "hub init turned on deny_delete in another application's stream"
    );
    let o = w.run(&["hub", "init", &url, "--stream", "QUEUE"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("WorkQueue retention"), "{stderr}");

    // A server without JetStream: push says so at once, blaming no quorum.
    let Some(plain) = NatsServer::start_with(
        "a_stream_that_loses_records_is_fixed_or_refused_and_a_hub_that_lost_some_is_named",
        &["--no-jetstream"],
    ) else {
        return;
    };
    let started = Instant::now();
    let o = w.run(&["push", &plain.url()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("JetStream is not enabled"), "{stderr}");
    assert!(!stderr.contains("quorum"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Pipes a Codex `UserPromptSubmit` with `prompt` to `cmdlog hook codex`.
fn prompt_hook(w: &Workspace, session: &str, prompt: &str) {
    use std::io::Write;
    let payload = json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": "UserPromptSubmit", "prompt": prompt});
    let mut child = w
        .cmd(&["hook", "codex"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// `cmdlog hub search URL ARGS --json`: the hits' (log id, session), or the exit code.
fn hub_search(w: &Workspace, url: &str, args: &[&str]) -> Result<Vec<(String, String)>, i32> {
    let mut all = vec!["hub", "search", url, "--json"];
    all.extend(args);
    let o = w.run(&all);
    if !o.status.success() {
        return Err(o.status.code().unwrap_or(-1));
    }
    let mut hits: Vec<(String, String)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|h| {
            (
                h["log_id"].as_str().unwrap().to_string(),
                h["session"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    hits.sort();
    Ok(hits)
}

#[test]
fn hub_search_finds_each_machines_events_and_follows_the_hub() {
    let Some(server) =
        NatsServer::start("hub_search_finds_each_machines_events_and_follows_the_hub")
    else {
        return;
    };
    let url = server.url();
    let (a, b) = (Workspace::new(), Workspace::new());
    prompt_hook(&a, "sa", "deploy the payments webhook");
    prompt_hook(&b, "sb", "rotate the database password");
    a.ok(&["push", &url]);
    b.ok(&["push", &url]);
    let (ida, _, _) = verified(&a, &a.log_path());
    let (idb, _, _) = verified(&b, &b.log_path());

    // Searched from a third machine that holds neither log.
    let c = Workspace::new();
    assert_eq!(
        hub_search(&c, &url, &["payments"]).unwrap(),
        [(ida.clone(), "sa".to_string())]
    );
    let both = hub_search(&c, &url, &["payments OR rotate"]).unwrap();
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(both.contains(&(idb.clone(), "sb".to_string())), "{both:?}");

    // The hub grows: the next search finds what was pushed since, read into
    // the clone it made (the same file, owner-only), not a new copy.
    let hubs = c.home.path().join(".local/state/cmdlog/hub");
    let kept = std::fs::read_dir(&hubs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let clone_b = kept.join(&idb).join("log.redb");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&clone_b);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&kept).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    prompt_hook(&b, "sb2", "roll back the payments release");
    b.ok(&["push", &url]);
    let grown = hub_search(&c, &url, &["payments"]).unwrap();
    let mut expected = vec![(ida.clone(), "sa".to_string()), (idb, "sb2".to_string())];
    expected.sort();
    assert_eq!(grown, expected);
    assert_eq!(
        inode(&clone_b),
        before,
        "the clone was read on, not made again"
    );
    assert_eq!(
        hub_search(&c, &url, &["type:prompt", "--until", "2000-01-01"]),
        Err(3)
    );
    assert_eq!(hub_search(&c, &url, &["nothing-like-this"]), Err(3));
    assert_eq!(hub_search(&c, &url, &["\"unclosed"]), Err(2));
}

/// GETs `url`: its status and body.
fn get_page(url: &str) -> (u16, String) {
    let mut res = cmdlog_test_support::daemon::http().get(url).call().unwrap();
    (
        res.status().as_u16(),
        res.body_mut().read_to_string().unwrap_or_default(),
    )
}

/// Issue 42's team view: `serve --hub` mirrors every log of the hub, read
/// only, and the workbench shows each machine's sessions, conversations and
/// events, following the hub as it grows.
#[test]
fn serve_hub_shows_each_machines_sessions_and_follows_the_hub() {
    let Some(server) =
        NatsServer::start("serve_hub_shows_each_machines_sessions_and_follows_the_hub")
    else {
        return;
    };
    let url = server.url();
    let (a, b) = (Workspace::new(), Workspace::new());
    prompt_hook(&a, "team-a", "deploy the <b>payments</b> webhook");
    prompt_hook(&b, "team-b", "rotate the database password");
    a.ok(&["push", &url]);
    b.ok(&["push", &url]);
    let (ida, _, _) = verified(&a, &a.log_path());
    let (idb, _, _) = verified(&b, &b.log_path());

    // A witness cosigns what it saw of each log.
    let witnessed = a.json(&["witness", &url, "--once", "--json"]);
    let witness_key = witnessed["witness_key"].as_str().unwrap().to_string();

    // A third machine serves the team's logs, and checks that witness's word.
    let c = Workspace::new();
    // A second witness never saw the hub: it has cosigned nothing.
    let absent = cmdlog_tlog::Signer::from_seed(
        "absent-witness",
        cmdlog_tlog::KeyKind::Cosignature,
        [7; 32],
    )
    .unwrap()
    .verifier()
    .to_string();
    let d = c.serve(&[
        "--no-web",
        "--hub",
        &url,
        "--witness",
        &witness_key,
        "--witness",
        &absent,
    ]);
    let u = &d.url;
    let deadline = Instant::now() + Duration::from_secs(30);
    let team = loop {
        let (status, page) = get_page(&format!("{u}/ui/hub/"));
        assert_eq!(status, 200, "{page}");
        if page.contains(&ida) && page.contains(&idb) || Instant::now() > deadline {
            break page;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(team.contains(&format!("href=\"/ui/hub/{ida}/\"")), "{team}");
    assert!(team.contains("checked"), "{team}");

    // One machine's sessions, a conversation, an event: read-only pages.
    let (status, sessions) = get_page(&format!("{u}/ui/hub/{ida}/"));
    assert_eq!(status, 200, "{sessions}");
    assert!(
        sessions.contains(&format!("href=\"/ui/hub/{ida}/session/team-a\"")),
        "{sessions}"
    );
    assert!(!sessions.contains("team-b"), "only that machine's sessions");
    let (status, session) = get_page(&format!("{u}/ui/hub/{ida}/session/team-a"));
    assert_eq!(status, 200, "{session}");
    assert!(
        session.contains("deploy the &#60;b&#62;payments&#60;/b&#62; webhook")
            || session.contains("deploy the &lt;b&gt;payments&lt;/b&gt; webhook"),
        "{session}"
    );
    assert!(session.contains("From the hub, read-only"), "{session}");
    // Its badge: the witness's cosignature of the log's checkpoint, checked
    // against the clone (the round after the clone's first shows it).
    let witness_name = witness_key.split('+').next().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let session = loop {
        let (_, page) = get_page(&format!("{u}/ui/hub/{ida}/session/team-a"));
        if page.contains("✓ cosigned by witness") || Instant::now() > deadline {
            break page;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        session.contains(&format!(
            "✓ cosigned by witness {witness_name}: the log's signed checkpoint of seqs 1–"
        )),
        "{session}"
    );
    assert!(
        session.contains("✗ witness absent-witness: has cosigned no checkpoint of this log"),
        "{session}"
    );
    assert!(!session.contains("data-live") && !session.contains("the registry as of seq"));
    let event_href = session
        .split(&format!("href=\"/ui/hub/{ida}/event/"))
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("an event link")
        .to_string();
    let (status, event) = get_page(&format!("{u}/ui/hub/{ida}/event/{event_href}"));
    assert_eq!(status, 200, "{event}");
    assert!(
        event.contains("hash chain link and inclusion proof checked"),
        "{event}"
    );
    // One search over every machine's log, each hit linked into its mirror.
    let (status, found) = get_page(&format!("{u}/ui/hub/search?q=payments+OR+rotate"));
    assert_eq!(status, 200, "{found}");
    assert!(
        found.contains(&format!("href=\"/ui/hub/{ida}/session/team-a\"")),
        "{found}"
    );
    assert!(
        found.contains(&format!("href=\"/ui/hub/{idb}/session/team-b\"")),
        "{found}"
    );
    assert!(found.contains("<mark>payments</mark>"), "{found}");
    assert_eq!(get_page(&format!("{u}/ui/hub/not-hex/")).0, 404);
    assert_eq!(get_page(&format!("{u}/ui/hub/{}/", "ab".repeat(16))).0, 404);

    // The hub grows: the page follows it.
    prompt_hook(&b, "team-b2", "roll back the release");
    b.ok(&["push", &url]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, page) = get_page(&format!("{u}/ui/hub/{idb}/"));
        if page.contains("team-b2") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mirror did not follow the hub: {page}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
