//! A state-machine property test: random sequences of register / dispose / execute
//! (succeeding, failing, panicking, refusing, cancelled handlers, and lines carrying
//! attachments) / close-and-reopen are run against the engine and against a small
//! in-memory model. After every step: the outcome matches the model, `verify` finds
//! no violation, and the live state equals the state replayed from the log.
//!
//! The seed is printed; rerun one with `CMDLOG_SEED=<seed>`. `CMDLOG_CASES` sets the
//! number of cases (default 48).

use std::sync::Arc;

use cmdlog_engine::*;
use cmdlog_engine::{attachments::*, event::*};
use cmdlog_replay::{state_at, verify};
use cmdlog_store::{Durability, Log, LogConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const NAMES: [&str; 3] = ["alpha", "beta", "gamma"];
const AGENTS: [&str; 2] = ["main", "helper"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Succeed,
    Fail,
    Panic,
    Refuse,
    WaitForCancel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modes {
    All,
    InteractiveOnly,
    Headless,
}

impl Modes {
    fn list(self) -> Vec<Mode> {
        match self {
            Modes::All => Mode::ALL.to_vec(),
            Modes::InteractiveOnly => vec![Mode::Interactive],
            Modes::Headless => vec![Mode::NonInteractive, Mode::Acp],
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Register {
        name: usize,
        agent_scope: Option<usize>,
        modes: Modes,
        behaviour: Behaviour,
    },
    Dispose(usize),
    Execute {
        name: usize,
        agent: usize,
        mode: usize,
        attach: bool,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let behaviour = prop_oneof![
        3 => Just(Behaviour::Succeed),
        1 => Just(Behaviour::Fail),
        1 => Just(Behaviour::Panic),
        1 => Just(Behaviour::Refuse),
        1 => Just(Behaviour::WaitForCancel),
    ];
    let modes = prop_oneof![
        Just(Modes::All),
        Just(Modes::InteractiveOnly),
        Just(Modes::Headless)
    ];
    prop_oneof![
        4 => (0..NAMES.len(), proptest::option::of(0..AGENTS.len()), modes, behaviour)
            .prop_map(|(name, agent_scope, modes, behaviour)| Op::Register { name, agent_scope, modes, behaviour }),
        2 => (0..16usize).prop_map(Op::Dispose),
        6 => (0..NAMES.len(), 0..AGENTS.len(), 0..3usize, proptest::bool::weighted(0.1))
            .prop_map(|(name, agent, mode, attach)| Op::Execute { name, agent, mode, attach }),
        1 => Just(Op::Reopen),
    ]
}

/// The model's view of one live registration.
#[derive(Debug, Clone)]
struct ModelReg {
    id: usize,
    seq: Seq,
    name: usize,
    agent_scope: Option<usize>,
    modes: Modes,
    behaviour: Behaviour,
}

#[derive(Default)]
struct Model {
    live: Vec<ModelReg>,
    next_id: usize,
}

impl Model {
    fn winner(&self, name: usize, agent: usize, mode: Mode) -> Option<&ModelReg> {
        let mut c: Vec<&ModelReg> = self
            .live
            .iter()
            .filter(|r| {
                r.name == name
                    && r.agent_scope.is_none_or(|a| a == agent)
                    && r.modes.list().contains(&mode)
            })
            .collect();
        // Agent layer first, then registration order (one provider, equal precedence).
        c.sort_by_key(|r| (r.agent_scope.is_none(), r.seq));
        c.first().copied()
    }

    fn conflicts(&self, name: usize, agent_scope: Option<usize>, modes: Modes) -> bool {
        self.live.iter().any(|r| {
            r.name == name
                && r.agent_scope == agent_scope
                && r.modes.list().iter().any(|m| modes.list().contains(m))
        })
    }
}

fn spec(name: usize, modes: Modes) -> CommandSpec {
    let mut s = CommandSpec::new(
        CommandName::new(NAMES[name]).unwrap(),
        CommandSource::PluginCommand,
        CommandKind::Skill,
    );
    s.command_type = Some(CommandType::Local);
    s.supported_modes = Some(modes.list());
    s
}

fn handler(id: usize, behaviour: Behaviour) -> impl CommandHandler {
    move |inv: Invocation| async move {
        match behaviour {
            Behaviour::Succeed => Ok(CommandResult::text(format!("ok {id}"))),
            Behaviour::Fail => Err(HandlerError(format!("failure {id}"))),
            Behaviour::Panic => panic!("panic {id}"),
            Behaviour::Refuse => Ok(CommandResult::Error {
                text: format!("refused {id}"),
            }),
            Behaviour::WaitForCancel => {
                inv.cancel.cancelled().await;
                std::future::pending::<()>().await;
                unreachable!()
            }
        }
    }
}

async fn open(dir: &std::path::Path) -> Engine {
    // Buffered: the test checks lifecycle semantics, not fsync; close flushes.
    let config = LogConfig {
        durability: Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.join("log.redb"), config).unwrap();
    let engine = Engine::open(log, EngineConfig::default()).await.unwrap();
    for agent in AGENTS {
        engine
            .ensure_session(&format!("s-{agent}"), agent, Mode::NonInteractive)
            .await
            .unwrap();
    }
    engine
}

fn check_invariants(engine: &Engine, step: usize, op: &Op) -> Result<(), TestCaseError> {
    let report = verify(engine.log(), |_| {}).unwrap();
    prop_assert!(
        report.is_clean(),
        "step {step} {op:?}: {:#?}",
        report.violations
    );
    prop_assert!(
        report.open_runs.is_empty(),
        "step {step}: runs left open {:?}",
        report.open_runs
    );
    let replayed = state_at(engine.log(), u64::MAX).unwrap();
    prop_assert_eq!(
        &engine.state(),
        &replayed,
        "step {} {:?}: live state differs from replay",
        step,
        op
    );
    Ok(())
}

async fn run_case(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = open(dir.path()).await;
    let mut model = Model::default();
    let mut disposers: Vec<(usize, Disposer)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match op.clone() {
            Op::Register {
                name,
                agent_scope,
                modes,
                behaviour,
            } => {
                let id = model.next_id;
                model.next_id += 1;
                let mut new = NewRegistration::handler(spec(name, modes), handler(id, behaviour));
                if let Some(a) = agent_scope {
                    new = new.for_agent(AGENTS[a]);
                }
                let expect_conflict = model.conflicts(name, agent_scope, modes);
                match engine.register(new).await {
                    Ok(d) => {
                        prop_assert!(
                            !expect_conflict,
                            "step {step}: registration should conflict"
                        );
                        model.live.push(ModelReg {
                            id,
                            seq: d.registration(),
                            name,
                            agent_scope,
                            modes,
                            behaviour,
                        });
                        disposers.push((id, d));
                    }
                    Err(RegisterError::Conflict { .. }) => {
                        prop_assert!(expect_conflict, "step {step}: unexpected conflict")
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("step {step}: {e}"))),
                }
            }
            Op::Dispose(i) => {
                if disposers.is_empty() {
                    continue;
                }
                let (id, d) = &disposers[i % disposers.len()];
                let was_live = model.live.iter().any(|r| r.id == *id);
                let head = engine.log().head().seq;
                let disposed = d.dispose().await.unwrap();
                prop_assert_eq!(
                    disposed,
                    was_live,
                    "step {}: dispose of a live registration appends once",
                    step
                );
                prop_assert_eq!(engine.log().head().seq, head + u64::from(was_live));
                prop_assert!(!d.dispose().await.unwrap(), "a second dispose is a no-op");
                model.live.retain(|r| r.id != *id);
            }
            Op::Execute {
                name,
                agent,
                mode,
                attach,
            } => {
                let mode = Mode::ALL[mode];
                let session = format!("s-{}", AGENTS[agent]);
                let mut request = ExecuteRequest::new(
                    &session,
                    AGENTS[agent],
                    mode,
                    &format!("/{} arg", NAMES[name]),
                );
                if attach {
                    request.attachments = vec![SubmittedAttachment::Image {
                        name: "a.png".into(),
                        bytes: vec![1, 2, 3],
                    }];
                }
                let cancel = request.cancel.clone();
                let expected = model.winner(name, agent, mode).cloned();
                if expected
                    .as_ref()
                    .is_some_and(|r| r.behaviour == Behaviour::WaitForCancel)
                {
                    tokio::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        cancel.cancel();
                    });
                }
                let head = engine.log().head().seq;
                let result = engine.execute(request).await.unwrap();
                match (expected, result) {
                    (None, None) => {
                        prop_assert_eq!(engine.log().head().seq, head, "a miss logs nothing")
                    }
                    (Some(r), Some(ex)) => {
                        prop_assert_eq!(
                            ex.registration,
                            r.seq,
                            "step {}: resolved the wrong registration",
                            step
                        );
                        prop_assert!(ex.done.is_some());
                        let text = match &ex.outcome {
                            Outcome::Success { text, .. } => text.clone().unwrap_or_default(),
                            Outcome::Error { text, .. } => text.clone(),
                        };
                        let want = if attach {
                            "does not take attachments".to_string()
                        } else {
                            match r.behaviour {
                                Behaviour::Succeed => format!("ok {}", r.id),
                                Behaviour::Fail => format!("failure {}", r.id),
                                Behaviour::Panic => format!("panicked: panic {}", r.id),
                                Behaviour::Refuse => format!("refused {}", r.id),
                                Behaviour::WaitForCancel => "aborted".to_string(),
                            }
                        };
                        prop_assert!(
                            text.contains(&want),
                            "step {}: outcome {:?}, wanted {:?}",
                            step,
                            ex.outcome,
                            want
                        );
                        let is_success = !attach && r.behaviour == Behaviour::Succeed;
                        prop_assert_eq!(ex.outcome.is_error(), !is_success);
                    }
                    (expected, got) => {
                        return Err(TestCaseError::fail(format!(
                            "step {step}: model expected {expected:?}, engine gave {got:?}"
                        )));
                    }
                }
            }
            Op::Reopen => {
                disposers.clear();
                let head_before = engine.log().head().seq;
                drop(engine);
                engine = open(dir.path()).await;
                // Handler registrations die with their process.
                let ended = model.live.len() as u64;
                model.live.clear();
                prop_assert_eq!(
                    engine.log().head().seq,
                    head_before + ended,
                    "reopen ends exactly the live handler registrations"
                );
            }
        }
        check_invariants(&engine, step, op)?;
    }
    Ok(())
}

#[test]
fn lifecycle_matches_the_model_and_replay_after_every_step() {
    let seed: u64 = std::env::var("CMDLOG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let cases: u32 = std::env::var("CMDLOG_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48);
    eprintln!("lifecycle_model seed: {seed} (rerun with CMDLOG_SEED={seed})");
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    );
    let result = runner.run(&proptest::collection::vec(op(), 1..40), |ops| {
        runtime.block_on(run_case(ops))
    });
    if let Err(e) = result {
        panic!("seed {seed}: {e}");
    }
}
