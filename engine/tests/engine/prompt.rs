//! The prompt pipeline of seed 002 §5–8.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cmdlog_engine::*;
use cmdlog_engine::{event::*, prompt::*};
use cmdlog_store::{Log, LogConfig};

const NI: Mode = Mode::NonInteractive;

async fn setup() -> (tempfile::TempDir, Engine, Arc<AtomicUsize>) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
    engine.ensure_session("s", "main", NI).await.unwrap();
    let mut spec = CommandSpec::new(
        CommandName::new("fix").unwrap(),
        CommandSource::SkillDirCommand,
        CommandKind::File,
    );
    spec.command_type = Some(CommandType::Prompt);
    engine
        .register(NewRegistration::prompt(spec, "Fix $1 now"))
        .await
        .unwrap()
        .forget();

    let calls = Arc::new(AtomicUsize::new(0));
    let handler = |name: &str, result: CommandResult, calls: Arc<AtomicUsize>| {
        let mut spec = CommandSpec::new(
            CommandName::new(name).unwrap(),
            CommandSource::PluginCommand,
            CommandKind::Skill,
        );
        spec.command_type = Some(CommandType::Local);
        spec.supported_modes = Some(Mode::ALL.to_vec());
        NewRegistration::handler(spec, move |_inv: Invocation| {
            calls.fetch_add(1, Ordering::SeqCst);
            let result = result.clone();
            async move { Ok(result) }
        })
    };
    for (name, result) in [
        ("status", CommandResult::text("all good")),
        (
            "alias-fix",
            CommandResult::Prompt {
                text: "/fix parser.rs".into(),
            },
        ),
        (
            "rewrite",
            CommandResult::Prompt {
                text: "rewritten text".into(),
            },
        ),
        (
            "broken",
            CommandResult::Error {
                text: "cannot".into(),
            },
        ),
    ] {
        engine
            .register(handler(name, result, Arc::clone(&calls)))
            .await
            .unwrap()
            .forget();
    }
    (dir, engine, calls)
}

fn delivered(outcome: &PromptOutcome) -> (&str, Delivery, Option<Seq>) {
    match outcome {
        PromptOutcome::Delivered {
            text,
            delivery,
            from_run,
            ..
        } => (text, *delivery, *from_run),
        other => panic!("expected a delivery, got {other:?}"),
    }
}

fn last_prompt(engine: &Engine) -> SessionPrompt {
    let log = engine.log();
    let record = log.get(log.head().seq).unwrap().unwrap();
    match Event::decode(record.seq, &record.bytes).unwrap().data {
        EventData::SessionPrompt(p) => p,
        other => panic!("expected session/prompt, got {other:?}"),
    }
}

async fn turn_complete(engine: &Engine) {
    engine
        .append_session_event(
            "s",
            Some("main"),
            EventData::SessionUpdate(serde_json::json!({"sessionUpdate": "turn_complete"})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn plain_text_and_unknown_commands_pass_through() {
    let (_d, engine, _) = setup().await;
    for text in ["hello there", "/unknown stays as typed", "/a/b path-like"] {
        let out = engine
            .prompt(PromptRequest::new("s", "main", NI, text))
            .await
            .unwrap();
        assert_eq!(delivered(&out), (text, Delivery::Idle, None));
        assert_eq!(last_prompt(&engine).text, text);
        turn_complete(&engine).await;
    }
}

#[tokio::test]
async fn prompt_commands_expand_and_record_their_run() {
    let (_d, engine, _) = setup().await;
    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/fix lexer.rs"))
        .await
        .unwrap();
    let (text, delivery, from_run) = delivered(&out);
    assert_eq!((text, delivery), ("Fix lexer.rs now", Delivery::Idle));
    let run = from_run.expect("the expansion's run");
    let p = last_prompt(&engine);
    assert_eq!(
        (p.text.as_str(), p.from_run),
        ("Fix lexer.rs now", Some(run))
    );
    let done = engine.log().get(run + 1).unwrap().unwrap();
    let EventData::CommandDone(d) = Event::decode(done.seq, &done.bytes).unwrap().data else {
        panic!()
    };
    assert_eq!(
        d.outcome,
        Outcome::Success {
            text: None,
            prompt: Some("Fix lexer.rs now".into()),
            source_event_seq: None
        }
    );
}

#[tokio::test]
async fn handlers_run_at_once_and_may_replace_the_text() {
    let (_d, engine, calls) = setup().await;
    let head = engine.log().head().seq;
    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/status"))
        .await
        .unwrap();
    assert!(matches!(&out, PromptOutcome::Handled(ex) if ex.outcome == Outcome::text("all good")));
    assert_eq!(
        engine.log().head().seq,
        head + 2,
        "a run and a done, nothing sent"
    );

    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/rewrite"))
        .await
        .unwrap();
    assert_eq!(delivered(&out).0, "rewritten text");
    turn_complete(&engine).await;

    // A replacement that is itself a prompt command line expands.
    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/alias-fix"))
        .await
        .unwrap();
    let PromptOutcome::Delivered {
        text,
        runs,
        from_run,
        ..
    } = &out
    else {
        panic!("{out:?}")
    };
    assert_eq!(text, "Fix parser.rs now");
    assert_eq!(runs.len(), 2);
    assert_eq!(*from_run, Some(runs[1].command_id));
    turn_complete(&engine).await;

    // A failing handler counts as handled: its error is the answer, nothing is sent.
    let head = engine.log().head().seq;
    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/broken"))
        .await
        .unwrap();
    assert!(matches!(&out, PromptOutcome::Handled(ex) if ex.outcome.is_error()));
    assert_eq!(engine.log().head().seq, head + 2);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn streaming_sessions_need_steer_or_follow_up() {
    let (_d, engine, calls) = setup().await;
    engine
        .prompt(PromptRequest::new("s", "main", NI, "first"))
        .await
        .unwrap();
    assert!(engine.session("s").unwrap().streaming);

    let head = engine.log().head().seq;
    let err = engine
        .prompt(PromptRequest::new("s", "main", NI, "second"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PromptError::Streaming { session } if session == "s"),
        "{err}"
    );
    assert!(err.to_string().contains("steer") && err.to_string().contains("follow-up"));
    assert_eq!(engine.log().head().seq, head, "nothing is delivered");

    let mut steer = PromptRequest::new("s", "main", NI, "/fix now.rs");
    steer.behavior = Some(StreamingBehavior::Steer);
    assert_eq!(
        delivered(&engine.prompt(steer).await.unwrap()).1,
        Delivery::Steer
    );
    let mut follow = PromptRequest::new("s", "main", NI, "later");
    follow.behavior = Some(StreamingBehavior::FollowUp);
    assert_eq!(
        delivered(&engine.prompt(follow).await.unwrap()).1,
        Delivery::FollowUp
    );

    // Handler commands run even while streaming.
    let out = engine
        .prompt(PromptRequest::new("s", "main", NI, "/status"))
        .await
        .unwrap();
    assert!(matches!(out, PromptOutcome::Handled(_)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    turn_complete(&engine).await;
    assert!(!engine.session("s").unwrap().streaming);
    assert_eq!(
        delivered(
            &engine
                .prompt(PromptRequest::new("s", "main", NI, "idle again"))
                .await
                .unwrap()
        )
        .1,
        Delivery::Idle
    );
}

#[tokio::test]
async fn queue_helpers_refuse_handler_commands() {
    let (_d, engine, calls) = setup().await;
    let err = engine
        .queue("s", "main", "/status", StreamingBehavior::Steer)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PromptError::HandlerNotQueued { name } if name == "status"),
        "{err}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let seq = engine
        .queue("s", "main", "/fix queued.rs", StreamingBehavior::FollowUp)
        .await
        .unwrap();
    assert_eq!(seq, engine.log().head().seq);
    let p = last_prompt(&engine);
    assert_eq!(
        (p.text.as_str(), p.delivery),
        ("/fix queued.rs", Delivery::FollowUp)
    );
}
