//! `sessions`: every session at a glance — its span, runs, errors, agents,
//! whether it ended — and the tree a subagent's session makes under the
//! session that delegated to it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use cmdlog_engine::event::Outcome;
use cmdlog_engine::{Event, EventData, Seq};
use cmdlog_store::Log;

use crate::audit::AuditError;

/// One session at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// First event time, unix ms ([`Event::time`](cmdlog_engine::Event::time): the
    /// agent's own, for what an agent reported).
    pub first_at: u64,
    /// Last event time, unix ms (as `first_at`).
    pub last_at: u64,
    /// Events in it.
    pub events: u64,
    /// Prompts typed (not a command's expansion).
    pub prompts: u64,
    /// Tool calls the agent made (each call once, a call known only from its
    /// result too).
    pub tool_calls: u64,
    /// The tool calls counted, by a hash of their ids.
    #[serde(skip)]
    calls_seen: std::collections::HashSet<u64>,
    /// Command runs.
    pub runs: u64,
    /// Runs that settled as errors (interrupted ones included).
    pub errors: u64,
    /// Runs closed as interrupted by crash recovery.
    pub interrupted: u64,
    /// Agents seen.
    pub agents: BTreeSet<String>,
    /// `closed` or `died`, if it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Facts two capture paths stated differently in it (`agent/observed`
    /// with `differs`): both contents are in the log.
    pub conflicts: u64,
    /// The session that delegated to it, for a subagent's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The parent's tool call that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// The sessions as a tree: each in the order given, a subagent's session
/// right after the session that delegated to it (after that session's
/// earlier subagents), with its depth. A parent that is not in the list
/// leaves its subagent's session at the top.
pub fn as_tree(list: &[SessionSummary]) -> Vec<(usize, &SessionSummary)> {
    let ids: BTreeSet<&str> = list.iter().map(|s| s.id.as_str()).collect();
    let mut children: BTreeMap<&str, Vec<&SessionSummary>> = BTreeMap::new();
    let mut roots = Vec::new();
    for s in list {
        match s
            .parent
            .as_deref()
            .filter(|p| ids.contains(p) && *p != s.id)
        {
            Some(p) => children.entry(p).or_default().push(s),
            None => roots.push(s),
        }
    }
    let mut out = Vec::with_capacity(list.len());
    let mut stack: Vec<(usize, &SessionSummary)> =
        roots.into_iter().rev().map(|s| (0, s)).collect();
    while let Some((depth, s)) = stack.pop() {
        out.push((depth, s));
        if let Some(kids) = children.remove(s.id.as_str()) {
            stack.extend(kids.into_iter().rev().map(|k| (depth + 1, k)));
        }
    }
    // Parents that name each other (a log made by hand): each shown once.
    for kids in children.into_values() {
        out.extend(kids.into_iter().map(|k| (0, k)));
    }
    out
}

/// Every session, by the time of its first event (the agent's own time for
/// what an agent reported: a session imported later sits where it happened),
/// then by first appearance.
pub fn sessions(log: &Log, progress: impl FnMut(Seq)) -> Result<Vec<SessionSummary>, AuditError> {
    let mut fold = SessionsFold::default();
    fold.update_with(log, progress)?;
    Ok(fold.list())
}

/// The sessions of a log folded so far, brought up to the log's head by
/// [`SessionsFold::update`] with only the events appended since: what a
/// daemon keeps to list a big log's sessions at once.
#[derive(Debug, Default, Clone)]
pub struct SessionsFold {
    by_id: BTreeMap<String, SessionSummary>,
    /// Ids by first appearance.
    order: Vec<String>,
    /// When each session's agent ended it: only what happened after that
    /// time takes it up again (an import appended later does not).
    ended_at: BTreeMap<String, u64>,
    /// The seq folded through.
    through: Seq,
}

impl SessionsFold {
    /// Folds the events appended since the last update; the seq it is now
    /// folded through.
    pub fn update(&mut self, log: &Log) -> Result<Seq, AuditError> {
        self.update_with(log, |_| {})
    }

    fn update_with(&mut self, log: &Log, mut progress: impl FnMut(Seq)) -> Result<Seq, AuditError> {
        let head = log.head().seq;
        if head <= self.through {
            return Ok(self.through);
        }
        let mut failure = None;
        let mut last = self.through;
        log.scan(self.through + 1, head, |r| {
            match Event::decode(r.seq, &r.bytes) {
                Ok(e) => {
                    progress(r.seq);
                    self.see(&e);
                    last = r.seq;
                    true
                }
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        })?;
        // What was folded stays folded: a later update continues after it.
        self.through = last;
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(self.through),
        }
    }

    fn see(&mut self, e: &Event) {
        let Some(id) = &e.session else { return };
        let s = match self.by_id.get_mut(id) {
            Some(s) => s,
            None => {
                self.order.push(id.clone());
                self.by_id
                    .entry(id.clone())
                    .or_insert_with(|| SessionSummary::new(id, e.time()))
            }
        };
        s.see(e, self.ended_at.entry(id.clone()).or_default());
    }

    /// The seq folded through.
    pub fn through(&self) -> Seq {
        self.through
    }

    /// How many sessions.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// One session's summary, if the fold has seen it.
    pub fn get(&self, id: &str) -> Option<&SessionSummary> {
        self.by_id.get(id)
    }

    /// The sessions that session `id` delegated to (its subagents'), by
    /// first appearance.
    pub fn children(&self, id: &str) -> Vec<&SessionSummary> {
        self.order
            .iter()
            .filter_map(|c| self.by_id.get(c))
            .filter(|s| s.parent.as_deref() == Some(id) && s.id != id)
            .collect()
    }

    /// Every session, as [`sessions`] lists them.
    pub fn list(&self) -> Vec<SessionSummary> {
        let mut all: Vec<SessionSummary> = self
            .order
            .iter()
            .filter_map(|id| self.by_id.get(id).cloned())
            .collect();
        // Stable: sessions of the same first time keep their order in the log.
        all.sort_by_key(|s| s.first_at);
        all
    }
}

/// One session at a glance from its own events, in log order (a session's
/// stream): what [`sessions`] says of it, without reading the rest of the log.
pub fn summary_of(id: &str, events: &[Event]) -> SessionSummary {
    let mut s = SessionSummary::new(id, events.first().map_or(0, Event::time));
    let mut ended_at = 0;
    for e in events {
        s.see(e, &mut ended_at);
    }
    s
}

impl SessionSummary {
    fn new(id: &str, at: u64) -> SessionSummary {
        SessionSummary {
            id: id.to_string(),
            first_at: at,
            last_at: at,
            events: 0,
            prompts: 0,
            tool_calls: 0,
            calls_seen: std::collections::HashSet::new(),
            runs: 0,
            errors: 0,
            interrupted: 0,
            agents: BTreeSet::new(),
            ended: None,
            conflicts: 0,
            parent: None,
            via: None,
        }
    }

    /// One more event of the session; `ended_at` is when its agent last
    /// ended it (0: never).
    fn see(&mut self, e: &Event, ended_at: &mut u64) {
        self.events += 1;
        self.first_at = self.first_at.min(e.time());
        self.last_at = self.last_at.max(e.time());
        if let Some(a) = &e.agent
            && !self.agents.contains(a)
        {
            self.agents.insert(a.clone());
        }
        // An agent's session resumed after it ended it.
        if matches!(
            e.data,
            EventData::SessionPrompt(_) | EventData::CommandRun(_)
        ) && self.ended.as_deref() == Some("ended")
            && e.time() > *ended_at
        {
            self.ended = None;
        }
        match &e.data {
            EventData::SessionPrompt(p) if p.from_run.is_none() => self.prompts += 1,
            EventData::SessionUpdate(u)
                if matches!(
                    u.get("sessionUpdate").and_then(serde_json::Value::as_str),
                    Some("tool_call" | "tool_call_update")
                ) =>
            {
                let id = u.get("toolCallId").and_then(serde_json::Value::as_str);
                let hash = {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    id.unwrap_or_default().hash(&mut h);
                    h.finish()
                };
                if self.calls_seen.insert(hash) {
                    self.tool_calls += 1;
                }
            }
            EventData::CommandRun(_) => self.runs += 1,
            EventData::CommandDone(d) => {
                if let Outcome::Error { interrupted, .. } = d.outcome {
                    self.errors += 1;
                    self.interrupted += u64::from(interrupted);
                }
            }
            EventData::SessionClosed(_) => self.ended = Some("closed".into()),
            EventData::SessionDied(_) => self.ended = Some("died".into()),
            EventData::SessionEnded(_) => {
                self.ended = Some("ended".into());
                *ended_at = (*ended_at).max(e.time());
            }
            EventData::AgentObserved(o) if !o.differs.is_empty() => self.conflicts += 1,
            EventData::SessionCreated(c) => {
                if let Some(parent) = &c.parent {
                    self.parent = Some(parent.session.clone());
                    self.via = parent.tool_call_id.clone();
                }
            }
            // Neither starts nor ends a session's runs.
            EventData::AgentObserved(_)
            | EventData::Registered(_)
            | EventData::Unregistered(_)
            | EventData::DiscoveryWarning(_)
            | EventData::AttachmentAdmitted(_)
            | EventData::SessionPrompt(_)
            | EventData::SessionUpdate(_)
            | EventData::PermissionRequested(_)
            | EventData::PermissionResolved(_)
            | EventData::PermissionAlreadyResolved(_)
            | EventData::ModelSwitched(_)
            | EventData::ModelSwitchFailed(_)
            | EventData::ModeSet(_)
            | EventData::SessionCancelled(_)
            | EventData::WalDiscarded(_)
            | EventData::AcpMessage(_)
            | EventData::AgentEvent(_)
            | EventData::ModelRequest(_)
            | EventData::Redacted(_)
            | EventData::LogIdentity(_)
            | EventData::ImportCheckpoint(_)
            | EventData::Unknown(_) => {}
        }
    }

    /// Its id as `sessions` shows it at `depth` of the tree.
    pub fn tree_id(&self, depth: usize) -> String {
        match depth {
            0 => self.id.clone(),
            d => format!("{}└ {}", "  ".repeat(d - 1), self.id),
        }
    }

    /// What `sessions` says after a session's row: the call that started it
    /// (a subagent's), the facts two capture paths stated differently.
    pub fn notes(&self) -> String {
        let via = self.via.as_deref().map(|c| format!("  (via {c})"));
        let conflicts = match self.conflicts {
            0 => None,
            n => Some(format!(
                "  [{n} fact(s) stated differently by two capture paths: both kept, `cmdlog verify` lists them]"
            )),
        };
        format!(
            "{}{}",
            via.unwrap_or_default(),
            conflicts.unwrap_or_default()
        )
    }
}
