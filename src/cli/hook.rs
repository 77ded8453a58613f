//! `cmdlog hook <agent>`: what an agent's hooks run. It reads one hook payload on
//! stdin (to its end, any size) and hands it to `cmdlog_agents::deliver`; it never
//! gets in the agent's way: it prints nothing (on stdout or stderr: Gemini CLI and
//! Qwen Code read stderr when stdout is empty), always exits 0, and waits at most
//! a second (`HOOK_WAIT`) for a daemon or the log.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use cmdlog_agents::{AgentKind, HookDelivery, deliver, hook_target, read_payload};

use super::{CliError, VerbResult};

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
    let started = Instant::now();
    let agent = AgentKind::parse(&args.agent).map_err(|e| CliError::usage(e.to_string()))?;
    let payload = read_payload(std::io::stdin().lock()).unwrap_or_default();
    let received_at = cmdlog_common::time::now_ms();
    let current = std::env::current_dir().ok();
    let Some(target) = hook_target(agent, workspace, log, &payload, current) else {
        return Ok(0);
    };
    let mode = cmdlog_agents::hook_mode(agent, &payload);
    let mut item = HookDelivery::new(agent.name(), args.redact, received_at, payload);
    item.release = cmdlog_agents::hook_release()
        .filter(|r| r.agent == agent.name())
        .map(|r| r.version);
    item.mode = mode.map(|m| m.as_str().to_string());
    deliver(&target, item, started);
    Ok(0)
}
