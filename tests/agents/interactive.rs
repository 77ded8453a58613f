//! Interactive sessions as the agents' terminal UIs report them (the pinned
//! releases driven under tmux: tests/agents-real/interactive-*.test.mjs), in
//! payloads and chats written for these tests from what those runs showed:
//! a call approved and one denied in the dialog, `/model`, a turn's end; then
//! the agent's chat imported into the log the hooks wrote, which must add no
//! second event for a fact the hooks stated.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{codex_rollout, events, hook};
use cmdlog_test_support::Workspace;

fn send(w: &Workspace, agent: &str, payload: Value) {
    let name = payload["hook_event_name"].clone();
    assert!(hook(w, agent, &payload).status.success(), "{name}");
}

/// A hook payload: `base` with the fields of `rest` set over it.
fn with(mut base: Value, rest: Value) -> Value {
    for (k, x) in rest.as_object().unwrap() {
        base[k] = x.clone();
    }
    base
}

/// Each fact stated by more than one event of the session (not counting the
/// `agent/observed` that names the first). What is joined by its content
/// (`said:`) may be said again by the same source — the same prompt typed
/// twice — but never stated by two sources.
fn doubled(all: &[Value], session: &str) -> Vec<(String, Vec<u64>)> {
    let mut by_fact: HashMap<String, Vec<u64>> = HashMap::new();
    for e in all.iter().filter(|e| e["session"] == session) {
        if e["type"] == "agent/observed" {
            continue;
        }
        if let Some(fact) = e["observed"]["fact"].as_str() {
            let key = if fact.starts_with("said:") {
                format!(
                    "{fact} (by {})",
                    e["observed"]["source"].as_str().unwrap_or("")
                )
            } else {
                fact.to_string()
            };
            by_fact
                .entry(key)
                .or_default()
                .push(e["seq"].as_u64().unwrap());
        }
    }
    let said_by_two: Vec<String> = {
        let mut sources: HashMap<String, usize> = HashMap::new();
        for k in by_fact.keys().filter(|k| k.starts_with("said:")) {
            *sources
                .entry(k.split(" (by ").next().unwrap().to_string())
                .or_default() += 1;
        }
        sources
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(f, _)| f)
            .collect()
    };
    let mut out: Vec<_> = by_fact
        .into_iter()
        .filter(|(k, s)| {
            if k.starts_with("said:") {
                said_by_two.iter().any(|f| k.starts_with(f.as_str()))
            } else {
                s.len() > 1
            }
        })
        .collect();
    out.sort();
    out
}

/// The kinds of the session's events that state what happened (not the
/// agents' bookkeeping, not cmdlog's own), from `from_seq` on.
fn stated_since(all: &[Value], session: &str, from_seq: u64) -> Vec<String> {
    all.iter()
        .filter(|e| e["session"] == session && e["seq"].as_u64().unwrap() >= from_seq)
        .filter(|e| e["type"] != "agent/observed" && e["type"] != "import/checkpoint")
        .filter(|e| e["data"]["bookkeeping"] != true)
        .map(|e| match e["data"]["sessionUpdate"].as_str() {
            Some(u) => format!("{}:{u}", e["type"].as_str().unwrap()),
            None => e["type"].as_str().unwrap().to_string(),
        })
        .collect()
}

#[test]
fn a_qwen_session_in_its_ui_is_recorded_once_and_its_chat_adds_only_what_hooks_missed() {
    let w = Workspace::new();
    let sid = "5e55-q";
    let pid = |n: u32| format!("{sid}########{n}");
    let p = |name: &str, n: Option<u32>, rest: Value| {
        let mut v = json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "permission_mode": "default", "timestamp": "2026-12-07T04:08:50Z"});
        if let Some(n) = n {
            v["prompt_id"] = json!(pid(n));
        }
        with(v, rest)
    };
    let approved =
        json!({"command": "touch a.txt", "is_background": false, "description": "run it"});
    let denied = json!({"command": "touch d.txt", "is_background": false, "description": "run it"});
    // As Qwen Code 0.24.4 sends them in its UI: the request before the call,
    // naming no call; a denial reported only by the batch, as cancelled.
    for payload in [
        p(
            "UserPromptSubmit",
            Some(0),
            json!({"prompt": "hello", "submitted_prompt": "hello"}),
        ),
        p(
            "Stop",
            Some(0),
            json!({"last_assistant_message": "hi there"}),
        ),
        p(
            "UserPromptSubmit",
            Some(1),
            json!({"prompt": "make a", "submitted_prompt": "make a"}),
        ),
        p(
            "PermissionRequest",
            Some(1),
            json!({"tool_name": "run_shell_command", "tool_input": approved}),
        ),
        p(
            "PreToolUse",
            None,
            json!({"tool_name": "run_shell_command", "tool_input": approved, "tool_use_id": "toolu_1", "tool_call_id": "call_1"}),
        ),
        p(
            "PostToolUse",
            None,
            json!({"tool_name": "run_shell_command", "tool_input": approved, "tool_use_id": "toolu_1", "tool_call_id": "call_1", "tool_response": {"llmContent": "ok"}}),
        ),
        p(
            "PostToolBatch",
            None,
            json!({"tool_calls": [{"tool_name": "run_shell_command", "tool_input": approved, "tool_use_id": "call_1", "tool_call_id": "call_1", "status": "success", "tool_response": {"execution_status": "success"}}]}),
        ),
        p("UserPromptSubmit", Some(1), json!({"prompt": ""})),
        p("Stop", Some(1), json!({"last_assistant_message": "made a"})),
        p(
            "UserPromptSubmit",
            Some(2),
            json!({"prompt": "make d", "submitted_prompt": "make d"}),
        ),
        p(
            "PermissionRequest",
            Some(2),
            json!({"tool_name": "run_shell_command", "tool_input": denied}),
        ),
        p(
            "PostToolBatch",
            None,
            json!({"tool_calls": [{"tool_name": "run_shell_command", "tool_input": denied, "tool_use_id": "call_2", "tool_call_id": "call_2", "status": "cancelled", "tool_response": {"execution_status": "not_started"}}]}),
        ),
        p("SessionEnd", None, json!({"reason": "prompt_input_exit"})),
    ] {
        send(&w, "qwen", payload);
    }
    let hooks_only = events(&w);
    let head = hooks_only.last().unwrap()["seq"].as_u64().unwrap();
    let requested: Vec<&Value> = hooks_only
        .iter()
        .filter(|e| e["type"] == "permission/requested")
        .collect();
    let answers: Vec<(String, String, String)> = hooks_only
        .iter()
        .filter(|e| e["type"] == "permission/resolved")
        .map(|e| {
            let d = &e["data"];
            (
                d["request_id"].as_str().unwrap().to_string(),
                d["decision"]["optionId"].as_str().unwrap().to_string(),
                d["decided_by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let ids: Vec<String> = requested
        .iter()
        .map(|r| r["data"]["request_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        answers,
        [
            (ids[0].clone(), "allow".into(), "user".into()),
            (ids[1].clone(), "reject".into(), "user".into()),
        ],
        "each request answered, by the user: {hooks_only:#?}"
    );
    let linked = hooks_only
        .iter()
        .find(|e| e["data"]["sessionUpdate"] == "tool_call" && e["data"]["toolCallId"] == "call_1")
        .unwrap();
    assert_eq!(
        linked["data"]["_meta"]["permissionRequest"], ids[0],
        "the call names the request asked before it"
    );
    assert!(
        doubled(&hooks_only, sid).is_empty(),
        "{:?}",
        doubled(&hooks_only, sid)
    );

    // Qwen's chat of the same session: each prompt followed by the line that
    // names its prompt id; `/model` through its dialog; the denied call.
    let common = format!(r#""sessionId":"{sid}","cwd":"/p","version":"0.24.4""#);
    let mut n = 0;
    let mut line = |rest: String| {
        n += 1;
        format!(
            r#"{{"uuid":"r{n}","timestamp":"2026-12-07T04:08:{:02}.000Z",{common},{rest}}}"#,
            50 + n / 4
        )
    };
    let user = |text: &str| {
        format!(r#""type":"user","message":{{"role":"user","parts":[{{"text":"{text}"}}]}}"#)
    };
    let snapshot = |n: u32| {
        format!(
            r#""type":"system","subtype":"file_history_snapshot","systemPayload":{{"snapshots":[{{"promptId":"{}","trackedFileBackups":{{}}}}]}}"#,
            pid(n)
        )
    };
    let say = |text: &str| {
        format!(
            r#""type":"assistant","model":"m1","message":{{"role":"model","parts":[{{"text":"{text}"}}]}}"#
        )
    };
    let call = |id: &str, cmd: &str| {
        format!(
            r#""type":"assistant","model":"m1","message":{{"role":"model","parts":[{{"functionCall":{{"id":"{id}","name":"run_shell_command","args":{{"command":"{cmd}"}}}}}}]}}"#
        )
    };
    let result = |id: &str, status: &str| {
        format!(
            r#""type":"tool_result","message":{{"role":"user","parts":[{{"functionResponse":{{"id":"{id}","response":{{"output":"x"}}}}}}]}},"toolCallResult":{{"callId":"{id}","status":"{status}"}}"#
        )
    };
    let slash = |phase: &str, extra: &str| {
        format!(
            r#""type":"system","subtype":"slash_command","systemPayload":{{"phase":"{phase}","rawCommand":"/model"{extra}}}"#
        )
    };
    let lines = vec![
        line(user("hello")),
        line(snapshot(0)),
        line(say("hi there")),
        line(user("make a")),
        line(snapshot(1)),
        line(call("call_1", "touch a.txt")),
        line(result("call_1", "success")),
        line(say("made a")),
        line(user("make d")),
        line(snapshot(2)),
        line(call("call_2", "touch d.txt")),
        line(result("call_2", "cancelled")),
        line(slash(
            "invocation",
            r#","sentToModel":false,"hiddenInvocation":true"#,
        )),
        line(slash("result", r#","outputHistoryItems":[]"#)),
        line(slash(
            "result",
            r#","outputHistoryItems":[{"type":"info","text":"authType: openai\nUsing model: m2"}]"#,
        )),
    ];
    let file = w
        .home
        .path()
        .join(format!(".qwen/projects/-p/chats/{sid}.jsonl"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "qwen"]);
    let all = events(&w);
    assert!(
        doubled(&all, sid).is_empty(),
        "facts doubled by the import: {:?}",
        doubled(&all, sid)
    );
    assert_eq!(
        stated_since(&all, sid, head + 1),
        ["command/run", "command/done", "session/model_switched"],
        "the import adds only what the hooks did not see: {all:#?}"
    );
    let switched = all
        .iter()
        .find(|e| e["type"] == "session/model_switched")
        .unwrap();
    assert_eq!(switched["data"]["model"], "m2");
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_codex_session_in_its_ui_joins_its_rollout_on_turn_ids_and_a_refusal_fails() {
    let w = Workspace::new();
    let sid = "01a2b3c4-0000-7000-8000-0000000c0dea";
    let p = |name: &str, rest: Value| {
        with(
            json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "permission_mode": "default", "model": "m1"}),
            rest,
        )
    };
    let asked = json!({"command": "touch x.txt"});
    // As Codex 0.171 sends them in its UI: the request after the call, the
    // justification in its input; a refusal interrupts the turn.
    for payload in [
        p(
            "UserPromptSubmit",
            json!({"prompt": "hello", "turn_id": "t1"}),
        ),
        p(
            "Stop",
            json!({"turn_id": "t1", "last_assistant_message": "hi"}),
        ),
        p(
            "UserPromptSubmit",
            json!({"prompt": "make x", "turn_id": "t2"}),
        ),
        p(
            "PreToolUse",
            json!({"turn_id": "t2", "tool_name": "Bash", "tool_input": asked, "tool_use_id": "call_1"}),
        ),
        p(
            "PermissionRequest",
            json!({"turn_id": "t2", "tool_name": "Bash", "tool_input": {"command": "touch x.txt", "description": "to make x"}}),
        ),
        p("Interrupt", json!({"turn_id": "t2"})),
    ] {
        send(&w, "codex", payload);
    }
    let hooks_only = events(&w);
    let head = hooks_only.last().unwrap()["seq"].as_u64().unwrap();
    let answer = hooks_only
        .iter()
        .find(|e| e["type"] == "permission/resolved")
        .expect("the refused request is answered");
    assert_eq!(
        answer["data"]["request_id"], "ask-call_1",
        "tied to its call"
    );
    assert_eq!(answer["data"]["decision"]["outcome"], "cancelled");
    assert_eq!(answer["data"]["decided_by"], "user");
    let settled = hooks_only
        .iter()
        .find(|e| e["data"]["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(settled["data"]["status"], "failed");
    assert_eq!(settled["data"]["rawOutput"]["settled"], "interrupted");

    let line = |ts: &str, kind: &str, payload: Value| {
        json!({"timestamp": format!("2026-12-07T04:22:{ts}Z"), "type": kind, "payload": payload})
            .to_string()
    };
    let user = |turn: &str, text: &str| {
        json!({"type": "item_completed", "thread_id": sid, "turn_id": turn,
            "item": {"type": "UserMessage", "id": format!("u-{turn}"), "content": [{"type": "text", "text": text}]}})
    };
    let agent = |turn: &str, text: &str| {
        json!({"type": "item_completed", "thread_id": sid, "turn_id": turn,
            "item": {"type": "AgentMessage", "id": format!("a-{turn}"), "content": [{"type": "Text", "text": text}]}})
    };
    let lines = [
        line(
            "17.000",
            "session_meta",
            json!({"id": sid, "source": "vscode", "originator": "codex-tui"}),
        ),
        line(
            "17.100",
            "turn_context",
            json!({"turn_id": "t1", "model": "m1"}),
        ),
        line("17.200", "event_msg", user("t1", "hello")),
        line("17.300", "event_msg", agent("t1", "hi")),
        line(
            "17.400",
            "event_msg",
            json!({"type": "task_complete", "turn_id": "t1", "last_agent_message": "hi"}),
        ),
        line(
            "18.100",
            "turn_context",
            json!({"turn_id": "t2", "model": "m1"}),
        ),
        line("18.200", "event_msg", user("t2", "make x")),
        line(
            "18.300",
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "call_id": "call_1",
            "arguments": "{\"cmd\":\"touch x.txt\",\"justification\":\"to make x\"}"}),
        ),
        line(
            "19.300",
            "response_item",
            json!({"type": "function_call_output", "call_id": "call_1",
            "output": "Wall time: 1.0 seconds\naborted by user"}),
        ),
        line(
            "19.400",
            "event_msg",
            json!({"type": "turn_aborted", "turn_id": "t2", "reason": "interrupted"}),
        ),
        line(
            "20.100",
            "turn_context",
            json!({"turn_id": "t3", "model": "m2"}),
        ),
    ];
    codex_rollout(&w, sid, &lines);
    w.ok(&["import", "--from", "codex"]);
    let all = events(&w);
    assert!(
        doubled(&all, sid).is_empty(),
        "facts doubled by the import: {:?}",
        doubled(&all, sid)
    );
    assert_eq!(
        stated_since(&all, sid, head + 1),
        ["session/model_switched"],
        "the import adds only what the hooks did not see: {all:#?}"
    );
    // One call, one name: the rollout's `exec_command {cmd, …}` is the hooks'
    // `Bash {command}`, its arguments kept beside.
    let fresh = w.ws.path().join("fresh.redb");
    w.ok(&[
        "import",
        "--from",
        "codex",
        "--log",
        fresh.to_str().unwrap(),
    ]);
    let alone: Vec<Value> = w
        .ok(&["log", "--json", "--all", "--log", fresh.to_str().unwrap()])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = alone
        .iter()
        .find(|e| e["data"]["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(call["data"]["title"], "Bash");
    assert_eq!(call["data"]["rawInput"], json!({"command": "touch x.txt"}));
    assert_eq!(
        call["data"]["_meta"]["arguments"]["justification"],
        "to make x"
    );
    let verify = w.run(&["verify"]);
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(
        !said.contains("conflict"),
        "hooks and rollout say the call alike: {said}"
    );
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_gemini_chat_rewritten_after_a_denial_keeps_what_happened_and_joins_its_hooks_by_content() {
    let w = Workspace::new();
    let sid = "6e61-g";
    let p = |name: &str, rest: Value| {
        with(
            json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "transcript_path": "", "timestamp": "2026-12-07T04:08:00Z"}),
            rest,
        )
    };
    let shell =
        |cmd: &str| json!({"tool_name": "run_shell_command", "tool_input": {"command": cmd}});
    // As Gemini CLI 0.61 sends them in its UI: the dialog only as a
    // notification; nothing at all for a denial; three ends at exit.
    for payload in [
        p("BeforeAgent", json!({"prompt": "hello"})),
        p(
            "AfterAgent",
            json!({"prompt": "hello", "prompt_response": "hi there"}),
        ),
        p("BeforeAgent", json!({"prompt": "make d"})),
        p("BeforeTool", shell("touch d.txt")),
        p(
            "Notification",
            json!({"notification_type": "ToolPermission", "message": "confirm", "details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch d.txt"}}),
        ),
        p("BeforeAgent", json!({"prompt": "hello"})),
        p(
            "AfterAgent",
            json!({"prompt": "hello", "prompt_response": "hi there"}),
        ),
        p("SessionEnd", json!({"reason": "exit"})),
        p("SessionEnd", json!({"reason": "exit"})),
        p("SessionEnd", json!({"reason": "exit"})),
    ] {
        send(&w, "gemini", payload);
    }
    let hooks_only = events(&w);
    let head = hooks_only.last().unwrap()["seq"].as_u64().unwrap();
    let of = |all: &[Value], t: &str| {
        all.iter()
            .filter(|e| e["session"] == sid && e["type"] == t)
            .count()
    };
    assert_eq!(
        of(&hooks_only, "session/ended"),
        1,
        "one end: {hooks_only:#?}"
    );
    let resolved: Vec<&Value> = hooks_only
        .iter()
        .filter(|e| e["type"] == "permission/resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "the dialog's request is answered");
    assert_eq!(resolved[0]["data"]["decision"]["optionId"], "reject");

    // The chat: each record, then the denial's rewrite — the history again
    // under new ids, stamped with the rewrite's time — and its $set.
    let rec = |id: &str, ts: &str, rest: &str| {
        format!(r#"{{"id":"{id}","timestamp":"2026-12-07T04:{ts}Z",{rest}}}"#)
    };
    let user = |t: &str| format!(r#""type":"user","content":[{{"text":"{t}"}}]"#);
    let reply =
        |t: &str, model: &str| format!(r#""type":"gemini","model":"{model}","content":"{t}""#);
    let mut lines = vec![
        format!(
            r#"{{"sessionId":"{sid}","projectHash":"p","startTime":"2026-12-07T04:07:00Z","kind":"main"}}"#
        ),
        rec("u1", "08:01.000", &user("hello")),
        rec("g1", "08:02.000", &reply("hi there", "m1")),
        rec("u2", "08:10.000", &user("make d")),
        rec(
            "g2",
            "08:11.000",
            r#""type":"gemini","model":"m1","content":"","toolCalls":[{"id":"run_1","name":"run_shell_command","args":{"command":"touch d.txt"},"status":"cancelled","result":[{"functionResponse":{"id":"run_1","response":{"error":"[Operation Cancelled] Reason: User denied execution."}}}]}]"#,
        ),
        rec(
            "i1",
            "08:20.000",
            r#""type":"info","content":"Request cancelled.""#,
        ),
    ];
    // The rewrite's copies (API shape, no model, the rewrite's time).
    for (id, rest) in [
        ("c1", user("hello")),
        (
            "c2",
            r#""type":"gemini","content":[{"text":"hi there"}]"#.to_string(),
        ),
    ] {
        lines.push(rec(id, "08:20.001", &rest));
    }
    lines.push(r#"{"$set":{"messages":[{"id":"c1","type":"user","content":[{"text":"hello"}]},{"id":"c2","type":"gemini","content":[{"text":"hi there"}]}]}}"#.to_string());
    lines.push(rec("u3", "08:30.000", &user("hello")));
    lines.push(rec("g3", "08:31.000", &reply("hi there", "m2")));
    let file = w.home.path().join(format!(
        ".gemini/tmp/p/chats/session-2026-12-07T04-07-{sid}.jsonl"
    ));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "gemini"]);
    let all = events(&w);
    assert!(doubled(&all, sid).is_empty(), "{:?}", doubled(&all, sid));
    assert_eq!(
        stated_since(&all, sid, head + 1),
        ["session/model_switched"],
        "the import adds only the switch (the same prompt twice is joined twice, in order): {all:#?}"
    );
    let observed = all.iter().filter(|e| e["type"] == "agent/observed").count();
    assert!(
        observed >= 8,
        "every original record joined to its hook: {observed}"
    );
    assert!(
        all.iter().any(|e| e["data"]["event"] == "chat_rewritten"),
        "the rewrite kept as what it is"
    );
    assert_eq!(of(&all, "session/ended"), 1);
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_claude_subagent_runs_as_a_session_of_its_own_under_the_call_that_started_it() {
    let w = Workspace::new();
    let sid = "7c1a-parent";
    let p = |name: &str, rest: Value| {
        with(
            json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "permission_mode": "default", "prompt_id": "p1"}),
            rest,
        )
    };
    let sub = json!({"agent_id": "a7160f17ab425b300", "agent_type": "general-purpose"});
    let by_sub = |v: Value| with(v, sub.clone());
    let task = json!({"description": "a sub task", "prompt": "touch s.txt", "subagent_type": "general-purpose"});
    let touch = json!({"command": "touch s.txt"});
    // As Claude Code 2.1.332 sends them: the subagent's own payloads name it
    // (`agent_id`) under its parent's session id.
    for payload in [
        p("UserPromptSubmit", json!({"prompt": "delegate"})),
        p(
            "PreToolUse",
            json!({"tool_name": "Agent", "tool_input": task, "tool_use_id": "toolu_a"}),
        ),
        p("SubagentStart", sub.clone()),
        p(
            "PostToolUse",
            json!({"tool_name": "Agent", "tool_input": task, "tool_use_id": "toolu_a", "tool_response": {"status": "async_launched", "agentId": "a7160f17ab425b300"}}),
        ),
        by_sub(p(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": touch, "tool_use_id": "toolu_s"}),
        )),
        p("Stop", json!({"last_assistant_message": "launched"})),
        by_sub(p(
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": touch}),
        )),
        by_sub(p(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": touch, "tool_use_id": "toolu_s", "tool_response": {"stdout": ""}}),
        )),
        by_sub(p(
            "SubagentStop",
            json!({"last_assistant_message": "done it", "agent_transcript_path": "/x/subagents/agent-a7160f17ab425b300.jsonl"}),
        )),
    ] {
        send(&w, "claude-code", payload);
    }
    let all = events(&w);
    let child = "a7160f17ab425b300";
    let created = all
        .iter()
        .find(|e| e["session"] == child && e["type"] == "session/created")
        .expect("the subagent's session");
    assert_eq!(
        created["data"]["parent"],
        json!({"session": sid, "tool_call_id": "toolu_a", "agent_type": "general-purpose"})
    );
    let of = |s: &str, kind: &str| {
        all.iter()
            .filter(|e| {
                e["session"] == s && (e["type"] == kind || e["data"]["sessionUpdate"] == kind)
            })
            .count()
    };
    assert_eq!(of(child, "tool_call"), 1, "its call is its own: {all:#?}");
    assert_eq!(
        of(sid, "tool_call"),
        1,
        "the parent's only call is the Agent call"
    );
    assert_eq!(
        of(child, "permission/resolved"),
        1,
        "its request answered in its session"
    );
    assert_eq!(of(child, "session/ended"), 1);
    assert_eq!(of(sid, "session/ended"), 0, "the parent goes on");
    let listed = w.ok(&["sessions"]);
    let lines: Vec<&str> = listed.lines().collect();
    let parent_at = lines
        .iter()
        .position(|l| l.starts_with(sid))
        .expect(&listed);
    assert!(
        lines[parent_at + 1].starts_with(&format!("└ {child}"))
            && lines[parent_at + 1].contains("(via toolu_a)"),
        "the subagent under its parent: {listed}"
    );
    // Its transcript (under the parent's, with its .meta.json) imported into
    // the same log states nothing again.
    let head = all.last().unwrap()["seq"].as_u64().unwrap();
    let dir = w
        .home
        .path()
        .join(format!(".claude/projects/-p/{sid}/subagents"));
    std::fs::create_dir_all(&dir).unwrap();
    let line = |rest: &str| {
        format!(
            r#"{{"sessionId":"{sid}","agentId":"{child}","isSidechain":true,"timestamp":"2026-12-07T04:10:00.000Z",{rest}}}"#
        )
    };
    let lines = [
        line(
            r#""type":"user","uuid":"s1","promptId":"p1","message":{"role":"user","content":"touch s.txt"}"#,
        ),
        line(
            r#""type":"assistant","uuid":"s2","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"Bash","input":{"command":"touch s.txt"}}]}"#,
        ),
        line(
            r#""type":"user","uuid":"s3","promptId":"p1","toolUseResult":{"stdout":""},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":""}]}"#,
        ),
        line(
            r#""type":"assistant","uuid":"s4","message":{"role":"assistant","content":[{"type":"text","text":"done it"}]}"#,
        ),
    ];
    std::fs::write(
        dir.join(format!("agent-{child}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("agent-{child}.meta.json")),
        r#"{"agentType":"general-purpose","toolUseId":"toolu_a"}"#,
    )
    .unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    let all = events(&w);
    assert!(
        doubled(&all, child).is_empty(),
        "{:?}",
        doubled(&all, child)
    );
    assert_eq!(
        stated_since(&all, child, head + 1),
        ["session/prompt"],
        "only the task it was given, which no hook reports: {all:#?}"
    );
    // Its report nests the subagent's own conversation under it.
    let report = w.ws.path().join("parent.html");
    w.ok(&["report", "--session", sid, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    let nested = html
        .find(&format!("Subagent {child}"))
        .expect("the subagent's section");
    assert!(
        html[nested..].contains("done it"),
        "its last reply, in its section"
    );
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_qwen_subagents_transcript_is_its_own_session_and_joins_its_hooks() {
    let w = Workspace::new();
    let sid = "9a9a-q";
    let child = "general-purpose-call_9";
    let p = |name: &str, rest: Value| {
        with(
            json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "permission_mode": "default", "prompt_id": format!("{sid}########0")}),
            rest,
        )
    };
    let task = json!({"description": "count", "prompt": "count the files", "subagent_type": "general-purpose"});
    for payload in [
        p(
            "UserPromptSubmit",
            json!({"prompt": "delegate", "submitted_prompt": "delegate"}),
        ),
        p(
            "PreToolUse",
            json!({"tool_name": "agent", "tool_input": task, "tool_use_id": "toolu_1", "tool_call_id": "call_9"}),
        ),
        p(
            "SubagentStart",
            json!({"agent_id": child, "agent_type": "general-purpose"}),
        ),
        p(
            "SubagentStop",
            json!({"agent_id": child, "agent_type": "general-purpose", "last_assistant_message": "3 files"}),
        ),
        p(
            "PostToolUse",
            json!({"tool_name": "agent", "tool_input": task, "tool_use_id": "toolu_1", "tool_call_id": "call_9", "tool_response": {"llmContent": "3 files"}}),
        ),
    ] {
        send(&w, "qwen", payload);
    }
    let hooks_only = events(&w);
    let head = hooks_only.last().unwrap()["seq"].as_u64().unwrap();
    // Qwen's transcript of the subagent: subagents/<parent>/agent-<id>.jsonl
    // and its .meta.json.
    let dir = w
        .home
        .path()
        .join(format!(".qwen/projects/-p/subagents/{sid}"));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = |uuid: &str, rest: &str| {
        format!(
            r#"{{"uuid":"{uuid}","sessionId":"{sid}","agentId":"{child}","isSidechain":true,"timestamp":"2026-12-07T04:10:04.000Z",{rest}}}"#
        )
    };
    let lines = [
        rec(
            "s1",
            r#""type":"user","message":{"role":"user","parts":[{"text":"count the files"}]}"#,
        ),
        rec(
            "s2",
            r#""type":"assistant","message":{"role":"model","parts":[{"text":"3 files"}]}"#,
        ),
    ];
    std::fs::write(
        dir.join(format!("agent-{child}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("agent-{child}.meta.json")),
        format!(r#"{{"agentId":"{child}","agentType":"general-purpose","parentSessionId":"{sid}","toolUseId":"call_9","status":"completed","lastUpdatedAt":"2026-12-07T04:10:05.000Z"}}"#),
    )
    .unwrap();
    w.ok(&["import", "--from", "qwen"]);
    let all = events(&w);
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["session"] == child && e["type"] == "session/created")
        .collect();
    assert_eq!(created.len(), 1, "begun once: {all:#?}");
    assert_eq!(created[0]["data"]["parent"]["tool_call_id"], "call_9");
    assert!(
        doubled(&all, child).is_empty(),
        "{:?}",
        doubled(&all, child)
    );
    assert_eq!(
        stated_since(&all, child, head + 1),
        ["session/prompt"],
        "only the task it was given, which no hook reports (its end, `status: completed`, is SubagentStop's): {all:#?}"
    );
    // Imported alone, it ends as its meta file says.
    let fresh = w.ws.path().join("fresh.redb");
    w.ok(&["import", "--from", "qwen", "--log", fresh.to_str().unwrap()]);
    let alone = super::events_of(&w, &fresh);
    let ended: Vec<&Value> = alone
        .iter()
        .filter(|e| e["session"] == child && e["type"] == "session/ended")
        .collect();
    assert_eq!(ended.len(), 1, "{alone:#?}");
    assert_eq!(ended[0]["data"]["reason"], "subagent_stop");
    let verify = w.run(&["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_report_shows_what_an_import_added_where_it_happened() {
    let w = Workspace::new();
    let sid = "0de7-q";
    let pid = |n: u32| format!("{sid}########{n}");
    let hook = |name: &str, n: u32, at: &str, rest: Value| {
        with(
            json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
            "prompt_id": pid(n), "timestamp": format!("2026-12-07T10:00:{at}Z")}),
            rest,
        )
    };
    for payload in [
        hook(
            "UserPromptSubmit",
            0,
            "00",
            json!({"prompt": "first prompt", "submitted_prompt": "first prompt"}),
        ),
        hook(
            "Stop",
            0,
            "01",
            json!({"last_assistant_message": "first reply"}),
        ),
        hook(
            "UserPromptSubmit",
            1,
            "20",
            json!({"prompt": "third prompt", "submitted_prompt": "third prompt"}),
        ),
        hook(
            "Stop",
            1,
            "21",
            json!({"last_assistant_message": "third reply"}),
        ),
    ] {
        send(&w, "qwen", payload);
    }
    // The chat holds a built-in command between them, which no hook reports.
    let common = format!(r#""sessionId":"{sid}","cwd":"/p","version":"0.24.4""#);
    let rec = |uuid: &str, at: &str, rest: &str| {
        format!(r#"{{"uuid":"{uuid}","timestamp":"2026-12-07T10:00:{at}.000Z",{common},{rest}}}"#)
    };
    let snapshot = |n: u32| {
        format!(
            r#""type":"system","subtype":"file_history_snapshot","systemPayload":{{"snapshots":[{{"promptId":"{}"}}]}}"#,
            pid(n)
        )
    };
    let lines = [
        rec(
            "u1",
            "00",
            r#""type":"user","message":{"role":"user","parts":[{"text":"first prompt"}]}"#,
        ),
        rec("f1", "00", &snapshot(0)),
        rec(
            "a1",
            "01",
            r#""type":"assistant","message":{"role":"model","parts":[{"text":"first reply"}]}"#,
        ),
        rec(
            "s1",
            "10",
            r#""type":"system","subtype":"slash_command","systemPayload":{"phase":"invocation","rawCommand":"/about","sentToModel":false}"#,
        ),
        rec(
            "s2",
            "10",
            r#""type":"system","subtype":"slash_command","systemPayload":{"phase":"result","rawCommand":"/about","outputHistoryItems":[{"type":"info","text":"Qwen Code 0.24.4"}]}"#,
        ),
        rec(
            "u2",
            "20",
            r#""type":"user","message":{"role":"user","parts":[{"text":"third prompt"}]}"#,
        ),
        rec("f2", "20", &snapshot(1)),
        rec(
            "a2",
            "21",
            r#""type":"assistant","message":{"role":"model","parts":[{"text":"third reply"}]}"#,
        ),
    ];
    let file = w
        .home
        .path()
        .join(format!(".qwen/projects/-p/chats/{sid}.jsonl"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "qwen"]);
    let report = w.ws.path().join("r.html");
    w.ok(&["report", "--session", sid, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} in the report"));
    assert!(
        at("first prompt") < at("/about") && at("/about") < at("third prompt"),
        "the imported run where it happened, between the prompts"
    );
}

#[test]
fn an_import_never_reopens_an_ended_session_and_its_untimed_lines_keep_the_agents_time() {
    let w = Workspace::new();
    let sid = "e4d0-c";
    for payload in [
        json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": "UserPromptSubmit", "prompt": "one", "prompt_id": "p1"}),
        json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
    ] {
        send(&w, "claude-code", payload);
    }
    // The transcript: the prompt the hooks saw, one they did not (earlier
    // than the end, appended after it), and a line of Claude Code's own
    // without a time.
    let line = |rest: &str| format!(r#"{{"sessionId":"{sid}",{rest}}}"#);
    let lines = [
        line(
            r#""type":"user","uuid":"u1","promptId":"p1","timestamp":"2026-12-07T00:00:00.000Z","message":{"role":"user","content":"one"}"#,
        ),
        line(
            r#""type":"user","uuid":"u2","promptId":"p2","timestamp":"2026-12-07T00:01:00.000Z","message":{"role":"user","content":"two"}"#,
        ),
        line(r#""type":"last-prompt","uuid":"x1","lastPrompt":"two""#),
        // Written when the session ends: its end, as the hooks' SessionEnd.
        line(r#""type":"cost-state","totalCostUSD":0.001"#),
    ];
    let file = w
        .home
        .path()
        .join(format!(".claude/projects/-p/{sid}.jsonl"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    let listed: Value = serde_json::from_str(&w.ok(&["sessions", "--json"])).unwrap();
    let me = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == sid)
        .unwrap();
    assert_eq!(me["ended"], "ended", "an import does not reopen it: {me}");
    let ends = |all: &[Value]| {
        all.iter()
            .filter(|e| e["session"] == sid && e["type"] == "session/ended")
            .count()
    };
    assert_eq!(
        ends(&events(&w)),
        1,
        "the transcript's end is the hooks' one"
    );
    // Imported alone, the untimed line takes the time of the line before it,
    // and the session ends as the transcript says.
    let fresh = w.ws.path().join("fresh.redb");
    w.ok(&[
        "import",
        "--from",
        "claude-code",
        "--log",
        fresh.to_str().unwrap(),
    ]);
    let listed: Value =
        serde_json::from_str(&w.ok(&["sessions", "--json", "--log", fresh.to_str().unwrap()]))
            .unwrap();
    let me = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == sid)
        .unwrap();
    assert_eq!(
        me["last_at"],
        cmdlog_common::time::parse_rfc3339("2026-12-07T00:01:00.000Z").unwrap(),
        "{me}"
    );
    assert_eq!(me["ended"], "ended", "{me}");
}

#[test]
fn who_allowed_each_call_is_kept_from_the_transcripts_that_say_it() {
    let w = Workspace::new();
    // Claude Code's tool result lines: `permissionDecision`.
    let cl = "c0de-who";
    let line = |rest: &str| {
        format!(r#"{{"sessionId":"{cl}","timestamp":"2026-12-07T04:00:00.000Z",{rest}}}"#)
    };
    let call = |id: &str| {
        line(&format!(
            r#""type":"assistant","uuid":"a-{id}","message":{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"Bash","input":{{"command":"ls"}}}}]}}"#
        ))
    };
    let result = |id: &str, source: &str| {
        line(&format!(
            r#""type":"user","uuid":"r-{id}","permissionDecision":{{"decision":"accept","source":"{source}"}},"message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"ok"}}]}}"#
        ))
    };
    let lines = [
        call("t1"),
        result("t1", "user_temporary"),
        call("t2"),
        result("t2", "config"),
    ];
    let file = w
        .home
        .path()
        .join(format!(".claude/projects/-p/{cl}.jsonl"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    // Qwen Code's chat: the `ui_telemetry` record of each call.
    let qw = "c0de-qwho";
    let rec = |uuid: &str, rest: &str| {
        format!(
            r#"{{"uuid":"{uuid}","sessionId":"{qw}","timestamp":"2026-12-07T04:00:00.000Z",{rest}}}"#
        )
    };
    let lines = [
        rec(
            "a1",
            r#""type":"assistant","message":{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"run_shell_command","args":{"command":"echo hi"}}}]}"#,
        ),
        rec(
            "u1",
            r#""type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.tool_call","call_id":"call_1","decision":"auto_accept"}}"#,
        ),
        rec(
            "r1",
            r#""type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","response":{"output":"hi"}}}]},"toolCallResult":{"callId":"call_1","status":"success"}"#,
        ),
    ];
    let file = w
        .home
        .path()
        .join(format!(".qwen/projects/-p/chats/{qw}.jsonl"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    w.ok(&["import", "--from", "claude-code"]);
    w.ok(&["import", "--from", "qwen"]);
    let all = events(&w);
    let permission = |id: &str| {
        all.iter()
            .find(|e| {
                e["data"]["sessionUpdate"] == "tool_call_update" && e["data"]["toolCallId"] == id
            })
            .map(|e| e["data"]["_meta"]["permission"].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        permission("t1")["decidedBy"],
        "user",
        "{:?}",
        permission("t1")
    );
    assert_eq!(permission("t1")["source"], "user_temporary");
    assert_eq!(permission("t2")["decidedBy"], "rule");
    assert_eq!(permission("call_1")["decision"], "auto_accept");
    assert!(w.run(&["verify"]).status.success());
}

#[test]
fn a_gemini_subagents_chat_is_its_own_session_under_the_invoke_agent_call() {
    let w = Workspace::new();
    let parent = "4c1e0000-aaaa-4bbb-8ccc-000000000001";
    let child = "9125aaaa-bbbb-4ccc-8ddd-000000000002";
    let chats = w.home.path().join(".gemini/tmp/p/chats");
    std::fs::create_dir_all(chats.join(parent)).unwrap();
    // The parent's chat: a prompt, then the invoke_agent call naming the
    // subagent's session as agentId.
    let parent_chat = [
        format!(
            r#"{{"sessionId":"{parent}","projectHash":"h","startTime":"2026-12-07T04:10:00.000Z","lastUpdated":"2026-12-07T04:10:00.000Z","kind":"main"}}"#
        ),
        r#"{"id":"m1","timestamp":"2026-12-07T04:10:00.000Z","type":"user","content":[{"text":"map the repo"}]}"#.to_string(),
        format!(
            r#"{{"id":"m2","timestamp":"2026-12-07T04:10:01.000Z","type":"gemini","content":"","model":"gemini-2.5-pro","toolCalls":[{{"id":"invoke_agent_1","name":"invoke_agent","args":{{"agent_name":"codebase_investigator","prompt":"map the repo"}},"status":"success","timestamp":"2026-12-07T04:10:03.000Z","agentId":"{child}","result":[{{"functionResponse":{{"id":"invoke_agent_1","name":"invoke_agent","response":{{"output":"done"}}}}}}]}}]}}"#
        ),
    ];
    std::fs::write(
        chats.join(format!("session-2026-12-07T04-10-{}.jsonl", &parent[..8])),
        parent_chat.join("\n") + "\n",
    )
    .unwrap();
    // The subagent's chat: chats/<parent>/<child>.jsonl.
    let child_chat = [
        format!(
            r#"{{"sessionId":"{child}","projectHash":"h","startTime":"2026-12-07T04:10:01.500Z","lastUpdated":"2026-12-07T04:10:01.500Z","kind":"subagent"}}"#
        ),
        r#"{"id":"c1","timestamp":"2026-12-07T04:10:01.500Z","type":"user","content":[{"text":"Investigate: map the repo"}]}"#.to_string(),
        format!(
            r#"{{"id":"c2","timestamp":"2026-12-07T04:10:02.000Z","type":"gemini","content":"","model":"gemini-2.5-pro","toolCalls":[{{"id":"{child}#0-0","name":"complete_task","args":{{"report":"fine"}},"status":"success","timestamp":"2026-12-07T04:10:02.100Z","result":[{{"functionResponse":{{"id":"{child}#0-0","name":"complete_task","response":{{"output":"ok"}}}}}}]}}]}}"#
        ),
    ];
    std::fs::write(
        chats.join(parent).join(format!("{child}.jsonl")),
        child_chat.join("\n") + "\n",
    )
    .unwrap();
    w.ok(&["import", "--from", "gemini"]);
    let all = events(&w);
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["session"] == child && e["type"] == "session/created")
        .collect();
    assert_eq!(created.len(), 1, "begun once: {all:#?}");
    let by = &created[0]["data"]["parent"];
    assert_eq!(by["session"], parent, "{by}");
    assert_eq!(by["tool_call_id"], "invoke_agent_1", "{by}");
    assert_eq!(by["agent_type"], "codebase_investigator", "{by}");
    assert!(
        all.iter().any(|e| e["session"] == child
            && e["type"] == "session/prompt"
            && e["data"]["text"] == "Investigate: map the repo"),
        "its task: {all:#?}"
    );
    // The tree: the subagent under its parent, through the call.
    let tree = w.ok(&["sessions"]);
    assert!(
        tree.contains(&format!("└ {child}")) && tree.contains("via invoke_agent_1"),
        "{tree}"
    );
    // Imported again: nothing new.
    let before = all.len();
    w.ok(&["import", "--from", "gemini"]);
    assert_eq!(events(&w).len(), before);
}

#[test]
fn a_gemini_subagents_calls_go_to_its_session_while_its_chat_says_it_runs() {
    let w = Workspace::new();
    let parent = "5d5e0000-aaaa-4bbb-8ccc-000000000001";
    let child = "77aa0000-bbbb-4ccc-8ddd-000000000002";
    let chats = std::fs::canonicalize(w.home.path())
        .unwrap()
        .join(".gemini/tmp/p/chats");
    std::fs::create_dir_all(chats.join(parent)).unwrap();
    let chat = chats.join(format!("session-2026-12-07T04-20-{}.jsonl", &parent[..8]));
    std::fs::write(
        &chat,
        format!(
            r#"{{"sessionId":"{parent}","projectHash":"h","startTime":"2026-12-07T04:20:00.000Z","lastUpdated":"2026-12-07T04:20:00.000Z","kind":"main"}}"#
        ) + "\n",
    )
    .unwrap();
    let p = |name: &str, rest: Value| {
        with(
            json!({"session_id": parent, "cwd": w.ws.path(), "hook_event_name": name,
            "transcript_path": chat, "timestamp": "2026-12-07T04:20:00Z"}),
            rest,
        )
    };
    let invoke = json!({"tool_name": "invoke_agent", "tool_input": {"agent_name": "codebase_investigator", "prompt": "map it"}});
    let task = json!({"tool_name": "complete_task", "tool_input": {"report": "fine"}});
    send(&w, "gemini", p("BeforeAgent", json!({"prompt": "map it"})));
    send(&w, "gemini", p("BeforeTool", invoke.clone()));
    // The subagent starts: its chat, no summary yet.
    let sub_chat = chats.join(parent).join(format!("{child}.jsonl"));
    std::fs::write(
        &sub_chat,
        format!(
            r#"{{"sessionId":"{child}","projectHash":"h","startTime":"2026-12-07T04:20:01.000Z","lastUpdated":"2026-12-07T04:20:01.000Z","kind":"subagent"}}"#
        ) + "\n",
    )
    .unwrap();
    send(&w, "gemini", p("BeforeTool", task.clone()));
    send(
        &w,
        "gemini",
        p(
            "AfterTool",
            with(task.clone(), json!({"tool_response": {"llmContent": "ok"}})),
        ),
    );
    // It completes: its summary is written; the parent's call ends.
    let mut done = std::fs::read_to_string(&sub_chat).unwrap();
    done.push_str(r#"{"$set":{"summary":"fine"}}"#);
    done.push('\n');
    std::fs::write(&sub_chat, done).unwrap();
    send(
        &w,
        "gemini",
        p(
            "AfterTool",
            with(invoke, json!({"tool_response": {"llmContent": "done"}})),
        ),
    );
    send(
        &w,
        "gemini",
        p(
            "BeforeTool",
            json!({"tool_name": "read_file", "tool_input": {"path": "README.md"}}),
        ),
    );
    let all = events(&w);
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["session"] == child && e["type"] == "session/created")
        .collect();
    assert_eq!(created.len(), 1, "begun once: {all:#?}");
    let by = &created[0]["data"]["parent"];
    assert_eq!(by["session"], parent, "{by}");
    assert_eq!(by["agent_type"], "codebase_investigator", "{by}");
    let call_of = |session: &str, title: &str| {
        all.iter()
            .find(|e| {
                e["session"] == session
                    && e["data"]["sessionUpdate"] == "tool_call"
                    && e["data"]["title"] == title
            })
            .map(|e| e["data"]["toolCallId"].clone())
    };
    assert_eq!(
        by["tool_call_id"],
        call_of(parent, "invoke_agent").expect("the parent's call"),
        "{all:#?}"
    );
    assert!(call_of(child, "complete_task").is_some(), "{all:#?}");
    assert!(call_of(parent, "complete_task").is_none(), "{all:#?}");
    // Once the subagent completed, the parent's calls are the parent's again.
    assert!(call_of(parent, "read_file").is_some(), "{all:#?}");
    // A subagent cut short leaves a chat with no summary that no call of the
    // parent names: with no invoke_agent call running, the payloads stay the
    // parent's.
    let dead = "88bb0000-cccc-4ddd-8eee-000000000003";
    std::fs::write(
        chats.join(parent).join(format!("{dead}.jsonl")),
        format!(r#"{{"sessionId":"{dead}","kind":"subagent"}}"#) + "\n",
    )
    .unwrap();
    send(
        &w,
        "gemini",
        p(
            "BeforeTool",
            json!({"tool_name": "glob", "tool_input": {"pattern": "*.md"}}),
        ),
    );
    let all = events(&w);
    assert!(
        all.iter().any(|e| e["session"] == parent
            && e["data"]["sessionUpdate"] == "tool_call"
            && e["data"]["title"] == "glob"),
        "{all:#?}"
    );
    assert!(!all.iter().any(|e| e["session"] == dead), "{all:#?}");
    assert!(
        all.iter().any(|e| e["session"] == child
            && e["data"]["sessionUpdate"] == "tool_call_update"
            && e["data"]["status"] == "completed"),
        "{all:#?}"
    );
}

#[test]
fn a_codex_spawned_agents_rollout_begins_under_the_call_that_spawned_it() {
    let w = Workspace::new();
    let parent = "01a24f6a-0000-7000-8000-00000000aaaa";
    let child = "01a24f6a-0000-7000-8000-00000000bbbb";
    let dir = w.home.path().join(".codex/sessions/2026/12/07");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = |id: &str, extra: &str| {
        format!(
            r#"{{"timestamp":"2026-12-07T07:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","cwd":"/p","originator":"codex_cli_rs","source":"cli"{extra}}}}}"#
        )
    };
    let spawn = format!(
        r#"{{"timestamp":"2026-12-07T07:00:02.000Z","type":"event_msg","payload":{{"type":"item_completed","thread_id":"{parent}","turn_id":"t1","item":{{"type":"CollabAgentToolCall","id":"call_spawn_1","tool":"spawn_agent","status":"completed","receiver_thread_ids":["{child}"]}}}}}}"#
    );
    std::fs::write(
        dir.join(format!("rollout-2026-12-07T07-00-00-{parent}.jsonl")),
        [meta(parent, ""), spawn].join("\n") + "\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("rollout-2026-12-07T07-00-03-{child}.jsonl")),
        meta(
            child,
            &format!(r#","parent_thread_id":"{parent}","agent_role":"explorer""#),
        ) + "\n",
    )
    .unwrap();
    w.ok(&["import", "--from", "codex"]);
    let all = events(&w);
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["session"] == child && e["type"] == "session/created")
        .collect();
    assert_eq!(created.len(), 1, "{all:#?}");
    let by = &created[0]["data"]["parent"];
    assert_eq!(by["session"], parent, "{by}");
    assert_eq!(by["tool_call_id"], "call_spawn_1", "{by}");
    assert_eq!(by["agent_type"], "explorer", "{by}");
}
