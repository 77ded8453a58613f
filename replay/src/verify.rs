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

fn hex(bytes: &[u8; 32]) -> String {
    BlobHash(*bytes).to_hex()
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
    let mut conflicts = Vec::new();
    let mut violations = Vec::new();
    let mut flag = |seq: Option<Seq>, message: String| violations.push(Violation { seq, message });

    match log.verify_chain(|_| {})? {
        Ok(found) if found == head => {}
        Ok(found) => flag(
            Some(found.seq),
            format!(
                "the chain ends at seq {} but the head is seq {}",
                found.seq, head.seq
            ),
        ),
        Err(brk) => flag(Some(brk_seq(&brk)), brk.to_string()),
    }
    // The Merkle tree is derived from the records: stored hashes that differ mean
    // the tree or a record was changed outside cmdlog.
    if let Some(seq) = log.verify_tree(|_| {})? {
        flag(
            Some(seq),
            format!(
                "the Merkle tree's stored hashes at seq {seq} do not match the records: the tree or a record was changed outside cmdlog"
            ),
        );
    }

    let mut state = LogState::default();
    let mut runs: HashMap<Seq, bool> = HashMap::new(); // run seq -> has a done
    let mut permissions: HashMap<(String, String), bool> = HashMap::new(); // -> resolved
    let mut blobs: BTreeMap<String, Seq> = BTreeMap::new();
    let mut ended_sessions: BTreeMap<String, Seq> = BTreeMap::new();
    let mut events = 0u64;
    let mut by_stream: BTreeMap<String, Vec<Seq>> = BTreeMap::new();
    // (session, fact) -> the seq of the event that states it first.
    let mut facts: HashMap<(String, String), Seq> = HashMap::new();
    // A record whose stored layout is broken is named, and the scan goes on after it.
    let mut from = 1;
    let mut layout_breaks = Vec::new();
    loop {
        let scanned = log.scan(from, head.seq, |record| {
        let seq = record.seq;
        let event = match Event::decode(seq, &record.bytes) {
            Ok(e) => e,
            Err(e) => {
                flag(Some(seq), e.to_string());
                return true;
            }
        };
        events += 1;
        if let Some(key) = &record.stream {
            by_stream.entry(key.clone()).or_default().push(seq);
        }
        // The stream key is outside the hash chain: it must agree with the event.
        let expected_stream =
            cmdlog_engine::stream_key(event.data.type_name(), event.session.as_deref());
        if record.stream != expected_stream {
            flag(
                Some(seq),
                format!(
                    "indexed under stream {:?} but the event belongs under {:?}: the stored record was altered",
                    record.stream, expected_stream
                ),
            );
        }
        if let Some(session) = &event.session
            && let Some(ended) = ended_sessions.get(session)
        {
            flag(
                Some(seq),
                format!(
                    "{} in session {session} after it ended at seq {ended}",
                    event.data.type_name()
                ),
            );
        }
        let session = event.session.clone().unwrap_or_default();
        if let Some(fact) = event.observed.as_ref().and_then(|o| o.fact.clone())
            && !matches!(event.data, EventData::AgentObserved(_))
        {
            facts.entry((session.clone(), fact)).or_insert(seq);
        }
        match &event.data {
            EventData::AgentObserved(o) => {
                if let Some(conflict) = Conflict::of(&event) {
                    conflicts.push(conflict);
                }
                let base = o.fact.strip_suffix("#done").unwrap_or(&o.fact).to_string();
                let first = facts.get(&(session.clone(), base.clone())).copied();
                if first != Some(o.of) {
                    flag(
                        Some(seq),
                        format!(
                            "agent/observed names seq {} for {base} in session {session}, but {}",
                            o.of,
                            match first {
                                Some(f) => format!("the event that states it is seq {f}"),
                                None => "no earlier event of the session states it".into(),
                            }
                        ),
                    );
                }
            }
            EventData::CommandRun(run) => {
                runs.insert(seq, false);
                let agent = event.agent.as_deref().unwrap_or("");
                // A run an agent did itself was resolved by the agent, not by
                // cmdlog's registry: there is nothing of cmdlog's to hold it to.
                let observed = run.source == cmdlog_engine::InvocationSource::Agent;
                match state.registry.get(run.registration) {
                    _ if observed => {}
                    None => flag(
                        Some(seq),
                        format!("run of /{} names registration {}, which does not exist", run.name, run.registration),
                    ),
                    Some(r) if !r.is_active() => flag(
                        Some(seq),
                        format!("run of /{} names registration {}, which had ended", run.name, run.registration),
                    ),
                    Some(r) => {
                        let wins = std::iter::once(&r.command.name)
                            .chain(&r.command.alt_names)
                            .any(|n| {
                                state
                                    .registry
                                    .resolve(agent, run.mode, n.as_str())
                                    .is_some_and(|w| w.seq == r.seq)
                            });
                        if !wins {
                            flag(
                                Some(seq),
                                format!(
                                    "run of /{} names registration {}, which was not the winner for agent {agent} in {} mode",
                                    run.name, run.registration, run.mode
                                ),
                            );
                        }
                    }
                }
            }
            EventData::CommandDone(done) => match runs.get_mut(&done.run) {
                None => flag(
                    Some(seq),
                    format!("done names run {}, which is not an earlier command/run", done.run),
                ),
                Some(true) => flag(Some(seq), format!("second done for run {}", done.run)),
                Some(settled) => *settled = true,
            },
            EventData::Unregistered(u) => {
                let mut probe = state.registry.clone();
                if let Err(anomaly) = probe.apply_unregistered(seq, u.registration, u.reason) {
                    flag(
                        Some(seq),
                        match anomaly {
                            RegistryAnomaly::UnknownRegistration(r) => {
                                format!("unregister names seq {r}, which is not a registration")
                            }
                            other => other.to_string(),
                        },
                    );
                }
            }
            EventData::Registered(r) => {
                if let Some(t) = &r.template {
                    blobs.entry(t.clone()).or_insert(seq);
                }
            }
            EventData::AttachmentAdmitted(a) => {
                blobs.entry(a.blob.clone()).or_insert(seq);
            }
            EventData::PermissionRequested(p) => {
                let key = (event.session.clone().unwrap_or_default(), p.request_id.clone());
                permissions.insert(key, false);
            }
            EventData::PermissionResolved(p) => {
                let key = (event.session.clone().unwrap_or_default(), p.request_id.clone());
                match permissions.get_mut(&key) {
                    None => flag(
                        Some(seq),
                        format!("permission {} resolved without an earlier request", p.request_id),
                    ),
                    Some(true) => flag(
                        Some(seq),
                        format!("permission {} resolved twice", p.request_id),
                    ),
                    Some(resolved) => *resolved = true,
                }
            }
            EventData::PermissionAlreadyResolved(p) => {
                let key = (event.session.clone().unwrap_or_default(), p.request_id.clone());
                if permissions.get(&key) != Some(&true) {
                    flag(
                        Some(seq),
                        format!("a late vote on permission {} before it was answered", p.request_id),
                    );
                }
            }
            EventData::SessionClosed(_) | EventData::SessionDied(_) => {
                if let Some(session) = &event.session {
                    ended_sessions.entry(session.clone()).or_insert(seq);
                }
            }
            _ => {}
        }
        state.apply(&event);
        progress(seq);
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
        flag(Some(seq), format!("seq {seq}: {message}"));
    }

    // The stream index (what reads by session use) lists exactly each stream's records.
    let indexed: BTreeSet<String> = log.streams()?.into_iter().collect();
    for key in indexed
        .iter()
        .chain(by_stream.keys().filter(|k| !indexed.contains(*k)))
    {
        let found = log.stream_seqs(key, 0)?;
        let expected = by_stream.get(key).map(Vec::as_slice).unwrap_or_default();
        if found != expected {
            let first = found
                .iter()
                .zip(expected)
                .find(|(f, e)| f != e)
                .map(|(f, e)| *f.min(e))
                .or_else(|| found.get(expected.len()).copied())
                .or_else(|| expected.get(found.len()).copied());
            flag(
                first,
                format!(
                    "the stream index of {key:?} lists {} records where the log has {}: reads by session are wrong; export and import the log to rebuild it",
                    found.len(),
                    expected.len()
                ),
            );
        }
    }

    let mut checked = BTreeSet::new();
    for (hash, seq) in &blobs {
        checked.insert(hash.clone());
        let Some(parsed) = BlobHash::from_hex(hash) else {
            flag(Some(*seq), format!("blob hash {hash:?} is malformed"));
            continue;
        };
        match log.get_blob(&parsed) {
            Ok(Some(_)) => {}
            Ok(None) => flag(Some(*seq), format!("blob {hash} is missing")),
            Err(BlobError::Mismatch { actual, .. }) => flag(
                Some(*seq),
                format!("blob {hash} is corrupt: its bytes hash to {actual}"),
            ),
            Err(e) => flag(Some(*seq), format!("blob {hash}: {e}")),
        }
    }

    // Every stored blob re-hashes, referenced or not.
    for (hash, _, _) in log.list_blobs()? {
        let hex = hash.to_hex();
        if checked.contains(&hex) {
            continue;
        }
        match log.get_blob(&hash) {
            Ok(_) => {}
            Err(BlobError::Mismatch { actual, .. }) => flag(
                None,
                format!("blob {hex} is corrupt: its bytes hash to {actual}"),
            ),
            Err(e) => flag(None, format!("blob {hex}: {e}")),
        }
        checked.insert(hex);
    }

    let mut again = LogState::default();
    if cmdlog_engine::fold_log(log, &mut again, 1, head.seq).is_ok() && again != state {
        flag(None, "replaying twice gave different projections".into());
    }

    violations.sort_by_key(|v| v.seq);
    Ok(VerifyReport {
        head_seq: head.seq,
        head_hash: hex(&head.hash),
        events,
        blobs: checked.len() as u64,
        violations,
        open_runs: state.open_runs.into_values().collect(),
        conflicts,
    })
}

fn brk_seq(brk: &cmdlog_store::ChainBreak) -> Seq {
    match brk {
        cmdlog_store::ChainBreak::Gap { found, .. } => *found,
        cmdlog_store::ChainBreak::HashMismatch { seq } => *seq,
        cmdlog_store::ChainBreak::Undecodable { seq } => *seq,
    }
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
        Some(record) => hex(&record.hash),
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
