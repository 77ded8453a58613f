//! One timeline of runs across every log on a hub: each log folded by the same
//! fold `cmdlog audit` uses (a log's seqs are its own), then merged by time.

use std::collections::BTreeMap;

use cmdlog_engine::Event;
use cmdlog_replay::{AuditFold, AuditRow};

use crate::chain::Foreign;
use crate::connect::Hub;
use crate::error::HubError;
use crate::read::{each, survey};

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

/// One timeline across the hub's logs, and what is not theirs.
#[derive(Debug, Clone, Default)]
pub struct HubAudit {
    /// The runs, by time, then log, then seq.
    pub rows: Vec<HubRow>,
    /// Messages left out: on a log's subject but not its chain (forged, or
    /// another machine's with its id), with the log.
    pub foreign: Vec<(String, Foreign)>,
}

/// A log's fold as it reads: the chain checked as it goes; a message that does
/// not continue it sends the log to a second, surveyed reading.
struct Folding {
    host: String,
    fold: AuditFold,
    next: u64,
    prev: [u8; 32],
    broken: bool,
}

impl Folding {
    fn new(host: String) -> Self {
        Folding {
            host,
            fold: AuditFold::default(),
            next: 1,
            prev: [0; 32],
            broken: false,
        }
    }

    /// Whether the record continues the chain read so far (and moves it on).
    fn continues(&mut self, seq: u64, bytes: &[u8], stated: &str) -> bool {
        let hash = cmdlog_store::chain_hash(&self.prev, seq, bytes);
        if seq != self.next || cmdlog_common::ids::hex(&hash) != stated {
            return false;
        }
        self.next += 1;
        self.prev = hash;
        true
    }
}

fn keep(filter: &HubAuditFilter, fold: &mut AuditFold, event: &Event) {
    fold.add(event, |e, run| {
        !(filter.since.is_some_and(|s| e.at < s)
            || filter.command.as_deref().is_some_and(|c| c != run.name)
            || filter
                .agent
                .as_deref()
                .is_some_and(|a| e.agent.as_deref() != Some(a)))
    });
}

/// Every run on the hub that `filter` keeps, by time, then log, then seq. A log
/// whose messages do not form one chain is read again and folded along its
/// chain (`chain.rs`); what is left out is reported.
pub async fn hub_audit(hub: &Hub, filter: &HubAuditFilter) -> Result<HubAudit, HubError> {
    let stream = hub.existing_stream().await?;
    let mut folds: BTreeMap<String, Folding> = BTreeMap::new();
    each(hub, &stream, &hub.all_logs(), |record| {
        let log = folds
            .entry(record.log_id.clone())
            .or_insert_with(|| Folding::new(record.host.clone()));
        if log.broken || !log.continues(record.seq, &record.bytes, &record.hash) {
            log.broken = true;
            return Ok(true);
        }
        if let Ok(event) = Event::decode(record.seq, &record.bytes) {
            keep(filter, &mut log.fold, &event);
        }
        Ok(true)
    })
    .await?;
    let mut foreign = Vec::new();
    for (log_id, log) in folds.iter_mut().filter(|(_, l)| l.broken) {
        let surveyed = survey(hub, &stream, log_id).await?;
        let chain: std::collections::HashSet<u64> = surveyed.chain().into_iter().collect();
        foreign.extend(surveyed.foreign().into_iter().map(|f| (log_id.clone(), f)));
        let mut fold = AuditFold::default();
        each(hub, &stream, &hub.subject(log_id), |record| {
            if chain.contains(&record.stream_seq)
                && let Ok(event) = Event::decode(record.seq, &record.bytes)
            {
                keep(filter, &mut fold, &event);
            }
            Ok(true)
        })
        .await?;
        log.fold = fold;
    }
    let mut rows: Vec<HubRow> = folds
        .into_iter()
        .flat_map(|(log_id, log)| {
            let host = log.host;
            log.fold.rows().into_iter().map(move |row| HubRow {
                log_id: log_id.clone(),
                host: host.clone(),
                row,
            })
        })
        .collect();
    rows.sort_by(|a, b| (a.row.at, &a.log_id, a.row.seq).cmp(&(b.row.at, &b.log_id, b.row.seq)));
    Ok(HubAudit { rows, foreign })
}
