//! What a hook or an import records is what the agent did, as an audit reads it:
//! a session's end typed with the agent's reason (and a later resume accepted),
//! the input of a tool call kept from any payload that carries it, and the views
//! showing the agent's own time.

use serde_json::json;

use super::{events, hook, types_of};
use cmdlog_test_support::Workspace;

#[test]
fn a_session_end_is_typed_with_its_reason_and_the_session_may_resume() {
    let w = Workspace::new();
    let common = json!({"session_id": "end-1", "cwd": w.ws.path(), "transcript_path": "/t"});
    let payload = |name: &str, fields: serde_json::Value| {
        let mut p = common.clone();
        p["hook_event_name"] = json!(name);
        for (k, v) in fields.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    };
    for (agent, p) in [
        ("claude-code", payload("UserPromptSubmit", json!({"prompt": "hi"}))),
        ("claude-code", payload("SessionEnd", json!({"reason": "clear", "exit_code": 0}))),
        ("claude-code", payload("UserPromptSubmit", json!({"prompt": "again"}))),
        ("claude-code", payload("SessionEnd", json!({"reason": "prompt_input_exit"}))),
    ] {
        assert!(hook(&w, agent, &p).status.success());
    }
    let all = events(&w);
    let ended: Vec<_> = all.iter().filter(|e| e["type"] == "session/ended").collect();
    assert_eq!(ended.len(), 2, "{all:?}");
    assert_eq!(ended[0]["data"]["reason"], "clear");
    assert_eq!(
        ended[0]["data"]["details"]["exit_code"], 0,
        "the rest of the payload is kept"
    );
    assert_eq!(ended[1]["data"]["reason"], "prompt_input_exit");
    assert!(
        !types_of(&all, "end-1").contains(&"agent/event".to_string()),
        "no untyped end: {:?}",
        types_of(&all, "end-1")
    );
    // A prompt after an end is the agent resuming: the log accepts it.
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let sessions = w.ok(&["sessions"]);
    assert!(sessions.contains("end-1") && sessions.contains("ended"), "{sessions}");
}

#[test]
fn a_tool_call_keeps_the_input_that_ran_from_any_payload_that_carries_it() {
    let w = Workspace::new();
    // PostToolUse without a PreToolUse before it (the hook was added mid-session,
    // or another hook rewrote the input): its tool_input is what ran.
    for (agent, name) in [("claude-code", "PostToolUse"), ("qwen", "PostToolUseFailure")] {
        let p = json!({
            "session_id": format!("tool-{agent}"), "cwd": w.ws.path(), "hook_event_name": name,
            "tool_name": "Bash", "tool_input": {"command": "cargo test --locked"},
            "tool_use_id": "toolu_9", "tool_response": {"stdout": "ok"}, "error": "exit 1",
        });
        assert!(hook(&w, agent, &p).status.success());
    }
    for e in events(&w)
        .iter()
        .filter(|e| e["data"]["sessionUpdate"] == "tool_call_update")
    {
        assert_eq!(
            e["data"]["rawInput"]["command"], "cargo test --locked",
            "{e}"
        );
        assert_eq!(e["data"]["title"], "Bash", "{e}");
    }
}

#[test]
fn views_show_an_imported_event_at_the_agents_time() {
    let w = Workspace::new();
    let file = w.home.path().join(".claude/projects/-p/old-1.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"old-1","timestamp":"2025-03-04T05:06:07.000Z","message":{"role":"user","content":"hello"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","sessionId":"old-1","timestamp":"2025-03-04T05:06:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}}"#,
            "\n",
        ),
    )
    .unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    let log = w.ok(&["log", "--session", "old-1"]);
    assert!(log.contains("2025-03-04 05:06:07"), "{log}");
    let sessions = w.ok(&["sessions"]);
    assert!(sessions.contains("2025-03-04"), "{sessions}");
    // The append time stays in the record.
    let all = events(&w);
    let prompt = all.iter().find(|e| e["type"] == "session/prompt").unwrap();
    assert_ne!(prompt["at"], prompt["observed"]["at"]);
}
