//! What `cmdlog hook` does with a payload: it finds the log to record into (never
//! making folders a payload names), then delivers — through the daemon that holds
//! the log if that daemon proves it does, else into the log itself after whatever
//! waits in the spill folder, else into the spill folder — all within
//! [`HOOK_WAIT`]. Every payload carries a delivery id, so a payload that reached
//! the log by one path is never appended again by another.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cmdlog_engine::discovery::{Discovery, DiscoveryConfig, discover};
use cmdlog_store::{Log, LogConfig};
use serde_json::Value;

use crate::daemon::DaemonFile;
use crate::delivery::{HookDelivery, RecentDeliveries, record_delivery};
use crate::facts::FactCache;
use crate::kind::AgentKind;
use crate::limits::{DAEMON_CONNECT_WAIT, HOOK_WAIT};
use crate::record::{append_to, batch_for};
use crate::spill::{Spill, SpillEntry};

/// The commands discovered for `workspace` (with `$HOME`'s), asked for only when
/// an agent's expansion is to be checked.
pub fn discovery_for(workspace: &Path) -> Option<Discovery> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    discover(&DiscoveryConfig::from_env(&home, workspace)).ok()
}

/// Where a hook records: the log, and the workspace whose commands the agreement
/// check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookTarget {
    /// The log file.
    pub log: PathBuf,
    /// The workspace.
    pub workspace: PathBuf,
}

/// The folders project discovery never climbs into: the user's home and each
/// absolute path in `CMDLOG_CEILING_DIRECTORIES` (colon-separated, as git's
/// `GIT_CEILING_DIRECTORIES`).
fn ceilings() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(list) = std::env::var_os("CMDLOG_CEILING_DIRECTORIES") {
        out.extend(std::env::split_paths(&list).filter(|p| p.is_absolute()));
    }
    out
}

/// The nearest of `dir` and its ancestors that holds a `.cmdlog` folder or is a
/// repository root (`.git`). The walk never climbs into a ceiling (see
/// [`ceilings`]) or the filesystem's root, nor across a filesystem boundary: a
/// `/.cmdlog` or `/tmp/.cmdlog` must not collect the sessions of every folder
/// below it.
fn project_root(dir: &Path, ceilings: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let device = std::fs::metadata(dir).ok()?.dev();
    for (i, d) in dir.ancestors().enumerate() {
        let top = d.parent().is_none();
        if top
            || (i > 0
                && (ceilings.iter().any(|c| c == d) || std::fs::metadata(d).ok()?.dev() != device))
        {
            return None;
        }
        // A `.cmdlog` that is a link, another user's or open to others (one
        // planted in /tmp) marks no project: the walk goes on past it.
        let dot = d.join(".cmdlog");
        let ours = dot.is_dir() && cmdlog_common::private_fs::foreign_folder(&dot).is_none();
        if ours || d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
    }
    None
}

/// The log a hook records into when it can name no project of its own: in the
/// user's private state folder.
fn private_hooks_log() -> Option<HookTarget> {
    let dir = cmdlog_common::private_fs::state_dir().ok()?.join("hooks");
    let workspace = cmdlog_common::private_fs::ensure_private_dir(&dir).ok()?;
    Some(HookTarget {
        log: workspace.join(".cmdlog").join("log.redb"),
        workspace,
    })
}

/// Where a hook of `agent` records. In order: `--workspace` (and `--log`), the
/// agent's project variable when it names an existing folder, the nearest
/// project root (an existing `.cmdlog` or a repository) of the payload's `cwd`,
/// then of the folder the agent ran the hook in, then that folder itself unless
/// it is the filesystem's root or not this user's. A payload's `cwd` that does not
/// exist is never created: folders are made only inside an existing workspace
/// (its `.cmdlog`). With none of these, or where the log's folder is a link, not
/// this user's or writable by others (never written through), the user's private
/// state folder's `hooks` log.
pub fn hook_target(
    agent: AgentKind,
    workspace: Option<PathBuf>,
    log: Option<PathBuf>,
    payload: &[u8],
    current: Option<PathBuf>,
) -> Option<HookTarget> {
    hook_target_below(agent, workspace, log, payload, current, &ceilings())
}

/// [`hook_target`], with the folders the project search never climbs into.
fn hook_target_below(
    agent: AgentKind,
    workspace: Option<PathBuf>,
    log: Option<PathBuf>,
    payload: &[u8],
    current: Option<PathBuf>,
    ceilings: &[PathBuf],
) -> Option<HookTarget> {
    use std::os::unix::fs::MetadataExt;
    let existing = |p: PathBuf| p.is_dir().then_some(p);
    let payload_cwd = serde_json::from_slice::<Value>(payload)
        .ok()
        .and_then(|v| v["cwd"].as_str().map(PathBuf::from))
        .and_then(existing);
    let own_folder = |p: &PathBuf| {
        p.parent().is_some()
            && std::fs::metadata(p)
                .is_ok_and(|m| m.uid() == cmdlog_common::private_fs::current_uid())
    };
    let Some(workspace) = workspace
        .or_else(|| {
            agent
                .project_dir_env()
                .and_then(std::env::var_os)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .and_then(existing)
        })
        .or_else(|| {
            payload_cwd
                .as_deref()
                .and_then(|d| project_root(d, ceilings))
        })
        .or_else(|| current.as_deref().and_then(|d| project_root(d, ceilings)))
        .or(current.filter(own_folder))
    else {
        return private_hooks_log();
    };
    let log = log.unwrap_or_else(|| workspace.join(".cmdlog").join("log.redb"));
    let folder = log.parent().unwrap_or(Path::new("."));
    if cmdlog_common::private_fs::foreign_folder(folder).is_some() {
        return private_hooks_log();
    }
    Some(HookTarget { log, workspace })
}

/// Appends `item` to the log of `target` (after anything spilled), through the
/// daemon if one holds the log and proves it; keeps it in the spill folder when
/// neither can take it within [`HOOK_WAIT`] of `started`. Never fails: what it
/// cannot append waits for the next call.
pub fn deliver(target: &HookTarget, item: HookDelivery, started: Instant) {
    let deadline = started + HOOK_WAIT;
    let spill = Spill::for_log(&target.log);
    if through_daemon(&target.log, &item, deadline) {
        return;
    }
    let config = LogConfig {
        lock_wait: deadline.saturating_duration_since(Instant::now()),
        ..LogConfig::default()
    };
    let Ok(log) = Log::open_short_lived(&target.log, config) else {
        let _ = spill.keep(&item);
        return;
    };
    // A log this call creates gets its id first (a failure here is not the hook's).
    let _ = cmdlog_engine::identity::ensure_identity(&log);
    let workspace = target.workspace.clone();
    let discovery = || discovery_for(&workspace);
    let mut recent = None;
    // Other hooks may be appending at the same time (short-lived opens): one
    // drains at a time, from a view that has what the others appended, and the
    // others wait for it so that what was spilled comes first.
    match Spill::lock_drain(&target.log, deadline) {
        Ok(None) => {}
        held => {
            if log.catch_up().is_ok() {
                drain(&log, &spill, &discovery, &mut recent);
            }
            drop(held);
        }
    }
    let mut facts = FactCache::recent(crate::limits::HOOK_FACTS_LOOK_BACK);
    if record_delivery(&log, &item, discovery, None, &mut facts).is_err() {
        let _ = spill.keep(&item);
    }
    log.close();
}

/// Appends what waits in the spill folder, oldest first, skipping payloads the
/// log already holds (`recent`, read from the log's end on first need); stops at
/// the first failure that may pass (the rest keeps waiting) and sets aside an
/// entry the log can never take. Returns how many were appended.
pub fn drain(
    log: &Log,
    spill: &Spill,
    discovery: &dyn Fn() -> Option<Discovery>,
    recent: &mut Option<RecentDeliveries>,
) -> usize {
    let mut appended = 0;
    for path in spill.pending() {
        let Ok(read) = Spill::read(&path) else {
            // Refused (not ours, a link, too large…): left where it is, and named
            // by `cmdlog verify`.
            continue;
        };
        let recent = recent.get_or_insert_with(|| RecentDeliveries::from_log_tail(log));
        let recorded = match &read {
            SpillEntry::Payload(item) => {
                let mut facts = FactCache::recent(crate::limits::HOOK_FACTS_LOOK_BACK);
                record_delivery(log, item, discovery, Some(recent), &mut facts)
            }
            // Ours but not a spilled payload (damaged): kept in the log as text.
            SpillEntry::Damaged(raw) => {
                let batch = batch_for(
                    AgentKind::ClaudeCode,
                    raw.as_bytes(),
                    false,
                    None,
                    None,
                    None,
                    || None,
                );
                append_to(log, batch, cmdlog_common::time::now_ms()).map(Some)
            }
        };
        match recorded {
            Ok(receipt) => {
                let _ = std::fs::remove_file(&path);
                appended += usize::from(receipt.is_some());
            }
            Err(e) if e.retryable() => break,
            Err(_) => {
                let _ = Spill::set_aside(&path);
            }
        }
    }
    appended
}

/// Sends the payload to the daemon that holds the log, if `daemon.json` is one
/// this user's daemon wrote and the daemon there proves it holds the key; true
/// when the daemon recorded it. Waits no later than `deadline`.
fn through_daemon(log_path: &Path, item: &HookDelivery, deadline: Instant) -> bool {
    let Some(daemon) = DaemonFile::read(log_path) else {
        return false;
    };
    let left = || deadline.saturating_duration_since(Instant::now());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(DAEMON_CONNECT_WAIT.min(left())))
        .timeout_global(Some(left()))
        .build()
        .into();
    // The proof: a fresh nonce, answered with a keyed hash only the daemon that
    // wrote daemon.json can make.
    let nonce = cmdlog_common::ids::random_128();
    let proven = agent
        .get(format!("{}/hook-proof?nonce={nonce}", daemon.url))
        .call()
        .ok()
        .filter(|r| r.status().is_success())
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|v| {
            v["logId"] == daemon.log_id.as_str()
                && daemon
                    .proof(&nonce)
                    .is_some_and(|p| v["proof"].as_str() == Some(p.as_str()))
        });
    if !proven || left().is_zero() {
        return false;
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(left()))
        .build()
        .into();
    let request = agent
        .post(format!(
            "{}/hook/{}?{}",
            daemon.url,
            item.agent,
            item.query()
        ))
        .header("content-type", "application/octet-stream")
        .header("x-cmdlog-hook-key", &daemon.key);
    matches!(request.send(&item.bytes()[..]), Ok(res) if res.status().is_success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_cwd_that_does_not_exist_makes_no_folder() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let payload = |cwd: &Path| format!(r#"{{"cwd": {:?}}}"#, cwd.to_str().unwrap());
        // A cwd inside a repository records at the repository's root.
        // No folder above the test's own may change its result (a /tmp/.cmdlog).
        let ceilings = [dir.path().parent().unwrap().to_path_buf()];
        let t = hook_target_below(
            AgentKind::Codex,
            None,
            None,
            payload(&repo.join("src/deep")).as_bytes(),
            None,
            &ceilings,
        )
        .unwrap();
        assert_eq!(t.log, repo.join(".cmdlog/log.redb"));
        // A cwd that does not exist is ignored: the folder the hook ran in counts.
        let ghost = dir.path().join("nowhere/at/all");
        let t = hook_target_below(
            AgentKind::Codex,
            None,
            None,
            payload(&ghost).as_bytes(),
            Some(dir.path().to_path_buf()),
            &ceilings,
        )
        .unwrap();
        assert_eq!(t.workspace, dir.path());
        assert!(!dir.path().join("nowhere").exists());
    }
}
