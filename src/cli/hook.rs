//! `cmdlog hook <agent>`: what an agent's hooks run. It reads one hook payload on
//! stdin and hands it to `cmdlog_agents::deliver`; it never gets in the agent's
//! way: it prints nothing (on stdout or stderr: Gemini CLI and Qwen Code read
//! stderr when stdout is empty), always exits 0, and waits at most a second for
//! the log.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;
use cmdlog_agents::{AgentKind, PAYLOAD_BYTES_MAX, Spilled, deliver};

use super::{CliError, Paths, VerbResult};

#[derive(Args, Debug)]
pub(crate) struct HookArgs {
    /// The agent whose hook this is: claude-code, codex, gemini or qwen
    agent: String,
    /// Replace common secrets (API keys, tokens, passwords in URLs) before anything
    /// is written; the log records that it did
    #[arg(long)]
    redact: bool,
}

pub(crate) fn exec(workspace: Option<PathBuf>, log: Option<PathBuf>, args: HookArgs) -> VerbResult {
    let agent = AgentKind::parse(&args.agent).map_err(|e| CliError::usage(e.to_string()))?;
    let mut text = String::new();
    let _ = std::io::stdin()
        .take(PAYLOAD_BYTES_MAX as u64)
        .read_to_string(&mut text);
    let received_at = cmdlog_common::time::now_ms();
    // The project the agent works in: its own variable, else the payload's cwd.
    let payload_cwd = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["cwd"].as_str().map(PathBuf::from));
    let workspace = workspace
        .or_else(|| {
            agent
                .project_dir_env()
                .and_then(std::env::var_os)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or(payload_cwd);
    let Ok(paths) = Paths::new(workspace, log) else {
        return Ok(0);
    };
    let item = Spilled {
        agent: agent.name().into(),
        redact: args.redact,
        received_at,
        payload: text,
    };
    deliver(&paths.log, &paths.workspace, item);
    Ok(0)
}
