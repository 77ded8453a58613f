#![no_main]
//! Any bytes as any agent's hook payload (JSON or not, UTF-8 or not, redacted or
//! not) become a batch of events without a panic, and never an empty one.
use cmdlog_agents::{AgentKind, HookDelivery};

libfuzzer_sys::fuzz_target!(|data: (u8, bool, &[u8])| {
    let (which, redact, bytes) = data;
    let agent = [AgentKind::ClaudeCode, AgentKind::Codex, AgentKind::Gemini, AgentKind::Qwen]
        [usize::from(which % 4)];
    let delivery = HookDelivery::new(agent.name(), redact, 0, bytes.to_vec());
    let batch = delivery.batch(|| None);
    assert!(!batch.is_empty(), "a payload always records something");
});
