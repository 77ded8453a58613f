//! Garbage collection never removes a blob an event references, and removes exactly
//! the unreferenced ones past the grace period. proptest prints the failing case.

use std::collections::BTreeSet;

use cmdlog_engine::event::*;
use cmdlog_engine::*;
use cmdlog_replay::{collect, plan_gc, verify};
use cmdlog_store::{BlobHash, Log, LogConfig, NewRecord};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Reference {
    None,
    Template,
    Attachment,
    UnknownEvent,
}

fn reference() -> impl Strategy<Value = Reference> {
    prop_oneof![
        Just(Reference::None),
        Just(Reference::Template),
        Just(Reference::Attachment),
        Just(Reference::UnknownEvent),
    ]
}

fn event(data: EventData) -> NewRecord {
    NewEvent {
        observed: None,
        at: 1,
        session: Some("s".into()),
        agent: Some("main".into()),
        data,
    }
    .to_record()
}

fn reference_event(kind: &Reference, hash: &BlobHash, i: usize) -> Option<NewRecord> {
    let hex = hash.to_hex();
    match kind {
        Reference::None => None,
        Reference::Template => {
            let mut command = CommandSpec::new(
                CommandName::new(format!("c{i}")).unwrap(),
                CommandSource::SkillDirCommand,
                CommandKind::File,
            );
            command.command_type = Some(CommandType::Prompt);
            Some(event(EventData::Registered(Box::new(Registered {
                scope: Scope::Global,
                provider: ProviderRef {
                    id: "t".into(),
                    priority: 1,
                    level: "user".into(),
                    order: 0,
                    item: 0,
                },
                command,
                template: Some(hex),
                origin: None,
            }))))
        }
        Reference::Attachment => Some(event(EventData::AttachmentAdmitted(AttachmentAdmitted {
            kind: AttachmentKind::File,
            blob: hex,
            media_type: "text/plain".into(),
            size: 1,
            name: "f".into(),
        }))),
        // A newer writer's event type: its blob hashes are protected all the same.
        Reference::UnknownEvent => Some(NewRecord::new(
            format!(r#"{{"at":1,"type":"future/thing","data":{{"nested":[{{"blob":"{hex}"}}]}}}}"#)
                .into_bytes(),
        )),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn gc_never_removes_a_referenced_blob(
        blobs in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 1..64), reference()), 1..24),
        grace_ms in 0u64..10_000,
        elapsed_ms in 0u64..20_000,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
        let mut referenced = BTreeSet::new();
        let mut all = BTreeSet::new();
        for (i, (bytes, kind)) in blobs.iter().enumerate() {
            let hash = log.put_blob(bytes.clone()).unwrap();
            all.insert(hash);
            if let Some(record) = reference_event(kind, &hash, i) {
                log.append(vec![record]).unwrap();
                referenced.insert(hash);
            }
        }
        let newest = log.list_blobs().unwrap().iter().map(|(_, at, _)| *at).max().unwrap();
        let now = newest + elapsed_ms;
        let plan = plan_gc(&log, now, grace_ms).unwrap();
        collect(&log, &plan).unwrap();

        for hash in &referenced {
            prop_assert!(log.get_blob(hash).unwrap().is_some(), "referenced blob {} was removed", hash);
        }
        let left: BTreeSet<BlobHash> = log.list_blobs().unwrap().into_iter().map(|(h, _, _)| h).collect();
        for hash in all.difference(&referenced) {
            let collected = plan.collect.iter().any(|b| b.hash == hash.to_hex());
            prop_assert_eq!(left.contains(hash), !collected);
        }
        if elapsed_ms >= grace_ms {
            // Every blob is at least elapsed_ms old: all unreferenced ones are gone.
            prop_assert_eq!(&left, &referenced);
        }
        let report = verify(&log, |_| {}).unwrap();
        prop_assert!(report.is_clean(), "{:?}", report.violations);
    }
}

#[test]
fn gc_refuses_a_log_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.put_blob(b"orphan".to_vec()).unwrap();
    log.append(vec![NewRecord::new(b"not an event".to_vec())])
        .unwrap();
    let err = plan_gc(&log, u64::MAX, 0).unwrap_err();
    assert!(
        err.to_string()
            .contains("will not run on a log it cannot fully read"),
        "{err}"
    );
    assert_eq!(log.list_blobs().unwrap().len(), 1);
}
