//! `serve --hub`: the team's logs. Every log on a hub is kept as a read-only
//! clone of its own in the user's state folder (`cmdlog_hub::mirror_all`:
//! only the records past its head are added, each checked as `clone` checks
//! it — chain, tree, signed checkpoints), brought up to the hub's copy every
//! [`HUB_MIRROR_EVERY`]; the workbench shows each, machine by machine, under
//! `/ui/hub/`. A clone that fails its checks is named with why, and not read.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use cmdlog_hub::HubOptions;
use cmdlog_replay::SessionsFold;
use cmdlog_tlog::NoteVerifier;
use tokio_util::sync::CancellationToken;

use crate::limits::HUB_MIRROR_EVERY;

/// Why a round of the mirroring stopped: the hub could not be reached or
/// listed, or the clones' folder could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MirrorError {
    #[error(transparent)]
    Hub(#[from] cmdlog_hub::HubError),
    #[error(transparent)]
    Mirror(#[from] cmdlog_hub::HubSearchError),
    #[error("its clone cannot be read: {0}")]
    Clone(cmdlog_store::OpenError),
}

/// One log of the hub, as its clone stands.
pub(crate) struct Mirror {
    /// The host that pushed its last record.
    pub(crate) host: String,
    /// Its clone, when it has one.
    pub(crate) path: Option<PathBuf>,
    /// Why its clone is not up to the hub's copy, if it is not.
    pub(crate) error: Option<String>,
    /// Its sessions folded so far.
    pub(crate) sessions: SessionsFold,
    /// What each witness asked for (`--witness`) cosigned of it, checked
    /// against its clone.
    pub(crate) witnessed: Vec<cmdlog_workbench::Witnessed>,
}

/// The team's logs, by log id. Held while a clone is brought up to date and
/// while a page reads one: a clone's file is open in one place at a time.
#[derive(Default)]
pub(crate) struct Mirrors {
    /// The hub, as shown (no credentials), once `serve --hub` named one.
    pub(crate) hub: std::sync::OnceLock<String>,
    /// The logs.
    pub(crate) logs: Arc<tokio::sync::Mutex<BTreeMap<String, Mirror>>>,
    /// Why the hub could not be read the last time, if it could not.
    pub(crate) unreachable: std::sync::Mutex<Option<String>>,
    /// What the witnesses cosigned of each log, by log id (copied out of
    /// `logs` each round, so the daemon's own log's pages read it without
    /// waiting for a round).
    pub(crate) witnessed: std::sync::Mutex<BTreeMap<String, Vec<cmdlog_workbench::Witnessed>>>,
}

impl Mirrors {
    /// Follows `hub` until `stopped`: every log on it mirrored into `dir`
    /// (a folder of the hub's under the user's state folder).
    pub(crate) fn follow(
        self: &Arc<Self>,
        hub: HubOptions,
        witnesses: Vec<NoteVerifier>,
        state: PathBuf,
        stopped: CancellationToken,
    ) {
        let _ = self.hub.set(cmdlog_hub::shown_url(&hub.url));
        let mirrors = Arc::clone(self);
        // A thread and a runtime of its own: the hub's reads are not `Send`
        // (multi-threaded: a clone appends with `block_in_place`).
        let spawned = std::thread::Builder::new()
            .name("cmdlog-hub-mirrors".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        eprintln!("cmdlog serve: no team view: {e}");
                        return;
                    }
                };
                runtime.block_on(async move {
                    loop {
                        let round = mirrors.round(&hub, &witnesses, &state).await;
                        *mirrors
                            .unreachable
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) =
                            round.err().map(|e| e.to_string());
                        tokio::select! {
                            () = tokio::time::sleep(HUB_MIRROR_EVERY) => {}
                            () = stopped.cancelled() => return,
                        }
                    }
                });
            });
        if let Err(e) = spawned {
            eprintln!("cmdlog serve: no team view: {e}");
        }
    }

    /// One round: the hub's logs brought up to date, and what the witnesses
    /// cosigned of each checked against its clone.
    async fn round(
        &self,
        hub: &HubOptions,
        witnesses: &[NoteVerifier],
        state: &std::path::Path,
    ) -> Result<(), MirrorError> {
        let hub = hub.connect().await?;
        let dir = cmdlog_hub::mirrors_dir(state, &hub);
        let mut logs = self.logs.lock().await;
        let found = cmdlog_hub::mirror_all(&hub, &dir).await?;
        for m in found {
            let mirror = logs.entry(m.log_id.clone()).or_insert_with(|| Mirror {
                host: String::new(),
                path: None,
                error: None,
                sessions: SessionsFold::default(),
                witnessed: Vec::new(),
            });
            mirror.host = m.host;
            mirror.path = m.path;
            if m.error.is_some() {
                // A clone that failed its checks is read afresh once it passes.
                mirror.sessions = SessionsFold::default();
            }
            mirror.error = m.error;
            if let (false, Some(path), None) = (witnesses.is_empty(), &mirror.path, &mirror.error) {
                mirror.witnessed = witnessed(&hub, &m.log_id, path, witnesses).await;
            }
        }
        let mut all = self.witnessed.lock().unwrap_or_else(|p| p.into_inner());
        *all = logs
            .iter()
            .map(|(id, m)| (id.clone(), m.witnessed.clone()))
            .collect();
        Ok(())
    }

    /// What the witnesses cosigned of log `log_id` (the daemon's own, when it
    /// pushes to the hub), as the last round checked it.
    pub(crate) fn witnessed_of(&self, log_id: &str) -> Vec<cmdlog_workbench::Witnessed> {
        let all = self.witnessed.lock().unwrap_or_else(|p| p.into_inner());
        all.get(log_id).cloned().unwrap_or_default()
    }
}

/// What `witnesses` cosigned of log `log_id`, checked against its clone at
/// `path`; a failure to ask the hub is each witness's outcome.
async fn witnessed(
    hub: &cmdlog_hub::Hub,
    log_id: &str,
    path: &std::path::Path,
    witnesses: &[NoteVerifier],
) -> Vec<cmdlog_workbench::Witnessed> {
    let cosigned = match cmdlog_store::Log::open(path, cmdlog_store::LogConfig::default()) {
        Ok(log) => cmdlog_hub::cosignatures(hub, log_id, &log, witnesses)
            .await
            .map_err(MirrorError::from),
        Err(e) => Err(MirrorError::Clone(e)),
    };
    match cosigned {
        Ok(all) => all
            .into_iter()
            .map(|c| cmdlog_workbench::Witnessed::new(&c.witness, c.outcome))
            .collect(),
        Err(why) => witnesses
            .iter()
            .map(|w| cmdlog_workbench::Witnessed::new(w.name(), Err::<u64, _>(&why)))
            .collect(),
    }
}
