//! The workbench's pages made from a log, as the daemon makes them: a long
//! session paged (each page read alone), a call known only from its result
//! shown, the sessions list paged and filtered.

use cmdlog_replay::SessionsFold;
use cmdlog_store::{Log, LogConfig, NewRecord};
use cmdlog_workbench::{ListParams, PAGE_EVENTS, SessionParams, Site, session_page, sessions_page};
use serde_json::json;

fn record(n: u64, session: &str, kind: &str, data: serde_json::Value) -> NewRecord {
    NewRecord::new(
        json!({"at": 1_790_000_000_000u64 + n, "type": kind, "session": session, "agent": "codex", "data": data})
            .to_string()
            .into_bytes(),
    )
    .stream(session.to_string())
}

fn log_of(records: Vec<NewRecord>) -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.append(records).unwrap();
    (dir, log)
}

fn link(page: &str, rel: &str) -> Option<String> {
    let at = page.find(&format!("rel=\"{rel}\""))?;
    let start = page[..at].rfind("href=\"")? + "href=\"".len();
    Some(page[start..].split('"').next()?.replace("&amp;", "&"))
}

#[test]
fn a_long_session_is_read_a_page_at_a_time() {
    let n = 1200u64;
    let records = (1..=n)
        .map(|i| {
            record(
                i,
                "long",
                "session/prompt",
                json!({"text": format!("prompt number {i}"), "delivery": "idle"}),
            )
        })
        .collect();
    let (_dir, log) = log_of(records);
    let first = session_page(
        &log,
        "long",
        &SessionParams::default(),
        None,
        &Site::local(),
    )
    .unwrap();
    assert!(
        first.contains(&format!("Events 1–{PAGE_EVENTS} of {n}")),
        "{first}"
    );
    assert!(first.contains("prompt number 1<") && !first.contains("prompt number 501<"));
    assert!(link(&first, "prev").is_none());
    assert!(
        !first.contains("data-live"),
        "only the last page follows the session"
    );
    let next = link(&first, "next").expect("a link to the next page");
    let from: u64 = next.rsplit('=').next().unwrap().parse().unwrap();
    let second = session_page(
        &log,
        "long",
        &SessionParams {
            from,
            ..SessionParams::default()
        },
        None,
        &Site::local(),
    )
    .unwrap();
    assert!(second.contains("Events 501–1000 of 1200"), "{second}");
    assert!(second.contains("prompt number 501<") && !second.contains("prompt number 1001<"));
    assert!(link(&second, "prev").is_some_and(|p| p.ends_with("from=1")));
    let last = session_page(
        &log,
        "long",
        &SessionParams {
            from: 1001,
            ..SessionParams::default()
        },
        None,
        &Site::local(),
    )
    .unwrap();
    assert!(last.contains("Events 1001–1200 of 1200") && last.contains("data-live"));
}

#[test]
fn a_call_known_only_from_its_result_is_shown() {
    let (_dir, log) = log_of(vec![
        record(
            1,
            "s",
            "session/prompt",
            json!({"text": "look", "delivery": "idle"}),
        ),
        record(
            2,
            "s",
            "session/update",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "only-result", "status": "completed",
                   "rawOutput": {"output": "the file's lines"}}),
        ),
        record(
            3,
            "s",
            "session/update",
            json!({"sessionUpdate": "tool_call", "toolCallId": "both", "title": "Read", "status": "pending"}),
        ),
        record(
            4,
            "s",
            "session/update",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "both", "status": "completed"}),
        ),
    ]);
    // The list counts each call once, the one known only from its result too.
    let mut fold = SessionsFold::default();
    fold.update(&log).unwrap();
    assert_eq!(fold.get("s").unwrap().tool_calls, 2);
    let page = session_page(&log, "s", &SessionParams::default(), None, &Site::local()).unwrap();
    assert!(page.contains("call only-result"), "{page}");
    assert!(
        page.contains("the file&#39;s lines") || page.contains("the file&#x27;s lines"),
        "{page}"
    );
}

#[test]
fn the_sessions_list_pages_and_filters() {
    let records = (0..450u64)
        .map(|i| {
            let agent = if i % 3 == 0 { "gemini" } else { "codex" };
            NewRecord::new(
                json!({"at": 1_790_000_000_000u64 + i, "type": "session/prompt", "session": format!("s{i:03}"),
                       "agent": agent, "data": {"text": "go", "delivery": "idle"}})
                .to_string()
                .into_bytes(),
            )
            .stream(format!("s{i:03}"))
        })
        .collect();
    let (_dir, log) = log_of(records);
    let mut fold = SessionsFold::default();
    fold.update(&log).unwrap();
    let first = sessions_page(&fold, &ListParams::default(), &Site::local()).unwrap();
    assert!(first.contains("450 sessions; 1–200 shown"), "{first}");
    assert!(first.contains("<th>Prompts</th><th>Tool calls</th>"));
    // Newest first.
    assert!(first.contains(">s449<") && !first.contains(">s249<"));
    let third = sessions_page(
        &fold,
        &ListParams {
            page: Some(3),
            ..ListParams::default()
        },
        &Site::local(),
    )
    .unwrap();
    assert!(third.contains(">s000<") && third.contains("401–450 shown"));
    let gemini = sessions_page(
        &fold,
        &ListParams {
            agent: "gemini".into(),
            ..ListParams::default()
        },
        &Site::local(),
    )
    .unwrap();
    assert!(gemini.contains("150 of 450 sessions match"), "{gemini}");
    assert!(!gemini.contains(">s448<") && gemini.contains(">s447<"));
}

#[test]
fn a_subagents_session_hangs_under_the_call_that_started_it() {
    let (_dir, log) = log_of(vec![
        record(
            1,
            "parent",
            "session/prompt",
            json!({"text": "explore the repo", "delivery": "idle"}),
        ),
        record(
            2,
            "parent",
            "session/update",
            json!({"sessionUpdate": "tool_call", "toolCallId": "task-7", "title": "Task", "status": "pending"}),
        ),
        record(
            3,
            "child",
            "session/created",
            json!({"parent": {"session": "parent", "tool_call_id": "task-7", "agent_type": "Explore"}}),
        ),
        record(
            4,
            "child",
            "session/prompt",
            json!({"text": "list the files", "delivery": "idle"}),
        ),
    ]);
    let mut fold = SessionsFold::default();
    fold.update(&log).unwrap();
    let parent = session_page(
        &log,
        "parent",
        &SessionParams::default(),
        Some(&fold),
        &Site::local(),
    )
    .unwrap();
    assert!(
        parent.contains("its subagent&#39;s session child")
            || parent.contains("its subagent&#x27;s session child"),
        "{parent}"
    );
    assert!(parent.contains("href=\"/ui/session/child\""));
    let child = session_page(
        &log,
        "child",
        &SessionParams::default(),
        Some(&fold),
        &Site::local(),
    )
    .unwrap();
    assert!(
        child.contains("Subagent of") && child.contains("href=\"/ui/session/parent\""),
        "{child}"
    );
    // Nested under its parent in the list.
    let list = sessions_page(&fold, &ListParams::default(), &Site::local()).unwrap();
    let (p, c) = (
        list.find(">parent<").unwrap(),
        list.find(">child<").unwrap(),
    );
    assert!(
        p < c && list.contains("subagent, from call task-7"),
        "{list}"
    );
}

#[test]
fn a_record_changed_outside_cmdlog_fails_its_proof_badge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let log = Log::open(&path, LogConfig::default()).unwrap();
        log.append(vec![
            record(
                1,
                "s",
                "session/prompt",
                json!({"text": "alpha", "delivery": "idle"}),
            ),
            record(
                2,
                "s",
                "session/prompt",
                json!({"text": "bravo", "delivery": "idle"}),
            ),
        ])
        .unwrap();
        let page =
            session_page(&log, "s", &SessionParams::default(), None, &Site::local()).unwrap();
        assert!(
            page.contains("2 hash chain links and inclusion proofs checked"),
            "{page}"
        );
    }
    // One letter of the second prompt, changed in the file.
    cmdlog_test_support::tamper::edit_record(&path, 2, |value| {
        let at = value.windows(5).position(|w| w == b"bravo").unwrap();
        value[at] = b'B';
    });
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let page = session_page(&log, "s", &SessionParams::default(), None, &Site::local()).unwrap();
    assert!(page.contains("✗ seq 2 does not check"), "{page}");
    assert!(page.contains("Bravo"), "the record is shown as it is now");
}

#[test]
fn who_answered_each_permission_and_each_model_or_mode_change_are_shown() {
    let records = vec![
        record(
            1,
            "s",
            "session/prompt",
            json!({"text": "clean up", "delivery": "idle"}),
        ),
        record(
            2,
            "s",
            "permission/requested",
            json!({"request_id": "p1", "options": [{"optionId": "allow", "name": "Allow"}, {"optionId": "deny", "name": "Deny"}],
                   "tool_call": {"title": "rm -rf build"}}),
        ),
        record(
            3,
            "s",
            "permission/resolved",
            json!({"request_id": "p1", "decision": {"outcome": "selected", "optionId": "allow"}, "decided_by": "rule"}),
        ),
        record(
            4,
            "s",
            "permission/requested",
            json!({"request_id": "p2", "options": [{"optionId": "allow", "name": "Allow"}], "tool_call": {"title": "git push"}}),
        ),
        record(
            5,
            "s",
            "permission/resolved",
            json!({"request_id": "p2", "decision": {"outcome": "selected", "optionId": "allow"}, "decided_by": "user", "voter": "web-1"}),
        ),
        record(
            6,
            "s",
            "permission/requested",
            json!({"request_id": "p3", "options": [{"optionId": "allow", "name": "Allow"}], "tool_call": {"title": "curl evil"}}),
        ),
        record(
            7,
            "s",
            "session/model_switched",
            json!({"model": "qwen3-coder-plus"}),
        ),
        record(
            8,
            "s",
            "session/model_switch_failed",
            json!({"model": "nope", "error": {"code": -32602, "message": "unknown model"}}),
        ),
        record(
            9,
            "s",
            "session/mode_set",
            json!({"mode": "yolo", "previous": "default", "client_id": "web-1"}),
        ),
    ];
    let (_dir, log) = log_of(records);
    let page = session_page(&log, "s", &SessionParams::default(), None, &Site::local()).unwrap();
    let at = |needle: &str| {
        page.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {page}"))
    };
    assert!(
        at("rm -rf build")
            < at(
                "answered: Allow (allow) (by a permission rule or the approval mode, without asking)"
            )
    );
    assert!(at("git push") < at("answered: Allow (allow) (by the user, client web-1)"));
    assert!(at("curl evil") < at("not answered"));
    assert!(page.contains("class=\"permission open\""), "{page}");
    assert!(
        at("model switched to qwen3-coder-plus")
            < at("model switch to nope refused by the agent: unknown model")
    );
    assert!(at("mode set to yolo (was default), asked by client web-1") > 0);
    assert!(page.contains("class=\"setting failed\""));
}

#[test]
fn each_entry_names_every_capture_path_that_saw_it_and_its_time() {
    let seen = |n: u64, kind: &str, source: &str, data: serde_json::Value| {
        NewRecord::new(
            json!({"at": 1_790_000_000_000u64 + n, "type": kind, "session": "s", "agent": "claude-code",
                   "observed": {"source": source}, "data": data})
            .to_string()
            .into_bytes(),
        )
        .stream("s".to_string())
    };
    let (_dir, log) = log_of(vec![
        seen(
            1,
            "session/prompt",
            "claude-code hook",
            json!({"text": "fix the build", "delivery": "idle"}),
        ),
        seen(
            2,
            "agent/observed",
            "claude-code telemetry",
            json!({"of": 1, "fact": "prompt:p1"}),
        ),
        seen(
            3,
            "session/update",
            "claude-code hook",
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash", "status": "pending"}),
        ),
        seen(
            4,
            "session/update",
            "claude-code transcript",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
        ),
        seen(
            5,
            "agent/observed",
            "claude-code telemetry",
            json!({"of": 4, "fact": "tool_result:t1"}),
        ),
    ]);
    let page = session_page(&log, "s", &SessionParams::default(), None, &Site::local()).unwrap();
    let entry = |seq: u64| {
        page.split(&format!("id=\"seq-{seq}\""))
            .nth(1)
            .and_then(|e| e.split("</li>").next())
            .unwrap_or_else(|| panic!("entry {seq} in {page}"))
            .to_string()
    };
    let prompt = entry(1);
    assert!(
        prompt.contains("seen by claude-code hook, claude-code telemetry"),
        "{prompt}"
    );
    assert!(prompt.contains("2026-09-21"), "its time: {prompt}");
    let call = entry(3);
    assert!(
        call.contains("seen by claude-code hook, claude-code transcript, claude-code telemetry"),
        "{call}"
    );
}
