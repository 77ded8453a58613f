//! A session's events with their proofs, to keep and check offline: one
//! signed checkpoint of the log's head, then each event of the session as
//! its leaf (the record with its seq, the bytes the tree hashes) and its
//! inclusion proof against that checkpoint. `cmdlog verify --proofs FILE`
//! checks it without the log; so can any tlog verifier, line by line (a
//! line's `leaf`, `index` and `proof` with the header's `checkpoint` are a
//! C2SP `tlog-proof`).
//!
//! The bundle is JSON lines: first `{"format", "log", "session", "size",
//! "checkpoint", "events", "from", "next"}`, then one `{"seq", "index",
//! "leaf", "proof", "event"}` per event (bytes in base64; `event` is the
//! leaf read as JSON, for the reader, and must equal it).
//!
//! It proves each event it holds is in the log the checkpoint's key signed,
//! unchanged. It cannot prove the session has no other event: a bundle that
//! left one out checks too (the log itself, or its other bundles, show it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use cmdlog_engine::Seq;
use cmdlog_store::Log;
use cmdlog_tlog::{Checkpoint, Hash, Note, NoteVerifier, Signer, leaf_hash, verify_inclusion};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::{CheckpointError, SignedCheckpoint, sign};
use crate::limits::SESSION_PROOFS_EVENTS_MAX;

/// The bundle's format, its header's `format`.
pub const SESSION_PROOFS_FORMAT: &str = "cmdlog.session-proofs/v1";

/// A session's events from a seq on, each with its inclusion proof against
/// one signed checkpoint.
#[derive(Debug, Clone)]
pub struct SessionProofs {
    /// The log's id.
    pub log_id: String,
    /// The session.
    pub session: String,
    /// The checkpoint every proof verifies against.
    pub checkpoint: SignedCheckpoint,
    /// Each event: its seq, its leaf bytes, its proof.
    pub events: Vec<(Seq, Vec<u8>, Vec<Hash>)>,
    /// The seq the bundle starts at.
    pub from: Seq,
    /// The seq the next part starts at, when the session has more events.
    pub next: Option<Seq>,
}

/// The events of `session` from seq `from` on (at most
/// [`SESSION_PROOFS_EVENTS_MAX`]), each with its inclusion proof against a
/// checkpoint of the log's head signed now.
pub fn prove_session(
    log: &Log,
    log_id: &str,
    session: &str,
    from: Seq,
    signer: &Signer,
) -> Result<SessionProofs, CheckpointError> {
    let view = log.tree()?;
    let seqs = log.stream_seqs(session, from)?;
    let seqs: Vec<Seq> = seqs.into_iter().filter(|s| *s <= view.size()).collect();
    let (taken, rest) = seqs.split_at(seqs.len().min(SESSION_PROOFS_EVENTS_MAX));
    let mut events = Vec::with_capacity(taken.len());
    for &seq in taken {
        let leaf = log.leaf(seq)?.ok_or(CheckpointError::SeqOutOfRange {
            seq,
            head: view.size(),
        })?;
        events.push((seq, leaf, view.inclusion_proof(seq)?));
    }
    Ok(SessionProofs {
        log_id: log_id.to_string(),
        session: session.to_string(),
        checkpoint: sign(&view, &crate::origin(log_id), signer)?,
        events,
        from,
        next: rest.first().copied(),
    })
}

/// The bundle's first line.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: String,
    log: String,
    session: String,
    size: u64,
    checkpoint: String,
    events: usize,
    from: Seq,
    next: Option<Seq>,
}

/// One event of the bundle.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    seq: Seq,
    index: u64,
    /// The leaf's bytes, base64.
    leaf: String,
    /// The proof's hashes, base64.
    proof: Vec<String>,
    /// The leaf read as JSON, for the reader.
    #[serde(default)]
    event: Option<Value>,
}

impl SessionProofs {
    /// The bundle as JSON lines.
    pub fn to_jsonl(&self) -> String {
        let header = Header {
            format: SESSION_PROOFS_FORMAT.into(),
            log: self.log_id.clone(),
            session: self.session.clone(),
            size: self.checkpoint.checkpoint.size,
            checkpoint: self.checkpoint.note.clone(),
            events: self.events.len(),
            from: self.from,
            next: self.next,
        };
        let mut out = serde_json::to_string(&header).unwrap_or_default();
        out.push('\n');
        for (seq, leaf, proof) in &self.events {
            let line = Line {
                seq: *seq,
                index: seq - 1,
                leaf: B64.encode(leaf),
                proof: proof.iter().map(|h| B64.encode(h)).collect(),
                event: serde_json::from_slice(leaf).ok(),
            };
            out.push_str(&serde_json::to_string(&line).unwrap_or_default());
            out.push('\n');
        }
        out
    }
}

/// Why a bundle does not check, naming its line (1 is the header).
#[derive(Debug, thiserror::Error, Serialize)]
#[error("line {line}: {why}")]
pub struct BundleError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

/// What a bundle that checked holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckedBundle {
    /// The log's id.
    pub log: String,
    /// The session.
    pub session: String,
    /// The size of the tree its checkpoint commits to.
    pub size: u64,
    /// Its events, each proven in that tree.
    pub events: usize,
    /// Their seqs, first and last.
    pub seqs: Option<(Seq, Seq)>,
    /// The seq the session's next part starts at, when it has one.
    pub next: Option<Seq>,
    /// Who signed the checkpoint (the keys' names).
    pub signed_by: Vec<String>,
}

impl std::fmt::Display for CheckedBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let span = self
            .seqs
            .map(|(a, b)| format!(" (seqs {a}..={b})"))
            .unwrap_or_default();
        write!(
            f,
            "ok: {} events of session {}{span} are in log {}, each proven against its checkpoint of {} records signed by {}",
            self.events,
            self.session,
            self.log,
            self.size,
            self.signed_by.join(", ")
        )?;
        if let Some(next) = self.next {
            write!(
                f,
                "\nthe session has more events from seq {next}: their bundle is another download (?from={next})"
            )?;
        }
        Ok(())
    }
}

fn bad(line: usize, why: impl Into<String>) -> BundleError {
    BundleError {
        line,
        why: why.into(),
    }
}

/// The log a bundle says it is of (its header's `log`), to find its key: a
/// log id is hex, so anything else names no key file (nor a path).
pub fn bundle_log(text: &str) -> Option<String> {
    let first = text.lines().next()?;
    let log = serde_json::from_str::<Header>(first).ok()?.log;
    (log.len() <= 64 && log.bytes().all(|b| b.is_ascii_hexdigit())).then_some(log)
}

/// The bundle's header, its checkpoint's signature checked with
/// `verifiers` and its origin the log's.
fn checked_header(
    first: &str,
    verifiers: &[NoteVerifier],
) -> Result<(Header, Checkpoint, Vec<String>), BundleError> {
    let header: Header = serde_json::from_str(first).map_err(|e| {
        bad(
            1,
            format!("not the header of a session proof bundle ({SESSION_PROOFS_FORMAT}): {e}"),
        )
    })?;
    if header.format != SESSION_PROOFS_FORMAT {
        return Err(bad(
            1,
            format!(
                "its format is {:?}, not {SESSION_PROOFS_FORMAT:?}",
                header.format
            ),
        ));
    }
    let note =
        Note::parse(&header.checkpoint).map_err(|e| bad(1, format!("its checkpoint: {e}")))?;
    let signed = note
        .verify(verifiers)
        .map_err(|e| bad(1, format!("its checkpoint's signature: {e}")))?;
    let checkpoint =
        Checkpoint::parse(note.text()).map_err(|e| bad(1, format!("its checkpoint: {e}")))?;
    if checkpoint.origin != crate::origin(&header.log) {
        return Err(bad(
            1,
            format!(
                "its checkpoint is for {:?}, not log {}",
                checkpoint.origin, header.log
            ),
        ));
    }
    let names = signed.into_iter().map(|(name, _)| name).collect();
    Ok((header, checkpoint, names))
}

/// Checks one event line against the checkpoint: its proof, its seq, its
/// session; its seq.
fn checked_line(
    n: usize,
    text: &str,
    checkpoint: &Checkpoint,
    session: &str,
) -> Result<Seq, BundleError> {
    let line: Line = serde_json::from_str(text)
        .map_err(|e| bad(n, format!("not an event of the bundle: {e}")))?;
    let seq = line.seq;
    let leaf = B64
        .decode(&line.leaf)
        .map_err(|_| bad(n, "its \"leaf\" is not base64"))?;
    let proof = line
        .proof
        .iter()
        .map(|h| {
            B64.decode(h)
                .ok()
                .and_then(|b| Hash::try_from(b.as_slice()).ok())
        })
        .collect::<Option<Vec<Hash>>>()
        .ok_or_else(|| bad(n, "a hash of its \"proof\" is not 32 bytes of base64"))?;
    if seq == 0 || line.index != seq - 1 {
        return Err(bad(n, format!("seq {seq} is not leaf {}", line.index)));
    }
    verify_inclusion(
        &leaf_hash(&leaf),
        seq - 1,
        checkpoint.size,
        &proof,
        &checkpoint.root,
    )
    .map_err(|e| {
        bad(
            n,
            format!("seq {seq} is not proven in the checkpoint's tree: {e}"),
        )
    })?;
    let recorded: Value = serde_json::from_slice(&leaf)
        .map_err(|e| bad(n, format!("seq {seq}: its leaf is not JSON: {e}")))?;
    if recorded["seq"].as_u64() != Some(seq) {
        return Err(bad(
            n,
            format!("seq {seq}: its leaf is the record of another seq"),
        ));
    }
    if recorded["session"].as_str() != Some(session) {
        return Err(bad(
            n,
            format!("seq {seq}: its event is not of session {session}"),
        ));
    }
    if line.event.is_some_and(|e| e != recorded) {
        return Err(bad(
            n,
            format!(
                "seq {seq}: its \"event\" is not the leaf it proves (the leaf is what the log holds)"
            ),
        ));
    }
    Ok(seq)
}

/// Checks a bundle with the log's verifier keys: its checkpoint's signature
/// and origin, then each event's proof against it and that each is of the
/// session, at its seq, in order, as many as the header says.
pub fn check_session_proofs(
    text: &str,
    verifiers: &[NoteVerifier],
) -> Result<CheckedBundle, BundleError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, first) = lines.next().ok_or_else(|| bad(1, "the file is empty"))?;
    let (header, checkpoint, signed_by) = checked_header(first, verifiers)?;
    let mut checked = CheckedBundle {
        log: header.log,
        session: header.session,
        size: checkpoint.size,
        events: 0,
        seqs: None,
        next: header.next,
        signed_by,
    };
    let mut last = 0;
    for (n, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let seq = checked_line(n, line, &checkpoint, &checked.session)?;
        if seq <= last {
            return Err(bad(n, format!("seq {seq} is not after seq {last}")));
        }
        last = seq;
        checked.events += 1;
        checked.seqs = Some((checked.seqs.map_or(seq, |(first, _)| first), seq));
    }
    if checked.events != header.events {
        return Err(bad(
            1,
            format!(
                "it says it holds {} events; {} follow it",
                header.events, checked.events
            ),
        ));
    }
    Ok(checked)
}
