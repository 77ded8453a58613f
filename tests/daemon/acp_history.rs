//! Issue 36: an editor reopening a long recorded session through `cmdlog acp`
//! gets the whole history while the proxy's memory stays bounded: the replay
//! reads a page at a time and waits for the editor to take it.

use cmdlog_engine::{Engine, EngineConfig, EventData};
use cmdlog_store::{Log, LogConfig};
use serde_json::json;

use crate::bridge::{acp_proxy, workspace};

/// Updates in the recorded session, and the bytes of text in each.
const UPDATES: usize = 20_000;
const TEXT_BYTES: usize = 4096;

#[test]
fn a_long_session_is_replayed_in_bounded_memory() {
    let w = workspace();
    let agent_log = w.ws.path().join("agent.jsonl");
    let mut c = acp_proxy(&w, &agent_log);
    c.initialize();
    let sid = c.new_session(2);
    drop(c.input);
    assert!(c.child.wait().unwrap().success());

    // 80 MiB of agent replies recorded in the session.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let log = Log::open(w.log_path(), LogConfig::default()).unwrap();
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        for first in (0..UPDATES).step_by(1000) {
            let events = (first..first + 1000)
                .map(|n| {
                    let text = format!("{n:06} {}", "r".repeat(TEXT_BYTES));
                    let update = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
                    (Some(sid.clone()), None, EventData::SessionUpdate(update))
                })
                .collect();
            engine.append_events(events).await.unwrap();
        }
    });
    drop(runtime);

    let mut c = acp_proxy(&w, &agent_log);
    c.initialize();
    // Before: the proxy started and its log open (redb's cache of 64 MiB).
    let before = cmdlog_test_support::otlp::peak_mib(c.child.id());
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/load", "params": {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}}));
    let answer = c.until(|m| m["id"] == 3);
    assert!(answer.get("error").is_none(), "{answer}");
    let peak = cmdlog_test_support::otlp::peak_mib(c.child.id());
    let replayed: Vec<&str> = c
        .seen
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(replayed.len(), UPDATES, "every update, once");
    assert!(
        replayed
            .iter()
            .enumerate()
            .all(|(n, t)| t.starts_with(&format!("{n:06} "))),
        "in order"
    );
    println!(
        "cmdlog acp peak resident size: {before:.0} MiB started, {peak:.0} MiB after replaying {UPDATES} updates of {TEXT_BYTES} bytes"
    );
    // Unbounded (every update queued for the editor at once) it took 160 MiB more.
    assert!(
        peak - before < 24.0,
        "the replay of 80 MiB took {:.0} MiB more: it is not bounded",
        peak - before
    );
    drop(c.input);
    assert!(c.child.wait().unwrap().success());
}
