//! Syncing a discovery pass into the log: append only what changed.

use std::collections::BTreeMap;

use cmdlog_store::{AppendError, BlobError, BlobHash};

use crate::discovery::{Discovery, Warning};
use crate::engine::Engine;
use crate::event::Scope;
use crate::event::{
    DiscoveryWarning, EventData, NewEvent, Registered, Seq, UnregisterReason, Unregistered,
};

/// What a sync appended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Files newly registered.
    pub added: usize,
    /// Files re-registered because they changed.
    pub changed: usize,
    /// Registrations ended because their file is gone.
    pub removed: usize,
    /// Files whose registration stands as it was.
    pub unchanged: usize,
    /// Warnings logged by this pass (each once per file, content hash and message).
    pub warnings: Vec<Warning>,
}

impl SyncReport {
    /// Whether the registry changed.
    pub fn changed_registry(&self) -> bool {
        self.added + self.changed + self.removed > 0
    }
}

/// Syncing failed; nothing of this pass was appended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// Storing the templates failed.
    #[error("could not store command templates: {source}")]
    Template {
        /// Why.
        source: BlobError,
    },
    /// The append failed.
    #[error("could not record discovery changes: {0}")]
    Append(#[from] AppendError),
}

impl Engine {
    /// Diffs `discovery` against the registry's file registrations and appends, in one
    /// atomic append, only the changes: `registered` for new files, `unregistered`
    /// (`file-changed`) + `registered` for changed ones, `unregistered`
    /// (`file-removed`) for files gone, and warnings not logged before.
    pub async fn sync(&self, discovery: &Discovery) -> Result<SyncReport, SyncError> {
        let _writes = self.registry_writes().await;
        let mut report = SyncReport::default();
        let now = self.now();
        let event = |data| NewEvent {
            observed: None,
            at: now,
            session: None,
            agent: None,
            data,
        };
        let unregister = |registration, reason| {
            event(EventData::Unregistered(Unregistered {
                registration,
                reason,
            }))
        };

        // (provider id, path) -> (seq, registration as logged) for active file registrations.
        let (current, warned) = self.with_state(|s| {
            let current: BTreeMap<(String, String), (Seq, Registered)> = s
                .registry
                .active()
                .filter_map(|r| {
                    let origin = r.origin.clone()?;
                    let logged = Registered {
                        scope: r.scope.clone(),
                        provider: r.provider.clone(),
                        command: r.command.clone(),
                        template: r.template.clone(),
                        origin: Some(origin.clone()),
                    };
                    Some(((r.provider.id.clone(), origin.path), (r.seq, logged)))
                })
                .collect();
            (current, s.warned.clone())
        });

        let mut events = Vec::new();
        let mut templates = Vec::new();
        let mut seen = BTreeMap::new();
        for d in &discovery.commands {
            let key = (d.provider.id.clone(), d.origin.path.clone());
            let template = BlobHash::of(d.template.as_bytes()).to_hex();
            let wanted = Registered {
                scope: Scope::Global,
                provider: d.provider.clone(),
                command: d.command.clone(),
                template: Some(template),
                origin: Some(d.origin.clone()),
            };
            let previous = current.get(&key);
            seen.insert(key, ());
            match previous {
                Some((_, logged)) if *logged == wanted => {
                    report.unchanged += 1;
                    continue;
                }
                Some((seq, _)) => {
                    events.push(unregister(*seq, UnregisterReason::FileChanged));
                    report.changed += 1;
                }
                None => report.added += 1,
            }
            templates.push(d.template.clone().into_bytes());
            events.push(event(EventData::Registered(Box::new(wanted))));
        }
        for (key, (seq, _)) in &current {
            if !seen.contains_key(key) {
                events.push(unregister(*seq, UnregisterReason::FileRemoved));
                report.removed += 1;
            }
        }
        for w in &discovery.warnings {
            let key = (w.path.clone(), w.content_hash.clone(), w.message.clone());
            if warned.contains(&key) {
                continue;
            }
            report.warnings.push(w.clone());
            events.push(event(EventData::DiscoveryWarning(DiscoveryWarning {
                provider: w.provider.clone(),
                path: w.path.clone(),
                content_hash: w.content_hash.clone(),
                message: w.message.clone(),
            })));
        }
        // Templates first: a failure here can only leave unreferenced blobs.
        self.log()
            .put_blobs_async(templates)
            .await
            .map_err(|source| SyncError::Template { source })?;
        if !events.is_empty() {
            let records = events.iter().map(NewEvent::to_record).collect();
            self.log().append_async(records).await?;
        }
        drop(_writes);
        if report.changed_registry() {
            self.notify();
        }
        Ok(report)
    }
}
