//! `cmdlog hub init`: the hub's stream and buckets made (or checked, and
//! brought to the settings push relies on) with the replicas a cluster wants —
//! the record stream (every log's subject, file storage, deletes and purges
//! denied, direct reads and atomic batches allowed), the blob bucket and the
//! checkpoint bucket.

use async_nats::jetstream::{kv, stream};
use serde::Serialize;

use crate::config::{blobs_config, checkpoint_config, stream_config};
use crate::connect::Hub;
use crate::error::HubError;
use crate::layout::checkpoint_bucket;

/// The oldest `nats-server` with atomic batch publishing (ADR-50, 2.12), which
/// push relies on for all-or-nothing batches.
pub const ATOMIC_BATCH_SERVER: (u64, u64) = (2, 12);

/// One thing `init` made or found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Made {
    /// `stream CMDLOG`, `bucket CMDLOG-blobs`, …
    pub what: String,
    /// `created`, `updated` (replicas or settings changed), `kept` (as wanted).
    pub action: &'static str,
    /// Its replicas now.
    pub replicas: usize,
    /// Settings that would lose records, set to keep them (`max messages per
    /// subject 1 → unlimited`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<String>,
}

impl std::fmt::Display for Made {
    /// `created stream CMDLOG, 3 replica(s)`, then a line per setting fixed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}, {} replica(s)",
            self.action, self.what, self.replicas
        )?;
        for fixed in &self.fixed {
            write!(f, "\n  set {fixed}: a limit would have removed records")?;
        }
        Ok(())
    }
}

/// The server's version as (major, minor), when it says one.
fn version(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Makes the hub ready for cmdlog with `replicas` of everything: creates what
/// is missing, updates what differs, keeps the rest. A server too old for
/// atomic batches is refused with the version it needs.
pub async fn init(hub: &Hub, replicas: usize) -> Result<Vec<Made>, HubError> {
    let info = hub.client.server_info();
    match version(&info.version) {
        Some(v) if v >= ATOMIC_BATCH_SERVER => {}
        _ => {
            return Err(hub.error(format!(
                "nats-server {} has no atomic batch publishing, which push needs: use nats-server {}.{} or later",
                info.version, ATOMIC_BATCH_SERVER.0, ATOMIC_BATCH_SERVER.1
            )));
        }
    }
    if !info.jetstream {
        return Err(hub.error("JetStream is not enabled on this server (nats-server -js)"));
    }
    if replicas == 0 || replicas > 5 {
        return Err(HubError::Options(format!(
            "--replicas {replicas}: JetStream keeps 1 to 5 replicas"
        )));
    }
    let created = |what: String| Made {
        what,
        action: "created",
        replicas,
        fixed: Vec::new(),
    };
    let mut made = Vec::new();
    // The record stream: its settings and replicas brought to what push needs
    // (an operator's other settings kept), or made.
    let wanted = stream_config(&hub.name, replicas);
    let what = format!("stream {}", wanted.name);
    let fixed = match hub.js.get_stream(&wanted.name).await {
        Ok(stream) => check_records_kept(&what, &wanted, &stream.cached_info().config)
            .map_err(|e| hub.error(e))?,
        Err(_) => Vec::new(),
    };
    let adjusted = bring(hub, &wanted.name, &what, |next| {
        keep_records(next);
        for subject in &wanted.subjects {
            if !next.subjects.contains(subject) {
                next.subjects.push(subject.clone());
            }
        }
        next.deny_delete = true;
        next.deny_purge = true;
        next.allow_direct = true;
        next.allow_atomic_publish = true;
        next.num_replicas = replicas;
    })
    .await?;
    made.push(match adjusted {
        Some(m) => Made { fixed, ..m },
        None => {
            hub.js
                .create_stream(wanted)
                .await
                .map_err(|e| hub.error(format!("{what}: {e}")))?;
            created(what)
        }
    });
    // The buckets are streams too (`OBJ_<bucket>`, `KV_<bucket>`): made through
    // their own API, their replicas set on the stream underneath.
    let blobs = blobs_config(&hub.name, replicas);
    let what = format!("bucket {}", blobs.bucket);
    let stream = format!("OBJ_{}", blobs.bucket);
    made.push(
        match bring(hub, &stream, &what, |c| c.num_replicas = replicas).await? {
            Some(m) => m,
            None => {
                hub.js
                    .create_object_store(blobs)
                    .await
                    .map_err(|e| hub.error(format!("{what}: {e}")))?;
                created(what)
            }
        },
    );
    let checkpoints: kv::Config = checkpoint_config(&hub.name, replicas);
    let what = format!("bucket {}", checkpoint_bucket(&hub.name));
    let stream = format!("KV_{}", checkpoints.bucket);
    made.push(
        match bring(hub, &stream, &what, |c| c.num_replicas = replicas).await? {
            Some(m) => m,
            None => {
                hub.js
                    .create_key_value(checkpoints)
                    .await
                    .map_err(|e| hub.error(format!("{what}: {e}")))?;
                created(what)
            }
        },
    );
    Ok(made)
}

/// Stream `name` (shown as `what`) brought to what `adjust` makes of its
/// configuration: `kept` when that changes nothing, else `updated`; `None`
/// when there is no such stream.
async fn bring(
    hub: &Hub,
    name: &str,
    what: &str,
    adjust: impl FnOnce(&mut stream::Config),
) -> Result<Option<Made>, HubError> {
    let Ok(stream) = hub.js.get_stream(name).await else {
        return Ok(None);
    };
    let have = stream.cached_info().config.clone();
    let mut next = have.clone();
    adjust(&mut next);
    let replicas = next.num_replicas;
    let action = if next == have {
        "kept"
    } else {
        hub.js
            .update_stream(next)
            .await
            .map_err(|e| hub.error(format!("{what}: {e}")))?;
        "updated"
    };
    Ok(Some(Made {
        what: what.to_string(),
        action,
        replicas,
        fixed: Vec::new(),
    }))
}

/// The record stream's settings that would lose records, said as they are: its
/// limits (messages, bytes, age, messages per subject), which `init` sets to
/// unlimited.
fn losing_limits(config: &stream::Config) -> Vec<String> {
    let mut out = Vec::new();
    if config.max_messages_per_subject > 0 {
        out.push(format!(
            "max messages per subject {} → unlimited",
            config.max_messages_per_subject
        ));
    }
    if config.max_messages > 0 {
        out.push(format!("max messages {} → unlimited", config.max_messages));
    }
    if config.max_bytes > 0 {
        out.push(format!("max bytes {} → unlimited", config.max_bytes));
    }
    if !config.max_age.is_zero() {
        out.push(format!("max age {:?} → unlimited", config.max_age));
    }
    out
}

/// Sets the limits that lose records to unlimited.
fn keep_records(config: &mut stream::Config) {
    config.max_messages_per_subject = -1;
    config.max_messages = -1;
    config.max_bytes = -1;
    config.max_age = std::time::Duration::ZERO;
}

/// Checks an existing stream named as the record stream before `init` touches
/// it: one that holds another application's subjects, or whose retention
/// removes messages once read, is refused (nothing is changed in it); the limits
/// that lose records are returned, to be set to unlimited and said.
fn check_records_kept(
    what: &str,
    wanted: &stream::Config,
    have: &stream::Config,
) -> Result<Vec<String>, String> {
    let others: Vec<&String> = have
        .subjects
        .iter()
        .filter(|s| !wanted.subjects.contains(s))
        .collect();
    if !others.is_empty() {
        return Err(format!(
            "{what} exists and holds subjects that are not cmdlog's ({}): it belongs to another application, and hub init changes nothing in it; name cmdlog's stream otherwise with --stream NAME",
            others
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if have.retention != stream::RetentionPolicy::Limits {
        return Err(format!(
            "{what} has {:?} retention: the server removes messages once they are read, so the hub would lose records, and JetStream cannot change a stream's retention; make a new stream with --stream NAME and push to it",
            have.retention
        ));
    }
    Ok(losing_limits(have))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_lose_records_are_fixed_or_refused_by_name() {
        let wanted = stream_config("CMDLOG", 1);
        let mut have = wanted.clone();
        assert_eq!(
            check_records_kept("stream CMDLOG", &wanted, &have),
            Ok(vec![])
        );
        have.max_messages_per_subject = 1;
        have.max_age = std::time::Duration::from_secs(3600);
        let fixed = check_records_kept("stream CMDLOG", &wanted, &have).unwrap();
        assert_eq!(
            fixed,
            [
                "max messages per subject 1 → unlimited",
                "max age 3600s → unlimited"
            ]
        );
        keep_records(&mut have);
        assert!(losing_limits(&have).is_empty());
        have.retention = stream::RetentionPolicy::WorkQueue;
        let e = check_records_kept("stream CMDLOG", &wanted, &have).unwrap_err();
        assert!(e.contains("WorkQueue retention"), "{e}");
        let mut theirs = wanted.clone();
        theirs.subjects.push("orders.>".into());
        let e = check_records_kept("stream CMDLOG", &wanted, &theirs).unwrap_err();
        assert!(
            e.contains("orders.>") && e.contains("another application"),
            "{e}"
        );
    }

    #[test]
    fn versions_are_read_as_the_server_says_them() {
        assert_eq!(version("2.15.1"), Some((2, 15)));
        assert_eq!(version("v2.12.0-beta"), Some((2, 12)));
        assert!(version("2.11.9").unwrap() < ATOMIC_BATCH_SERVER);
        assert_eq!(version("dev"), None);
    }
}
