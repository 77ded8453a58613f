//! Prompt turns: each session's prompts queue first in, first out, and run one at
//! a time — through cmdlog's registry first (a handler command answers itself, a
//! prompt command expands), then to the agent behind the daemon, or, with none,
//! to an external runtime that publishes the turn through `/update`. Every turn
//! ends with exactly one `turn_complete` or `turn_error` carrying its `promptId`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cmdlog_acp::{RegistryTurn, TurnPrompt, through_registry};
use cmdlog_engine::event::PermissionResolved;
use cmdlog_engine::{CancellationToken, EventData, Mode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::live::{Active, Live, PendingPrompt, Queued};
use crate::state::AppState;

use crate::limits::QUEUE_MAX;

/// How a turn ended.
enum TurnEnd {
    /// With the agent's stop reason, and the branch point it reported.
    Stop(String, Option<Value>),
    /// With an error, and its code.
    Failed(String, Option<Value>),
    /// An external runtime recorded the end itself.
    Recorded,
    /// The session ended under it (closed, or its agent died): nothing follows.
    SessionGone,
}

impl AppState {
    /// The live state of `session`, made (with its queue's worker) on first use.
    pub(crate) fn live(self: &Arc<Self>, session: &str) -> Arc<Live> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = live.get(session) {
            return Arc::clone(l);
        }
        let (queue, rx) = mpsc::unbounded_channel();
        let l = Arc::new(Live {
            queue,
            queued: AtomicUsize::new(0),
            active: Mutex::new(None),
            turn_ended: tokio::sync::Notify::new(),
            clients: Mutex::new(HashMap::new()),
            bound: tokio::sync::Mutex::new(None),
            commands: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
            agent_state: Mutex::new(Value::Null),
        });
        live.insert(session.to_string(), Arc::clone(&l));
        tokio::spawn(work(Arc::downgrade(self), session.to_string(), rx));
        l
    }

    /// The live state of `session`, if it has one.
    pub(crate) fn live_if(&self, session: &str) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
    }

    /// Queues a prompt; `Err(pending)` when the queue is full.
    pub(crate) fn admit(self: &Arc<Self>, session: &str, prompt: Queued) -> Result<(), usize> {
        let live = self.live(session);
        let pending = live.queued.fetch_add(1, Ordering::SeqCst);
        if pending >= QUEUE_MAX {
            live.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(pending);
        }
        let listed = PendingPrompt {
            prompt_id: prompt.prompt_id.clone(),
            text: prompt.text.clone(),
            queued_at: cmdlog_common::time::rfc3339(cmdlog_common::time::now_ms()),
            state: "queued",
            client: prompt.client.clone(),
        };
        let mut listing = live.pending.lock().unwrap_or_else(|p| p.into_inner());
        match live.queue.send(prompt) {
            Ok(()) => listing.push(listed),
            Err(_) => {
                live.queued.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Cancels the running turn of `session` and answers its waiting permission
    /// requests `cancelled`; queued prompts still run. `true` if a turn was running.
    /// The prompt whose turn `session` is running, if one.
    pub(crate) fn active_prompt(&self, session: &str) -> Option<String> {
        self.live_if(session).and_then(|l| {
            l.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|a| a.prompt_id.clone())
        })
    }

    pub(crate) async fn cancel_turn(&self, session: &str) -> bool {
        let active = self
            .live_if(session)
            .and_then(|l| l.active.lock().unwrap_or_else(|p| p.into_inner()).clone());
        // When the client asked, noted before anything can end the turn: the
        // agent may stop `cancelled` as soon as it hears, while the answers to
        // its questions are still being recorded.
        if let Some(a) = &active {
            let _ = a.cancelled_at.compare_exchange(
                0,
                cmdlog_common::time::now_ms(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        // The agent hears the cancel before the answers to its questions.
        if let Some(a) = &active {
            a.tell_agent();
        }
        self.cancel_permissions(session).await;
        // Commands run through `/command` are cancelled too.
        let commands = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session)
            .unwrap_or_default();
        for (_, token) in commands {
            token.cancel();
        }
        match active {
            Some(a) => {
                a.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Answers every waiting permission request of `session` `cancelled`, and
    /// records the answers.
    pub(crate) async fn cancel_permissions(&self, session: &str) {
        let waiting: Vec<_> = {
            let mut pending = self.votes.pending.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, p)| p.session == session)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id).map(|p| (id, p)))
                .collect()
        };
        for (request_id, p) in waiting {
            self.remember_resolved(&request_id, session, &json!({"outcome": "cancelled"}));
            self.recorder.record(
                Some(session),
                None,
                EventData::PermissionResolved(PermissionResolved {
                    request_id,
                    decision: json!({"outcome": "cancelled"}),
                    ..Default::default()
                }),
            );
            if let Some(answer) = p.answer {
                let _ = answer.send(json!({"outcome": "cancelled"}));
            }
        }
        self.recorder.flush().await;
    }

    /// The session ends (closed, or its agent died): its turn is cancelled, its
    /// queue dropped, its permission requests answered.
    pub(crate) async fn end_session(&self, session: &str) {
        self.cancel_turn(session).await;
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
        let mut single = self.single.lock().unwrap_or_else(|p| p.into_inner());
        if single.as_deref() == Some(session) {
            *single = None;
        }
    }
}

/// Marks prompt `id` of the listing `state`, or takes it off (`None`);
/// whether it was listed.
fn set_pending(live: &Live, id: &str, state: Option<&'static str>) -> bool {
    let mut listing = live.pending.lock().unwrap_or_else(|p| p.into_inner());
    let at = listing.iter().position(|p| p.prompt_id == id);
    match (at, state) {
        (Some(at), Some(state)) => listing[at].state = state,
        (Some(at), None) => {
            listing.remove(at);
        }
        (None, _) => {}
    }
    at.is_some()
}

impl Live {
    /// Takes queued prompt `id` off the queue before it runs; whether it was
    /// waiting there (a running one stays: cancel it).
    pub(crate) fn unqueue(&self, id: &str) -> bool {
        let mut listing = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let before = listing.len();
        listing.retain(|p| p.prompt_id != id || p.state != "queued");
        listing.len() < before
    }
}

/// Runs `session`'s prompts in order until the session ends.
async fn work(state: Weak<AppState>, session: String, mut queue: mpsc::UnboundedReceiver<Queued>) {
    while let Some(prompt) = queue.recv().await {
        let Some(state) = state.upgrade() else { return };
        let Some(live) = state.live_if(&session) else {
            return;
        };
        let id = prompt.prompt_id.clone();
        // One a client took off the queue (`DELETE …/pending-prompts/{id}`) never runs.
        if set_pending(&live, &id, Some("running")) {
            run_turn(&state, &live, &session, prompt).await;
            set_pending(&live, &id, None);
        }
        live.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn run_turn(state: &Arc<AppState>, live: &Arc<Live>, session: &str, prompt: Queued) {
    let cancel = CancellationToken::new();
    let started_at = cmdlog_common::time::now_ms();
    let cancelled_at = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let active = Active {
        prompt_id: prompt.prompt_id.clone(),
        cancel: cancel.clone(),
        cancelled_at: Arc::clone(&cancelled_at),
        agent_cancel: Arc::default(),
        agent_told: Arc::default(),
    };
    *live.active.lock().unwrap_or_else(|p| p.into_inner()) = Some(active.clone());
    if let Some(deadline) = prompt.deadline {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            cancel.cancel();
        });
    }
    let end = turn(state, live, session, &prompt, &active).await;
    let update = match end {
        TurnEnd::Stop(reason, branch) => {
            let mut u = json!({
                "sessionUpdate": "turn_complete",
                "stopReason": reason,
                "promptId": prompt.prompt_id,
            });
            if let Some(branch) = branch {
                u["branchPoint"] = branch;
            }
            // A client cancelled it: when, and how long the turn had run (as
            // `qwen serve` reports a cancelled prompt).
            let at = cancelled_at.load(Ordering::SeqCst);
            if reason == "cancelled" && at != 0 {
                u["promptCancelled"] = json!({
                    "cancelledAt": at,
                    "elapsedMs": at.saturating_sub(started_at),
                });
            }
            Some(u)
        }
        TurnEnd::Failed(message, code) => {
            let mut u = json!({
                "sessionUpdate": "turn_error",
                "message": message,
                "promptId": prompt.prompt_id,
            });
            if let Some(code) = code {
                u["code"] = code;
            }
            Some(u)
        }
        TurnEnd::Recorded | TurnEnd::SessionGone => None,
    };
    if let Some(update) = update {
        state
            .recorder
            .record(Some(session), None, EventData::SessionUpdate(update));
        state.recorder.flush().await;
    }
    *live.active.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

async fn turn(
    state: &Arc<AppState>,
    live: &Arc<Live>,
    session: &str,
    prompt: &Queued,
    active: &Active,
) -> TurnEnd {
    let cancel = &active.cancel;
    let Ok(engine) = state.engine() else {
        return TurnEnd::Failed(
            "the log is being reopened; send the prompt again".into(),
            None,
        );
    };
    let Some(s) = engine.session(session).filter(|s| s.ended.is_none()) else {
        return TurnEnd::SessionGone;
    };
    let agent = s.agent.clone().unwrap_or_else(|| "main".into());
    let turn = TurnPrompt {
        session,
        agent: &agent,
        mode: s.mode.unwrap_or(Mode::Acp),
        text: &prompt.text,
        blocks: &prompt.blocks,
        prompt_id: &prompt.prompt_id,
        client_id: prompt.client.as_deref(),
        cancel: cancel.clone(),
        // Behind an agent, its `/help` and `/model` are the ones that count.
        builtins: state.bridge.is_none(),
    };
    let blocks = match through_registry(&engine, &state.recorder, turn).await {
        Err(e) => return TurnEnd::Failed(e.to_string(), None),
        // A command answered the line itself: its answer is the agent's message.
        Ok(RegistryTurn::Answered { stop_reason, .. }) => {
            return TurnEnd::Stop(stop_reason.into(), None);
        }
        Ok(RegistryTurn::Forward { blocks, .. }) => blocks,
    };
    let Some(bridge) = state.bridge.clone() else {
        // An external runtime answers through /update; it ends the turn there.
        tokio::select! {
            _ = live.turn_ended.notified() => return TurnEnd::Recorded,
            _ = cancel.cancelled() => return TurnEnd::Stop("cancelled".into(), None),
        }
    };
    let (running, bound) = match bridge.bind(state, session).await {
        Ok(b) => b,
        Err(e) => return TurnEnd::Failed(e.to_string(), Some(json!("agent_unavailable"))),
    };
    let _ = active.agent_cancel.set({
        let (peer, agent_session) = (Arc::clone(&running.peer), bound.agent_session.clone());
        let (state, session) = (Arc::downgrade(state), session.to_string());
        Box::new(move || {
            let params = json!({"sessionId": agent_session});
            peer.notify("session/cancel", params.clone());
            if let Some(state) = state.upgrade() {
                state.recorder.message(
                    Some(&session),
                    None,
                    cmdlog_engine::event::AcpDirection::ToAgent,
                    cmdlog_acp::notification("session/cancel", params),
                );
            }
        })
    });
    let sent = running.peer.request(
        "session/prompt",
        json!({"sessionId": bound.agent_session, "prompt": blocks}),
    );
    tokio::pin!(sent);
    let answer = tokio::select! {
        answer = &mut sent => answer,
        _ = cancel.cancelled() => {
            // A deadline, or a cancel that came before the turn reached the agent.
            active.tell_agent();
            sent.await
        }
    };
    match answer.and_then(|a| cmdlog_acp::stop_reason(&a).map(|r| (branch_point(&a, &r), r))) {
        Ok((branch, reason)) => TurnEnd::Stop(reason, branch),
        // The agent's channel closed under the turn (it exited): as `qwen serve`
        // ends such a turn — its questions answered `cancelled`, then the turn
        // failed. The session dies next (bridge.rs, `watch_exit`).
        Err(e) if e.code == cmdlog_acp::CONNECTION_CLOSED => {
            state.cancel_permissions(session).await;
            TurnEnd::Failed(
                "the agent exited before the prompt completed".into(),
                Some(json!("channel_closed")),
            )
        }
        // A string, as `qwen serve` sends it (the SDK reads no other).
        Err(e) => TurnEnd::Failed(
            format!("the agent failed the prompt: {}", e.message),
            Some(json!(e.code.to_string())),
        ),
    }
}

/// Qwen Code's `_meta["qwen.branchPoint"]` on a prompt's answer, `{assistantRecordUuid,
/// checkpointUuid}`: where its transcript can be forked after this turn. Kept for
/// `turn_complete` as `qwen serve` 0.24.4 keeps it: for `end_turn` only, both ids
/// UUIDs.
fn branch_point(answer: &Value, reason: &str) -> Option<Value> {
    let point = &answer["_meta"]["qwen.branchPoint"];
    let uuid = |key: &str| {
        point[key]
            .as_str()
            .filter(|s| is_uuid(s))
            .map(str::to_string)
    };
    let (record, checkpoint) = (uuid("assistantRecordUuid")?, uuid("checkpointUuid")?);
    (reason == "end_turn")
        .then(|| json!({"assistantRecordUuid": record, "checkpointUuid": checkpoint}))
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Ends, durably, the turns an earlier daemon left under way: its agent died
/// with it, so no `turn_complete` will come. Each gets a `turn_error` with the
/// code `daemon_lost` and its `promptId`, so a client resuming the stream sees
/// the turn end. Only for a daemon in front of an agent (`--agent`); a session
/// that ended, or whose turn no prompt id names, is left as it is.
pub(crate) async fn close_interrupted_turns(state: &Arc<AppState>) -> usize {
    let Ok(engine) = state.engine() else {
        return 0;
    };
    let open: Vec<(String, String)> = engine.with_state(|s| {
        s.sessions
            .iter()
            .filter(|(_, s)| s.streaming && s.ended.is_none() && s.mode == Some(Mode::Acp))
            .filter_map(|(id, s)| Some((id.clone(), s.turn_prompt.clone()?)))
            .collect()
    });
    for (session, prompt_id) in &open {
        state.recorder.record(
            Some(session),
            None,
            EventData::SessionUpdate(json!({
                "sessionUpdate": "turn_error",
                "message": "interrupted: the daemon running this turn ended before it did",
                "code": "daemon_lost",
                "promptId": prompt_id,
            })),
        );
    }
    state.recorder.flush().await;
    open.len()
}
