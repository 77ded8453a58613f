//! `cmdlog export`: the log (or one session) as JSON lines.

use std::io::{self};
use std::path::PathBuf;

use clap::Args;
use cmdlog_replay::export;
use cmdlog_store::Log;

use super::open::require_session;
use super::progress::Progress;
use super::{Failure, USAGE, VerbResult, store_failure};

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// Only this session's events (for reading; an import needs a whole-log export)
    #[arg(long)]
    session: Option<String>,
    /// Write to this file instead of stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace matches of this regular expression in event data with [REDACTED]
    /// (repeatable); blobs are then left out
    #[arg(long = "redact", value_name = "PATTERN")]
    redact: Vec<String>,
}

pub(crate) fn exec(log: &Log, args: ExportArgs) -> VerbResult {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let redact = args
        .redact
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| {
                Failure::new(
                    USAGE,
                    format!("--redact {p:?} is not a regular expression: {e}"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bar = Progress::new(log.head().seq, "export");
    let summary = match &args.output {
        Some(path) => {
            let file = super::output::owner_only_file(path).map_err(|e| {
                Failure::new(USAGE, format!("cannot create {}: {e}", path.display()))
            })?;
            let mut out = io::BufWriter::new(file);
            export(log, args.session.as_deref(), &redact, &mut out, bar.tick())
        }
        None => export(
            log,
            args.session.as_deref(),
            &redact,
            &mut io::BufWriter::new(io::stdout().lock()),
            bar.tick(),
        ),
    }
    .map_err(|e| match e {
        cmdlog_replay::ExportError::Write(io) => Failure::from(io),
        other => store_failure(other),
    })?;
    bar.finish();
    eprintln!(
        "exported {} events and {} blobs; head seq {} hash {}",
        summary.events, summary.blobs, summary.head_seq, summary.head_hash
    );
    Ok(0)
}
