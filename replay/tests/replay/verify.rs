//! `verify` is clean on what the engine writes, and names the seq of every broken
//! invariant in hand-made logs.

use std::sync::Arc;

use cmdlog_engine::*;
use cmdlog_engine::{event::*, identity::*};
use cmdlog_replay::{RegistryView, SessionView, state_at, verify};
use cmdlog_store::{Log, LogConfig};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn new_log(dir: &tempfile::TempDir) -> Log {
    Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap()
}

fn ev(session: Option<&str>, data: EventData) -> cmdlog_store::NewRecord {
    NewEvent {
        observed: None,
        at: 1,
        session: session.map(str::to_string),
        agent: Some("main".into()),
        data,
    }
    .to_record()
}

fn spec(name: &str) -> CommandSpec {
    let mut s = CommandSpec::new(
        CommandName::new(name).unwrap(),
        CommandSource::SkillDirCommand,
        CommandKind::File,
    );
    s.command_type = Some(CommandType::Local);
    s.supported_modes = Some(Mode::ALL.to_vec());
    s
}

fn registered(name: &str, priority: i32) -> EventData {
    EventData::Registered(Box::new(Registered {
        scope: Scope::Global,
        provider: ProviderRef {
            id: format!("p{priority}"),
            priority,
            level: "user".into(),
            order: 0,
            item: 0,
        },
        command: spec(name),
        template: None,
        origin: None,
    }))
}

fn run(registration: Seq, name: &str) -> EventData {
    EventData::CommandRun(CommandRun {
        injections: Vec::new(),
        registration,
        name: name.into(),
        mode: Mode::NonInteractive,
        source: InvocationSource::User,
        raw_input: Some(String::new()),
        attachments: vec![],
        release: None,
    })
}

fn done(run: Seq) -> EventData {
    EventData::CommandDone(CommandDone {
        agent_check: None,
        run,
        outcome: Outcome::text("ok"),
        elapsed_us: 1,
    })
}

fn violations(log: &Log) -> Vec<(Option<Seq>, String)> {
    verify(log, |_| {})
        .unwrap()
        .violations
        .into_iter()
        .map(|v| (v.seq, v.message))
        .collect()
}

#[test]
fn engine_written_logs_verify_clean_and_replay_to_the_live_state() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let engine = Engine::open(
            new_log(&dir),
            EngineConfig::with_clock(Arc::new(FixedClock::at(7))),
        )
        .await
        .unwrap();
        engine
            .ensure_session("s", "main", Mode::NonInteractive)
            .await
            .unwrap();
        for line in ["/help", "/model a", "/model", "/nope"] {
            engine
                .execute(ExecuteRequest::new("s", "main", Mode::NonInteractive, line))
                .await
                .unwrap();
        }
        let report = verify(engine.log(), |_| {}).unwrap();
        assert!(report.is_clean(), "{:#?}", report.violations);
        assert_eq!(report.head_seq, engine.log().head().seq);
        assert!(report.open_runs.is_empty());
        assert_eq!(state_at(engine.log(), u64::MAX).unwrap(), engine.state());

        let view = SessionView::load(engine.log(), "s", u64::MAX).unwrap();
        assert_eq!(view.runs.len(), 3);
        assert_eq!(view.model.as_deref(), Some("a"));
        assert!(view.runs.iter().all(|r| r.outcome.is_some()));
    });
}

#[test]
fn replay_until_shows_the_registry_as_it_was_with_shadowing() {
    let dir = tempfile::tempdir().unwrap();
    let log = new_log(&dir);
    log.append(vec![ev(None, registered("x", 10))]).unwrap(); // 1
    log.append(vec![ev(None, registered("x", 20))]).unwrap(); // 2
    log.append(vec![ev(
        None,
        EventData::Unregistered(Unregistered {
            registration: 2,
            reason: UnregisterReason::Disposed,
        }),
    )])
    .unwrap(); // 3

    let at1 = RegistryView::new(&state_at(&log, 1).unwrap(), "main", Mode::NonInteractive);
    assert_eq!(at1.commands.len(), 1);
    let at2 = RegistryView::new(&state_at(&log, 2).unwrap(), "main", Mode::NonInteractive);
    assert_eq!(
        at2.commands
            .iter()
            .map(|c| (c.registration, c.status))
            .collect::<Vec<_>>(),
        vec![(2, "active"), (1, "shadowed")]
    );
    assert_eq!(at2.commands[1].shadowed_by, Some(2));
    assert!(
        at2.commands[1]
            .why
            .as_deref()
            .unwrap()
            .contains("priority 20 > 10")
    );
    let at3 = RegistryView::new(&state_at(&log, 3).unwrap(), "main", Mode::NonInteractive);
    assert_eq!(
        at3.commands
            .iter()
            .map(|c| (c.registration, c.status))
            .collect::<Vec<_>>(),
        vec![(1, "active")]
    );
    let diff = cmdlog_replay::RegistryDiff::between(&at2, &at3);
    assert_eq!(diff.changed.len(), 1);
    assert_eq!(
        (
            diff.changed[0].before.registration,
            diff.changed[0].after.registration
        ),
        (2, 1)
    );
    let diff = cmdlog_replay::RegistryDiff::between(&at1, &at2);
    assert_eq!(
        diff.changed.len(),
        1,
        "the priority-20 registration took over"
    );
    assert!(cmdlog_replay::RegistryDiff::between(&at1, &at1).is_empty());
}

#[test]
fn each_broken_invariant_is_named_at_its_seq() {
    let dir = tempfile::tempdir().unwrap();
    let log = new_log(&dir);
    let s = Some("s");
    let append = |d| log.append(vec![ev(s, d)]).unwrap().first;
    append(EventData::SessionCreated(SessionCreated::default())); // 1
    append(registered("x", 10)); // 2
    append(registered("x", 20)); // 3
    let bad_run = append(run(2, "x")); // 4: not the winner
    let orphan_done = append(done(99)); // 5
    let good = append(run(3, "x")); // 6
    append(done(good)); // 7
    let double = append(done(good)); // 8
    let unknown_unreg = append(EventData::Unregistered(Unregistered {
        registration: 6,
        reason: UnregisterReason::Disposed,
    })); // 9
    let stray = append(EventData::PermissionResolved(PermissionResolved {
        request_id: "r1".into(),
        decision: "allow".into(),
        ..Default::default()
    })); // 10
    let missing_blob = log
        .append(vec![ev(
            None,
            EventData::Registered(Box::new(Registered {
                scope: Scope::Global,
                provider: ProviderRef {
                    id: "t".into(),
                    priority: 1,
                    level: "u".into(),
                    order: 0,
                    item: 0,
                },
                command: {
                    let mut c = spec("t");
                    c.command_type = Some(CommandType::Prompt);
                    c
                },
                template: Some(cmdlog_store::BlobHash::of(b"never stored").to_hex()),
                origin: None,
            })),
        )])
        .unwrap()
        .first; // 11
    append(EventData::SessionClosed(SessionEnded::default())); // 12
    let after_end = append(EventData::ModelSwitched(ModelSwitched {
        model: "m".into(),
    })); // 13
    log.append(vec![ev(s, run(3, "x"))]).unwrap(); // 14: after end too, and open

    let found = violations(&log);
    let seqs: Vec<_> = found.iter().map(|(s, _)| s.unwrap()).collect();
    for (seq, words) in [
        (bad_run, "not the winner"),
        (orphan_done, "not an earlier command/run"),
        (double, "second done"),
        (unknown_unreg, "not a registration"),
        (stray, "without an earlier request"),
        (missing_blob, "missing"),
        (after_end, "after it ended"),
    ] {
        assert!(
            found
                .iter()
                .any(|(s, m)| *s == Some(seq) && m.contains(words)),
            "expected {words:?} at seq {seq} in {found:#?}"
        );
    }
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "sorted by seq");
    let report = verify(&log, |_| {}).unwrap();
    assert_eq!(
        report.open_runs.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![bad_run, 14]
    );
}

#[test]
fn an_ended_session_with_a_call_or_request_left_open_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = new_log(&dir);
    let append = |s: &str, d| log.append(vec![ev(Some(s), d)]).unwrap().first;
    let call = |id: &str| {
        EventData::SessionUpdate(serde_json::json!({
            "sessionUpdate": "tool_call", "toolCallId": id, "title": "Bash", "status": "pending"}))
    };
    let settle = |id: &str| {
        EventData::SessionUpdate(serde_json::json!({
            "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "failed"}))
    };
    let ask = |id: &str| {
        EventData::PermissionRequested(PermissionRequested {
            request_id: id.into(),
            options: serde_json::Value::Null,
            tool_call: None,
        })
    };
    // a: a call and its request left open, then the end.
    append("a", call("c1"));
    append("a", ask("r1"));
    let end_a = append("a", EventData::SessionEnded(SessionEnded::default()));
    // b: settled before its end; c: open, but not ended; d: open at an end,
    // settled after it (an import that came later).
    append("b", call("c2"));
    append("b", settle("c2"));
    append("b", EventData::SessionEnded(SessionEnded::default()));
    append("c", call("c3"));
    append("d", call("c4"));
    append("d", EventData::SessionEnded(SessionEnded::default()));
    append("d", settle("c4"));
    let found = violations(&log);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found.iter().all(|(s, _)| *s == Some(end_a)),
        "named at the end: {found:#?}"
    );
    assert!(
        found[0]
            .1
            .contains("tool call c1 (Bash, seq 1) never settled"),
        "{found:#?}"
    );
    assert!(
        found[1]
            .1
            .contains("permission request r1 (seq 2) never answered"),
        "{found:#?}"
    );
}

#[test]
fn an_edited_record_is_named_by_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let log = new_log(&dir);
        for i in 0..20 {
            log.append(vec![ev(
                None,
                EventData::DiscoveryWarning(DiscoveryWarning {
                    provider: "p".into(),
                    path: format!("f{i}"),
                    content_hash: None,
                    message: "m".into(),
                }),
            )])
            .unwrap();
        }
        assert!(verify(&log, |_| {}).unwrap().is_clean());
    }
    let table = cmdlog_test_support::tamper::RECORDS;
    {
        use redb::ReadableTable;
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(table).unwrap();
            let mut v = t.get(13).unwrap().unwrap().value().to_vec();
            let i = v.len() - 5;
            v[i] = b'X';
            t.insert(13, v.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let log = new_log(&dir);
    let report = verify(&log, |_| {}).unwrap();
    assert!(!report.is_clean());
    assert_eq!(
        report.violations[0].seq,
        Some(13),
        "{:#?}",
        report.violations
    );
    assert!(report.violations[0].message.contains("hash chain broken"));
}

#[test]
fn a_stream_index_that_disagrees_with_the_records_is_named() {
    const STREAMS: redb::TableDefinition<(&str, u64), ()> = redb::TableDefinition::new("streams");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let log = new_log(&dir);
    for s in ["a", "b"] {
        log.append(vec![ev(
            Some(s),
            EventData::SessionCreated(SessionCreated::default()),
        )])
        .unwrap();
    }
    log.append(vec![ev(Some("a"), registered("x", 1))]).unwrap(); // 3
    assert!(violations(&log).is_empty(), "{:?}", violations(&log));
    drop(log);

    // The closed log's index is all in the table: drop a's seq 3, add a stray seq 2.
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(STREAMS).unwrap();
            table.remove(("a", 3)).unwrap();
            table.insert(("b", 3), ()).unwrap();
        }
        txn.commit().unwrap();
    }
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    let found = violations(&log);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, Some(3));
    assert!(
        found[0]
            .1
            .contains("stream index of \"a\" lists 1 records where the log has 2"),
        "{found:?}"
    );
    assert!(
        found[1]
            .1
            .contains("stream index of \"b\" lists 2 records where the log has 1"),
        "{found:?}"
    );
}

#[test]
fn an_identity_is_given_once_and_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = new_log(&dir);
    assert!(read_identity(&log).unwrap().is_none());
    let first = ensure_identity(&log).unwrap();
    assert_eq!(first.id.len(), 32);
    assert!(first.id.chars().all(|c| c.is_ascii_hexdigit()));
    let again = ensure_identity(&log).unwrap();
    assert_eq!(first, again);
    assert_eq!(log.head().seq, 1);
    let report = verify(&log, |_| {}).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}
