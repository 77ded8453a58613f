//! The sessions a daemon keeps folded as the log grows list exactly what a
//! fold of the whole log lists, after every append (seeded; the seed is
//! printed).

use cmdlog_replay::{SessionsFold, sessions};
use cmdlog_store::{Log, LogConfig, NewRecord};
use serde_json::json;

fn record(session: &str, kind: &str, data: serde_json::Value, at: u64) -> NewRecord {
    NewRecord::new(
        json!({"at": at, "type": kind, "session": session, "agent": "claude-code", "data": data})
            .to_string()
            .into_bytes(),
    )
    .stream(session.to_string())
}

#[test]
fn a_fold_kept_current_lists_what_a_whole_fold_lists() {
    let seed: u64 = std::env::var("CMDLOG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(cmdlog_common::time::now_ms);
    println!("seed {seed} (CMDLOG_SEED={seed} repeats it)");
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let mut fold = SessionsFold::default();
    let mut at = 1_790_000_000_000u64;
    for round in 0..40 {
        let batch: Vec<NewRecord> = (0..1 + next() % 5)
            .map(|_| {
                at += 1 + next() % 1000;
                let session = format!("s{}", next() % 6);
                // Prompts, ends and prompts after an end (a resume), times
                // that go back (an import appended later).
                let when = if next() % 7 == 0 { at - 5_000 } else { at };
                match next() % 4 {
                    0 => record(&session, "session/ended", json!({"reason": "exit"}), when),
                    _ => record(
                        &session,
                        "session/prompt",
                        json!({"text": format!("round {round}"), "delivery": "idle"}),
                        when,
                    ),
                }
            })
            .collect();
        log.append(batch).unwrap();
        fold.update(&log).unwrap();
        assert_eq!(fold.through(), log.head().seq);
        assert_eq!(
            fold.list(),
            sessions(&log, |_| {}).unwrap(),
            "round {round}, seed {seed}"
        );
    }
    assert!(!fold.is_empty() && fold.get("s0").is_some_and(|s| s.events > 0));
}
