//! `cmdlog hook <agent>`: what an agent's hooks run. It reads one hook payload on
//! stdin and appends what it means to the log as one atomic unit; it never gets in
//! the agent's way: it prints nothing (on stdout or stderr: Gemini CLI and Qwen
//! Code read stderr when stdout is empty), always exits 0, and waits at most a
//! second for the log. What it cannot append — the log held past that wait, a
//! full disk — it keeps in the spill folder, and the next call appends first.
//! When `cmdlog serve` holds the log, the payload goes through the daemon.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use cmdlog_engine::{DiscoveryConfig, discover};
use cmdlog_store::{Log, LogConfig};

use super::{Failure, Paths, USAGE, VerbResult, now_ms};
use crate::agents::spill::{Spill, Spilled};
use crate::agents::{AgentKind, append_to, batch_for};

#[derive(Args, Debug)]
pub(crate) struct HookArgs {
    /// The agent whose hook this is: claude-code, codex, gemini or qwen
    agent: String,
    /// Replace common secrets (API keys, tokens, passwords in URLs) before anything
    /// is written; the log records that it did
    #[arg(long)]
    redact: bool,
}

/// Largest payload read, in bytes.
const PAYLOAD_BYTES_MAX: u64 = 16 * 1024 * 1024;
/// How long the hook waits for another process to let go of the log.
const LOCK_WAIT: Duration = Duration::from_millis(1000);
/// How long it waits for a daemon.
const DAEMON_TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) fn exec(workspace: Option<PathBuf>, log: Option<PathBuf>, args: HookArgs) -> VerbResult {
    let agent = AgentKind::parse(&args.agent).map_err(|e| Failure::new(USAGE, e))?;
    let mut text = String::new();
    let _ = std::io::stdin()
        .take(PAYLOAD_BYTES_MAX)
        .read_to_string(&mut text);
    let received_at = now_ms();
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
    deliver(&paths, item);
    Ok(0)
}

/// Appends `item` (after anything spilled), through the daemon if one holds the
/// log; keeps it in the spill folder when neither can take it.
pub(crate) fn deliver(paths: &Paths, item: Spilled) {
    let spill = Spill::for_log(&paths.log);
    if through_daemon(paths, &item) {
        return;
    }
    let config = LogConfig {
        lock_wait: LOCK_WAIT,
        ..LogConfig::default()
    };
    let Ok(log) = Log::open(&paths.log, config) else {
        let _ = spill.keep(&item);
        return;
    };
    // A log this call creates gets its id first (a failure here is not the hook's).
    let _ = cmdlog_engine::ensure_identity(&log);
    let discovery = || {
        let home = std::env::var_os("HOME").map(PathBuf::from)?;
        discover(&DiscoveryConfig::from_env(&home, &paths.workspace)).ok()
    };
    drain(&log, &spill, &discovery);
    let kind = AgentKind::parse(&item.agent).unwrap_or(AgentKind::ClaudeCode);
    let batch = batch_for(kind, &item.payload, item.redact, discovery);
    if append_to(&log, batch, item.received_at).is_err() {
        let _ = spill.keep(&item);
    }
    log.close();
}

/// Appends what waits in the spill folder, oldest first; stops at the first
/// failure (the rest keeps waiting).
pub(crate) fn drain(
    log: &Log,
    spill: &Spill,
    discovery: &dyn Fn() -> Option<cmdlog_engine::Discovery>,
) -> usize {
    let mut appended = 0;
    for path in spill.pending() {
        let Ok(read) = Spill::read(&path) else {
            continue;
        };
        let batch = match &read {
            Ok(item) => {
                let kind = AgentKind::parse(&item.agent).unwrap_or(AgentKind::ClaudeCode);
                batch_for(kind, &item.payload, item.redact, discovery)
            }
            // Not a spilled payload (damaged): kept in the log as text.
            Err(raw) => batch_for(AgentKind::ClaudeCode, raw, false, || None),
        };
        let at = read
            .as_ref()
            .map(|i| i.received_at)
            .unwrap_or_else(|_| now_ms());
        if append_to(log, batch, at).is_err() {
            break;
        }
        let _ = std::fs::remove_file(&path);
        appended += 1;
    }
    appended
}

/// Sends the payload to the daemon that holds the log, if there is one and it
/// takes it.
fn through_daemon(paths: &Paths, item: &Spilled) -> bool {
    let info = crate::daemon::daemon_file(&paths.log);
    let Ok(text) = std::fs::read_to_string(&info) else {
        return false;
    };
    let Some(url) = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["url"].as_str().map(str::to_string))
    else {
        return false;
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DAEMON_TIMEOUT))
        .build()
        .into();
    let mut request = agent
        .post(format!(
            "{url}/hook/{}?redact={}&receivedAt={}",
            item.agent, item.redact, item.received_at
        ))
        .header("content-type", "application/json");
    if let Some(token) = std::env::var("CMDLOG_TOKEN").ok().filter(|t| !t.is_empty()) {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    matches!(request.send(item.payload.as_str()), Ok(res) if res.status().is_success())
}
