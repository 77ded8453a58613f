//! Payloads tied to what their session holds: a call denied for want of
//! permission (only `PostToolBatch` reports it) is settled as failed and its
//! request answered; a permission request that names no call is tied to the
//! pending one; a call `PostToolUse` settled is not settled twice; a prompt that
//! is a run's expansion names the run; Codex's `Interrupt` ends the turn.

use serde_json::{Value, json};

use super::{events, hook};
use cmdlog_test_support::Workspace;

fn send(w: &Workspace, agent: &str, session: &str, name: &str, fields: Value) {
    let mut p = json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": name});
    for (k, v) in fields.as_object().unwrap() {
        p[k] = v.clone();
    }
    assert!(hook(w, agent, &p).status.success(), "{name}");
}

fn of(all: &[Value], session: &str, kind: &str) -> Vec<Value> {
    all.iter()
        .filter(|e| {
            e["session"] == session && (e["type"] == kind || e["data"]["sessionUpdate"] == kind)
        })
        .cloned()
        .collect()
}

#[test]
fn a_call_denied_for_want_of_permission_is_settled_and_its_request_answered() {
    let w = Workspace::new();
    let bash = json!({"command": "touch made-by-tool.txt"});
    let echo = json!({"command": "echo hi"});
    // As Claude Code 2.1.332 reports a headless run in default mode: one call
    // runs, one needs permission and never runs.
    send(
        &w,
        "claude-code",
        "d1",
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": echo, "tool_use_id": "toolu_1"}),
    );
    send(
        &w,
        "claude-code",
        "d1",
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": echo, "tool_use_id": "toolu_1", "tool_response": {"stdout": "hi"}}),
    );
    send(
        &w,
        "claude-code",
        "d1",
        "PostToolBatch",
        json!({"tool_calls": [{"tool_name": "Bash", "tool_input": echo, "tool_use_id": "toolu_1", "tool_response": "hi"}]}),
    );
    send(
        &w,
        "claude-code",
        "d1",
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": bash, "tool_use_id": "toolu_2"}),
    );
    send(
        &w,
        "claude-code",
        "d1",
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": bash, "permission_suggestions": []}),
    );
    send(
        &w,
        "claude-code",
        "d1",
        "PostToolBatch",
        json!({"tool_calls": [{"tool_name": "Bash", "tool_input": bash, "tool_use_id": "toolu_2", "tool_response": "Claude requested permissions to use Bash, but you haven't granted it yet."}]}),
    );
    let all = events(&w);
    let settled = of(&all, "d1", "tool_call_update");
    let status: Vec<(&str, &str)> = settled
        .iter()
        .map(|e| {
            (
                e["data"]["toolCallId"].as_str().unwrap(),
                e["data"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [("toolu_1", "completed"), ("toolu_2", "failed")],
        "each call settled once; the denied one failed"
    );
    let requested = of(&all, "d1", "permission/requested");
    assert_eq!(requested.len(), 1);
    assert_eq!(
        requested[0]["data"]["tool_call"]["toolCallId"], "toolu_2",
        "the request names the call it was for"
    );
    let resolved = of(&all, "d1", "permission/resolved");
    assert_eq!(resolved.len(), 1, "{all:?}");
    assert_eq!(
        resolved[0]["data"]["request_id"],
        requested[0]["data"]["request_id"]
    );
    assert_eq!(resolved[0]["data"]["decision"]["optionId"], "reject");
    assert!(w.run(&["verify"]).status.success());
}

#[test]
fn a_prompt_that_is_an_expansion_names_its_run_and_an_interrupt_ends_the_turn() {
    let w = Workspace::new();
    let expansion = "Review main carefully.";
    send(
        &w,
        "qwen",
        "q1",
        "UserPromptExpansion",
        json!({"command_name": "review", "command_args": "main", "prompt": expansion}),
    );
    send(
        &w,
        "qwen",
        "q1",
        "UserPromptSubmit",
        json!({"prompt": expansion, "submitted_prompt": "/review main"}),
    );
    let all = events(&w);
    let run = &of(&all, "q1", "command/run")[0];
    let prompt = &of(&all, "q1", "session/prompt")[0];
    assert_eq!(prompt["data"]["from_run"], run["seq"], "{prompt}");
    send(
        &w,
        "codex",
        "c1",
        "UserPromptSubmit",
        json!({"prompt": "slow work", "turn_id": "t1"}),
    );
    send(&w, "codex", "c1", "Interrupt", json!({"turn_id": "t1"}));
    let ends = of(&events(&w), "c1", "turn_complete");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["data"]["stopReason"], "cancelled");
}

#[test]
fn a_gemini_reply_is_read_from_its_chat_and_a_payload_names_no_other_file() {
    let w = Workspace::new();
    let chat = w
        .home
        .path()
        .join(".gemini/tmp/proj/chats/session-2026-11-07T10-00-77777777.jsonl");
    std::fs::create_dir_all(chat.parent().unwrap()).unwrap();
    std::fs::write(
        &chat,
        concat!(
            r#"{"sessionId":"77777777-g","projectHash":"h","kind":"main"}"#,
            "\n",
            r#"{"id":"g1","type":"gemini","content":"reply to: Say hello","model":"m"}"#,
            "\n",
        ),
    )
    .unwrap();
    // Gemini CLI 0.61 repeats the later chunks of a streamed reply.
    let garbled = "reply to: Say hello llo";
    send(
        &w,
        "gemini",
        "g-1",
        "AfterAgent",
        json!({"prompt_response": garbled, "transcript_path": chat}),
    );
    // A payload naming a file that is not one of Gemini's chats: not read.
    let secret = w.ws.path().join("secret.txt");
    std::fs::write(&secret, "do not copy me").unwrap();
    send(
        &w,
        "gemini",
        "g-2",
        "AfterAgent",
        json!({"prompt_response": "as said", "transcript_path": secret}),
    );
    send(
        &w,
        "gemini",
        "g-3",
        "AfterAgent",
        json!({"prompt_response": "[no response text]"}),
    );
    let all = events(&w);
    let replies = |s: &str| -> Vec<Value> {
        of(&all, s, "agent_message_chunk")
            .iter()
            .map(|e| e["data"]["content"]["text"].clone())
            .collect()
    };
    assert_eq!(replies("g-1"), [json!("reply to: Say hello")]);
    assert_eq!(replies("g-2"), [json!("as said")]);
    assert!(replies("g-3").is_empty(), "a placeholder is no reply");
    assert!(
        !serde_json::to_string(&all)
            .unwrap()
            .contains("do not copy me")
    );
    for s in ["g-1", "g-2", "g-3"] {
        assert_eq!(of(&all, s, "turn_complete").len(), 1, "{s}");
    }
}
