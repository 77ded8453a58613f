//! `cmdlog report`: a self-contained HTML report of a session or the whole log.

use std::io::Write;
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
    /// The HTML file to write (`-`: standard output)
    #[arg(short, long)]
    output: PathBuf,
}

pub(crate) fn exec(log: &Log, args: ReportArgs) -> VerbResult {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let html = cmdlog_replay::render_report(log, args.session.as_deref()).map_err(store_failure)?;
    let mut out = super::output::open_output(&args.output)?;
    out.write_all(html.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", args.output.display())))?;
    if args.output.as_os_str() != "-" {
        let wrote = args.output.display().to_string();
        eprintln!("wrote {}", crate::render::clean(&wrote));
    }
    Ok(0)
}
