#![no_main]
//! Any bytes as any agent's transcript file (Gemini's JSON and JSONL both) are
//! read without a panic: items or malformed lines, counted.
use std::io::Write;

use cmdlog_agents::{AgentKind, read_transcript};

libfuzzer_sys::fuzz_target!(|data: (u8, &[u8])| {
    let (which, bytes) = data;
    let (agent, name) = [
        (AgentKind::ClaudeCode, "s.jsonl"),
        (AgentKind::Codex, "rollout-s.jsonl"),
        (AgentKind::Gemini, "session-s.jsonl"),
        (AgentKind::Gemini, "session-s.json"),
        (AgentKind::Qwen, "s.jsonl"),
    ][usize::from(which % 5)];
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("chats");
    std::fs::create_dir_all(&chats).unwrap();
    let path = chats.join(name);
    std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
    let read = read_transcript(agent, &path).unwrap();
    assert!(read.malformed <= bytes.len() + 1);
});
