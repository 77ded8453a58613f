//! cmdlog's replay: projections rebuilt from the log, and the invariant checker.
//!
//! - [`state_at`]: the engine's own fold ([`cmdlog_engine::LogState`]) as of any seq.
//! - [`RegistryView`]: the registry as of a seq for one agent and mode, shadowed
//!   entries included, with what shadows them and why.
//! - [`SessionView`]: one session's runs, outcomes, prompts, model and permissions.
//! - [`verify`]: the chain, the Merkle tree, the seqs and every lifecycle invariant
//!   of DESIGN §7.
//! - [`sign`], [`prove_inclusion`], [`prove_since`], [`check_saved`]: signed
//!   checkpoints of the log's Merkle tree and proofs against them (DESIGN R9).
//! - [`drift`]: recorded prompt runs re-expanded with the template then and the file today.
//! - [`plan_gc`] / [`collect`]: blobs no event references, past a grace period.
//!
//! No projection reads the clock or the filesystem: time is a field of each event.

mod archive;
mod audit;
mod checkpoint;
mod conversation;
mod drift;
mod gc;
mod html;
mod limits;
mod registry_view;
mod report;
mod report_conversation;
mod session_proofs;
mod session_view;
mod sessions;
mod tiles;
mod verify;

pub use archive::{
    ExportError, ExportSummary, ImportError, ImportSummary, export, import, import_file,
};
pub use audit::{
    AuditError, AuditFilter, AuditFold, AuditRow, Conflict, Related, Shown, audit,
    audit_with_conflicts, show,
};
pub use checkpoint::{
    CheckpointError, ConsistencyProof, InclusionProof, SavedCheck, SignedCheckpoint, VerifierError,
    check_saved, checkpoint_verifiers, default_key_path, log_signer, log_verifier, origin,
    prove_inclusion, prove_since, sign, sign_at,
};
pub use conversation::{Conversation, Entry, conversation, permission_answer, setting_text};
pub use drift::{AgentAgreement, DriftReport, DriftStatus, RunDrift, agent_agreements, drift};
pub use gc::{
    BlobInfo, GcError, GcPlan, collect, plan_gc, plan_gc_with, referenced_blobs,
    referenced_blobs_with,
};
pub use html::escape_html;
pub use limits::{SESSION_PROOFS_BYTES_MAX, SESSION_PROOFS_EVENTS_MAX};
pub use registry_view::{CommandEntry, RegistryDiff, RegistryView, ShadowingChange, WinnerChange};
pub use report::render_report;
pub use session_proofs::{
    BundleError, CheckedBundle, SESSION_PROOFS_FORMAT, SessionProofs, bundle_log,
    check_session_proofs, prove_session,
};
pub use session_view::{PermissionView, RunView, SessionView, ToolCallView};
pub use sessions::{SessionSummary, SessionsFold, as_tree, sessions, summary_of};
pub use tiles::{TileError, TilesWritten, tile_at, write_tiles};
pub use verify::{BadHead, VerifyReport, Violation, check_expected_head, parse_head, verify};

use cmdlog_engine::{EngineOpenError, LogState, Seq, fold_log_with};
use cmdlog_store::Log;

/// The folded state as of `until` (the whole log when `until` is past the head).
pub fn state_at(log: &Log, until: Seq) -> Result<LogState, EngineOpenError> {
    state_at_with(log, until, |_| {})
}

/// [`state_at`], calling `progress` with each seq folded.
pub fn state_at_with(
    log: &Log,
    until: Seq,
    progress: impl FnMut(Seq),
) -> Result<LogState, EngineOpenError> {
    let mut state = LogState::default();
    fold_log_with(log, &mut state, 1, until.min(log.head().seq), progress)?;
    Ok(state)
}
