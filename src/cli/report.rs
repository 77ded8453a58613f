//! `cmdlog report`: a self-contained HTML report of a session or the whole log.

use std::path::PathBuf;

use clap::Args;
use cmdlog_store::Log;

use super::open::require_session;
use super::{CliError, VerbResult, store_failure};

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Only this session
    #[arg(long)]
    session: Option<String>,
    /// The HTML file to write
    #[arg(short, long)]
    output: PathBuf,
}

pub(crate) fn exec(log: &Log, args: ReportArgs) -> VerbResult {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let html = cmdlog_replay::render_report(log, args.session.as_deref()).map_err(store_failure)?;
    super::output::owner_only_file(&args.output)
        .and_then(|mut f| std::io::Write::write_all(&mut f, html.as_bytes()))
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!(
        "wrote {}",
        crate::render::clean(&args.output.display().to_string())
    );
    Ok(0)
}
