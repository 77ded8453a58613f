//! The log's identity: a random id given once, as a `log/identity` event stored
//! under its own stream key, so it is found without a scan. New logs get it in
//! their first append; a log made before ids existed gets it on its first
//! writable open by a verb that appends (and by `push`, which needs it).

use cmdlog_store::{AppendError, Log, NewRecord, ReadError};

use crate::event::{Event, EventData, IDENTITY_STREAM, LogIdentity, NewEvent};

/// Why the log's identity could not be read or given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The identity could not be appended.
    #[error("cannot record the log's identity: {0}")]
    Append(#[from] AppendError),
}

/// The log's identity, if it has one.
pub fn read_identity(log: &Log) -> Result<Option<LogIdentity>, ReadError> {
    for record in log.stream(IDENTITY_STREAM, 0)? {
        if let Ok(event) = Event::decode(record.seq, &record.bytes)
            && let EventData::LogIdentity(identity) = event.data
        {
            return Ok(Some(identity));
        }
    }
    Ok(None)
}

/// The log's identity, given now if it has none.
pub fn ensure_identity(log: &Log) -> Result<LogIdentity, IdentityError> {
    match planned(log)? {
        Ok(identity) => Ok(identity),
        Err((identity, record)) => {
            log.append(vec![record])?;
            Ok(identity)
        }
    }
}

/// [`ensure_identity`] from async code.
pub async fn ensure_identity_async(log: &Log) -> Result<LogIdentity, IdentityError> {
    match planned(log)? {
        Ok(identity) => Ok(identity),
        Err((identity, record)) => {
            log.submit(vec![record])?.await_receipt().await?;
            Ok(identity)
        }
    }
}

/// The identity the log has, or a new one and the record that gives it.
fn planned(log: &Log) -> Result<Result<LogIdentity, (LogIdentity, NewRecord)>, ReadError> {
    if let Some(identity) = read_identity(log)? {
        return Ok(Ok(identity));
    }
    let now = cmdlog_common::time::now_ms();
    let identity = LogIdentity {
        id: cmdlog_common::ids::random_128(),
        host: host_name(),
        created_at: now,
    };
    let event = NewEvent {
        at: now,
        observed: None,
        session: None,
        agent: None,
        data: EventData::LogIdentity(identity.clone()),
    };
    let record = event.to_record();
    Ok(Err((identity, record)))
}

/// This machine's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
