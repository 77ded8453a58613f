//! The invariant checker behind `cmdlog verify` and the property tests.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use cmdlog_engine::{Event, EventData, LogState, OpenRun, RegistryAnomaly, Seq};

use crate::audit::Conflict;
use cmdlog_store::{BlobError, BlobHash, Log, ReadError};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The seq where it shows, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// What is wrong.
    pub message: String,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Seq of the last record.
    pub head_seq: Seq,
    /// Hex of the head hash.
    pub head_hash: String,
    /// Events checked.
    pub events: u64,
    /// Referenced blobs checked.
    pub blobs: u64,
    /// Broken invariants, in seq order.
    pub violations: Vec<Violation>,
    /// Runs without a done (in flight or the writer crashed; not a violation).
    pub open_runs: Vec<OpenRun>,
    /// Facts two capture paths state differently (design R15): both contents are
    /// in the log; not a violation of the log, a finding about the session.
    pub conflicts: Vec<Conflict>,
}

impl VerifyReport {
    /// Whether no invariant is broken.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Checks the whole log: gapless seqs and the hash chain; every record decodes; every
/// done has exactly one earlier run and each run at most one done; every run names a
/// registration active and winning for its agent, mode and name at that seq; every
/// unregister names an active registration; every referenced blob exists and
/// re-hashes; every `permission/resolved` follows its request; nothing follows a
/// session's close or death; the stream index lists exactly each session's records;
/// replaying twice gives identical projections.
/// `progress` is called with each seq checked.
pub fn verify(log: &Log, mut progress: impl FnMut(Seq)) -> Result<VerifyReport, ReadError> {
    let head = log.head();
    let mut c = Checker::default();
    match log.verify_chain(|_| {})? {
        Ok(found) if found == head => {}
        Ok(found) => c.flag(
            Some(found.seq),
            format!(
                "the chain ends at seq {} but the head is seq {}",
                found.seq, head.seq
            ),
        ),
        Err(brk) => c.flag(Some(brk_seq(&brk)), brk.to_string()),
    }
    // The Merkle tree is derived from the records: stored hashes that differ mean
    // the tree or a record was changed outside cmdlog.
    if let Some(seq) = log.verify_tree(|_| {})? {
        c.flag(
            Some(seq),
            format!(
                "the Merkle tree's stored hashes at seq {seq} do not match the records: the tree or a record was changed outside cmdlog"
            ),
        );
    }
    // A record whose stored layout is broken is named, and the scan goes on after it.
    let mut from = 1;
    let mut layout_breaks = Vec::new();
    loop {
        let scanned = log.scan(from, head.seq, |record| {
            if c.record(&record) {
                progress(record.seq);
            }
            true
        });
        match scanned {
            Ok(()) => break,
            Err(ReadError::Corrupt { seq, message }) => {
                layout_breaks.push((seq, message));
                from = seq + 1;
            }
            Err(e) => return Err(e),
        }
    }
    for (seq, message) in layout_breaks {
        c.flag(Some(seq), format!("seq {seq}: {message}"));
    }
    c.left_open();
    c.streams(log)?;
    let blobs = c.blobs(log)?;
    let mut again = LogState::default();
    if cmdlog_engine::fold_log(log, &mut again, 1, head.seq).is_ok() && again != c.state {
        c.flag(None, "replaying twice gave different projections".into());
    }
    c.violations.sort_by_key(|v| v.seq);
    Ok(VerifyReport {
        head_seq: head.seq,
        head_hash: head.hash.to_hex(),
        events: c.events,
        blobs,
        violations: c.violations,
        open_runs: c.state.open_runs.into_values().collect(),
        conflicts: c.conflicts,
    })
}

/// What the scan of a log has seen so far, and what it found wrong.
#[derive(Default)]
struct Checker {
    state: LogState,
    /// Each run's seq, and whether a done settled it.
    runs: HashMap<Seq, bool>,
    /// Each (session, request id), and whether it was answered.
    permissions: HashMap<(String, String), bool>,
    /// Each blob referenced, and the seq that first did.
    blobs: BTreeMap<String, Seq>,
    /// Each session closed or died, and the seq it ended at.
    ended_sessions: BTreeMap<String, Seq>,
    events: u64,
    /// Each stream's records, as the events say.
    by_stream: BTreeMap<String, Vec<Seq>>,
    /// (session, fact) -> the seq of the event that states it first.
    facts: HashMap<(String, String), Seq>,
    /// Each (session, fact, seq) of a fact that more than one event may state:
    /// one joined by content (`said:…`: said again, each time is an event of
    /// its own), or a turn's reply (`reply:…`: a turn may say several, and
    /// each source may see a different one of them). A later source's names
    /// the one it saw, by its text.
    stated: std::collections::HashSet<(String, String, Seq)>,
    /// (session, tool call id) -> the seq and title of a call not settled yet.
    open_calls: BTreeMap<(String, String), (Seq, String)>,
    /// (session, tool call id) of the calls settled: a source that reports
    /// the call after its settling (an import) does not open it again.
    settled_calls: std::collections::HashSet<(String, String)>,
    /// (session, request id) -> the seq of a request not answered yet.
    open_requests: BTreeMap<(String, String), Seq>,
    /// Each session whose last word was its end (`session/ended` or
    /// `session/closed`), and that end's seq.
    at_end: HashMap<String, Seq>,
    conflicts: Vec<Conflict>,
    violations: Vec<Violation>,
}

impl Checker {
    fn flag(&mut self, seq: Option<Seq>, message: String) {
        self.violations.push(Violation { seq, message });
    }

    /// Checks one record; whether it decoded.
    fn record(&mut self, record: &cmdlog_store::Record) -> bool {
        let seq = record.seq;
        let event = match Event::decode(seq, &record.bytes) {
            Ok(e) => e,
            Err(e) => {
                self.flag(Some(seq), e.to_string());
                return false;
            }
        };
        self.events += 1;
        if let Some(key) = &record.stream {
            self.by_stream.entry(key.clone()).or_default().push(seq);
        }
        // The stream key is outside the hash chain: it must agree with the event.
        let expected_stream =
            cmdlog_engine::event::stream_key(event.data.type_name(), event.session.as_deref());
        if record.stream != expected_stream {
            self.flag(
                Some(seq),
                format!(
                    "indexed under stream {:?} but the event belongs under {:?}: the stored record was altered",
                    record.stream, expected_stream
                ),
            );
        }
        if let Some(session) = &event.session
            && let Some(ended) = self.ended_sessions.get(session)
        {
            let message = format!(
                "{} in session {session} after it ended at seq {ended}",
                event.data.type_name()
            );
            self.flag(Some(seq), message);
        }
        let session = event.session.clone().unwrap_or_default();
        if let Some(fact) = event.observed.as_ref().and_then(|o| o.fact.clone())
            && !matches!(event.data, EventData::AgentObserved(_))
        {
            if many_may_state(&fact) {
                self.stated.insert((session.clone(), fact.clone(), seq));
            }
            self.facts.entry((session.clone(), fact)).or_insert(seq);
        }
        self.event(&event, &session);
        self.state.apply(&event);
        true
    }

    /// The invariants of each event type. Every type is named: a new one does
    /// not compile until it says what verify holds it to.
    fn event(&mut self, event: &Event, session: &str) {
        let seq = event.seq;
        match &event.data {
            EventData::AgentObserved(o) => self.observed(event, o, session),
            EventData::CommandRun(run) => self.run(event, run),
            EventData::CommandDone(done) => match self.runs.get_mut(&done.run) {
                None => self.flag(
                    Some(seq),
                    format!(
                        "done names run {}, which is not an earlier command/run",
                        done.run
                    ),
                ),
                Some(true) => self.flag(Some(seq), format!("second done for run {}", done.run)),
                Some(settled) => *settled = true,
            },
            EventData::Unregistered(u) => {
                let mut probe = self.state.registry.clone();
                if let Err(anomaly) = probe.apply_unregistered(seq, u.registration, u.reason) {
                    let message = match anomaly {
                        RegistryAnomaly::UnknownRegistration(r) => {
                            format!("unregister names seq {r}, which is not a registration")
                        }
                        other => other.to_string(),
                    };
                    self.flag(Some(seq), message);
                }
            }
            EventData::Registered(r) => {
                if let Some(t) = &r.template {
                    self.blobs.entry(t.clone()).or_insert(seq);
                }
            }
            EventData::AttachmentAdmitted(a) => {
                self.blobs.entry(a.blob.clone()).or_insert(seq);
            }
            EventData::PermissionRequested(p) => {
                self.permissions
                    .insert((session.to_string(), p.request_id.clone()), false);
                self.open_requests
                    .insert((session.to_string(), p.request_id.clone()), seq);
            }
            EventData::PermissionResolved(p) => self.resolved(seq, session, &p.request_id),
            EventData::PermissionAlreadyResolved(p) => {
                let key = (session.to_string(), p.request_id.clone());
                if self.permissions.get(&key) != Some(&true) {
                    self.flag(
                        Some(seq),
                        format!(
                            "a late vote on permission {} before it was answered",
                            p.request_id
                        ),
                    );
                }
            }
            EventData::SessionClosed(_) | EventData::SessionDied(_) => {
                if let Some(session) = &event.session {
                    self.ended_sessions.entry(session.clone()).or_insert(seq);
                }
                if matches!(event.data, EventData::SessionClosed(_)) {
                    self.at_end.insert(session.to_string(), seq);
                }
            }
            EventData::SessionEnded(_) => {
                self.at_end.insert(session.to_string(), seq);
            }
            // The agent took the session up again.
            EventData::SessionCreated(_) | EventData::SessionPrompt(_) => {
                self.at_end.remove(session);
            }
            EventData::SessionUpdate(update) => self.call(update, session, seq),
            // Held to nothing of their own: the chain, the stream index and the
            // session's end above hold them.
            EventData::DiscoveryWarning(_)
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

    /// A resolution follows its request, once.
    fn resolved(&mut self, seq: Seq, session: &str, request_id: &str) {
        let key = (session.to_string(), request_id.to_string());
        match self.permissions.get_mut(&key) {
            None => self.flag(
                Some(seq),
                format!("permission {request_id} resolved without an earlier request"),
            ),
            Some(true) => self.flag(Some(seq), format!("permission {request_id} resolved twice")),
            Some(resolved) => *resolved = true,
        }
        self.open_requests.remove(&key);
    }

    /// A tool call opens with `tool_call` and settles with a completed or
    /// failed `tool_call_update`.
    fn call(&mut self, update: &serde_json::Value, session: &str, seq: Seq) {
        let Some(id) = update["toolCallId"].as_str() else {
            return;
        };
        let key = (session.to_string(), id.to_string());
        let settles = matches!(update["status"].as_str(), Some("completed" | "failed"));
        match update["sessionUpdate"].as_str() {
            Some("tool_call" | "tool_call_update") if settles => {
                self.open_calls.remove(&key);
                self.settled_calls.insert(key);
            }
            Some("tool_call") if !self.settled_calls.contains(&key) => {
                let title = update["title"].as_str().unwrap_or("tool").to_string();
                self.open_calls.entry(key).or_insert((seq, title));
            }
            _ => {}
        }
    }

    /// A session that ended holds no call that never settled and no request
    /// never answered: the record would not say whether it ran.
    fn left_open(&mut self) {
        let calls = std::mem::take(&mut self.open_calls);
        for ((session, id), (seq, title)) in calls {
            if let Some(end) = self.at_end.get(&session).copied() {
                self.flag(
                    Some(end),
                    format!(
                        "session {session} ended at seq {end} with tool call {id} ({title}, seq {seq}) never settled: whether it ran is not recorded; import the agent's transcript (`cmdlog import --from AGENT`) to settle it from there"
                    ),
                );
            }
        }
        let requests = std::mem::take(&mut self.open_requests);
        for ((session, id), seq) in requests {
            if let Some(end) = self.at_end.get(&session).copied() {
                self.flag(
                    Some(end),
                    format!(
                        "session {session} ended at seq {end} with permission request {id} (seq {seq}) never answered"
                    ),
                );
            }
        }
    }

    /// An `agent/observed` names the event that first states its fact (or, of
    /// a fact several events may state, one of them).
    fn observed(&mut self, event: &Event, o: &cmdlog_engine::event::AgentObserved, session: &str) {
        if let Some(conflict) = Conflict::of(event) {
            self.conflicts.push(conflict);
        }
        let base = o.fact.strip_suffix("#done").unwrap_or(&o.fact).to_string();
        let first = self
            .facts
            .get(&(session.to_string(), base.clone()))
            .copied();
        let stated = self
            .stated
            .contains(&(session.to_string(), base.clone(), o.of));
        if first != Some(o.of) && !stated {
            let message = format!(
                "agent/observed names seq {} for {base} in session {session}, but {}",
                o.of,
                match first {
                    Some(f) => format!("the event that states it is seq {f}"),
                    None => "no earlier event of the session states it".into(),
                }
            );
            self.flag(Some(event.seq), message);
        }
    }

    /// A run names a registration active and winning for its agent, mode and
    /// name at its seq.
    fn run(&mut self, event: &Event, run: &cmdlog_engine::event::CommandRun) {
        let seq = event.seq;
        self.runs.insert(seq, false);
        let agent = event.agent.as_deref().unwrap_or("");
        // A run an agent did itself was resolved by the agent, not by cmdlog's
        // registry: there is nothing of cmdlog's to hold it to.
        if run.source == cmdlog_engine::event::InvocationSource::Agent {
            return;
        }
        let message = match self.state.registry.get(run.registration) {
            None => format!(
                "run of /{} names registration {}, which does not exist",
                run.name, run.registration
            ),
            Some(r) if !r.is_active() => format!(
                "run of /{} names registration {}, which had ended",
                run.name, run.registration
            ),
            Some(r) => {
                let wins = std::iter::once(&r.command.name)
                    .chain(&r.command.alt_names)
                    .any(|n| {
                        self.state
                            .registry
                            .resolve(agent, run.mode, n.as_str())
                            .is_some_and(|w| w.seq == r.seq)
                    });
                if wins {
                    return;
                }
                format!(
                    "run of /{} names registration {}, which was not the winner for agent {agent} in {} mode",
                    run.name, run.registration, run.mode
                )
            }
        };
        self.flag(Some(seq), message);
    }

    /// The stream index (what reads by session use) lists exactly each
    /// stream's records.
    fn streams(&mut self, log: &Log) -> Result<(), ReadError> {
        let indexed: BTreeSet<String> = log.streams()?.into_iter().collect();
        let keys: Vec<String> = indexed
            .iter()
            .chain(self.by_stream.keys().filter(|k| !indexed.contains(*k)))
            .cloned()
            .collect();
        for key in keys {
            let found = log.stream_seqs(&key, 0)?;
            let expected = self
                .by_stream
                .get(&key)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if found != expected {
                let first = found
                    .iter()
                    .zip(expected)
                    .find(|(f, e)| f != e)
                    .map(|(f, e)| *f.min(e))
                    .or_else(|| found.get(expected.len()).copied())
                    .or_else(|| expected.get(found.len()).copied());
                let message = format!(
                    "the stream index of {key:?} lists {} records where the log has {}: reads by session are wrong; export and import the log to rebuild it",
                    found.len(),
                    expected.len()
                );
                self.flag(first, message);
            }
        }
        Ok(())
    }

    /// Every referenced blob exists and re-hashes, and so does every stored
    /// one, referenced or not; how many were checked.
    fn blobs(&mut self, log: &Log) -> Result<u64, ReadError> {
        let mut checked = BTreeSet::new();
        for (hash, seq) in std::mem::take(&mut self.blobs) {
            checked.insert(hash.clone());
            let Some(parsed) = BlobHash::from_hex(&hash) else {
                self.flag(Some(seq), format!("blob hash {hash:?} is malformed"));
                continue;
            };
            match log.get_blob(&parsed) {
                Ok(Some(_)) => {}
                Ok(None) => self.flag(Some(seq), format!("blob {hash} is missing")),
                Err(BlobError::Mismatch { actual, .. }) => self.flag(
                    Some(seq),
                    format!("blob {hash} is corrupt: its bytes hash to {actual}"),
                ),
                Err(e) => self.flag(Some(seq), format!("blob {hash}: {e}")),
            }
        }
        for (hash, _, _) in log.list_blobs()? {
            let hex = hash.to_hex();
            if checked.contains(&hex) {
                continue;
            }
            match log.get_blob(&hash) {
                Ok(_) => {}
                Err(BlobError::Mismatch { actual, .. }) => self.flag(
                    None,
                    format!("blob {hex} is corrupt: its bytes hash to {actual}"),
                ),
                Err(e) => self.flag(None, format!("blob {hex}: {e}")),
            }
            checked.insert(hex);
        }
        Ok(checked.len() as u64)
    }
}

fn brk_seq(brk: &cmdlog_store::ChainBreak) -> Seq {
    match brk {
        cmdlog_store::ChainBreak::Gap { found, .. } => *found,
        cmdlog_store::ChainBreak::HashMismatch { seq } => *seq,
        cmdlog_store::ChainBreak::Undecodable { seq } => *seq,
    }
}

/// A head given as `SEQ:HASH` that is not one.
#[derive(Debug, thiserror::Error)]
#[error(
    "--expect-head {0:?}: give SEQ:HASH as `cmdlog verify` prints them, e.g. 42:0000000000000000000000000000000000000000000000000000000000000000"
)]
pub struct BadHead(pub String);

/// A head recorded elsewhere as `SEQ:HASH` (a 64-hex-digit chain hash, as
/// `cmdlog verify` prints it): its seq and its hash, lowercase.
pub fn parse_head(text: &str) -> Result<(Seq, String), BadHead> {
    let parsed = text.split_once(':').and_then(|(seq, hash)| {
        let seq = seq.parse::<Seq>().ok()?;
        (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| (seq, hash.to_ascii_lowercase()))
    });
    parsed.ok_or_else(|| BadHead(text.to_string()))
}

/// Checks this log against a head recorded elsewhere (`SEQ` and its chain hash):
/// a log that ends before `seq` was rolled back; a different hash at `seq` is a
/// fork or an edit. `None` when the log holds that head.
pub fn check_expected_head(log: &Log, seq: Seq, hash: &str) -> Result<Option<String>, ReadError> {
    let head = log.head().seq;
    if seq > head {
        return Ok(Some(format!(
            "rolled back: the log ends at seq {head}, but a head at seq {seq} was recorded; the events after seq {head} are missing"
        )));
    }
    let found = match log.get(seq)? {
        Some(record) => record.hash.to_hex(),
        None => {
            return Ok(Some(format!(
                "the log has no record at seq {seq}, below its head {head}"
            )));
        }
    };
    Ok((found != hash.to_ascii_lowercase()).then(|| {
        format!(
            "forked or edited: at seq {seq} the log's chain hash is {found}, but the recorded head says {hash}"
        )
    }))
}

/// Whether more than one event of a session may state `fact` (see
/// `Checker::stated`).
fn many_may_state(fact: &str) -> bool {
    fact.starts_with("said:") || fact.starts_with("reply:")
}
