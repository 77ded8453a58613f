//! The execution lifecycle of DESIGN §5 and the registry semantics of §4, end to end
//! over a real log.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cmdlog_engine::*;
use cmdlog_engine::{attachments::*, event::*};
use cmdlog_store::{FaultKind, FaultPlan, Log, LogConfig, NewRecord, open_faulty};

const NI: Mode = Mode::NonInteractive;

async fn open(dir: &tempfile::TempDir) -> Engine {
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let engine = Engine::open(
        log,
        EngineConfig::with_clock(Arc::new(FixedClock::at(1_000))),
    )
    .await
    .unwrap();
    engine.ensure_session("s1", "main", NI).await.unwrap();
    engine
}

fn events(engine: &Engine) -> Vec<Event> {
    let log = engine.log();
    log.range(1, log.head().seq)
        .unwrap()
        .into_iter()
        .map(|r| Event::decode(r.seq, &r.bytes).unwrap())
        .collect()
}

fn replayed(engine: &Engine) -> LogState {
    let mut state = LogState::default();
    fold_log(engine.log(), &mut state, 1, engine.log().head().seq).unwrap();
    state
}

fn local(name: &str) -> CommandSpec {
    let mut spec = CommandSpec::new(
        CommandName::new(name).unwrap(),
        CommandSource::PluginCommand,
        CommandKind::Skill,
    );
    spec.command_type = Some(CommandType::Local);
    spec.supported_modes = Some(Mode::ALL.to_vec());
    spec
}

fn req(line: &str) -> ExecuteRequest {
    ExecuteRequest::new("s1", "main", NI, line)
}

async fn run(engine: &Engine, line: &str) -> Execution {
    engine.execute(req(line)).await.unwrap().expect("resolves")
}

fn error_text(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Error { text, .. } => text,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn help_runs_and_logs_a_run_done_pair() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let before = engine.log().head().seq;
    let ex = run(&engine, "/help").await;
    let Outcome::Success {
        text: Some(text), ..
    } = &ex.outcome
    else {
        panic!("{:?}", ex.outcome)
    };
    assert!(
        text.contains("Built-in:")
            && text.contains("/help")
            && text.contains("/model [<model-id>]"),
        "{text}"
    );
    let tail: Vec<_> = events(&engine).into_iter().skip(before as usize).collect();
    assert_eq!(tail.len(), 2);
    let EventData::CommandRun(r) = &tail[0].data else {
        panic!()
    };
    assert_eq!(
        (r.name.as_str(), r.mode, r.raw_input.as_deref()),
        ("help", NI, Some(""))
    );
    let EventData::CommandDone(d) = &tail[1].data else {
        panic!()
    };
    assert_eq!(d.run, ex.command_id);
    assert_eq!(tail[1].session.as_deref(), Some("s1"));
}

#[tokio::test]
async fn misses_log_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let before = engine.log().head();
    for line in ["help", "/nope", "/", "/a/b", "plain text", "/HELP/x"] {
        assert!(engine.execute(req(line)).await.unwrap().is_none(), "{line}");
    }
    assert_eq!(engine.log().head(), before);
    assert!(
        engine.execute(req("/HELP")).await.unwrap().is_some(),
        "names are lowercased"
    );
}

#[tokio::test]
async fn modes_pick_the_model_variant_and_headless_model_sets_the_session_model() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let ex = run(&engine, "/model  sonnet-4 ").await;
    let Outcome::Success {
        source_event_seq: Some(seq),
        ..
    } = ex.outcome
    else {
        panic!("{ex:?}")
    };
    assert!(
        matches!(&events(&engine)[seq as usize - 1].data, EventData::ModelSwitched(m) if m.model == "sonnet-4")
    );
    assert_eq!(
        engine.session("s1").unwrap().model.as_deref(),
        Some("sonnet-4")
    );
    let ex = run(&engine, "/model").await;
    assert_eq!(ex.outcome, Outcome::text("Current model: sonnet-4"));
    let ex = run(&engine, "/model two words").await;
    assert!(error_text(&ex.outcome).contains("invalid model id"));

    engine
        .ensure_session("tui", "main", Mode::Interactive)
        .await
        .unwrap();
    let ex = engine
        .execute(ExecuteRequest::new(
            "tui",
            "main",
            Mode::Interactive,
            "/model",
        ))
        .await
        .unwrap()
        .unwrap();
    let reg = engine
        .state()
        .registry
        .get(ex.registration)
        .unwrap()
        .clone();
    assert_eq!(reg.command.command_type, Some(CommandType::LocalJsx));
    assert_eq!(
        engine
            .list("main", Mode::Interactive)
            .iter()
            .filter(|r| r.command.name.as_str() == "model")
            .count(),
        1
    );
}

#[tokio::test]
async fn handler_errors_panics_and_cancellation_settle_as_error_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    engine
        .register(NewRegistration::handler(
            local("fails"),
            |_inv: Invocation| async {
                Err::<CommandResult, _>(HandlerError("disk on fire".into()))
            },
        ))
        .await
        .unwrap()
        .forget();
    engine
        .register(NewRegistration::handler(
            local("panics"),
            |_inv: Invocation| async {
                if true {
                    panic!("kaboom");
                }
                Ok(CommandResult::text("never"))
            },
        ))
        .await
        .unwrap()
        .forget();
    engine
        .register(NewRegistration::handler(
            local("waits"),
            |inv: Invocation| async move {
                inv.cancel.cancelled().await;
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                Ok(CommandResult::text("never"))
            },
        ))
        .await
        .unwrap()
        .forget();
    engine
        .register(NewRegistration::handler(
            local("refuses"),
            |_inv: Invocation| async {
                Ok(CommandResult::Error {
                    text: "not today".into(),
                })
            },
        ))
        .await
        .unwrap()
        .forget();

    assert!(error_text(&run(&engine, "/fails").await.outcome).contains("disk on fire"));
    assert!(error_text(&run(&engine, "/panics").await.outcome).contains("panicked: kaboom"));
    assert_eq!(
        error_text(&run(&engine, "/refuses").await.outcome),
        "not today"
    );

    let request = req("/waits");
    let cancel = request.cancel.clone();
    let pending = tokio::spawn({
        let engine = engine.clone();
        async move { engine.execute(request).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    cancel.cancel();
    let ex = pending.await.unwrap().unwrap().unwrap();
    assert_eq!(error_text(&ex.outcome), "aborted");
    assert!(ex.done.is_some());
    assert!(engine.state().open_runs.is_empty());
    assert_eq!(engine.state(), replayed(&engine));
}

#[tokio::test]
async fn attachments_are_refused_before_the_handler_with_an_auditable_pair() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    engine
        .register(NewRegistration::handler(
            local("look"),
            move |_inv: Invocation| {
                c.fetch_add(1, Ordering::SeqCst);
                async { Ok(CommandResult::text("looked")) }
            },
        ))
        .await
        .unwrap()
        .forget();
    let mut request = req("/look here");
    request.attachments = vec![SubmittedAttachment::Image {
        name: "a.png".into(),
        bytes: vec![0x89, b'P', b'N', b'G'],
    }];
    let ex = engine.execute(request).await.unwrap().unwrap();
    assert!(error_text(&ex.outcome).contains("does not take attachments"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(
        engine
            .log()
            .list_blobs()
            .unwrap()
            .iter()
            .all(|(_, _, size)| *size != 4)
    );
    let all = events(&engine);
    assert!(matches!(all[all.len() - 2].data, EventData::CommandRun(_)));
    assert!(matches!(all[all.len() - 1].data, EventData::CommandDone(_)));
}

#[tokio::test]
async fn record_input_false_keeps_the_input_out_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let mut spec = local("secret");
    spec.record_input = false;
    engine
        .register(NewRegistration::handler(
            spec,
            |inv: Invocation| async move {
                Ok(CommandResult::text(format!("got {}", inv.raw_input.trim())))
            },
        ))
        .await
        .unwrap()
        .forget();
    let ex = run(&engine, "/secret hunter2").await;
    assert_eq!(ex.outcome, Outcome::text("got hunter2"));
    let EventData::CommandRun(r) = &events(&engine)[ex.command_id as usize - 1].data else {
        panic!()
    };
    assert_eq!(r.raw_input, None);
}

#[tokio::test]
async fn prompt_commands_expand_their_template() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let mut spec = CommandSpec::new(
        CommandName::new("fix").unwrap(),
        CommandSource::SkillDirCommand,
        CommandKind::File,
    );
    spec.command_type = Some(CommandType::Prompt);
    engine
        .register(NewRegistration::prompt(spec, "Fix $1 because $ARGUMENTS"))
        .await
        .unwrap()
        .forget();
    let ex = run(&engine, "/fix parser.rs 'it loops'").await;
    let Outcome::Success {
        prompt: Some(p), ..
    } = ex.outcome
    else {
        panic!("{ex:?}")
    };
    assert_eq!(p, "Fix parser.rs because parser.rs it loops");
}

#[tokio::test]
async fn registration_conflicts_layers_and_disposers() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let ok =
        |text: &'static str| move |_inv: Invocation| async move { Ok(CommandResult::text(text)) };
    let global = engine
        .register(NewRegistration::handler(local("x"), ok("global")))
        .await
        .unwrap();
    let err = engine
        .register(NewRegistration::handler(local("x"), ok("again")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegisterError::Conflict { existing, .. } if existing == global.registration()),
        "{err}"
    );

    // Disjoint modes coexist.
    let mut interactive_only = local("x");
    interactive_only.supported_modes = Some(vec![Mode::Interactive]);
    let mut ni = local("x");
    ni.supported_modes = Some(vec![NI]);
    assert!(
        engine
            .register(NewRegistration::handler(ni, ok("no")))
            .await
            .is_err()
    );

    let scoped = engine
        .register(NewRegistration::handler(local("x"), ok("scoped")).for_agent("main"))
        .await
        .unwrap();
    assert_eq!(run(&engine, "/x").await.outcome, Outcome::text("scoped"));
    engine.ensure_session("s2", "other", NI).await.unwrap();
    let other = engine
        .execute(ExecuteRequest::new("s2", "other", NI, "/x"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.outcome, Outcome::text("global"));

    let head = engine.log().head().seq;
    assert!(scoped.dispose().await.unwrap());
    assert!(
        !scoped.dispose().await.unwrap(),
        "a second dispose is a no-op"
    );
    assert_eq!(engine.log().head().seq, head + 1, "exactly one unregister");
    assert_eq!(run(&engine, "/x").await.outcome, Outcome::text("global"));
    global.dispose().await.unwrap();
    assert!(engine.execute(req("/x")).await.unwrap().is_none());
    let _ = interactive_only;
    assert_eq!(engine.state(), replayed(&engine));
}

#[tokio::test]
async fn observers_cannot_veto_or_break_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let seen = Arc::new(AtomicUsize::new(0));
    engine.on_change(|| panic!("observer bug"));
    let s = Arc::clone(&seen);
    let id = engine.on_change(move || {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let d = engine
        .register(NewRegistration::handler(
            local("y"),
            |_inv: Invocation| async { Ok(CommandResult::text("y")) },
        ))
        .await
        .unwrap();
    assert!(
        engine.find("main", NI, "y").is_some(),
        "the mutation stands"
    );
    d.dispose().await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    engine.remove_observer(id);
    engine
        .register(NewRegistration::handler(
            local("z"),
            |_inv: Invocation| async { Ok(CommandResult::text("z")) },
        ))
        .await
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn reopen_closes_interrupted_runs_ends_stale_handlers_and_keeps_builtins() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    engine
        .register(NewRegistration::handler(
            local("gone"),
            |_inv: Invocation| async { Ok(CommandResult::text("")) },
        ))
        .await
        .unwrap()
        .forget();
    let help = engine.find("main", NI, "help").unwrap().seq;
    // A run whose process died before its done.
    let orphan = NewEvent {
        observed: None,
        at: 5,
        session: Some("s1".into()),
        agent: Some("main".into()),
        data: EventData::CommandRun(CommandRun {
            injections: Vec::new(),
            registration: help,
            name: "help".into(),
            mode: NI,
            source: InvocationSource::User,
            raw_input: Some(String::new()),
            attachments: vec![],
            release: None,
        }),
    };
    let orphan_seq = engine
        .log()
        .append_async(vec![orphan.to_record()])
        .await
        .unwrap()
        .first;
    drop(engine);

    let engine = open(&dir).await;
    let tail: Vec<_> = events(&engine)
        .into_iter()
        .skip(orphan_seq as usize)
        .collect();
    assert_eq!(tail.len(), 2, "{tail:#?}");
    let EventData::CommandDone(d) = &tail[0].data else {
        panic!()
    };
    assert_eq!(d.run, orphan_seq);
    assert!(matches!(
        &d.outcome,
        Outcome::Error {
            interrupted: true,
            ..
        }
    ));
    assert!(
        matches!(&tail[1].data, EventData::Unregistered(u) if u.reason == UnregisterReason::OwnerExited)
    );
    assert_eq!(
        engine.find("main", NI, "help").unwrap().seq,
        help,
        "built-ins are reattached, not re-registered"
    );
    assert!(engine.find("main", NI, "gone").is_none());

    let head = engine.log().head();
    drop(engine);
    let engine = open(&dir).await;
    assert_eq!(engine.log().head(), head, "a clean reopen appends nothing");
    assert_eq!(engine.state(), replayed(&engine));
}

#[tokio::test]
async fn sessions_must_exist_and_nothing_follows_their_end() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let err = engine
        .execute(ExecuteRequest::new("nope", "main", NI, "/help"))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        ExecuteError::Session(SessionError::Unknown { .. })
    ));
    engine
        .close_session("s1", Some("done".into()))
        .await
        .unwrap();
    let err = engine.execute(req("/help")).await.unwrap_err();
    assert!(err.to_string().contains("ended at seq"), "{err}");
    assert!(engine.ensure_session("s1", "main", NI).await.is_err());
    assert!(matches!(
        engine.ensure_session("bad id", "main", NI).await,
        Err(SessionError::InvalidId { .. })
    ));
}

#[tokio::test]
async fn unknown_event_types_are_skipped_by_the_fold() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    let before = engine.state();
    engine
        .log()
        .append_async(vec![NewRecord::new(
            br#"{"at":1,"type":"future/event","data":{"x":1}}"#.to_vec(),
        )])
        .await
        .unwrap();
    let after = engine.state();
    assert_eq!(after.registry, before.registry);
    assert_eq!(after.sessions, before.sessions);
    drop(engine);
    let engine = open(&dir).await;
    assert_eq!(engine.state(), replayed(&engine));
}

#[tokio::test]
async fn run_append_failure_is_loud_and_done_failure_on_the_error_path_is_contained() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let log = open_faulty(&dir.path().join("log.redb"), &plan, LogConfig::default()).unwrap();
    let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
    engine.ensure_session("s1", "main", NI).await.unwrap();
    plan.count_reads(false);

    // The run cannot be recorded: the handler must not run and the caller hears it.
    plan.fail_after(1, FaultKind::Io, true);
    let err = engine.execute(req("/help")).await.unwrap_err();
    assert!(matches!(err, ExecuteError::RunNotRecorded { .. }), "{err}");
    drop(engine);

    // Failure path: the handler fails, then the done append fails: contained.
    let plan = FaultPlan::new();
    let engine = Engine::open(
        open_faulty(&dir.path().join("log.redb"), &plan, LogConfig::default()).unwrap(),
        EngineConfig::default(),
    )
    .await
    .unwrap();
    engine.ensure_session("s1", "main", NI).await.unwrap();
    plan.count_reads(false);
    let p = Arc::clone(&plan);
    engine
        .register(NewRegistration::handler(
            local("breaks"),
            move |_inv: Invocation| {
                p.fail_after(1, FaultKind::Io, true);
                async { Err::<CommandResult, _>(HandlerError("handler broke".into())) }
            },
        ))
        .await
        .unwrap()
        .forget();
    let ex = engine.execute(req("/breaks")).await.unwrap().unwrap();
    assert!(error_text(&ex.outcome).contains("handler broke"));
    assert_eq!(ex.done, None);
}

#[tokio::test]
async fn snapshots_are_a_cache_that_changes_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir).await;
    for i in 0..20 {
        engine.execute(req(&format!("/model m{i}"))).await.unwrap();
    }
    let seq = engine.snapshot().await.unwrap();
    assert_eq!(seq, engine.log().head().seq);
    engine.execute(req("/model after-snapshot")).await.unwrap();
    let live = engine.state();
    drop(engine);

    // Reopened from the snapshot plus the tail: the same state as a full fold.
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    assert_eq!(load_snapshot(&log).unwrap().applied, seq);
    let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
    assert_eq!(engine.state(), live);
    assert_eq!(engine.state(), replayed(&engine));
    assert_eq!(
        engine.session("s1").unwrap().model.as_deref(),
        Some("after-snapshot")
    );

    // A snapshot that does not match this log (or is not a snapshot) is ignored.
    engine
        .log()
        .put_snapshot(seq, b"not a snapshot".to_vec())
        .await
        .unwrap();
    assert!(load_snapshot(engine.log()).is_none());
    let forged =
        serde_json::json!({"version": 1, "seq": seq, "hash": "00".repeat(32), "state": live});
    engine
        .log()
        .put_snapshot(seq, serde_json::to_vec(&forged).unwrap())
        .await
        .unwrap();
    assert!(
        load_snapshot(engine.log()).is_none(),
        "the chain hash must match"
    );
    drop(engine);
    let engine = open(&dir).await;
    assert_eq!(engine.state(), replayed(&engine));
}
