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
    // What the batch said again of the call that ran is kept as Claude Code's
    // bookkeeping, without a status it did not give.
    let again = all
        .iter()
        .find(|e| e["session"] == "d1" && e["data"]["event"] == "PostToolBatch")
        .expect("the batch's word on the call PostToolUse settled");
    assert_eq!(again["data"]["data"]["toolCallId"], "toolu_1");
    assert!(again["data"]["data"].get("status").is_none(), "{again}");
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

#[test]
fn an_interactive_denial_is_settled_by_what_follows_and_an_approval_names_the_user() {
    let w = Workspace::new();
    let s = "i1";
    let approved = json!({"command": "echo approved"});
    let denied = json!({"command": "touch denied.txt"});
    let agent = "claude-code";
    // As Claude Code 2.1.332 reports an interactive session: the dialog's
    // approval shows only as the call's result; its denial as nothing at all.
    send(
        &w,
        agent,
        s,
        "UserPromptSubmit",
        json!({"prompt": "one", "prompt_id": "p1"}),
    );
    send(
        &w,
        agent,
        s,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": approved, "tool_use_id": "toolu_a"}),
    );
    send(
        &w,
        agent,
        s,
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": approved}),
    );
    send(
        &w,
        agent,
        s,
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": approved, "tool_use_id": "toolu_a", "tool_response": {"stdout": "approved"}}),
    );
    send(
        &w,
        agent,
        s,
        "Stop",
        json!({"last_assistant_message": "done"}),
    );
    send(
        &w,
        agent,
        s,
        "UserPromptSubmit",
        json!({"prompt": "two", "prompt_id": "p2"}),
    );
    send(
        &w,
        agent,
        s,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": denied, "tool_use_id": "toolu_d"}),
    );
    send(
        &w,
        agent,
        s,
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": denied}),
    );
    // Denied in the dialog: no hook. The next prompt shows it did not run.
    send(
        &w,
        agent,
        s,
        "UserPromptSubmit",
        json!({"prompt": "three", "prompt_id": "p3"}),
    );
    // Interrupted while running: no hook either, until the session ends.
    send(
        &w,
        agent,
        s,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "sleep 9"}, "tool_use_id": "toolu_i"}),
    );
    send(
        &w,
        agent,
        s,
        "SessionEnd",
        json!({"reason": "prompt_input_exit"}),
    );
    let all = events(&w);
    let settled: Vec<(String, String, String)> = of(&all, s, "tool_call_update")
        .iter()
        .map(|e| {
            let d = &e["data"];
            (
                d["toolCallId"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
                d["rawOutput"]["settled"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want =
        |id: &str, status: &str, why: &str| (id.to_string(), status.to_string(), why.to_string());
    assert_eq!(
        settled,
        [
            want("toolu_a", "completed", ""),
            want("toolu_d", "failed", "denied"),
            want("toolu_i", "failed", "unreported"),
        ],
        "every call settled once, saying why"
    );
    // The denial is settled just before the prompt that showed it.
    let order: Vec<String> = all
        .iter()
        .filter(|e| e["session"] == s)
        .map(|e| {
            e["data"]["sessionUpdate"]
                .as_str()
                .map(|u| format!("{u}:{}", e["data"]["toolCallId"].as_str().unwrap_or("")))
                .unwrap_or_else(|| e["type"].as_str().unwrap().to_string())
        })
        .collect();
    let at = |x: &str| {
        order
            .iter()
            .position(|o| o == x)
            .unwrap_or_else(|| panic!("{x} in {order:?}"))
    };
    assert!(
        at("tool_call_update:toolu_d") < order.iter().rposition(|o| o == "session/prompt").unwrap()
    );
    let resolved = of(&all, s, "permission/resolved");
    let answers: Vec<(&str, &str, &str)> = resolved
        .iter()
        .map(|e| {
            (
                e["data"]["request_id"].as_str().unwrap(),
                e["data"]["decision"]["optionId"].as_str().unwrap(),
                e["data"]["decided_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("ask-toolu_a", "allow", "user"),
            ("ask-toolu_d", "reject", "user")
        ],
        "every request answered, and by whom"
    );
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}
