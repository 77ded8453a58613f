//! Tamper evidence: in a log of a few thousand events with blobs, flipping any
//! single byte of any stored record (its hash, stream key or bytes) or of any blob
//! is detected by `verify`, which names the seq or the blob hash. proptest prints
//! the failing case; the log is restored after each flip.

use std::path::Path;
use std::sync::Arc;

use cmdlog_engine::attachments::*;
use cmdlog_engine::*;
use cmdlog_replay::verify;
use cmdlog_store::{Log, LogConfig};
use proptest::prelude::*;
use redb::ReadableTable;

use cmdlog_test_support::tamper::{BLOBS, RECORDS};

fn build(path: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let log = Log::open(path, LogConfig::default()).unwrap();
        let engine = Engine::open(log, EngineConfig::with_clock(Arc::new(FixedClock::at(1))))
            .await
            .unwrap();
        let mut take = CommandSpec::new(
            CommandName::new("take").unwrap(),
            CommandSource::PluginCommand,
            CommandKind::Skill,
        );
        take.command_type = Some(CommandType::Local);
        take.supported_modes = Some(Mode::ALL.to_vec());
        take.input = Some(InputDescriptor {
            hint: String::new(),
            attachments: true,
        });
        engine
            .register(NewRegistration::handler(take, |_i: Invocation| async {
                Ok(CommandResult::text("ok"))
            }))
            .await
            .unwrap()
            .forget();
        let mut prompt = CommandSpec::new(
            CommandName::new("ask").unwrap(),
            CommandSource::SkillDirCommand,
            CommandKind::File,
        );
        prompt.command_type = Some(CommandType::Prompt);
        engine
            .register(NewRegistration::prompt(prompt, "Ask about $ARGUMENTS"))
            .await
            .unwrap()
            .forget();
        for s in 0..20 {
            let session = format!("s{s}");
            engine
                .ensure_session(&session, "main", Mode::NonInteractive)
                .await
                .unwrap();
            for i in 0..50 {
                let line = if i % 2 == 0 {
                    format!("/model m{i}")
                } else {
                    format!("/ask thing {i}")
                };
                engine
                    .execute(ExecuteRequest::new(
                        &session,
                        "main",
                        Mode::NonInteractive,
                        &line,
                    ))
                    .await
                    .unwrap();
            }
            let mut request = ExecuteRequest::new(&session, "main", Mode::NonInteractive, "/take");
            request.attachments = vec![SubmittedAttachment::File {
                name: "f".into(),
                bytes: format!("attachment of session {s}").into_bytes(),
            }];
            engine.execute(request).await.unwrap();
        }
    });
}

/// Flips one byte of record `seq` or blob `index` (through redb), returns what to
/// look for in verify's report, and a closure-free restore value.
fn flip(
    path: &Path,
    record: bool,
    pick: u64,
    offset: u64,
    mask: u8,
) -> (Option<u64>, String, Vec<u8>, Vec<u8>) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    let found = if record {
        let mut table = txn.open_table(RECORDS).unwrap();
        let head = table.last().unwrap().unwrap().0.value();
        let seq = 1 + pick % head;
        let original = table.get(seq).unwrap().unwrap().value().to_vec();
        let mut changed = original.clone();
        let at = (offset % changed.len() as u64) as usize;
        changed[at] ^= mask;
        table.insert(seq, changed.as_slice()).unwrap();
        (
            Some(seq),
            format!("seq {seq}"),
            seq.to_le_bytes().to_vec(),
            original,
        )
    } else {
        let mut table = txn.open_table(BLOBS).unwrap();
        let keys: Vec<[u8; 32]> = table
            .iter()
            .unwrap()
            .map(|e| *e.unwrap().0.value())
            .collect();
        let key = keys[(pick % keys.len() as u64) as usize];
        let original = table.get(&key).unwrap().unwrap().value().to_vec();
        let mut changed = original.clone();
        let at = (offset % changed.len() as u64) as usize;
        changed[at] ^= mask;
        table.insert(&key, changed.as_slice()).unwrap();
        (
            None,
            format!("blob {} is corrupt", cmdlog_store::BlobHash(key).to_hex()),
            key.to_vec(),
            original,
        )
    };
    drop(txn.commit());
    found
}

fn restore(path: &Path, record: bool, key: &[u8], original: &[u8]) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    if record {
        let seq = u64::from_le_bytes(key.try_into().unwrap());
        txn.open_table(RECORDS)
            .unwrap()
            .insert(seq, original)
            .unwrap();
    } else {
        let key: [u8; 32] = key.try_into().unwrap();
        txn.open_table(BLOBS)
            .unwrap()
            .insert(&key, original)
            .unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn any_flipped_byte_is_named_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    build(&path);
    {
        let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
        let report = verify(&log, |_| {}).unwrap();
        assert!(report.is_clean(), "{:#?}", report.violations);
        assert!(
            report.events > 2000,
            "a few thousand events: {}",
            report.events
        );
        assert!(report.blobs >= 20);
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &(any::<bool>(), any::<u64>(), any::<u64>(), 1u8..=255),
            |(record, pick, offset, mask)| {
                let (seq, needle, key, original) = flip(&path, record, pick, offset, mask);
                let report = {
                    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
                    verify(&log, |_| {}).unwrap()
                };
                restore(&path, record, &key, &original);
                prop_assert!(!report.is_clean(), "flip of {needle} went unnoticed");
                let named = report.violations.iter().any(|v| match seq {
                    Some(s) => v.seq == Some(s),
                    None => v.message.contains(&needle),
                });
                prop_assert!(
                    named,
                    "verify did not name {}: {:#?}",
                    needle,
                    report.violations
                );
                Ok(())
            },
        )
        .unwrap();
    let log = Log::open_read_only(&path, LogConfig::default()).unwrap();
    assert!(
        verify(&log, |_| {}).unwrap().is_clean(),
        "every flip was restored"
    );
}
