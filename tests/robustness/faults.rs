//! Storage failing at the k-th I/O operation of an execution, for every k: the caller
//! gets a clear error (or a contained one on the handler-failure path), and the log
//! reopens, recovers and verifies clean.

use std::path::Path;
use std::sync::Arc;

use cmdlog_engine::*;
use cmdlog_engine::{discovery::*, event::*};
use cmdlog_replay::verify;
use cmdlog_store::{FaultKind, FaultPlan, Log, LogConfig, open_faulty};

use cmdlog_engine::attachments::SubmittedAttachment;
#[allow(unused_imports)]
use cmdlog_engine::{CommandKind, CommandName, CommandSource, CommandType, InputDescriptor};

fn faulty_log(path: &Path, plan: &Arc<FaultPlan>) -> Log {
    open_faulty(path, plan, LogConfig::default()).unwrap()
}

const LINE: &str = "/model fault-test";

/// A private copy of a prepared log, for one fault attempt.
fn copy_of(template: &Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    std::fs::copy(template, &path).unwrap();
    (dir, path)
}

/// Builds a log with a session and some history, then returns the number of I/O
/// operations one execution of LINE takes.
async fn prepare(path: &Path) -> u64 {
    let plan = FaultPlan::new();
    let engine = Engine::open(faulty_log(path, &plan), EngineConfig::default())
        .await
        .unwrap();
    engine
        .ensure_session("s", "main", Mode::NonInteractive)
        .await
        .unwrap();
    engine
        .execute(ExecuteRequest::new(
            "s",
            "main",
            Mode::NonInteractive,
            "/help",
        ))
        .await
        .unwrap();
    let before = plan.ops();
    let ex = engine
        .execute(ExecuteRequest::new("s", "main", Mode::NonInteractive, LINE))
        .await
        .unwrap()
        .unwrap();
    assert!(!ex.outcome.is_error());
    plan.ops() - before
}

/// Names the fault and the way out: reopen after a failed write, retry after a
/// failed read (reads change nothing and do not poison the writer).
fn is_clear(message: &str) -> bool {
    (message.contains("reopen the log") || message.contains("a read changes nothing: retry"))
        && (message.contains("injected I/O fault") || message.contains("No space left"))
}

async fn sweep(kind: FaultKind, sticky: bool) {
    let template = tempfile::tempdir().unwrap();
    let template_log = template.path().join("log.redb");
    let ops = prepare(&template_log).await;
    assert!(
        ops >= 6,
        "one execution does at least a write and a sync per append: {ops}"
    );
    let mut outcomes = [0usize; 3]; // loud error, contained error, untouched success
    for k in 1..=ops + 1 {
        let (_dir, path) = copy_of(&template_log);
        let plan = FaultPlan::new();
        let engine = Engine::open(faulty_log(&path, &plan), EngineConfig::default())
            .await
            .unwrap();
        let head = engine.log().head();
        plan.fail_after(k, kind, sticky);
        let result = engine
            .execute(ExecuteRequest::new("s", "main", Mode::NonInteractive, LINE))
            .await;
        match &result {
            Err(e) => {
                assert!(is_clear(&e.to_string()), "k={k}: unclear error: {e}");
                outcomes[0] += 1;
            }
            Ok(Some(ex)) if ex.outcome.is_error() => {
                let Outcome::Error { text, .. } = &ex.outcome else {
                    unreachable!()
                };
                assert!(is_clear(text), "k={k}: unclear handler error: {text}");
                outcomes[1] += 1;
            }
            Ok(Some(_)) => {
                assert!(
                    !plan.fired() || !sticky,
                    "k={k}: a fired sticky fault cannot leave a success"
                );
                outcomes[2] += 1;
            }
            Ok(None) => panic!("k={k}: the line resolved before"),
        }
        if plan.fired() {
            assert!(
                engine.log().poisoned().is_some()
                    || result
                        .as_ref()
                        .is_ok_and(|r| r.as_ref().is_some_and(|e| !e.outcome.is_error())),
                "k={k}: a failed commit poisons the writer"
            );
        }
        drop(engine);

        // Reopen on the plain file: recovery closes whatever run was left open.
        let log = Log::open(&path, LogConfig::default()).unwrap();
        assert!(
            log.head().seq >= head.seq,
            "k={k}: acknowledged records survive"
        );
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        let report = verify(engine.log(), |_| {}).unwrap();
        assert!(report.is_clean(), "k={k}: {:#?}", report.violations);
        assert!(
            report.open_runs.is_empty(),
            "k={k}: recovery closes interrupted runs"
        );
        // And the log takes new work.
        let ex = engine
            .execute(ExecuteRequest::new(
                "s",
                "main",
                Mode::NonInteractive,
                "/model",
            ))
            .await
            .unwrap()
            .unwrap();
        assert!(!ex.outcome.is_error(), "k={k}: {ex:?}");
    }
    eprintln!("{kind:?} sticky={sticky}: {ops} ops; loud/contained/unaffected = {outcomes:?}");
    assert!(outcomes[0] > 0, "some k must fail the run append loudly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_io_failure_point_of_an_execution_sticky_eio() {
    sweep(FaultKind::Io, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_io_failure_point_of_an_execution_transient_eio() {
    sweep(FaultKind::Io, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_io_failure_point_of_an_execution_disk_full() {
    sweep(FaultKind::NoSpace, true).await;
}

/// A command that declares attachments, registered for one engine's lifetime.
async fn register_taker(engine: &Engine) {
    let mut spec = CommandSpec::new(
        CommandName::new("takes").unwrap(),
        CommandSource::PluginCommand,
        CommandKind::Skill,
    );
    spec.command_type = Some(CommandType::Local);
    spec.supported_modes = Some(Mode::ALL.to_vec());
    spec.input = Some(InputDescriptor {
        hint: String::new(),
        attachments: true,
    });
    engine
        .register(NewRegistration::handler(
            spec,
            |inv: Invocation| async move {
                Ok(CommandResult::text(format!(
                    "{} blocks",
                    inv.attachments.len()
                )))
            },
        ))
        .await
        .unwrap()
        .forget();
}

fn attachment_request(k: u64) -> ExecuteRequest {
    let mut request = ExecuteRequest::new("s", "main", Mode::NonInteractive, "/takes");
    // Fresh bytes per k, so every attempt writes new blobs.
    request.attachments = vec![
        SubmittedAttachment::Image {
            name: "a.png".into(),
            bytes: [
                &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A][..],
                &k.to_le_bytes(),
            ]
            .concat(),
        },
        SubmittedAttachment::Image {
            name: "b.gif".into(),
            bytes: [&b"GIF89a"[..], &k.to_le_bytes()].concat(),
        },
    ];
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_failures_during_admission_leave_only_unreferenced_blobs() {
    let template = tempfile::tempdir().unwrap();
    let template_log = template.path().join("log.redb");
    let ops = {
        let plan = FaultPlan::new();
        let engine = Engine::open(faulty_log(&template_log, &plan), EngineConfig::default())
            .await
            .unwrap();
        engine
            .ensure_session("s", "main", Mode::NonInteractive)
            .await
            .unwrap();
        register_taker(&engine).await;
        let before = plan.ops();
        let ex = engine
            .execute(attachment_request(0))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ex.outcome, Outcome::text("2 blocks"));
        plan.ops() - before
    };
    let mut orphans_seen = 0;
    for k in 1..=ops + 1 {
        let (_dir, path) = copy_of(&template_log);
        let plan = FaultPlan::new();
        {
            let engine = Engine::open(faulty_log(&path, &plan), EngineConfig::default())
                .await
                .unwrap();
            register_taker(&engine).await;
            plan.fail_after(k, FaultKind::Io, true);
            if let Err(e) = engine.execute(attachment_request(k)).await {
                assert!(is_clear(&e.to_string()), "k={k}: unclear error: {e}");
            }
        }
        let log = Log::open(&path, LogConfig::default()).unwrap();
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        let report = verify(engine.log(), |_| {}).unwrap();
        assert!(report.is_clean(), "k={k}: {:#?}", report.violations);
        // Whatever the failure left is either referenced or an orphan gc frees.
        let referenced = cmdlog_replay::referenced_blobs(engine.log()).unwrap();
        let orphans: Vec<_> = engine
            .log()
            .list_blobs()
            .unwrap()
            .into_iter()
            .filter(|(h, _, _)| !referenced.contains(h))
            .collect();
        orphans_seen += orphans.len();
        let plan = cmdlog_replay::plan_gc(engine.log(), u64::MAX, 0).unwrap();
        assert_eq!(
            plan.collect.len(),
            orphans.len(),
            "k={k}: gc frees exactly the orphans"
        );
        tokio::task::block_in_place(|| cmdlog_replay::collect(engine.log(), &plan)).unwrap();
        let report = verify(engine.log(), |_| {}).unwrap();
        assert!(
            report.is_clean(),
            "k={k} after gc: {:#?}",
            report.violations
        );
        for hash in &referenced {
            assert!(
                engine.log().has_blob(hash).unwrap(),
                "k={k}: gc kept every referenced blob"
            );
        }
    }
    eprintln!(
        "admission sweep: {ops} ops, {orphans_seen} orphan blobs left across all k and collected"
    );
    assert!(
        orphans_seen > 0,
        "some k fails after the blobs committed and before the run"
    );
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Register,
    Sync,
    Gc,
}

/// The command files a sync registers.
fn command_files(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (home, ws) = (root.join("home"), root.join("ws"));
    let dir = ws.join(".claude/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for name in ["one", "two", "three"] {
        std::fs::write(
            dir.join(format!("{name}.md")),
            format!("The {name} command: $ARGUMENTS\n"),
        )
        .unwrap();
    }
    (home, ws)
}

async fn run_op(engine: &Engine, op: Op, root: &Path) -> Result<(), String> {
    match op {
        Op::Register => {
            let mut spec = CommandSpec::new(
                CommandName::new("late").unwrap(),
                CommandSource::SkillDirCommand,
                CommandKind::File,
            );
            spec.command_type = Some(CommandType::Prompt);
            engine
                .register(NewRegistration::prompt(spec, "A late template $1"))
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        Op::Sync => {
            let (home, ws) = (root.join("home"), root.join("ws"));
            let found = discover(&DiscoveryConfig::new(home, ws)).unwrap();
            engine
                .sync(&found)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        Op::Gc => {
            let log = Arc::clone(engine.log());
            tokio::task::block_in_place(|| {
                let plan = cmdlog_replay::plan_gc(&log, u64::MAX, 0).map_err(|e| e.to_string())?;
                cmdlog_replay::collect(&log, &plan)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        }
    }
}

/// Fails every write/sync op of `op`, one k at a time, sticky; each must give a
/// clear error or succeed untouched, and the log must reopen and verify.
async fn sweep_op(op: Op) {
    let root = tempfile::tempdir().unwrap();
    command_files(root.path());
    let template_log = root.path().join("template.redb");
    {
        let log = Log::open(&template_log, LogConfig::default()).unwrap();
        let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
        if matches!(op, Op::Gc) {
            // Orphans for gc to remove.
            for i in 0..3 {
                engine
                    .log()
                    .put_blob_async(format!("orphan {i}").into_bytes())
                    .await
                    .unwrap();
            }
        }
    }
    let ops = {
        let (_dir, path) = copy_of(&template_log);
        let plan = FaultPlan::new();
        plan.count_reads(false);
        let engine = Engine::open(faulty_log(&path, &plan), EngineConfig::default())
            .await
            .unwrap();
        let before = plan.ops();
        run_op(&engine, op, root.path()).await.unwrap();
        plan.ops() - before
    };
    assert!(ops > 0, "{op:?} writes");
    let mut failed = 0;
    for k in 1..=ops {
        let (_dir, path) = copy_of(&template_log);
        let plan = FaultPlan::new();
        plan.count_reads(false);
        {
            let engine = Engine::open(faulty_log(&path, &plan), EngineConfig::default())
                .await
                .unwrap();
            plan.fail_after(k, FaultKind::Io, true);
            if let Err(e) = run_op(&engine, op, root.path()).await {
                assert!(is_clear(&e), "{op:?} k={k}: unclear error: {e}");
                failed += 1;
            }
        }
        let engine = Engine::open(
            Log::open(&path, LogConfig::default()).unwrap(),
            EngineConfig::default(),
        )
        .await
        .unwrap();
        let report = verify(engine.log(), |_| {}).unwrap();
        assert!(report.is_clean(), "{op:?} k={k}: {:#?}", report.violations);
        // And the operation succeeds once the disk is back (a registration that did
        // commit before the fault is simply there).
        let committed = matches!(op, Op::Register)
            && engine.find("main", Mode::NonInteractive, "late").is_some();
        if !committed {
            run_op(&engine, op, root.path())
                .await
                .unwrap_or_else(|e| panic!("{op:?} k={k} after reopen: {e}"));
        }
        assert!(verify(engine.log(), |_| {}).unwrap().is_clean());
    }
    eprintln!(
        "{op:?}: {ops} write/sync ops, {failed} gave a clear error, every log reopened and verified"
    );
    assert!(failed > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_failure_of_a_registration() {
    sweep_op(Op::Register).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_failure_of_a_discovery_sync() {
    sweep_op(Op::Sync).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_failure_of_a_gc() {
    sweep_op(Op::Gc).await;
}
