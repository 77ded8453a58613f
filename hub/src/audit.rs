//! One timeline of runs across every log on a hub: each log folded by the same
//! fold `cmdlog audit` uses (a log's seqs are its own), then merged by time.

use std::collections::BTreeMap;

use cmdlog_engine::Event;
use cmdlog_replay::{AuditFold, AuditRow};

use crate::connect::Hub;
use crate::error::HubError;
use crate::read::each;

/// Which runs an audit keeps.
#[derive(Debug, Clone, Default)]
pub struct HubAuditFilter {
    /// Only runs at or after this time (unix ms).
    pub since: Option<u64>,
    /// Only runs recorded by this agent.
    pub agent: Option<String>,
    /// Only this command (its name, without the slash).
    pub command: Option<String>,
}

/// A run with the log it came from.
#[derive(Debug, Clone)]
pub struct HubRow {
    /// The log's id.
    pub log_id: String,
    /// The host that pushed it.
    pub host: String,
    /// The run, as `cmdlog audit` shows it.
    pub row: AuditRow,
}

/// Every run on the hub that `filter` keeps, by time, then log, then seq.
pub async fn hub_audit(hub: &Hub, filter: &HubAuditFilter) -> Result<Vec<HubRow>, HubError> {
    let stream = hub.existing_stream().await?;
    let mut folds: BTreeMap<String, (String, AuditFold)> = BTreeMap::new();
    each(hub, &stream, &hub.all_logs(), |record| {
        if let Ok(event) = Event::decode(record.seq, &record.bytes) {
            let (_, fold) = folds
                .entry(record.log_id)
                .or_insert_with(|| (record.host, AuditFold::default()));
            fold.add(&event, |e, run| {
                !(filter.since.is_some_and(|s| e.at < s)
                    || filter.command.as_deref().is_some_and(|c| c != run.name)
                    || filter
                        .agent
                        .as_deref()
                        .is_some_and(|a| e.agent.as_deref() != Some(a)))
            });
        }
        Ok(true)
    })
    .await?;
    let mut rows: Vec<HubRow> = folds
        .into_iter()
        .flat_map(|(log_id, (host, fold))| {
            fold.rows().into_iter().map(move |row| HubRow {
                log_id: log_id.clone(),
                host: host.clone(),
                row,
            })
        })
        .collect();
    rows.sort_by(|a, b| (a.row.at, &a.log_id, a.row.seq).cmp(&(b.row.at, &b.log_id, b.row.seq)));
    Ok(rows)
}
