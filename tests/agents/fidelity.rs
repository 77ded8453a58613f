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
        (
            "claude-code",
            payload("UserPromptSubmit", json!({"prompt": "hi"})),
        ),
        (
            "claude-code",
            payload("SessionEnd", json!({"reason": "clear", "exit_code": 0})),
        ),
        (
            "claude-code",
            payload("UserPromptSubmit", json!({"prompt": "again"})),
        ),
        (
            "claude-code",
            payload("SessionEnd", json!({"reason": "prompt_input_exit"})),
        ),
    ] {
        assert!(hook(&w, agent, &p).status.success());
    }
    let all = events(&w);
    let ended: Vec<_> = all
        .iter()
        .filter(|e| e["type"] == "session/ended")
        .collect();
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
    assert!(
        sessions.contains("end-1") && sessions.contains("ended"),
        "{sessions}"
    );
}

#[test]
fn a_tool_call_keeps_the_input_that_ran_from_any_payload_that_carries_it() {
    let w = Workspace::new();
    // PostToolUse without a PreToolUse before it (the hook was added mid-session,
    // or another hook rewrote the input): its tool_input is what ran.
    for (agent, name) in [
        ("claude-code", "PostToolUse"),
        ("qwen", "PostToolUseFailure"),
    ] {
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

/// Lines of a Codex 0.171 rollout, written for this test from what the release
/// writes (`docs/agents.md`): prompts and replies as `item_completed` items, the
/// model-facing `message` copies beside them, a shell run that exits 3, a turn
/// that fails.
const CODEX_ROLLOUT: &[&str] = &[
    r#"{"timestamp":"2026-11-02T09:00:00.000Z","ordinal":0,"type":"session_meta","payload":{"id":"01a2b3c4-0000-7000-8000-00000000c0de","cwd":"/p","originator":"codex_exec","cli_version":"0.171.0","source":"exec"}}"#,
    r#"{"timestamp":"2026-11-02T09:00:00.010Z","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#,
    r#"{"timestamp":"2026-11-02T09:00:00.020Z","ordinal":2,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"}]}}"#,
    r#"{"timestamp":"2026-11-02T09:00:00.030Z","ordinal":3,"type":"world_state","payload":{"full":true,"state":{"model":"m"}}}"#,
    r#"{"timestamp":"2026-11-02T09:00:00.040Z","ordinal":4,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}"#,
    r#"{"timestamp":"2026-11-02T09:00:00.050Z","ordinal":5,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a2b3c4-0000-7000-8000-00000000c0de","turn_id":"t1","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"run the tests","text_elements":[]}]}}}"#,
    r#"{"timestamp":"2026-11-02T09:00:01.000Z","ordinal":6,"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cargo test\"}","call_id":"call_7"}}"#,
    r#"{"timestamp":"2026-11-02T09:00:02.000Z","ordinal":7,"type":"event_msg","payload":{"type":"item_completed","turn_id":"t1","item":{"type":"CommandExecution","id":"call_7","command":["/bin/bash","-lc","cargo test"],"status":"failed","aggregated_output":"1 failed\n","exit_code":3}}}"#,
    r#"{"timestamp":"2026-11-02T09:00:02.010Z","ordinal":8,"type":"response_item","payload":{"type":"function_call_output","call_id":"call_7","output":"Chunk ID: ab12\nWall time: 0.2 seconds\nProcess exited with code 3\nOutput:\n1 failed\n"}}"#,
    r#"{"timestamp":"2026-11-02T09:00:03.000Z","ordinal":9,"type":"event_msg","payload":{"type":"item_completed","turn_id":"t1","item":{"type":"AgentMessage","id":"msg_1","content":[{"type":"Text","text":"One test fails."}]}}}"#,
    r#"{"timestamp":"2026-11-02T09:00:03.010Z","ordinal":10,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"One test fails."}]}}"#,
    r#"{"timestamp":"2026-11-02T09:00:03.020Z","ordinal":11,"type":"token_usage_record","payload":{"turn_id":"t1","usage":{"input_tokens":10,"output_tokens":4}}}"#,
    r#"{"timestamp":"2026-11-02T09:00:03.030Z","ordinal":12,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"One test fails."}}"#,
    r#"{"timestamp":"2026-11-02T09:01:00.000Z","ordinal":13,"type":"event_msg","payload":{"type":"item_completed","turn_id":"t2","item":{"type":"UserMessage","id":"u2","content":[{"type":"text","text":"again","text_elements":[]}]}}}"#,
    r#"{"timestamp":"2026-11-02T09:01:09.000Z","ordinal":14,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":null,"error":{"message":"stream disconnected before completion","codex_error_info":"other"}}}"#,
];

#[test]
fn a_codex_0171_rollout_imports_its_prompts_replies_failures_and_turn_ends() {
    let w = Workspace::new();
    let file = w.home.path().join(
        ".codex/sessions/2026/11/02/rollout-2026-11-02T09-00-00-01a2b3c4-0000-7000-8000-00000000c0de.jsonl",
    );
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, CODEX_ROLLOUT.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "codex"]);
    let all = events(&w);
    let session = "01a2b3c4-0000-7000-8000-00000000c0de";
    let prompts: Vec<_> = all
        .iter()
        .filter(|e| e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        prompts,
        ["run the tests", "again"],
        "only what the user typed"
    );
    let reply = all
        .iter()
        .find(|e| e["data"]["sessionUpdate"] == "agent_message_chunk")
        .expect("the reply");
    assert_eq!(reply["data"]["content"]["text"], "One test fails.");
    let settled = all
        .iter()
        .find(|e| e["data"]["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(settled["data"]["status"], "failed", "exit 3 is a failure");
    let types = types_of(&all, session);
    assert!(
        types.contains(&"session/update:turn_complete".to_string()),
        "{types:?}"
    );
    assert!(
        types.contains(&"session/update:turn_error".to_string()),
        "{types:?}"
    );
    // Token counts and the world state are kept, and left out of the default view.
    assert!(
        all.iter()
            .any(|e| e["data"]["event"] == "token_usage_record")
    );
    let shown = w.ok(&["log", "--session", session]);
    assert!(
        !shown.contains("token_usage_record") && !shown.contains("world_state"),
        "{shown}"
    );
    assert!(
        w.ok(&["log", "--session", session, "--all"])
            .contains("world_state")
    );
}
