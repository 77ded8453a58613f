//! One hook payload from the agent to the log: made ready to append (redacted,
//! mapped, its expansion checked), appended after whatever waits in the spill
//! folder, through the daemon that holds the log when there is one, and kept in
//! the spill folder when nothing can take it.

use std::path::{Path, PathBuf};

use cmdlog_engine::{Discovery, DiscoveryConfig, EventData, Observed, discover};
use cmdlog_store::{AppendError, Log, LogConfig, ReadError, Receipt};
use serde_json::Value;

use crate::append::Batch;
use crate::daemon::DaemonFile;
use crate::kind::AgentKind;
use crate::limits::{DAEMON_TIMEOUT, LOCK_WAIT};
use crate::plan::{Planned, PlannedData};
use crate::spill::{Spill, Spilled};
use crate::{agreement, hook};

/// Why a batch was not appended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendBatchError {
    /// The log could not tell which sessions it has seen.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The append failed.
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// One payload of `agent`, as the text the agent wrote, made ready to append:
/// secrets redacted when asked (and the redaction noted), mapped, and the agent's
/// expansion of a slash command checked against cmdlog's (`discovery` is asked
/// for only then). A payload that is not JSON is kept as text.
pub fn batch_for(
    agent: AgentKind,
    text_in: &str,
    redact: bool,
    discovery: impl FnOnce() -> Option<Discovery>,
) -> Batch {
    let mut batch = Batch::new(agent.name());
    let source = format!("{} hook", agent.name());
    let mut found = cmdlog_replay::Redaction::default();
    let Ok(mut payload) = serde_json::from_str::<Value>(text_in) else {
        let mut raw = Value::String(text_in.to_string());
        if redact {
            cmdlog_replay::redact_value(&mut raw, &mut found);
        }
        batch.extend(vec![Planned {
            session: None,
            observed: Some(Observed {
                source: source.clone(),
                key: None,
                at: None,
            }),
            data: PlannedData::Ready(EventData::AgentEvent(cmdlog_engine::AgentEvent {
                agent: agent.name().into(),
                event: "unreadable payload".into(),
                data: raw,
            })),
        }]);
        batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
        return batch;
    };
    if redact {
        cmdlog_replay::redact_value(&mut payload, &mut found);
    }
    let mut plan = hook::plan(agent, &payload);
    if let Some(expansion) = &plan.expansion
        && expansion.prompt.is_some()
        && let Some(discovery) = discovery()
        && let Some(check) = agreement::check(agent, &discovery, expansion)
        && let Some(Planned {
            data: PlannedData::DoneOf { agent_check, .. },
            ..
        }) = plan.events.get_mut(expansion.done_index)
    {
        *agent_check = Some(check);
    }
    batch.extend(plan.events);
    batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
    batch
}

/// Appends `batch` to `log` (blocking), starting the sessions it names that the
/// log has not seen.
pub fn append_to(log: &Log, mut batch: Batch, at: u64) -> Result<Receipt, AppendBatchError> {
    batch.create_sessions(|s| log.has_stream(s).map(|seen| !seen))?;
    Ok(batch.append(log, at)?)
}

/// The commands discovered for `workspace` (with `$HOME`'s), asked for only when
/// an agent's expansion is to be checked.
pub fn discovery_for(workspace: &Path) -> Option<Discovery> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    discover(&DiscoveryConfig::from_env(&home, workspace)).ok()
}

/// Appends `item` to the log at `log_path` (after anything spilled), through the
/// daemon if one holds the log; keeps it in the spill folder when neither can
/// take it. Never fails: what it cannot append waits for the next call.
pub fn deliver(log_path: &Path, workspace: &Path, item: Spilled) {
    let spill = Spill::for_log(log_path);
    if through_daemon(log_path, &item) {
        return;
    }
    let config = LogConfig {
        lock_wait: LOCK_WAIT,
        ..LogConfig::default()
    };
    let Ok(log) = Log::open(log_path, config) else {
        let _ = spill.keep(&item);
        return;
    };
    // A log this call creates gets its id first (a failure here is not the hook's).
    let _ = cmdlog_engine::ensure_identity(&log);
    let discovery = || discovery_for(workspace);
    drain(&log, &spill, &discovery);
    let kind = AgentKind::parse(&item.agent).unwrap_or(AgentKind::ClaudeCode);
    let batch = batch_for(kind, &item.payload, item.redact, discovery);
    if append_to(&log, batch, item.received_at).is_err() {
        let _ = spill.keep(&item);
    }
    log.close();
}

/// Appends what waits in the spill folder, oldest first; stops at the first
/// failure (the rest keeps waiting). Returns how many were appended.
pub fn drain(log: &Log, spill: &Spill, discovery: &dyn Fn() -> Option<Discovery>) -> usize {
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
            .unwrap_or_else(|_| cmdlog_common::time::now_ms());
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
fn through_daemon(log_path: &Path, item: &Spilled) -> bool {
    let Some(daemon) = DaemonFile::read(log_path) else {
        return false;
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DAEMON_TIMEOUT))
        .build()
        .into();
    let mut request = agent
        .post(format!(
            "{}/hook/{}?redact={}&receivedAt={}",
            daemon.url, item.agent, item.redact, item.received_at
        ))
        .header("content-type", "application/json");
    if let Some(token) = std::env::var("CMDLOG_TOKEN").ok().filter(|t| !t.is_empty()) {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    matches!(request.send(item.payload.as_str()), Ok(res) if res.status().is_success())
}
