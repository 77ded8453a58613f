//! The engine over a workspace's log, as every verb that runs lines and the
//! daemon open it: the log (created if missing) with its identity, the engine,
//! the workspace's receipt resolver, and command-file discovery synced into the
//! log.

use std::path::Path;

use cmdlog_store::{Log, LogConfig, OpenError};

use crate::attachments::WorkspaceReceipts;
use crate::discovery::Discovery;
use crate::engine::{Engine, EngineConfig, EngineOpenError, RegisterError};
use crate::identity::{IdentityError, ensure_identity_async};
use crate::sync::{SyncError, SyncReport};

/// Why the engine over a workspace did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceOpenError {
    /// Command-file discovery failed.
    #[error(transparent)]
    Discovery(#[from] crate::discovery::DiscoveryError),
    /// The log did not open.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Its identity could not be read or given.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The engine did not open over it.
    #[error(transparent)]
    Engine(#[from] EngineOpenError),
    /// The receipt resolver could not be registered.
    #[error(transparent)]
    Receipts(#[from] RegisterError),
    /// Discovery could not be synced into the log.
    #[error(transparent)]
    Sync(#[from] SyncError),
}

/// How long the process that opens the log keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// A verb that runs a line or two and exits (`cmdlog run`): appends go to the
    /// write-ahead log alone, one sync each ([`Log::open_short_lived`]) — or,
    /// while a long-lived process holds the log, to that process's group commit
    /// ([`Log::open_short_lived_or_through_holder`]).
    ShortLived,
    /// A daemon or a proxy that keeps the log open: the writable open, with its
    /// checkpoints ([`Log::open`]).
    LongLived,
}

/// Opens the log at `log_path` for writing (a new log's first event is its
/// identity; an older log gets one now), the engine over it with `workspace`'s
/// receipt resolver, and syncs `discovery` into the log. The report's warnings
/// are for the caller to show.
pub async fn open_workspace(
    log_path: &Path,
    workspace: &Path,
    discovery: &Discovery,
    lifetime: Lifetime,
) -> Result<(Engine, SyncReport), WorkspaceOpenError> {
    let log = match lifetime {
        Lifetime::ShortLived => {
            Log::open_short_lived_or_through_holder(log_path, LogConfig::default())?
        }
        Lifetime::LongLived => Log::open(log_path, LogConfig::default())?,
    };
    ensure_identity_async(&log).await?;
    let engine = Engine::open(log, EngineConfig::default()).await?;
    engine.register_receipt_resolver(WorkspaceReceipts::new(workspace))?;
    let report = engine.sync(discovery).await?;
    Ok((engine, report))
}
