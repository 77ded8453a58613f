//! `cmdlog hub search`: one search over every log of a hub. Each log is kept
//! as a clone of its own in a folder of the user's (`<mirrors>/<log id>/`,
//! brought up to the hub's copy before each search: only the records past its
//! head are added, checked as `clone` checks them), with its full-text index
//! beside it; each index is searched and the hits merged, best first.

use std::path::{Path, PathBuf};

use cmdlog_index::{Hit, IndexError, QueryError, Refresh, Span};
use cmdlog_store::{Log, LogConfig};

use crate::clone::update_clone;
use crate::connect::Hub;
use crate::error::HubError;
use crate::read::list;

/// Why a search across a hub failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum HubSearchError {
    /// The hub could not be read.
    #[error(transparent)]
    Hub(#[from] HubError),
    /// The query was refused.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The folder the clones are kept in could not be made.
    #[error("the folder of the hub's clones {dir}: {source}")]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One hit, and the log it is in.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HubHit {
    /// The log's id.
    pub log_id: String,
    /// The host that pushed the log's last record.
    pub host: String,
    /// The hit, as in the log.
    #[serde(flatten)]
    pub hit: Hit,
}

/// What a search across a hub found.
#[derive(Debug, Default)]
pub struct HubSearch {
    /// The best hits of all the logs, best first.
    pub hits: Vec<HubHit>,
    /// How many events match in all.
    pub total: u64,
    /// The logs searched.
    pub logs: usize,
    /// Logs not searched, and why (a copy that is not the log's, an id that
    /// cannot name a folder, an index that could not be made).
    pub skipped: Vec<(String, String)>,
}

/// Where the clones of `hub`'s logs are kept under `state` (the user's state
/// folder): a folder per hub and stream.
pub fn mirrors_dir(state: &Path, hub: &Hub) -> PathBuf {
    let key = blake3::hash(format!("{}\n{}", hub.shown, hub.name).as_bytes()).to_hex();
    state.join("hub").join(&key.as_str()[..16])
}

/// Searches every log on `hub` for `query` in `span`: at most `limit` hits,
/// best first (scores are each log's own: a log with few events weighs its
/// rare words more). Runs on a multi-threaded runtime.
pub async fn hub_search(
    hub: &Hub,
    mirrors: &Path,
    query: &str,
    limit: usize,
    span: Span,
) -> Result<HubSearch, HubSearchError> {
    cmdlog_index::check_query(query)?;
    let mut found = HubSearch::default();
    for mirror in mirror_all(hub, mirrors).await? {
        let (id, host) = (mirror.log_id, mirror.host);
        let path = match (mirror.path, mirror.error) {
            (Some(path), None) => path,
            (_, error) => {
                found.skipped.push((id, error.unwrap_or_default()));
                continue;
            }
        };
        let searched = tokio::task::block_in_place(|| search_one(&path, query, limit, span));
        match searched {
            Ok((hits, total)) => {
                found.logs += 1;
                found.total += total as u64;
                found.hits.extend(hits.into_iter().map(|hit| HubHit {
                    log_id: id.clone(),
                    host: host.clone(),
                    hit,
                }));
            }
            Err(e) => found.skipped.push((id, e.to_string())),
        }
    }
    found
        .hits
        .sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
    found.hits.truncate(limit.clamp(1, cmdlog_index::MAX_HITS));
    Ok(found)
}

/// One log of a hub, kept as a clone of its own.
#[derive(Debug, Clone)]
pub struct Mirrored {
    /// The log's id.
    pub log_id: String,
    /// The host that pushed its last record.
    pub host: String,
    /// Its clone (`<mirrors>/<log id>/log.redb`), brought up to the hub's
    /// copy; `None` when the id cannot name a folder.
    pub path: Option<PathBuf>,
    /// Why its clone is not up to the hub's copy (a copy that is not the
    /// log's, an id that is not one of cmdlog's): it was not read.
    pub error: Option<String>,
}

/// Brings the clone of every log on `hub` under `mirrors` up to the hub's
/// copy (only the records past its head are added, checked as `clone`
/// checks them): read-only mirrors of the hub, for `hub search` and for
/// `serve --hub`. Runs on a multi-threaded runtime.
pub async fn mirror_all(hub: &Hub, mirrors: &Path) -> Result<Vec<Mirrored>, HubSearchError> {
    let folder = |dir: &Path| {
        cmdlog_common::private_fs::ensure_private_dir(dir).map_err(|source| {
            HubSearchError::Folder {
                dir: dir.to_path_buf(),
                source,
            }
        })
    };
    folder(mirrors)?;
    let stream = hub.existing_stream().await?;
    let mut all = Vec::new();
    for entry in list(hub, &stream).await? {
        // The id names a folder: only what a log id is (hex).
        let id = entry.id.clone();
        if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            all.push(Mirrored {
                log_id: id,
                host: entry.host.clone(),
                path: None,
                error: Some("not a log id of cmdlog's".to_string()),
            });
            continue;
        }
        let dir = mirrors.join(&id);
        folder(&dir)?;
        let path = dir.join("log.redb");
        let error = update_clone(hub, &id, &path, &[])
            .await
            .err()
            .map(|e| e.to_string());
        all.push(Mirrored {
            log_id: id,
            host: entry.host.clone(),
            path: Some(path),
            error,
        });
    }
    Ok(all)
}

/// Why one log's clone was not searched.
#[derive(Debug, thiserror::Error)]
enum NotSearched {
    #[error(transparent)]
    Open(#[from] cmdlog_store::OpenError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// One clone's index brought up to it, and searched.
fn search_one(
    path: &Path,
    query: &str,
    limit: usize,
    span: Span,
) -> Result<(Vec<Hit>, usize), NotSearched> {
    let log = Log::open(path, LogConfig::default())?;
    let index = cmdlog_index::beside(path, &log, Refresh::Sync)?.index;
    Ok(index.search_in(&log, query, limit, span)?)
}
