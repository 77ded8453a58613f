//! The team hub: logs replicated to a NATS JetStream stream (`docs/hub.md`).
//!
//! One stream per hub (`CMDLOG` unless another is named) holds every
//! log, one subject each: `cmdlog.log.<log id>` (`cmdlog.<stream>.log.<log id>`
//! in another stream). A record is one message: the
//! record's bytes as payload, its seq, chain hash and stream key (the session)
//! as headers. Records go in atomic batches whose first message carries
//! `Nats-Expected-Last-Subject-Sequence`: a batch lands whole, and only where it
//! continues what the hub holds of that log, so a fork or a second writer is
//! refused at the hub and nothing there is overwritten. Blobs go to the Object
//! Store bucket `<stream>-blobs`, named by their BLAKE3 hash.

//!
//! - [`HubOptions::connect`] reaches a hub (credentials from the options, the
//!   standard `NATS_*` variables or the URL, never shown: [`shown_url`]);
//! - [`Pusher`] and [`push`] replicate a log, checking the hub's head against
//!   it first (a fork or a rollback is refused, nothing sent);
//! - [`init`] makes the stream and buckets with the replicas a cluster wants;
//! - [`clone_log`] rebuilds a log from the hub; [`list`] names the logs;
//!   [`hub_audit`] gives one timeline of runs across them.
//!
//! ```
//! use cmdlog_hub::{HubOptions, shown_url, subject};
//!
//! let options = HubOptions::from_env("nats://alice:secret@hub:4222", "CMDLOG");
//! assert_eq!(shown_url(&options.url), "nats://hub:4222");
//! assert_eq!(subject("CMDLOG", "71a5"), "cmdlog.log.71a5");
//! ```

mod against;
mod audit;
mod chain;
mod checkpoints;
mod clone;
mod config;
mod connect;
mod cosigned;
mod error;
mod init;
mod layout;
mod limits;
mod mark;
mod push;
mod read;
mod search;
mod witness;

pub use against::{Against, AgainstError};
pub use audit::{Audited, HubAuditFilter, HubAuditRead, HubRow, hub_audit};
pub use chain::{Foreign, Survey};
pub use checkpoints::{HubCheckpoint, PublishError, hub_checkpoint, publish_checkpoint};
pub use clone::{CloneError, Cloned, clone_log, update_clone};
pub use connect::{Hub, HubOptions, shown_url};
pub use cosigned::{Cosigned, NotCosigned, cosignatures};
pub use error::HubError;
pub use init::{ATOMIC_BATCH_SERVER, Made, init};
pub use layout::{
    DEFAULT_STREAM, HASH, HOST, SEQ, STREAM_KEY, all_logs, bucket, checkpoint_bucket, prefix,
    subject,
};
pub use mark::PushMark;
pub use push::{PushError, Pushed, Pusher, push, push_forever};
pub use read::{HubHead, HubRecord, LogEntry, LogOnHub, each, head, list, log_on_hub, survey};
pub use search::{
    HubHit, HubSearch, HubSearchError, Mirrored, hub_search, mirror_all, mirrors_dir,
};
pub use witness::{Verdict, Witnessed, cosigned_checkpoint, witness_once};
