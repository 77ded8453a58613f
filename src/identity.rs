//! The log's identity: a random id given once, as a `log/identity` event stored
//! under its own stream key, so it is found without a scan. New logs get it in
//! their first append; a log made before ids existed gets it on its first
//! writable open by a verb that appends (and by `push`, which needs it).

use cmdlog_engine::{EventData, IDENTITY_STREAM, LogIdentity, NewEvent};
use cmdlog_store::{AppendError, Log, NewRecord, ReadError};

/// The log's identity, if it has one.
pub(crate) fn read(log: &Log) -> Result<Option<LogIdentity>, ReadError> {
    for record in log.stream(IDENTITY_STREAM, 0)? {
        if let Ok(event) = cmdlog_engine::Event::decode(record.seq, &record.bytes)
            && let EventData::LogIdentity(identity) = event.data
        {
            return Ok(Some(identity));
        }
    }
    Ok(None)
}

/// The log's identity, given now if it has none.
pub(crate) fn ensure(log: &Log) -> Result<LogIdentity, String> {
    match planned(log)? {
        Ok(identity) => Ok(identity),
        Err((identity, record)) => {
            log.append(vec![record]).map_err(refused)?;
            Ok(identity)
        }
    }
}

/// [`ensure`] from async code.
pub(crate) async fn ensure_async(log: &Log) -> Result<LogIdentity, String> {
    match planned(log)? {
        Ok(identity) => Ok(identity),
        Err((identity, record)) => {
            log.submit(vec![record])
                .map_err(refused)?
                .await_receipt()
                .await
                .map_err(refused)?;
            Ok(identity)
        }
    }
}

fn refused(e: AppendError) -> String {
    format!("cannot record the log's identity: {e}")
}

/// The identity the log has, or a new one and the record that gives it.
fn planned(log: &Log) -> Result<Result<LogIdentity, (LogIdentity, NewRecord)>, String> {
    if let Some(identity) = read(log).map_err(|e| e.to_string())? {
        return Ok(Ok(identity));
    }
    let now = now_ms();
    let identity = LogIdentity {
        id: random_id(),
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

/// `log ID (host HOST)`, the host's text made safe for a terminal.
pub(crate) fn shown(identity: &LogIdentity) -> String {
    format!(
        "log {} (host {})",
        crate::render::clean(&identity.id),
        crate::render::clean(&identity.host)
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// 128 random bits as 32 hex digits: from the kernel's generator, or where there
/// is none, a hash of what differs between two processes and two moments.
fn random_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !from_kernel {
        let mut seed = std::process::id().to_le_bytes().to_vec();
        seed.extend_from_slice(
            &std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
                .to_le_bytes(),
        );
        seed.extend_from_slice(host_name().as_bytes());
        bytes.copy_from_slice(&cmdlog_store::BlobHash::of(&seed).0[..16]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// This machine's host name.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_is_given_once_and_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join("log.redb"), Default::default()).unwrap();
        assert!(read(&log).unwrap().is_none());
        let first = ensure(&log).unwrap();
        assert_eq!(first.id.len(), 32);
        assert!(first.id.chars().all(|c| c.is_ascii_hexdigit()));
        let again = ensure(&log).unwrap();
        assert_eq!(first, again);
        assert_eq!(log.head().seq, 1);
        let report = cmdlog_replay::verify(&log, |_| {}).unwrap();
        assert!(report.violations.is_empty(), "{:?}", report.violations);
    }
}
