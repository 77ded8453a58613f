#![no_main]
//! Any text as an agent's settings file: installing cmdlog's hooks either refuses
//! it or yields a file that parses, holds the hooks, and uninstalls cleanly.
use std::path::Path;

use cmdlog_agents::{AgentKind, install, uninstall};

libfuzzer_sys::fuzz_target!(|data: (u8, &str)| {
    let (which, text) = data;
    let agent = [AgentKind::ClaudeCode, AgentKind::Codex, AgentKind::Gemini, AgentKind::Qwen]
        [usize::from(which % 4)];
    let path = Path::new("/p/settings.json");
    let Ok(edit) = install(path, text, agent, "cmdlog hook x") else {
        return;
    };
    let parsed: Result<serde_json::Value, _> =
        jsonc_parser::parse_to_serde_value(&edit.after, &Default::default());
    assert!(parsed.is_ok(), "an installed file parses: {:?}", edit.after);
    assert!(edit.after.contains("cmdlog hook x") || edit.events.is_empty());
    let _ = uninstall(path, &edit.after, agent);
});
