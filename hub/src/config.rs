//! What the hub's stream and buckets are made with (by `push` when missing,
//! with one replica; by `hub init` with N).

use async_nats::jetstream::{kv, object_store, stream};

use crate::layout::{all_logs, bucket, checkpoint_bucket};
use crate::limits::CHECKPOINT_VALUE_BYTES_MAX;

/// The record stream `name`: every log's subject, file storage, no limits,
/// deletes and purges denied, direct reads and atomic batches allowed.
pub(crate) fn stream_config(name: &str, replicas: usize) -> stream::Config {
    stream::Config {
        name: name.to_string(),
        description: Some("cmdlog logs, one subject per log (docs/hub.md)".into()),
        subjects: vec![all_logs(name)],
        storage: stream::StorageType::File,
        deny_delete: true,
        deny_purge: true,
        allow_direct: true,
        allow_atomic_publish: true,
        num_replicas: replicas,
        ..Default::default()
    }
}

/// The blob bucket of stream `name`.
pub(crate) fn blobs_config(name: &str, replicas: usize) -> object_store::Config {
    object_store::Config {
        bucket: bucket(name),
        description: Some("cmdlog blobs, named by their BLAKE3 hash".into()),
        storage: stream::StorageType::File,
        num_replicas: replicas,
        ..Default::default()
    }
}

/// The checkpoint bucket of stream `name`.
pub(crate) fn checkpoint_config(name: &str, replicas: usize) -> kv::Config {
    kv::Config {
        bucket: checkpoint_bucket(name),
        description: "cmdlog: each log's latest signed checkpoint".into(),
        max_value_size: CHECKPOINT_VALUE_BYTES_MAX,
        history: 16,
        num_replicas: replicas,
        ..Default::default()
    }
}
