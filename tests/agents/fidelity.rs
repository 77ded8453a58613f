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

/// Writes `lines` as a transcript file under the test's home.
fn put_transcript(w: &Workspace, rel: &str, lines: &[&str]) {
    let file = w.home.path().join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
}

/// The texts of the session's prompts, in order.
fn prompts_of(all: &[serde_json::Value], session: &str) -> Vec<String> {
    all.iter()
        .filter(|e| e["session"] == session && e["type"] == "session/prompt")
        .map(|e| e["data"]["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_gemini_061_chat_imports_its_command_runs_and_turn_ends_not_its_preamble() {
    let w = Workspace::new();
    // Written for this test from what Gemini CLI 0.61 writes: the preamble in the
    // first $set, displayContent as parts, a tool result recorded twice, then a
    // resume that rewrites every message without displayContent.
    put_transcript(
        &w,
        ".gemini/tmp/proj/chats/session-2026-11-03T08-00-5a5a5a5a.jsonl",
        &[
            r#"{"sessionId":"5a5a5a5a-1111","projectHash":"h","startTime":"2026-11-03T08:00:00.000Z","lastUpdated":"2026-11-03T08:00:00.000Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"ctx","timestamp":"2026-11-03T08:00:00.001Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}]}}"#,
            r#"{"id":"u1","timestamp":"2026-11-03T08:00:01.000Z","type":"user","content":[{"text":"Please review: a.ts\nEnd."}],"displayContent":[{"text":"/review   a.ts"}]}"#,
            r#"{"id":"g1","timestamp":"2026-11-03T08:00:02.000Z","type":"gemini","content":"","thoughts":[],"model":"m"}"#,
            r#"{"id":"g1","timestamp":"2026-11-03T08:00:02.000Z","type":"gemini","content":"","thoughts":[],"model":"m","toolCalls":[{"id":"read_file_1","name":"read_file","args":{"file_path":"a.ts"},"result":[{"functionResponse":{"id":"read_file_1","name":"read_file","response":{"output":"x"}}}],"status":"success","timestamp":"2026-11-03T08:00:03.000Z"}]}"#,
            r#"{"id":"u2","timestamp":"2026-11-03T08:00:03.100Z","type":"user","content":[{"functionResponse":{"id":"read_file_1","name":"read_file","response":{"output":"x"}}}]}"#,
            r#"{"id":"g2","timestamp":"2026-11-03T08:00:04.000Z","type":"gemini","content":"Looks fine.","thoughts":[{"subject":"Reading","description":"the file"}],"model":"m"}"#,
            r#"{"sessionId":"5a5a5a5a-1111","projectHash":"h","startTime":"2026-11-03T09:00:00.000Z","lastUpdated":"2026-11-03T09:00:00.000Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"ctx","timestamp":"2026-11-03T09:00:00.000Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]},{"id":"u1","timestamp":"2026-11-03T09:00:00.000Z","type":"user","content":[{"text":"Please review: a.ts\nEnd."}]},{"id":"g1","timestamp":"2026-11-03T09:00:00.000Z","type":"gemini","content":[{"functionCall":{"id":"read_file_1","name":"read_file","args":{}}}]},{"id":"g1_response","timestamp":"2026-11-03T09:00:00.000Z","type":"user","content":[{"functionResponse":{"id":"read_file_1","name":"read_file","response":{"output":"x"}}}]},{"id":"g2","timestamp":"2026-11-03T09:00:00.000Z","type":"gemini","content":[{"text":"**Reading** the file","thought":true},{"text":"Looks fine."}]}]}}"#,
            r#"{"id":"u3","timestamp":"2026-11-03T09:00:05.000Z","type":"user","content":[{"text":"thanks"}]}"#,
            r#"{"id":"g3","timestamp":"2026-11-03T09:00:06.000Z","type":"gemini","content":"You are welcome.","model":"m"}"#,
        ],
    );
    w.ok(&["import", "--from", "gemini"]);
    let all = events(&w);
    let session = "5a5a5a5a-1111";
    assert_eq!(
        prompts_of(&all, session),
        ["Please review: a.ts\nEnd.", "thanks"],
        "no preamble, no tool result as a prompt; the command's expansion is the prompt it sent (as the hooks' BeforeAgent says), once"
    );
    let run = all
        .iter()
        .find(|e| e["type"] == "command/run")
        .expect("the slash command is a run");
    assert_eq!(run["data"]["name"], "review");
    assert_eq!(run["data"]["raw_input"], "   a.ts");
    assert_eq!(
        run["observed"]["at"].as_u64(),
        cmdlog_common::time::parse_rfc3339("2026-11-03T08:00:01.000Z"),
        "the resume's rewrite does not move it"
    );
    let done = all.iter().find(|e| e["type"] == "command/done").unwrap();
    assert_eq!(
        done["data"]["outcome"]["prompt"],
        "Please review: a.ts\nEnd."
    );
    let replies: String = all
        .iter()
        .filter(|e| e["data"]["sessionUpdate"] == "agent_message_chunk")
        .map(|e| e["data"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        replies, "Looks fine.You are welcome.",
        "no thought in the reply"
    );
    let ends = types_of(&all, session)
        .iter()
        .filter(|t| *t == "session/update:turn_complete")
        .count();
    assert_eq!(ends, 2, "each reply without a tool call ends a turn");
}

#[test]
fn a_qwen_chat_settles_a_command_with_its_expansion_and_keeps_its_own_prompts_apart() {
    let w = Workspace::new();
    // Written for this test from what Qwen Code 0.24 writes in its UI: the
    // invocation, its (empty) result, then the expansion; a hook's context; a
    // prompt from Qwen's scheduler.
    let common = r#""sessionId":"7a7a-q","cwd":"/p","version":"0.24.4""#;
    let line = |rest: &str| format!("{{{common},{rest}}}");
    let lines = [
        line(
            r#""uuid":"s1","timestamp":"2026-11-04T07:00:00.000Z","type":"system","subtype":"slash_command","systemPayload":{"phase":"invocation","rawCommand":"/review main","sentToModel":true}"#,
        ),
        line(
            r#""uuid":"s2","timestamp":"2026-11-04T07:00:00.010Z","type":"system","subtype":"slash_command","systemPayload":{"phase":"result","rawCommand":"/review main","outputHistoryItems":[]}"#,
        ),
        line(
            r#""uuid":"u1","timestamp":"2026-11-04T07:00:00.500Z","type":"user","provenance":"real_user","message":{"role":"user","parts":[{"text":"Review change $ARGUMENTS carefully.\n\n/review main"}]}"#,
        ),
        line(
            r#""uuid":"a1","timestamp":"2026-11-04T07:00:01.000Z","type":"assistant","message":{"role":"model","parts":[{"text":"Reviewed."}]}"#,
        ),
        line(
            r#""uuid":"u2","timestamp":"2026-11-04T07:01:00.000Z","type":"user","provenance":"real_user","message":{"role":"user","parts":[{"text":"fix it"},{"text":"<qwen:user-prompt-submit-context>\nbranch: main\n</qwen:user-prompt-submit-context>"}]}"#,
        ),
        line(
            r#""uuid":"a2","timestamp":"2026-11-04T07:01:01.000Z","type":"assistant","message":{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"run_shell_command","args":{"command":"make"}}}]}"#,
        ),
        line(
            r#""uuid":"t1","timestamp":"2026-11-04T07:01:02.000Z","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"run_shell_command","response":{"output":"ok"}}}]},"toolCallResult":{"callId":"call_1","status":"success","resultDisplay":"ok"}"#,
        ),
        line(
            r#""uuid":"a3","timestamp":"2026-11-04T07:01:03.000Z","type":"assistant","message":{"role":"model","parts":[{"text":"Fixed."}]}"#,
        ),
        line(
            r#""uuid":"c1","timestamp":"2026-11-04T08:00:00.000Z","type":"user","subtype":"cron","provenance":"system","systemPayload":{"displayText":"nightly check"},"message":{"role":"user","parts":[{"text":"nightly check"}]}"#,
        ),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    put_transcript(&w, ".qwen/projects/-p/chats/7a7a-q.jsonl", &refs);
    w.ok(&["import", "--from", "qwen"]);
    let all = events(&w);
    // The command's expansion is the prompt it sent (as the hooks'
    // UserPromptSubmit says); Qwen's own (cron) is not a prompt.
    assert_eq!(
        prompts_of(&all, "7a7a-q"),
        [
            "Review change $ARGUMENTS carefully.\n\n/review main",
            "fix it"
        ]
    );
    let done = all.iter().find(|e| e["type"] == "command/done").unwrap();
    assert_eq!(
        done["data"]["outcome"]["prompt"], "Review change $ARGUMENTS carefully.\n\n/review main",
        "settled by its expansion, not by the empty result"
    );
    assert!(
        all.iter()
            .any(|e| e["data"]["event"] == "user/cron" && e["data"].get("bookkeeping").is_none()),
        "the scheduler's prompt is kept, as itself, and shown"
    );
    let ends = types_of(&all, "7a7a-q")
        .iter()
        .filter(|t| *t == "session/update:turn_complete")
        .count();
    assert_eq!(ends, 2);
}

#[test]
fn qwen_hooks_record_each_command_once_no_empty_prompt_and_one_id_per_tool_call() {
    let w = Workspace::new();
    w.put(
        "ws/.qwen/commands/review.md",
        "Review change $ARGUMENTS carefully.\n",
    );
    let send = |session: &str, name: &str, fields: serde_json::Value| {
        let mut p = json!({"session_id": session, "cwd": w.ws.path(), "hook_event_name": name,
            "timestamp": "2026-11-05T10:00:00.000Z", "prompt_id": format!("{session}########0")});
        for (k, v) in fields.as_object().unwrap() {
            p[k] = v.clone();
        }
        assert!(hook(&w, "qwen", &p).status.success());
    };
    let expansion = "Review change $ARGUMENTS carefully.\n\n/review main";
    // Qwen Code 0.24.4: the expansion hook first, then the prompt naming the line.
    send(
        "q-new",
        "UserPromptExpansion",
        json!({"command_name": "review", "command_args": "main", "prompt": expansion}),
    );
    send(
        "q-new",
        "UserPromptSubmit",
        json!({"prompt": expansion, "submitted_prompt": "/review main"}),
    );
    send(
        "q-new",
        "PreToolUse",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
            "tool_use_id": "toolu_17_x", "tool_call_id": "call_1"}),
    );
    send(
        "q-new",
        "PostToolUse",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
            "tool_response": {"llmContent": "a"}, "tool_use_id": "toolu_17_x", "tool_call_id": "call_1"}),
    );
    send("q-new", "UserPromptSubmit", json!({"prompt": ""}));
    // A release without the expansion hook: the prompt alone names the command.
    send(
        "q-old",
        "UserPromptSubmit",
        json!({"prompt": expansion, "submitted_prompt": "/review main"}),
    );
    let all = events(&w);
    for session in ["q-new", "q-old"] {
        let runs: Vec<_> = all
            .iter()
            .filter(|e| e["session"] == session && e["type"] == "command/run")
            .collect();
        assert_eq!(runs.len(), 1, "{session}: one run: {runs:?}");
        assert_eq!(runs[0]["data"]["name"], "review");
        assert_eq!(runs[0]["data"]["raw_input"], " main");
        let done = all
            .iter()
            .find(|e| e["session"] == session && e["type"] == "command/done")
            .unwrap();
        assert_eq!(done["data"]["outcome"]["prompt"], expansion);
        assert_eq!(
            done["data"]["agent_check"]["identical"], true,
            "{session}: cmdlog expands it as Qwen did: {done}"
        );
    }
    assert_eq!(
        prompts_of(&all, "q-new"),
        [expansion],
        "no empty prompt after the tool result"
    );
    let ids: Vec<_> = all
        .iter()
        .filter(|e| e["session"] == "q-new" && e["data"]["toolCallId"].is_string())
        .map(|e| e["data"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["call_1", "call_1"],
        "the model's id, before and after"
    );
}
