//! A large log written by the real engine, shared by the benches that read one.

use std::sync::Arc;

use cmdlog_engine::discovery::{DiscoveryConfig, discover};
use cmdlog_engine::{Engine, EngineConfig, ExecuteRequest, FixedClock, Mode};
use cmdlog_store::{Durability, Log, LogConfig};

/// Writes `dir/log.redb`: at least `events` events across `sessions`
/// sessions, by the real engine (prompt runs of file commands, /model runs,
/// some errors), with the command files under `dir/ws`; their discovery.
pub(crate) fn build(
    dir: &std::path::Path,
    events: u64,
    sessions: usize,
) -> cmdlog_engine::discovery::Discovery {
    let home = dir.join("home");
    let ws = dir.join("ws");
    let commands = ws.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for name in ["review", "explain-code", "plan", "test-it"] {
        std::fs::write(
            commands.join(format!("{name}.md")),
            format!("---\ndescription: {name}\n---\n{name} $1 with care; focus on ${{@:2}}.\nArguments: $ARGUMENTS\n"),
        )
        .unwrap();
    }
    let discovery = discover(&DiscoveryConfig::new(&home, &ws)).unwrap();
    let config = LogConfig {
        durability: Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.join("log.redb"), config).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let clock = Arc::new(FixedClock::at(1_795_000_000_000));
        let engine = Engine::open(log, EngineConfig::with_clock(clock.clone()))
            .await
            .unwrap();
        engine.sync(&discovery).await.unwrap();
        let lines = [
            "/review src/lib.rs errors",
            "/explain-code parser.rs",
            "/plan release 'next week'",
            "/test-it unit",
            "/model m1",
            "/model two words",
        ];
        let mut i = 0usize;
        while engine.log().head().seq < events {
            let session = format!("s{:03}", i % sessions);
            engine
                .ensure_session(&session, "main", Mode::NonInteractive)
                .await
                .unwrap();
            clock.advance(137);
            engine
                .execute(ExecuteRequest::new(
                    &session,
                    "main",
                    Mode::NonInteractive,
                    lines[i % lines.len()],
                ))
                .await
                .unwrap();
            i += 1;
        }
    });
    discovery
}
