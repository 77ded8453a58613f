//! `cmdlog export`: the log (or one session) as JSON lines.

use std::io::{self};
use std::path::PathBuf;

use clap::Args;
use cmdlog_replay::export;
use cmdlog_store::Log;

use super::open::require_session;
use super::progress::Progress;
use super::{CliError, VerbResult, store_failure};

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// Only this session's events (for reading; an import needs a whole-log export)
    #[arg(long)]
    session: Option<String>,
    /// Write to this file instead of stdout (`-`: stdout)
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace matches of this regular expression in event data with [REDACTED]
    /// (repeatable); without a pattern, common secrets (API keys, tokens,
    /// passwords in URLs, private keys); blobs are then left out
    #[arg(long = "redact", value_name = "PATTERN", num_args = 0..=1, default_missing_value = SECRETS)]
    redact: Vec<String>,
}

/// What a bare `--redact` stands for: the common secret patterns.
const SECRETS: &str = "@secrets";

pub(crate) fn exec(log: &Log, args: ExportArgs) -> VerbResult {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let mut redact = Vec::new();
    for p in &args.redact {
        if p == SECRETS {
            redact.extend(cmdlog_common::secrets::secret_patterns());
            continue;
        }
        redact.push(regex::Regex::new(p).map_err(|e| {
            CliError::usage(format!("--redact {p:?} is not a regular expression: {e}"))
        })?);
    }
    let bar = Progress::new(log.head().seq, "export");
    let out = super::output::open_output(args.output.as_deref().unwrap_or("-".as_ref()))?;
    let mut out = io::BufWriter::new(out);
    let summary = export(log, args.session.as_deref(), &redact, &mut out, bar.tick()).map_err(
        |e| match e {
            cmdlog_replay::ExportError::Write(io) => CliError::from(io),
            other => store_failure(other),
        },
    )?;
    bar.finish();
    eprintln!(
        "exported {} events and {} blobs; head seq {} hash {}",
        summary.events, summary.blobs, summary.head_seq, summary.head_hash
    );
    Ok(0)
}
