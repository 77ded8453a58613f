//! `cmdlog verify`: the chain, seqs, lifecycle invariants and blobs; with
//! `--expect-head`, also that the log still holds a head recorded elsewhere.

mod report;

use clap::Args;
use cmdlog_engine::event::LogIdentity;
use cmdlog_replay::{Violation, check_expected_head, verify};
use cmdlog_store::Log;

use std::io::Write;

use super::output::print_json;
use super::progress::Progress;
use super::{CliError, SETTLED_ERROR, VerbResult, hub_failure, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// A head recorded earlier (`cmdlog verify` prints it), as SEQ:HASH: a log that
    /// no longer reaches it was rolled back, one with another hash there forked
    #[arg(long, value_name = "SEQ:HASH")]
    expect_head: Option<String>,
    /// Also compare the log with its copy on this hub (`cmdlog push`): a log
    /// the hub holds more of was rolled back, one with another hash forked
    #[arg(long, value_name = "URL")]
    against: Option<String>,
    /// The hub's stream (with --against)
    #[arg(
        long,
        env = "CMDLOG_HUB_STREAM",
        default_value = "CMDLOG",
        requires = "against"
    )]
    stream: String,
    /// A checkpoint saved earlier (`cmdlog checkpoint -o FILE`): check its
    /// signature and that the log still holds the tree it commits to — not cut
    /// short, not replaced by an older copy, nothing before it changed
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<std::path::PathBuf>,
    /// The verifier key to check the checkpoint's signature with (`cmdlog key`
    /// prints it) [default: the log's own key file]; repeat for several
    #[arg(long, value_name = "KEY")]
    vkey: Vec<String>,
    /// With --against: require a cosignature by this witness (its key, as
    /// `cmdlog witness` prints it) on a checkpoint this log is consistent with;
    /// repeatable
    #[arg(long, value_name = "KEY", requires = "against")]
    witness: Vec<cmdlog_tlog::NoteVerifier>,
    /// Check a session's events with their proofs (a bundle the workbench
    /// downloads) against the log's key, offline: the log is not read
    #[arg(long, value_name = "FILE", conflicts_with_all = ["expect_head", "against", "checkpoint"])]
    proofs: Option<std::path::PathBuf>,
    #[command(flatten)]
    key: super::checkpoint::KeyArgs,
}

/// The keys a checkpoint of this log is checked with: each `--vkey`, else the
/// log's own key file.
fn verifiers(log_id: &str, args: &VerifyArgs) -> Result<Vec<cmdlog_tlog::NoteVerifier>, CliError> {
    use cmdlog_replay::VerifierError;
    cmdlog_replay::checkpoint_verifiers(log_id, &args.vkey, args.key.key.as_deref()).map_err(|e| match e {
        VerifierError::Given(_) => CliError::usage(e.to_string()),
        VerifierError::Key(e) => super::checkpoint::key_failure(e),
        VerifierError::NoKey(_) => CliError::not_found(e.to_string())
            .hint("pass the verifier key the checkpoint was signed with: --vkey KEY (`cmdlog key` prints it where the key is)"),
    })
}

/// Checks the log against a saved checkpoint (`--checkpoint`): what it showed,
/// and the violation when the log does not hold what it commits to.
fn check_checkpoint(
    log: &Log,
    identity: Option<&LogIdentity>,
    args: &VerifyArgs,
    file: &std::path::Path,
) -> Result<(Option<Violation>, Option<cmdlog_replay::SavedCheck>), CliError> {
    let Some(identity) = identity else {
        let message = "this log has no id, so no checkpoint was ever made of it".into();
        return Ok((Some(Violation { seq: None, message }), None));
    };
    let saved = super::prove::read_checkpoint(file)?;
    let verifiers = verifiers(&identity.id, args)?;
    let origin = cmdlog_replay::origin(&identity.id);
    let name = file.display().to_string();
    let check = cmdlog_replay::SavedCheck::of(log, &name, &saved, &origin, &verifiers)
        .map_err(super::checkpoint::checkpoint_failure)?;
    let violation = check.problem.as_ref().map(|problem| Violation {
        seq: None,
        message: format!("checkpoint {name}: {problem}"),
    });
    Ok((violation, Some(check)))
}

/// Checks the log against what the hub at `url` holds of it (`--against`):
/// the violations; what is no fault of the log is said on stderr.
fn check_against(
    log: &Log,
    identity: Option<&LogIdentity>,
    args: &VerifyArgs,
    url: &str,
) -> Result<Vec<Violation>, CliError> {
    let Some(identity) = identity else {
        eprintln!(
            "cmdlog: verify: this log has no id yet, so no hub holds it (`cmdlog push` gives it one)"
        );
        return Ok(vec![]);
    };
    super::hub::refuse_url_secrets(url)?;
    let options = cmdlog_hub::HubOptions::from_env(url, &args.stream);
    let mut against = super::hub::runtime()?
        .block_on(cmdlog_hub::Against::read(&options, identity, &args.witness))
        .map_err(hub_failure)?;
    let verifiers = if against.needs_keys() {
        verifiers(&identity.id, args)?
    } else {
        vec![]
    };
    let found = against.check(log, identity, &verifiers);
    for note in &against.notes {
        eprintln!("cmdlog: verify: {}", render::clean(note));
    }
    found.map_err(|e| match e {
        cmdlog_hub::AgainstError::Read(e) => store_failure(e),
        cmdlog_hub::AgainstError::Checkpoint(e) => super::checkpoint::checkpoint_failure(e),
    })
}

pub(crate) fn exec(paths: &super::Paths, args: VerifyArgs, json: bool) -> VerbResult {
    if let Some(file) = &args.proofs {
        return check_proofs(file, &args, json);
    }
    let log = &super::open::open_existing(paths)?;
    let expected = args.expect_head.as_deref().map(cmdlog_replay::parse_head);
    let expected = expected.transpose().map_err(CliError::usage)?;
    let identity = cmdlog_engine::identity::read_identity(log).map_err(store_failure)?;
    let bar = Progress::new(log.head().seq, "verify");
    let mut report = verify(log, bar.tick()).map_err(store_failure)?;
    bar.finish();
    if let Some((seq, hash)) = &expected
        && let Some(message) = check_expected_head(log, *seq, hash).map_err(store_failure)?
    {
        report.violations.push(Violation {
            seq: Some(*seq),
            message,
        });
    }
    if let Some(url) = &args.against {
        let found = check_against(log, identity.as_ref(), &args, url)?;
        report.violations.extend(found);
    }
    let (violation, checkpoint_check) = match &args.checkpoint {
        Some(file) => check_checkpoint(log, identity.as_ref(), &args, file)?,
        None => (None, None),
    };
    report.violations.extend(violation);
    let index =
        cmdlog_index::verify_beside(&paths.log, log).map_err(|e| CliError::io(e.to_string()))?;
    let (problems, coverage) = index.map(|f| (f.problems, f.coverage)).unwrap_or_default();
    report.violations.extend(
        problems
            .into_iter()
            .map(|(seq, message)| Violation { seq, message }),
    );
    // Hook payloads that wait in the spill folder are not in the log yet.
    let spill = cmdlog_agents::Spill::for_log(log.path()).report();
    report::print(
        &report,
        identity.as_ref(),
        &spill,
        checkpoint_check.as_ref(),
        coverage.as_ref(),
        json,
    )?;
    Ok(if report.is_clean() { 0 } else { SETTLED_ERROR })
}

/// `--proofs FILE`: a session's events with their inclusion proofs (the
/// workbench's download), checked offline against the log's key.
fn check_proofs(file: &std::path::Path, args: &VerifyArgs, json: bool) -> VerbResult {
    let max = cmdlog_replay::SESSION_PROOFS_BYTES_MAX;
    let text =
        cmdlog_common::private_fs::read_untrusted_text(file, max).map_err(CliError::not_found)?;
    let log_id = cmdlog_replay::bundle_log(&text).unwrap_or_default();
    let checked = cmdlog_replay::check_session_proofs(&text, &verifiers(&log_id, args)?);
    let mut out = std::io::stdout().lock();
    let code = if checked.is_ok() { 0 } else { SETTLED_ERROR };
    let file = file.display();
    match (checked, json) {
        (Ok(bundle), true) => print_json(&mut out, &bundle)?,
        (Err(e), true) => print_json(&mut out, &e)?,
        (Ok(bundle), false) => writeln!(out, "{}", render::clean(&bundle.to_string()))?,
        (Err(e), false) => writeln!(out, "NOT PROVEN: {file}: {}", render::clean(&e.to_string()))?,
    }
    Ok(code)
}
