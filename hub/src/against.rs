//! `verify --against`: what a hub holds of a log, and whether the log still
//! agrees with it. Read once ([`Against::read`]), then checked against the
//! local log ([`Against::check`]): a hub holding more than the log was rolled
//! back to, or another hash at a seq, is a violation; so is a hub that lost
//! records; a checkpoint on the hub that the log's key did not sign is forged;
//! a witness's cosigned checkpoint the log is not consistent with is named.
//! Records on the hub that are not the log's own (another machine's, or
//! forged) are the hub's problem, not the log's: said as notes.

use cmdlog_engine::event::LogIdentity;
use cmdlog_replay::{CheckpointError, Violation, check_expected_head, check_saved, origin};
use cmdlog_store::{Log, ReadError};
use cmdlog_tlog::{Note, NoteVerifier};

use crate::{HubCheckpoint, HubError, HubOptions, cosigned_checkpoint, hub_checkpoint, log_on_hub};

/// What a hub says of one log.
#[derive(Debug, Default)]
pub struct Against {
    /// The head to check: the last record this machine pushed when the hub
    /// still holds it, else the head of the log's chain there.
    pub head: Option<(u64, String)>,
    /// The latest checkpoint the log's pusher signed on the hub.
    pub checkpoint: Option<HubCheckpoint>,
    /// Each witness asked for, and the checkpoint of this log it cosigned.
    pub cosigned: Vec<(NoteVerifier, Option<String>)>,
    /// Why the hub lost records of this log, if it did.
    pub lost: Option<String>,
    /// What the reader should know that is no fault of the log.
    pub notes: Vec<String>,
}

/// Why the log could not be checked against what the hub holds.
#[derive(Debug, thiserror::Error)]
pub enum AgainstError {
    /// The local log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A checkpoint could not be checked (not a finding about the log).
    #[error(transparent)]
    Checkpoint(CheckpointError),
}

impl Against {
    /// Reads what the hub of `options` holds of the log `identity` names, with
    /// the checkpoints `witnesses` cosigned.
    pub async fn read(
        options: &HubOptions,
        identity: &LogIdentity,
        witnesses: &[NoteVerifier],
    ) -> Result<Against, HubError> {
        let hub = options.connect().await?;
        let stream = hub.existing_stream().await?;
        let held = log_on_hub(&hub, &stream, &identity.id).await?;
        let checkpoint = hub_checkpoint(&hub, &identity.id).await?;
        let mut cosigned = Vec::new();
        for witness in witnesses {
            let note = cosigned_checkpoint(&hub, &identity.id, witness).await?;
            cosigned.push((witness.clone(), note));
        }
        let mut against = Against {
            checkpoint,
            cosigned,
            ..Against::default()
        };
        let Some(held) = held else {
            against
                .notes
                .push(format!("the hub holds nothing of log {} yet", identity.id));
            return Ok(against);
        };
        let signed = against.checkpoint.as_ref().map_or(0, |c| c.checkpoint.size);
        for f in &held.foreign {
            let verdict = if f.seq > signed && against.checkpoint.is_some() {
                "covered by no signed checkpoint of this log: forged"
            } else {
                "forged, or another machine's with this id"
            };
            against.notes.push(format!(
                "the hub holds a foreign record of log {} at stream message {} (claims seq {}: {}): {verdict}",
                identity.id, f.stream_seq, f.seq, f.why
            ));
        }
        against.head = (held.seq > 0).then_some((held.seq, held.hash));
        against.lost = held.lost;
        Ok(against)
    }

    /// Whether checking it needs the log's verifier keys (a checkpoint or a
    /// cosignature to check).
    pub fn needs_keys(&self) -> bool {
        self.checkpoint.is_some() || self.cosigned.iter().any(|(_, note)| note.is_some())
    }

    /// Checks `log` against it; `verifiers` are the log's keys (needed when
    /// [`Against::needs_keys`]). The violations found; notes are added to its
    /// own.
    pub fn check(
        &mut self,
        log: &Log,
        identity: &LogIdentity,
        verifiers: &[NoteVerifier],
    ) -> Result<Vec<Violation>, AgainstError> {
        let mut found = Vec::new();
        if let Some(why) = &self.lost {
            found.push(Violation {
                seq: None,
                message: format!("against the hub: {why}"),
            });
        }
        if let Some((seq, hash)) = &self.head
            && let Some(message) = check_expected_head(log, *seq, hash)?
        {
            found.push(Violation {
                seq: Some(*seq),
                message: format!("against the hub: {message}"),
            });
        }
        for (witness, note) in &self.cosigned {
            found.extend(check_cosigned(
                log,
                identity,
                verifiers,
                witness,
                note.as_deref(),
            )?);
        }
        found.extend(self.check_checkpoint(log, identity, verifiers)?);
        Ok(found)
    }

    /// Checks the log against the latest checkpoint its pusher signed on the
    /// hub: a log shorter than it was rolled back, one whose first records
    /// differ forked or was replaced — proven by the log's own key. Records on
    /// the hub past it are covered by no signature (a note).
    fn check_checkpoint(
        &mut self,
        log: &Log,
        identity: &LogIdentity,
        verifiers: &[NoteVerifier],
    ) -> Result<Option<Violation>, AgainstError> {
        let Some(checkpoint) = &self.checkpoint else {
            self.notes.push(format!(
                "the hub holds no signed checkpoint of log {}: its records are checked against their hash chain only (a push by this version signs one)",
                identity.id
            ));
            return Ok(None);
        };
        if let Err(why) = checkpoint.verify(verifiers) {
            return Ok(Some(Violation {
                seq: None,
                message: format!(
                    "against the hub: its checkpoint of this log is not signed by this log's key ({why}): forged"
                ),
            }));
        }
        let size = checkpoint.checkpoint.size;
        if let Some(hub_seq) = self.head.as_ref().map(|h| h.0).filter(|s| *s > size) {
            self.notes.push(format!(
                "the hub holds records of log {} past its last signed checkpoint (seqs {}..={hub_seq}): no signature covers them (forged, or a push stopped before its checkpoint: the next push covers its own)",
                identity.id,
                size + 1
            ));
        }
        match check_saved(
            log,
            &checkpoint.request.note,
            &origin(&identity.id),
            verifiers,
        ) {
            Ok(_) => Ok(None),
            Err(e) if !e.is_finding() => Err(AgainstError::Checkpoint(e)),
            Err(e) => Ok(Some(Violation {
                seq: Some(size),
                message: format!("against the hub's checkpoint signed with this log's key: {e}"),
            })),
        }
    }
}

/// Checks that `witness` cosigned a checkpoint of this log (signed by its key)
/// that the log is consistent with.
fn check_cosigned(
    log: &Log,
    identity: &LogIdentity,
    verifiers: &[NoteVerifier],
    witness: &NoteVerifier,
    note: Option<&str>,
) -> Result<Option<Violation>, AgainstError> {
    let violation = |message: String| {
        Ok(Some(Violation {
            seq: None,
            message: format!("witness {}: {message}", witness.name()),
        }))
    };
    let Some(note) = note else {
        return violation("has cosigned no checkpoint of this log on the hub".into());
    };
    let cosigned = Note::parse(note).map_err(|e| e.to_string()).and_then(|n| {
        n.verify(std::slice::from_ref(witness))
            .map_err(|e| e.to_string())?;
        n.verify(verifiers).map_err(|e| e.to_string())
    });
    if let Err(why) = cosigned {
        return violation(format!("its cosigned checkpoint does not verify ({why})"));
    }
    match check_saved(log, note, &origin(&identity.id), verifiers) {
        Ok(_) => Ok(None),
        Err(e) if !e.is_finding() => Err(AgainstError::Checkpoint(e)),
        Err(e) => violation(format!("against the checkpoint it cosigned: {e}")),
    }
}
