//! `cmdlog ui`: where the auditor's workbench of this workspace's daemon is
//! (`cmdlog serve` serves it under `/ui/`; docs/http.md).

use std::io::Write;

use clap::Args;

use super::{CliError, Paths, VerbResult};

#[derive(Args, Debug)]
pub(crate) struct UiArgs {}

pub(crate) fn exec(paths: &Paths, _args: UiArgs, json: bool) -> VerbResult {
    let Some(daemon) = cmdlog_agents::DaemonFile::read(&paths.log) else {
        return Err(CliError::not_found(format!(
            "no cmdlog serve is running on {}",
            paths.log.display()
        ))
        .hint("start one with `cmdlog serve` (it prints the workbench's address as it starts)"));
    };
    let url = format!("{}/ui/", daemon.url.trim_end_matches('/'));
    let mut out = std::io::stdout().lock();
    if json {
        #[derive(serde::Serialize)]
        struct Shown<'a> {
            url: &'a str,
            pid: u32,
        }
        let shown = Shown {
            url: &url,
            pid: daemon.pid,
        };
        super::output::print_json(&mut out, &shown)?;
    } else {
        writeln!(out, "{}", crate::render::clean(&url))?;
    }
    Ok(0)
}
