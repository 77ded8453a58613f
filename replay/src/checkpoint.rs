//! The verifiable log (DESIGN R9): a log's origin and signing key, signed C2SP
//! checkpoints of its Merkle tree, inclusion and consistency proofs, and the check
//! of a log against a checkpoint saved earlier. Formats and what each proof shows:
//! `docs/verifiable.md`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use cmdlog_store::{Log, ReadError, Seq, TreeError, TreeView};
use cmdlog_tlog::keys::{self, KeyError};
use cmdlog_tlog::{Checkpoint, Hash, KeyKind, Note, NoteError, NoteVerifier, Signer};

/// The origin (checkpoint name and key name) of the log with id `log_id`.
pub fn origin(log_id: &str) -> String {
    format!("cmdlog/{log_id}")
}

/// Where the key of log `log_id` is kept unless another is given:
/// `$XDG_CONFIG_HOME/cmdlog/keys/<log id>.key` (else under `~/.config`).
pub fn default_key_path(log_id: &str) -> Result<PathBuf, KeyError> {
    let dir = keys::key_dir_path().map_err(|source| KeyError::Io {
        path: PathBuf::from("$XDG_CONFIG_HOME/cmdlog/keys"),
        source,
    })?;
    Ok(dir.join(format!("{log_id}.key")))
}

/// The signing key of log `log_id`: the one in `key` when given, else the
/// user's key for this log; made (owner-only) when the file does not exist.
pub fn log_signer(log_id: &str, key: Option<&Path>) -> Result<Signer, KeyError> {
    let path = match key {
        Some(path) => path.to_path_buf(),
        None => default_key_path(log_id)?,
    };
    keys::load_or_create_signer(&path, &origin(log_id), KeyKind::Ed25519)
}

/// The verifier of log `log_id` from its key file, without making one: `None`
/// when there is no key yet.
pub fn log_verifier(log_id: &str, key: Option<&Path>) -> Result<Option<NoteVerifier>, KeyError> {
    let path = match key {
        Some(path) => path.to_path_buf(),
        None => default_key_path(log_id)?,
    };
    match keys::load_signer(&path) {
        Ok(signer) => Ok(Some(signer.verifier())),
        Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Why no keys could be found to check a checkpoint with.
#[derive(Debug, thiserror::Error)]
pub enum VerifierError {
    /// A key given is not a verifier key.
    #[error("--vkey: {0}")]
    Given(NoteError),
    /// The log's key file could not be read.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No key was given and the log has no key file here.
    #[error("no key of log {0} here to check a checkpoint's signature with")]
    NoKey(String),
}

/// The keys a checkpoint of log `log_id` is checked with: each of `given`
/// (verifier keys, as `cmdlog key` prints them), else the log's own key
/// file (`key`, or its default place).
pub fn checkpoint_verifiers(
    log_id: &str,
    given: &[String],
    key: Option<&Path>,
) -> Result<Vec<NoteVerifier>, VerifierError> {
    if !given.is_empty() {
        return given
            .iter()
            .map(|k| NoteVerifier::parse(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(VerifierError::Given);
    }
    let verifier = log_verifier(log_id, key)?;
    verifier
        .map(|v| vec![v])
        .ok_or_else(|| VerifierError::NoKey(cmdlog_common::terminal::clean(log_id).into_owned()))
}

/// Why a checkpoint or a proof could not be made, or a check failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The log's tree could not be read.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The key could not be read or made.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A saved checkpoint is not a signed checkpoint, or its signature fails.
    #[error("the checkpoint {0}")]
    Note(NoteError),
    /// A seq past the head (or 0).
    #[error("seq {seq} is not in the log (its records are 1..={head})")]
    SeqOutOfRange {
        /// The seq asked for.
        seq: Seq,
        /// The head.
        head: Seq,
    },
    /// The checkpoint names another log.
    #[error("the checkpoint is for {found:?}, not this log ({expected:?})")]
    OtherLog {
        /// Its origin.
        found: String,
        /// This log's.
        expected: String,
    },
    /// The log holds fewer records than the checkpoint commits to.
    #[error(
        "the log is shorter than the checkpoint: it holds {log_size} records, the checkpoint commits to {checkpoint_size} — records were cut from its end, or this is an older copy"
    )]
    Shorter {
        /// Records in the log.
        log_size: u64,
        /// Records the checkpoint commits to.
        checkpoint_size: u64,
    },
    /// The log's first records are not the ones the checkpoint commits to.
    #[error(
        "the log's first {size} records are not the tree the checkpoint commits to — records before seq {size} were changed, removed or replaced"
    )]
    DifferentTree {
        /// The checkpoint's size.
        size: u64,
    },
}

impl CheckpointError {
    /// Whether this is what a check found (the checkpoint does not verify, or the
    /// log does not hold what it commits to) rather than a failure to check (the
    /// log, its tree or a key could not be read).
    pub fn is_finding(&self) -> bool {
        !matches!(
            self,
            CheckpointError::Read(_) | CheckpointError::Tree(_) | CheckpointError::Key(_)
        )
    }
}

/// A signed checkpoint: the body and the whole signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    /// What it commits to.
    pub checkpoint: Checkpoint,
    /// The signed note (body, blank line, signature line).
    pub note: String,
}

/// Signs the checkpoint of `view` (the tree at one size) for `origin`.
pub fn sign(
    view: &TreeView,
    origin: &str,
    signer: &Signer,
) -> Result<SignedCheckpoint, CheckpointError> {
    sign_at(view, view.size(), origin, signer)
}

/// Signs the checkpoint of the tree of the first `size` records of `view`.
pub fn sign_at(
    view: &TreeView,
    size: u64,
    origin: &str,
    signer: &Signer,
) -> Result<SignedCheckpoint, CheckpointError> {
    let checkpoint = Checkpoint {
        origin: origin.to_string(),
        size,
        root: view.root_at(size)?,
        extensions: vec![],
    };
    let note = signer
        .sign(&checkpoint.to_text())
        .map_err(CheckpointError::Note)?;
    Ok(SignedCheckpoint { checkpoint, note })
}

/// Record `seq` is leaf `seq − 1` of the tree a signed checkpoint commits to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// The leaf index (`seq − 1`).
    pub index: u64,
    /// The tree size.
    pub size: u64,
    /// The leaf's input bytes (the record with its seq).
    pub leaf: Vec<u8>,
    /// The RFC 9162 inclusion proof, the sibling nearest the leaf first.
    pub proof: Vec<Hash>,
    /// The signed checkpoint it verifies against.
    pub checkpoint: SignedCheckpoint,
}

impl InclusionProof {
    /// `{"index", "size", "leaf", "proof", "checkpoint"}`, bytes in base64.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "index": self.index,
            "size": self.size,
            "leaf": B64.encode(&self.leaf),
            "proof": self.proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
            "checkpoint": self.checkpoint.note,
        })
    }

    /// The C2SP `tlog-proof` text: `c2sp.org/tlog-proof@v1`, `extra` (the leaf
    /// input, so the proof carries what it proves), `index`, the hashes, a blank
    /// line, the checkpoint.
    pub fn to_tlog_proof(&self) -> String {
        let mut text = format!(
            "c2sp.org/tlog-proof@v1\nextra {}\nindex {}\n",
            B64.encode(&self.leaf),
            self.index
        );
        for hash in &self.proof {
            text.push_str(&B64.encode(hash));
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.checkpoint.note);
        text
    }
}

/// Proves record `seq` is in the log, against a checkpoint of the head signed now.
pub fn prove_inclusion(
    log: &Log,
    seq: Seq,
    origin: &str,
    signer: &Signer,
) -> Result<InclusionProof, CheckpointError> {
    let view = log.tree()?;
    if seq == 0 || seq > view.size() {
        return Err(CheckpointError::SeqOutOfRange {
            seq,
            head: view.size(),
        });
    }
    let leaf = log.leaf(seq)?.ok_or(CheckpointError::SeqOutOfRange {
        seq,
        head: view.size(),
    })?;
    Ok(InclusionProof {
        index: seq - 1,
        size: view.size(),
        proof: view.inclusion_proof(seq)?,
        leaf,
        checkpoint: sign(&view, origin, signer)?,
    })
}

/// The log at its head extends the tree of a checkpoint saved earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The saved checkpoint's size.
    pub old_size: u64,
    /// The head's.
    pub size: u64,
    /// The RFC 9162 consistency proof.
    pub proof: Vec<Hash>,
    /// The checkpoint of the head it verifies against.
    pub checkpoint: SignedCheckpoint,
}

impl ConsistencyProof {
    /// `{"old_size", "size", "proof", "checkpoint"}`, hashes in base64.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "old_size": self.old_size,
            "size": self.size,
            "proof": self.proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
            "checkpoint": self.checkpoint.note,
        })
    }

    /// The body a C2SP `tlog-witness` `add-checkpoint` request takes: `old N`, the
    /// proof's hashes, a blank line, the checkpoint.
    pub fn to_witness_request(&self) -> String {
        cmdlog_tlog::AddCheckpoint {
            old_size: self.old_size,
            proof: self.proof.clone(),
            note: self.checkpoint.note.clone(),
        }
        .to_text()
    }
}

/// Reads a saved checkpoint and checks what it says about `log`: its signature by
/// one of `verifiers`, its origin, and that the log holds at least as many
/// records and the same tree at that size. Returns it and the log's tree.
pub fn check_saved(
    log: &Log,
    saved: &str,
    origin: &str,
    verifiers: &[NoteVerifier],
) -> Result<(Checkpoint, TreeView), CheckpointError> {
    let note = Note::parse(saved).map_err(CheckpointError::Note)?;
    note.verify(verifiers).map_err(CheckpointError::Note)?;
    let checkpoint = Checkpoint::parse(note.text()).map_err(CheckpointError::Note)?;
    if checkpoint.origin != origin {
        return Err(CheckpointError::OtherLog {
            found: checkpoint.origin,
            expected: origin.to_string(),
        });
    }
    let view = log.tree()?;
    if view.size() < checkpoint.size {
        return Err(CheckpointError::Shorter {
            log_size: view.size(),
            checkpoint_size: checkpoint.size,
        });
    }
    if view.root_at(checkpoint.size)? != checkpoint.root {
        return Err(CheckpointError::DifferentTree {
            size: checkpoint.size,
        });
    }
    Ok((checkpoint, view))
}

/// What a checkpoint saved in `file` showed of a log (`verify --checkpoint`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SavedCheck {
    /// The file it was read from, as given.
    pub file: String,
    /// The log holds the tree it commits to, unchanged.
    pub consistent: bool,
    /// The records it commits to, when consistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The log's records, when consistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_size: Option<u64>,
    /// What is wrong, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl SavedCheck {
    /// Checks `saved` (read from `file`) against `log` as [`check_saved`] does:
    /// a finding (the log does not hold what it commits to, or it does not
    /// verify) is in the result; only a failure to check at all is an error.
    pub fn of(
        log: &Log,
        file: &str,
        saved: &str,
        origin: &str,
        verifiers: &[NoteVerifier],
    ) -> Result<SavedCheck, CheckpointError> {
        let file = file.to_string();
        match check_saved(log, saved, origin, verifiers) {
            Ok((checkpoint, view)) => Ok(SavedCheck {
                file,
                consistent: true,
                size: Some(checkpoint.size),
                log_size: Some(view.size()),
                problem: None,
            }),
            Err(e) if !e.is_finding() => Err(e),
            Err(e) => Ok(SavedCheck {
                file,
                consistent: false,
                size: None,
                log_size: None,
                problem: Some(e.to_string()),
            }),
        }
    }
}

/// The consistency proof from a checkpoint saved earlier (checked first, as
/// [`check_saved`] does) to the head, with a new checkpoint of the head.
pub fn prove_since(
    log: &Log,
    saved: &str,
    origin: &str,
    signer: &Signer,
) -> Result<ConsistencyProof, CheckpointError> {
    let (old, view) = check_saved(log, saved, origin, &[signer.verifier()])?;
    Ok(ConsistencyProof {
        old_size: old.size,
        size: view.size(),
        proof: view.consistency_proof(old.size)?,
        checkpoint: sign(&view, origin, signer)?,
    })
}
