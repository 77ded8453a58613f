#![no_main]
//! Any text as an agent's settings file: installing cmdlog's hooks either refuses
//! it or yields a file the agent itself loads (strict JSON for Claude Code and
//! Codex, JSON with comments for Gemini CLI and Qwen Code) that holds the hooks
//! and uninstalls.
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
    let loads = match agent {
        AgentKind::ClaudeCode | AgentKind::Codex => {
            serde_json::from_str::<serde_json::Value>(&edit.after).is_ok()
        }
        AgentKind::Gemini | AgentKind::Qwen => {
            let comments_only = jsonc_parser::ParseOptions {
                allow_comments: true,
                allow_loose_object_property_names: false,
                allow_trailing_commas: false,
                allow_missing_commas: false,
                allow_single_quoted_strings: false,
                allow_hexadecimal_numbers: false,
                allow_unary_plus_numbers: false,
                allow_bare_decimal_point_numbers: false,
                allow_non_finite_numbers: false,
                allow_extended_string_escapes: false,
            };
            jsonc_parser::parse_to_value(&edit.after, &comments_only).is_ok()
        }
    };
    assert!(loads, "{agent:?} loads the installed file: {:?}", edit.after);
    assert!(edit.after.contains("cmdlog hook x") || edit.events.is_empty());
    assert!(uninstall(path, &edit.after, agent).is_ok(), "the installed file uninstalls");
});
