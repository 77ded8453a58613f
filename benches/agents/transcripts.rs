//! Transcript sets for the import bench, shaped like each agent's own (the
//! envelope every line carries, and the sizes a session has: short prompts,
//! longer answers, tool outputs that hold whole files), written from the
//! formats `docs/agents.md` describes.

use std::io::Write;
use std::path::{Path, PathBuf};

use cmdlog_agents::AgentKind;
use serde_json::{Value, json};

/// A written set.
pub(crate) struct Set {
    /// What to import from.
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<PathBuf>,
    /// Lines in all files.
    pub(crate) lines: usize,
    pub(crate) bytes: usize,
}

/// Lines per file.
const LINES_PER_FILE: usize = 2000;

/// Writes about `target` bytes of `agent`'s transcripts under `home`.
pub(crate) fn write(agent: AgentKind, home: &Path, target: usize) -> Set {
    let root = match agent {
        AgentKind::ClaudeCode => home.join(".claude/projects"),
        AgentKind::Codex => home.join(".codex/sessions"),
        AgentKind::Gemini => home.join(".gemini/tmp"),
        AgentKind::Qwen => home.join(".qwen/projects"),
    };
    let mut set = Set {
        root: root.clone(),
        files: Vec::new(),
        lines: 0,
        bytes: 0,
    };
    let mut file_no = 0;
    while set.bytes < target {
        let id = format!("0199a213-81c0-7800-8aa1-{file_no:012}");
        let path = match agent {
            AgentKind::ClaudeCode => root.join(format!("-p/{id}.jsonl")),
            AgentKind::Codex => {
                root.join(format!("2026/08/01/rollout-2026-08-01T10-00-00-{id}.jsonl"))
            }
            AgentKind::Gemini => root.join(format!("p/chats/session-2026-08-01T10-00-{id}.jsonl")),
            AgentKind::Qwen => root.join(format!("-p/chats/{id}.jsonl")),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for n in 0..LINES_PER_FILE {
            let line = match agent {
                AgentKind::ClaudeCode => claude(&id, n, n),
                AgentKind::Codex => codex(&id, n),
                AgentKind::Gemini => gemini(&id, n),
                AgentKind::Qwen => qwen(&id, n),
            }
            .to_string();
            writeln!(f, "{line}").unwrap();
            set.bytes += line.len() + 1;
            set.lines += 1;
        }
        set.files.push(path);
        file_no += 1;
    }
    set
}

fn words(count: usize, n: usize) -> String {
    (0..count)
        .map(|i| {
            [
                "the", "build", "fails", "because", "lib.rs", "returns", "an", "error", "when",
                "parsing",
            ][(i * 7 + n) % 10]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A file's lines as a tool shows them.
fn file_lines() -> String {
    (0..120)
        .map(|i| format!("{:>4}\t    let value_{i} = parse(input, {i})?;\n", i + 1))
        .collect()
}

fn timestamp(n: usize) -> String {
    format!(
        "2026-08-01T{:02}:{:02}:{:02}.{:03}Z",
        10 + n / 3600 % 10,
        (n / 60) % 60,
        n % 60,
        n % 1000
    )
}

/// A Claude Code transcript line of the given kind, shaped like real ones: the
/// envelope every line carries, and the sizes a session has (short prompts, longer
/// answers, tool results that hold whole files).
fn claude(session: &str, n: usize, t: usize) -> Value {
    let uuid = format!("{session}-{n:06}");
    let parent = format!("{session}-{:06}", n.saturating_sub(1));
    let ts = format!(
        "2026-08-01T{:02}:{:02}:{:02}.{:03}Z",
        10 + t / 3600 % 10,
        (t / 60) % 60,
        t % 60,
        n % 1000
    );
    let words = |count: usize| words(count, n);
    let envelope = |kind: &str, message: Value| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/u/src/app",
            "sessionId": session, "version": "2.1.140", "gitBranch": "main", "type": kind,
            "message": message, "uuid": uuid, "timestamp": ts})
    };
    match n % 4 {
        0 => envelope("user", json!({"role": "user", "content": words(40)})),
        1 => envelope(
            "assistant",
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [
                {"type": "text", "text": words(120)},
                {"type": "tool_use", "id": format!("toolu_{n}"), "name": "Read", "input": {"file_path": "/home/u/src/app/src/lib.rs", "limit": 400}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 2310, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 18211, "output_tokens": 212, "service_tier": "standard"}}),
        ),
        2 => {
            let file = file_lines();
            let mut v = envelope(
                "user",
                json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{}", n - 1), "content": file}]}),
            );
            v["toolUseResult"] = json!({"type": "text", "file": {"filePath": "/home/u/src/app/src/lib.rs", "numLines": 120, "startLine": 1, "totalLines": 400}});
            v
        }
        _ => envelope(
            "assistant",
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": words(200)}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 2500, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 18500, "output_tokens": 350, "service_tier": "standard"}}),
        ),
    }
}

/// A Codex rollout line: a turn is the prompt, the model's copy of it, its
/// reasoning, a shell call and its output, the reply, token counts and the end.
fn codex(id: &str, n: usize) -> Value {
    let ts = timestamp(n);
    let line =
        |kind: &str, payload: Value| json!({"timestamp": ts, "type": kind, "payload": payload});
    if n == 0 {
        return line(
            "session_meta",
            json!({"id": id, "timestamp": ts, "cwd": "/home/u/src/app", "originator": "codex_exec",
                "cli_version": "0.171.0", "source": "exec", "model_provider": "openai"}),
        );
    }
    match n % 10 {
        1 => line(
            "event_msg",
            json!({"type": "user_message", "message": words(40, n), "images": []}),
        ),
        2 => line(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": words(40, n)}]}),
        ),
        3 => line(
            "event_msg",
            json!({"type": "agent_reasoning", "text": words(60, n)}),
        ),
        4 => line(
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "call_id": format!("call_{n}"),
                "arguments": json!({"cmd": "sed -n 1,120p src/lib.rs", "workdir": "/home/u/src/app"}).to_string()}),
        ),
        5 => line(
            "response_item",
            json!({"type": "function_call_output", "call_id": format!("call_{}", n - 1),
                "output": format!("Chunk ID: 1\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n{}", file_lines())}),
        ),
        6 => line(
            "event_msg",
            json!({"type": "item_completed", "thread_id": id, "turn_id": "t1", "item": {
                "type": "AgentMessage", "id": format!("msg_{n}"),
                "content": [{"type": "Text", "text": words(200, n)}]}}),
        ),
        7 => line(
            "event_msg",
            json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": 2310,
                "cached_input_tokens": 18211, "output_tokens": 212, "total_tokens": 20733}}, "rate_limits": null}),
        ),
        8 => line(
            "turn_context",
            json!({"cwd": "/home/u/src/app", "approval_policy": "never", "model": "gpt-5.3-codex",
                "sandbox_policy": {"type": "workspace-write"}, "summary": "auto"}),
        ),
        _ => line(
            "event_msg",
            json!({"type": "task_complete", "turn_id": "t1", "last_agent_message": words(20, n)}),
        ),
    }
}

/// A Gemini CLI chat line: the metadata line, then the user's records and
/// Gemini's (each reply written when it starts and again with its tool calls
/// settled), and `$set`s of the update time.
fn gemini(id: &str, n: usize) -> Value {
    let ts = timestamp(n);
    if n == 0 {
        return json!({"sessionId": id, "projectHash": "4f1c", "startTime": ts, "lastUpdated": ts, "kind": "main"});
    }
    let turn = n / 5;
    match n % 5 {
        0 => json!({"$set": {"lastUpdated": ts}}),
        1 => {
            json!({"id": format!("u{turn}"), "timestamp": ts, "type": "user", "content": [{"text": words(40, n)}]})
        }
        2 => json!({"id": format!("g{turn}"), "timestamp": ts, "type": "gemini", "content": "",
            "thoughts": [{"subject": "Reading the file", "description": words(30, n), "timestamp": ts}],
            "tokens": {"input": 2310, "output": 212, "cached": 18211, "thoughts": 40, "tool": 0, "total": 20773},
            "model": "gemini-2.5-pro"}),
        3 => {
            json!({"id": format!("g{turn}"), "timestamp": ts, "type": "gemini", "content": words(120, n),
            "thoughts": [{"subject": "Reading the file", "description": words(30, n), "timestamp": ts}],
            "toolCalls": [{"id": format!("read_file-{n}"), "name": "read_file", "args": {"absolute_path": "/home/u/src/app/src/lib.rs"},
                "result": [{"functionResponse": {"id": format!("read_file-{n}"), "name": "read_file", "response": {"output": file_lines()}}}],
                "status": "success", "timestamp": ts, "displayName": "ReadFile", "resultDisplay": ""}],
            "tokens": {"input": 2310, "output": 212, "cached": 18211, "thoughts": 40, "tool": 0, "total": 20773},
            "model": "gemini-2.5-pro"})
        }
        _ => {
            json!({"id": format!("g{turn}r"), "timestamp": ts, "type": "gemini", "content": words(200, n),
            "tokens": {"input": 2500, "output": 350, "cached": 18500, "thoughts": 0, "tool": 0, "total": 21350},
            "model": "gemini-2.5-pro"})
        }
    }
}

/// A Qwen Code chat record: prompts, replies with a function call, the call's
/// result (shown and sent), the closing reply.
fn qwen(id: &str, n: usize) -> Value {
    let ts = timestamp(n);
    let record = |kind: &str, message: Value| {
        json!({"uuid": format!("{id}-{n:06}"), "parentUuid": format!("{id}-{:06}", n.saturating_sub(1)),
            "sessionId": id, "timestamp": ts, "type": kind, "cwd": "/home/u/src/app", "version": "0.24.4",
            "gitBranch": "main", "message": message})
    };
    match n % 4 {
        0 => record(
            "user",
            json!({"role": "user", "parts": [{"text": words(40, n)}]}),
        ),
        1 => record(
            "assistant",
            json!({"role": "model", "parts": [{"text": words(120, n)},
                {"functionCall": {"id": format!("call_{n}"), "name": "read_file", "args": {"absolute_path": "/home/u/src/app/src/lib.rs"}}}]}),
        ),
        2 => {
            let mut v = record(
                "tool_result",
                json!({"role": "user", "parts": [{"functionResponse": {"id": format!("call_{}", n - 1),
                    "name": "read_file", "response": {"output": file_lines()}}}]}),
            );
            v["toolCallResult"] = json!({"callId": format!("call_{}", n - 1), "status": "success",
                "resultDisplay": file_lines()});
            v
        }
        _ => record(
            "assistant",
            json!({"role": "model", "parts": [{"text": words(200, n)}]}),
        ),
    }
}
