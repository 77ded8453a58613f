//! `cmdlog verify`: the chain, seqs, lifecycle invariants and blobs; with
//! `--expect-head`, also that the log still holds a head recorded elsewhere.

use std::io::Write;

use clap::Args;
use cmdlog_engine::LogIdentity;
use cmdlog_replay::{Violation, check_expected_head, verify};
use cmdlog_store::Log;

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
    witness: Vec<String>,
    #[command(flatten)]
    key: super::checkpoint::KeyArgs,
}

/// Checks the log against the latest checkpoint its pusher signed on the hub: a
/// log shorter than it was rolled back, one whose first records differ forked or
/// was replaced — proven by the log's own key. Records on the hub past it are
/// covered by no signature (said on stderr).
fn check_hub_checkpoint(
    log: &Log,
    identity: &LogIdentity,
    args: &VerifyArgs,
    hub_seq: Option<u64>,
    checkpoint: Option<cmdlog_hub::HubCheckpoint>,
) -> Result<Option<Violation>, CliError> {
    let Some(checkpoint) = checkpoint else {
        eprintln!(
            "cmdlog: verify: the hub holds no signed checkpoint of log {}: its records are checked against their hash chain only (a push by this version signs one)",
            identity.id
        );
        return Ok(None);
    };
    let verifiers = verifiers(identity, args)?;
    let origin = cmdlog_replay::origin(&identity.id);
    if let Err(why) = checkpoint.verify(&verifiers) {
        return Ok(Some(Violation {
            seq: None,
            message: format!(
                "against the hub: its checkpoint of this log is not signed by this log's key ({why}): forged"
            ),
        }));
    }
    let size = checkpoint.checkpoint.size;
    if let Some(hub_seq) = hub_seq.filter(|s| *s > size) {
        eprintln!(
            "cmdlog: verify: the hub holds records of log {} past its last signed checkpoint (seqs {}..={hub_seq}): no signature covers them (forged, or a push stopped before its checkpoint: the next push covers its own)",
            identity.id,
            size + 1
        );
    }
    match cmdlog_replay::check_saved(log, &checkpoint.request.note, &origin, &verifiers) {
        Ok(_) => Ok(None),
        Err(e) if !e.is_finding() => Err(super::checkpoint::checkpoint_failure(e)),
        Err(e) => Ok(Some(Violation {
            seq: Some(size),
            message: format!("against the hub's checkpoint signed with this log's key: {e}"),
        })),
    }
}

/// Checks that `witness` cosigned a checkpoint of this log (signed by its key)
/// that the log is consistent with.
fn check_cosigned(
    log: &Log,
    identity: &LogIdentity,
    args: &VerifyArgs,
    witness: &cmdlog_tlog::NoteVerifier,
    note: Option<&str>,
) -> Result<Option<Violation>, CliError> {
    let violation = |message: String| {
        Ok(Some(Violation {
            seq: None,
            message: format!("witness {}: {message}", witness.name()),
        }))
    };
    let Some(note) = note else {
        return violation("has cosigned no checkpoint of this log on the hub".into());
    };
    let verifiers = verifiers(identity, args)?;
    let cosigned = cmdlog_tlog::Note::parse(note)
        .map_err(|e| e.to_string())
        .and_then(|n| {
            n.verify(std::slice::from_ref(witness))
                .map_err(|e| e.to_string())?;
            n.verify(&verifiers).map_err(|e| e.to_string())
        });
    if let Err(why) = cosigned {
        return violation(format!("its cosigned checkpoint does not verify ({why})"));
    }
    let origin = cmdlog_replay::origin(&identity.id);
    match cmdlog_replay::check_saved(log, note, &origin, &verifiers) {
        Ok(_) => Ok(None),
        Err(e) if !e.is_finding() => Err(super::checkpoint::checkpoint_failure(e)),
        Err(e) => violation(format!("against the checkpoint it cosigned: {e}")),
    }
}

/// The keys a checkpoint of this log is checked with: each `--vkey`, else the
/// log's own key file.
fn verifiers(
    identity: &LogIdentity,
    args: &VerifyArgs,
) -> Result<Vec<cmdlog_tlog::NoteVerifier>, CliError> {
    if !args.vkey.is_empty() {
        return args
            .vkey
            .iter()
            .map(|k| cmdlog_tlog::NoteVerifier::parse(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::usage(format!("--vkey: {e}")));
    }
    match cmdlog_replay::log_verifier(&identity.id, args.key.key.as_deref())
        .map_err(super::checkpoint::key_failure)?
    {
        Some(v) => Ok(vec![v]),
        None => Err(CliError::not_found(format!(
            "no key of log {} here to check a checkpoint's signature with",
            identity.id
        ))
        .hint("pass the verifier key the checkpoint was signed with: --vkey KEY (`cmdlog key` prints it where the key is)")),
    }
}

/// Checks the log against a saved checkpoint: `Ok(Some(violation))` when it does
/// not hold what the checkpoint commits to, or the checkpoint does not verify.
fn check_checkpoint(
    log: &Log,
    identity: Option<&LogIdentity>,
    args: &VerifyArgs,
    file: &std::path::Path,
) -> Result<(Option<Violation>, Option<serde_json::Value>), CliError> {
    let Some(identity) = identity else {
        return Ok((
            Some(Violation {
                seq: None,
                message: "this log has no id, so no checkpoint was ever made of it".into(),
            }),
            None,
        ));
    };
    let saved = super::prove::read_checkpoint(file)?;
    let verifiers = verifiers(identity, args)?;
    let origin = cmdlog_replay::origin(&identity.id);
    match cmdlog_replay::check_saved(log, &saved, &origin, &verifiers) {
        Ok((checkpoint, view)) => Ok((
            None,
            Some(serde_json::json!({
                "file": file.display().to_string(),
                "size": checkpoint.size,
                "log_size": view.size(),
                "consistent": true,
            })),
        )),
        Err(e) if !e.is_finding() => Err(super::checkpoint::checkpoint_failure(e)),
        Err(e) => Ok((
            Some(Violation {
                seq: None,
                message: format!("checkpoint {}: {e}", file.display()),
            }),
            Some(serde_json::json!({
                "file": file.display().to_string(),
                "consistent": false,
                "problem": e.to_string(),
            })),
        )),
    }
}

/// What the hub holds of this log, as a head to check (the last record this
/// machine pushed when the hub still holds it; else the head of the log's chain
/// there): `None` when the log has no identity yet or the hub holds nothing of it
/// (said on stderr). Foreign records on the hub are named on stderr.
/// What the hub says of this log: the head to check, and its latest signed
/// checkpoint.
type HubView = (
    Option<(u64, String)>,
    Option<cmdlog_hub::HubCheckpoint>,
    Vec<(cmdlog_tlog::NoteVerifier, Option<String>)>,
    Option<String>,
);

fn hub_head(
    identity: Option<&LogIdentity>,
    url: &str,
    stream: &str,
    witnesses: &[cmdlog_tlog::NoteVerifier],
) -> Result<HubView, CliError> {
    let Some(identity) = identity else {
        eprintln!(
            "cmdlog: verify: this log has no id yet, so no hub holds it (`cmdlog push` gives it one)"
        );
        return Ok((None, None, vec![], None));
    };
    super::hub::refuse_url_secrets(url)?;
    let options = cmdlog_hub::HubOptions::from_env(url, stream);
    let rt = super::hub::runtime()?;
    let (held, checkpoint, cosigned) = rt
        .block_on(async {
            let hub = options.connect().await?;
            let stream = hub.existing_stream().await?;
            let held = cmdlog_hub::log_on_hub(&hub, &stream, &identity.id).await?;
            let checkpoint = cmdlog_hub::hub_checkpoint(&hub, &identity.id).await?;
            let mut cosigned = Vec::new();
            for witness in witnesses {
                let note = cmdlog_hub::cosigned_checkpoint(&hub, &identity.id, witness).await?;
                cosigned.push((witness.clone(), note));
            }
            Ok::<_, cmdlog_hub::HubError>((held, checkpoint, cosigned))
        })
        .map_err(hub_failure)?;
    match held {
        Some(h) => {
            // Messages on the log's subject that are not its own are the hub's
            // problem, not a fault of this log: said, not counted as violations.
            let signed = checkpoint.as_ref().map_or(0, |c| c.checkpoint.size);
            for f in &h.foreign {
                let verdict = if f.seq > signed && checkpoint.is_some() {
                    "covered by no signed checkpoint of this log: forged"
                } else {
                    "forged, or another machine's with this id"
                };
                eprintln!(
                    "cmdlog: verify: the hub holds a foreign record of log {} at stream message {} (claims seq {}: {}): {verdict}",
                    identity.id, f.stream_seq, f.seq, f.why
                );
            }
            let head = (h.seq > 0).then_some((h.seq, h.hash));
            Ok((head, checkpoint, cosigned, h.lost))
        }
        None => {
            eprintln!(
                "cmdlog: verify: the hub holds nothing of log {} yet",
                identity.id
            );
            Ok((None, checkpoint, cosigned, None))
        }
    }
}

/// `SEQ:HASH` with a 64-hex-character hash.
fn parse_head(text: &str) -> Result<(u64, String), CliError> {
    let usage = || {
        CliError::usage(format!(
            "--expect-head {text:?}: give SEQ:HASH as `cmdlog verify` prints them, e.g. 42:{}",
            "0".repeat(64)
        ))
    };
    let (seq, hash) = text.split_once(':').ok_or_else(usage)?;
    let seq = seq.parse::<u64>().map_err(|_| usage())?;
    if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(usage());
    }
    Ok((seq, hash.to_ascii_lowercase()))
}

pub(crate) fn exec(paths: &super::Paths, args: VerifyArgs, json: bool) -> VerbResult {
    let log = &super::open::open_existing(paths)?;
    let expected = args.expect_head.as_deref().map(parse_head).transpose()?;
    let identity = cmdlog_engine::read_identity(log).map_err(store_failure)?;
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
        let witnesses = args
            .witness
            .iter()
            .map(|k| cmdlog_tlog::NoteVerifier::parse(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::usage(format!("--witness: {e}")))?;
        let (head, checkpoint, cosigned, lost) =
            hub_head(identity.as_ref(), url, &args.stream, &witnesses)?;
        let lost = lost.map(|why| format!("against the hub: {why}"));
        report
            .violations
            .extend(lost.map(|message| Violation { seq: None, message }));
        if let Some((seq, hash)) = &head
            && let Some(message) = check_expected_head(log, *seq, hash).map_err(store_failure)?
        {
            report.violations.push(Violation {
                seq: Some(*seq),
                message: format!("against the hub: {message}"),
            });
        }
        if let Some(identity) = &identity {
            for (witness, note) in &cosigned {
                report.violations.extend(check_cosigned(
                    log,
                    identity,
                    &args,
                    witness,
                    note.as_deref(),
                )?);
            }
            report.violations.extend(check_hub_checkpoint(
                log,
                identity,
                &args,
                head.as_ref().map(|h| h.0),
                checkpoint,
            )?);
        }
    }
    let mut checkpoint_json = None;
    if let Some(file) = &args.checkpoint {
        let (violation, value) = check_checkpoint(log, identity.as_ref(), &args, file)?;
        report.violations.extend(violation);
        checkpoint_json = value;
    }
    // Hook payloads that wait in the spill folder are not in the log yet.
    let spill = cmdlog_agents::Spill::for_log(log.path()).report();
    let spilled = &spill.waiting;
    let mut out = render::Human::stdout(json);
    if json {
        let mut value = serde_json::to_value(&report).map_err(store_failure)?;
        value["log_id"] = serde_json::json!(identity.as_ref().map(|i| &i.id));
        if let Some(checkpoint) = checkpoint_json {
            value["checkpoint"] = checkpoint;
        }
        value["spilled"] = serde_json::json!(
            spilled
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        );
        value["spill_refused"] = serde_json::json!(
            spill
                .refused
                .iter()
                .map(|r| serde_json::json!({"path": r.path.display().to_string(), "why": r.why}))
                .collect::<Vec<_>>()
        );
        value["spill_set_aside"] = serde_json::json!(
            spill
                .set_aside
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        );
        print_json(&mut out, &value)?;
    } else {
        writeln!(
            out,
            "{} events, {} blobs checked",
            report.events, report.blobs
        )?;
        if let Some(identity) = &identity {
            writeln!(out, "{}", crate::render::identity(identity))?;
        }
        writeln!(
            out,
            "head seq {} hash {}",
            report.head_seq, report.head_hash
        )?;
        for run in &report.open_runs {
            writeln!(
                out,
                "open run: seq {} /{} in session {} (in flight, or its process died)",
                run.seq,
                run.name,
                run.session.as_deref().unwrap_or("-")
            )?;
        }
        for conflict in &report.conflicts {
            writeln!(out, "conflict: {conflict}")?;
        }
        if !spilled.is_empty() {
            writeln!(
                out,
                "spilled: {} hook payload(s) not yet appended, in {}; the next `cmdlog hook` call that reaches the log appends them",
                spilled.len(),
                spilled[0]
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )?;
        }
        for r in &spill.refused {
            writeln!(
                out,
                "spill: ignored {}: {}; cmdlog did not write it (remove it if you did not either)",
                r.path.display(),
                r.why
            )?;
        }
        for p in &spill.set_aside {
            writeln!(
                out,
                "spill: set aside {}: the log could not take it; it is kept for you to read",
                p.display()
            )?;
        }
        if let Some(checkpoint) = &checkpoint_json
            && checkpoint["consistent"] == true
        {
            writeln!(
                out,
                "checkpoint: the log holds the {} records the checkpoint commits to, unchanged",
                checkpoint["size"]
            )?;
        }
        if report.is_clean() {
            writeln!(out, "ok: no violations")?;
        } else {
            for v in &report.violations {
                match v.seq {
                    Some(seq) => writeln!(out, "violation at seq {seq}: {}", v.message)?,
                    None => writeln!(out, "violation: {}", v.message)?,
                }
            }
        }
    }
    Ok(if report.is_clean() { 0 } else { SETTLED_ERROR })
}
