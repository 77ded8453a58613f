//! Opening an engine: snapshots, the fold of the log, crash recovery.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use cmdlog_store::{AppendError, Log, ReadError};

use super::builtins;
use super::registration::RegisterError;
use super::{Engine, EngineConfig, Inner, lock};
use crate::event::{
    CommandDone, DecodeError, Event, EventData, NewEvent, Outcome, Seq, UnregisterReason,
    Unregistered, WalDiscarded,
};
use crate::state::LogState;

/// Opening an engine on a log failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineOpenError {
    /// Reading the log failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A record is not a valid event.
    #[error("{0}; run `cmdlog verify` to see the damage")]
    Decode(#[from] DecodeError),
    /// Recovery appends failed.
    #[error("could not record crash recovery: {0}")]
    Append(#[from] AppendError),
    /// Registering a built-in failed.
    #[error(transparent)]
    Register(#[from] RegisterError),
}

use crate::limits::SNAPSHOT_TAIL_EVENTS;
/// The snapshot format this version writes and reads.
const SNAPSHOT_VERSION: u64 = 1;

/// The state of the latest snapshot, when it is of this format and matches this
/// log (the chain hash of its seq); `None` means fold from the start.
pub fn load_snapshot(log: &Log) -> Option<LogState> {
    #[derive(serde::Deserialize)]
    struct Snapshot {
        version: u64,
        seq: Seq,
        hash: String,
        state: LogState,
    }
    let (seq, bytes) = log.latest_snapshot().ok()??;
    let snapshot: Snapshot = serde_json::from_slice(&bytes).ok()?;
    let record = log.get(seq).ok()??;
    let valid = snapshot.version == SNAPSHOT_VERSION
        && snapshot.seq == seq
        && snapshot.state.applied == seq
        && record.hash.to_hex() == snapshot.hash;
    valid.then_some(snapshot.state)
}

/// Folds every record of `log` in `from..=until` into `state`.
pub fn fold_log(
    log: &Log,
    state: &mut LogState,
    from: Seq,
    until: Seq,
) -> Result<(), EngineOpenError> {
    fold_log_with(log, state, from, until, |_| {})
}

/// [`fold_log`], calling `progress` with each seq folded.
pub fn fold_log_with(
    log: &Log,
    state: &mut LogState,
    from: Seq,
    until: Seq,
    mut progress: impl FnMut(Seq),
) -> Result<(), EngineOpenError> {
    let mut failure = None;
    log.scan(from, until, |record| {
        match Event::decode(record.seq, &record.bytes) {
            Ok(event) => {
                state.apply(&event);
                progress(record.seq);
                true
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

impl Engine {
    /// Opens an engine on `log` for writing: folds the log, closes runs left without
    /// a done as interrupted, ends handler registrations of earlier processes, and
    /// registers the built-ins that are missing.
    pub async fn open(log: Log, config: EngineConfig) -> Result<Engine, EngineOpenError> {
        let log = Arc::new(log);
        let head = log.head().seq;
        let mut state = load_snapshot(&log).unwrap_or_default();
        let folded_from = state.applied + 1;
        fold_log(&log, &mut state, folded_from, head)?;
        let state = Arc::new(Mutex::new(state));
        let hook_state = Arc::clone(&state);
        log.set_commit_hook(Box::new(move |batch| {
            let mut state = lock(&hook_state);
            for record in batch {
                match Event::decode(record.seq, record.bytes) {
                    Ok(event) => state.apply(&event),
                    // Engines append bytes they just encoded; a record another
                    // short-lived process appended that this version cannot read
                    // stops appends here (the store poisons on the panic) rather
                    // than let the state drift from the log.
                    Err(e) => panic!("seq {}: an event this engine cannot read: {e}", record.seq),
                }
            }
        }));
        let engine = Engine {
            inner: Arc::new(Inner {
                log,
                state,
                handlers: tokio::sync::Mutex::new(HashMap::new()),
                registry_writes: tokio::sync::Mutex::new(()),
                observers: Mutex::new(Vec::new()),
                next_observer: AtomicU64::new(1),
                clock: config.clock,
                limits: config.attachment_limits,
                receipts: Mutex::new(None),
            }),
        };
        engine.recover().await?;
        if head + 1 - folded_from >= SNAPSHOT_TAIL_EVENTS {
            // A cache: if writing it fails, the next open folds the log again.
            let _ = engine.snapshot().await;
        }
        Ok(engine)
    }

    async fn recover(&self) -> Result<(), EngineOpenError> {
        let now = self.now();
        // Other short-lived processes may be running their runs and holding their
        // handlers right now: only what was there when this open held the log alone
        // (always, for a writable open) was left by processes that are gone.
        let settled = self.inner.log.alone_through();
        let alone = settled.is_some();
        let (open_runs, stale, missing) = {
            let state = lock(&self.inner.state);
            let open_runs: Vec<_> = state
                .open_runs
                .values()
                .filter(|run| settled.is_some_and(|through| run.seq <= through))
                .cloned()
                .collect();
            let mut missing: Vec<_> = builtins::definitions();
            let mut stale = Vec::new();
            let mut reattach = Vec::new();
            for r in state.registry.active() {
                if r.command.is_prompt() {
                    continue;
                }
                match missing.iter().position(|b| b.matches(r)) {
                    Some(i) => reattach.push((r.seq, missing.swap_remove(i))),
                    None if alone && settled.is_some_and(|through| r.seq <= through) => {
                        stale.push(r.seq)
                    }
                    None => {}
                }
            }
            drop(state);
            let mut handlers = self
                .inner
                .handlers
                .try_lock()
                .expect("no one else holds the handlers while the engine opens");
            for (seq, builtin) in reattach {
                handlers.insert(seq, builtin.handler);
            }
            (open_runs, stale, missing)
        };
        let mut events: Vec<NewEvent> = open_runs
            .into_iter()
            .map(|run| NewEvent {
                observed: None,
                at: now,
                session: run.session,
                agent: run.agent,
                data: EventData::CommandDone(CommandDone {
                    agent_check: None,
                    run: run.seq,
                    outcome: Outcome::Error {
                        text: format!(
                            "interrupted: the process running /{} ended before it settled",
                            run.name
                        ),
                        interrupted: true,
                    },
                    elapsed_us: 0,
                }),
            })
            .collect();
        events.extend(stale.into_iter().map(|registration| NewEvent {
            observed: None,
            at: now,
            session: None,
            agent: None,
            data: EventData::Unregistered(Unregistered {
                registration,
                reason: UnregisterReason::OwnerExited,
            }),
        }));
        // A damaged write-ahead log's dropped tail is said in the log itself, first.
        if let Some(discard) = self.inner.log.wal_discard() {
            events.insert(
                0,
                NewEvent {
                    observed: None,
                    at: now,
                    session: None,
                    agent: None,
                    data: EventData::WalDiscarded(WalDiscarded {
                        wal: discard.wal.display().to_string(),
                        problem: discard.problem.clone(),
                        kept_through: discard.kept_through,
                        dropped_seqs: discard.dropped_seqs,
                        dropped_frames: discard.dropped_frames as u64,
                    }),
                },
            );
        }
        let registry_changed = events
            .iter()
            .any(|e| matches!(e.data, EventData::Unregistered(_)));
        if !events.is_empty() {
            self.append(events).await?;
        }
        for builtin in missing {
            let disposer = self.register(builtin.into_registration()).await?;
            disposer.forget();
        }
        if registry_changed {
            self.notify();
        }
        Ok(())
    }

    /// Stores the current state as a snapshot (with the chain hash of its seq), so
    /// the next open folds only the events after it. Snapshots are a cache:
    /// deleting them changes no answer.
    pub async fn snapshot(&self) -> Result<Seq, AppendError> {
        let (seq, bytes) = {
            let state = lock(&self.inner.state);
            let hash = match self.inner.log.get(state.applied) {
                Ok(Some(r)) => r.hash.to_hex(),
                _ => return Ok(0),
            };
            let snapshot = serde_json::json!({"version": SNAPSHOT_VERSION, "seq": state.applied, "hash": hash, "state": &*state});
            (
                state.applied,
                serde_json::to_vec(&snapshot).expect("the state serializes"),
            )
        };
        self.inner.log.put_snapshot(seq, bytes).await?;
        Ok(seq)
    }
}
