#![no_main]
//! Any bytes as any agent's transcript file (Gemini's JSON and JSONL both) are
//! read without a panic: items or malformed lines, counted, or (a whole-file
//! JSON transcript that is not UTF-8) an error that says so.
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
    match read_transcript(agent, &path) {
        Ok(read) => assert!(read.malformed <= bytes.len() + 1),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}"),
    }
});
