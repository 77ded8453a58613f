//! Attachment admission (DESIGN §5 steps 3–6): the matrix of declared / not declared
//! × images / files × within / over each limit × resolver present / absent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cmdlog_engine::*;
use cmdlog_engine::{attachments::*, event::*};
use cmdlog_store::{BlobHash, Log, LogConfig};

const NI: Mode = Mode::NonInteractive;
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
];

fn png(size: usize) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.resize(size, 7);
    bytes
}

fn text(size: usize) -> Vec<u8> {
    vec![b'a'; size]
}

/// Receipts served from memory; `refuse:` receipts are refused.
struct MemoryReceipts(HashMap<String, Vec<u8>>);

impl FileReceiptResolver for MemoryReceipts {
    fn resolve(
        &self,
        _session: &str,
        receipt: &str,
        bytes_max: u64,
    ) -> Result<ResolvedFile, ReceiptError> {
        if let Some(why) = receipt.strip_prefix("refuse:") {
            return Err(ReceiptError(format!("receipt refused: {why}")));
        }
        // `raw:` receipts ignore the size hint, so the engine's own limits are what stops them.
        let (key, honor_max) = match receipt.strip_prefix("raw:") {
            Some(key) => (key, false),
            None => (receipt, true),
        };
        let bytes = self
            .0
            .get(key)
            .ok_or_else(|| ReceiptError(format!("unknown receipt {receipt}")))?;
        if honor_max && bytes.len() as u64 > bytes_max {
            return Err(ReceiptError("too large to stage".into()));
        }
        Ok(ResolvedFile {
            name: receipt.into(),
            bytes: bytes.clone(),
        })
    }
}

type Seen = Arc<Mutex<Vec<(AdmittedBlock, Vec<u8>)>>>;

async fn setup(resolver: bool) -> (tempfile::TempDir, Engine, Seen) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let config = EngineConfig {
        attachment_limits: AttachmentLimits {
            images_max: 2,
            image_bytes_max: 100,
            file_bytes_max: 200,
            total_bytes_max: 300,
        },
        ..EngineConfig::default()
    };
    let engine = Engine::open(log, config).await.unwrap();
    engine.ensure_session("s", "main", NI).await.unwrap();
    if resolver {
        let files = [
            ("notes.txt", text(50)),
            ("big.txt", text(201)),
            ("pic.png", png(60)),
            ("mid-a.txt", text(150)),
            ("mid-b.txt", text(160)),
            ("big.png", png(150)),
        ];
        engine
            .register_receipt_resolver(MemoryReceipts(
                files.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            ))
            .unwrap();
    }
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    for (name, declares) in [("plain", false), ("takes", true)] {
        let mut spec = CommandSpec::new(
            CommandName::new(name).unwrap(),
            CommandSource::PluginCommand,
            CommandKind::Skill,
        );
        spec.command_type = Some(CommandType::Local);
        spec.supported_modes = Some(Mode::ALL.to_vec());
        if declares {
            spec.input = Some(InputDescriptor {
                hint: String::new(),
                attachments: true,
            });
        }
        let seen = Arc::clone(&seen);
        engine
            .register(NewRegistration::handler(spec, move |inv: Invocation| {
                let seen = Arc::clone(&seen);
                async move {
                    for block in &inv.attachments {
                        let bytes = inv
                            .engine
                            .read_blob(&block.blob)
                            .map_err(|e| HandlerError(e.to_string()))?;
                        seen.lock().unwrap().push((block.clone(), bytes));
                    }
                    Ok(CommandResult::text(format!(
                        "{} blocks",
                        inv.attachments.len()
                    )))
                }
            }))
            .await
            .unwrap()
            .forget();
    }
    (dir, engine, seen)
}

fn image(name: &str, bytes: Vec<u8>) -> SubmittedAttachment {
    SubmittedAttachment::Image {
        name: name.into(),
        bytes,
    }
}

fn receipt(r: &str) -> SubmittedAttachment {
    SubmittedAttachment::FileReceipt { receipt: r.into() }
}

fn events(engine: &Engine, from: Seq) -> Vec<Event> {
    engine
        .log()
        .range(from, u64::MAX)
        .unwrap()
        .into_iter()
        .map(|r| Event::decode(r.seq, &r.bytes).unwrap())
        .collect()
}

enum Expect {
    Admitted(&'static [AttachmentKind]),
    Refused(&'static str),
}

/// A matrix case: its label, whether a receipt resolver is registered, the
/// command (`plain` takes no attachments, `takes` does), what is attached, and
/// what must happen.
type MatrixCase = (
    &'static str,
    bool,
    &'static str,
    Vec<SubmittedAttachment>,
    Expect,
);

#[tokio::test]
async fn the_admission_matrix() {
    for (label, with_resolver, command, attachments, expect) in matrix_cases() {
        let (_dir, engine, seen) = setup(with_resolver).await;
        let blobs_before = engine.log().list_blobs().unwrap();
        let head = engine.log().head().seq;
        let submitted = attachments.clone();
        let mut request = ExecuteRequest::new("s", "main", NI, &format!("/{command} now"));
        request.attachments = attachments;
        let ex = engine.execute(request).await.unwrap().unwrap();
        let logged = events(&engine, head + 1);
        match expect {
            Expect::Refused(words) => {
                refused(label, &engine, &ex, &logged, &seen, &blobs_before, words)
            }
            Expect::Admitted(kinds) => {
                admitted(label, &engine, &ex, &logged, &seen, &submitted, kinds)
            }
        }
    }
}

fn matrix_cases() -> Vec<MatrixCase> {
    use AttachmentKind::{File, Image};
    vec![
        (
            "not declared, image",
            true,
            "plain",
            vec![image("a.png", png(20))],
            Expect::Refused("does not take attachments"),
        ),
        (
            "not declared, file",
            true,
            "plain",
            vec![receipt("notes.txt")],
            Expect::Refused("does not take attachments"),
        ),
        (
            "not declared, no resolver",
            false,
            "plain",
            vec![receipt("notes.txt")],
            Expect::Refused("does not take attachments"),
        ),
        (
            "image within limits",
            true,
            "takes",
            vec![image("a.png", png(100))],
            Expect::Admitted(&[Image]),
        ),
        (
            "file within limits",
            true,
            "takes",
            vec![receipt("notes.txt")],
            Expect::Admitted(&[File]),
        ),
        (
            "image and file, in order",
            true,
            "takes",
            vec![
                receipt("notes.txt"),
                image("a.png", png(30)),
                receipt("pic.png"),
            ],
            Expect::Admitted(&[File, Image, Image]),
        ),
        (
            "file without a resolver",
            false,
            "takes",
            vec![receipt("notes.txt")],
            Expect::Refused("no file receipt resolver is registered"),
        ),
        (
            "image without a resolver",
            false,
            "takes",
            vec![image("a.png", png(30))],
            Expect::Admitted(&[Image]),
        ),
        (
            "over images_max",
            true,
            "takes",
            vec![
                image("a.png", png(20)),
                image("b.png", png(20)),
                receipt("pic.png"),
            ],
            Expect::Refused("(images_max)"),
        ),
        (
            "over image_bytes_max",
            true,
            "takes",
            vec![image("a.png", png(101))],
            Expect::Refused("(image_bytes_max)"),
        ),
        (
            "over file_bytes_max, refused by the resolver unread",
            true,
            "takes",
            vec![receipt("big.txt")],
            Expect::Refused("too large to stage"),
        ),
        (
            "over file_bytes_max",
            true,
            "takes",
            vec![receipt("raw:big.txt")],
            Expect::Refused("is 201 bytes, over the limit of 200 bytes (file_bytes_max)"),
        ),
        (
            "a receipt image over image_bytes_max",
            true,
            "takes",
            vec![receipt("big.png")],
            Expect::Refused("(image_bytes_max)"),
        ),
        (
            "over total_bytes_max",
            true,
            "takes",
            vec![receipt("mid-a.txt"), receipt("mid-b.txt")],
            Expect::Refused("(total_bytes_max)"),
        ),
        (
            "an image that is not one",
            true,
            "takes",
            vec![image("fake.png", text(10))],
            Expect::Refused("content is text/plain"),
        ),
        (
            "a refused receipt",
            true,
            "takes",
            vec![receipt("refuse:outside the workspace")],
            Expect::Refused("receipt refused: outside the workspace"),
        ),
    ]
}

/// A refusal: an error outcome naming why, no handler, no blob, a run/done pair.
fn refused(
    label: &str,
    engine: &Engine,
    ex: &Execution,
    logged: &[Event],
    seen: &Seen,
    blobs_before: &[(BlobHash, u64, u64)],
    words: &str,
) {
    let Outcome::Error { text, .. } = &ex.outcome else {
        panic!("{label}: {:?}", ex.outcome)
    };
    assert!(text.contains(words), "{label}: {text}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "{label}: the handler must not run"
    );
    assert_eq!(
        engine.log().list_blobs().unwrap(),
        blobs_before,
        "{label}: no blob is written"
    );
    assert_eq!(logged.len(), 2, "{label}: the refusal is a run/done pair");
    let EventData::CommandRun(run) = &logged[0].data else {
        panic!("{label}")
    };
    assert!(run.attachments.is_empty());
    assert!(matches!(logged[1].data, EventData::CommandDone(_)));
}

/// An admission: k admissions, the run listing them, the done; the handler saw
/// the blocks and their bytes read back verified; the log verifies.
fn admitted(
    label: &str,
    engine: &Engine,
    ex: &Execution,
    logged: &[Event],
    seen: &Seen,
    submitted: &[SubmittedAttachment],
    kinds: &[AttachmentKind],
) {
    assert_eq!(
        ex.outcome,
        Outcome::text(format!("{} blocks", kinds.len())),
        "{label}"
    );
    let k = kinds.len();
    assert_eq!(
        logged.len(),
        k + 2,
        "{label}: k admissions, the run, the done"
    );
    let EventData::CommandRun(run) = &logged[k].data else {
        panic!("{label}: {:?}", logged[k])
    };
    let admission_seqs: Vec<Seq> = logged[..k].iter().map(|e| e.seq).collect();
    assert_eq!(
        run.attachments, admission_seqs,
        "{label}: the run lists its admissions"
    );
    assert_eq!(ex.command_id, logged[k].seq);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), k, "{label}");
    for (i, ((block, bytes), kind)) in seen.iter().zip(kinds).enumerate() {
        assert_eq!(block.kind, *kind, "{label}: block {i}");
        assert_eq!(block.seq, admission_seqs[i]);
        assert_eq!(
            block.blob,
            BlobHash::of(bytes),
            "{label}: bytes read back verify"
        );
        let EventData::AttachmentAdmitted(a) = &logged[i].data else {
            panic!()
        };
        assert_eq!(
            (a.blob.as_str(), a.size, a.media_type.as_str()),
            (
                block.blob.to_hex().as_str(),
                bytes.len() as u64,
                block.media_type.as_str()
            )
        );
        if let SubmittedAttachment::Image { bytes: sent, .. } = &submitted[i] {
            assert_eq!(sent, bytes);
        }
    }
    let report = cmdlog_engine_verify(engine);
    assert!(report, "{label}: the log verifies");
}

/// The run's registration check and the live/replayed equality, without the replay
/// crate: fold the log and compare.
fn cmdlog_engine_verify(engine: &Engine) -> bool {
    let mut state = LogState::default();
    fold_log(engine.log(), &mut state, 1, engine.log().head().seq).unwrap();
    state == engine.state() && state.open_runs.is_empty()
}

#[tokio::test]
async fn one_resolver_at_a_time() {
    let (_dir, engine, _) = setup(true).await;
    let second = engine.register_receipt_resolver(MemoryReceipts(HashMap::new()));
    assert!(matches!(second, Err(RegisterError::ResolverTaken)));
    let (_dir, engine, _) = setup(false).await;
    let handle = engine
        .register_receipt_resolver(MemoryReceipts(HashMap::new()))
        .unwrap();
    handle.dispose();
    engine
        .register_receipt_resolver(MemoryReceipts(HashMap::new()))
        .unwrap();
}

#[tokio::test]
async fn identical_attachments_are_stored_once() {
    let (_dir, engine, _) = setup(true).await;
    let before = engine.log().list_blobs().unwrap().len();
    for _ in 0..20 {
        let mut request = ExecuteRequest::new("s", "main", NI, "/takes");
        request.attachments = vec![receipt("notes.txt"), image("x.png", png(40))];
        assert!(
            !engine
                .execute(request)
                .await
                .unwrap()
                .unwrap()
                .outcome
                .is_error()
        );
    }
    assert_eq!(engine.log().list_blobs().unwrap().len(), before + 2);
}

#[tokio::test]
async fn prompt_commands_that_declare_attachments_list_them() {
    let (_dir, engine, _) = setup(true).await;
    let mut spec = CommandSpec::new(
        CommandName::new("describe").unwrap(),
        CommandSource::SkillDirCommand,
        CommandKind::File,
    );
    spec.command_type = Some(CommandType::Prompt);
    spec.input = Some(InputDescriptor {
        hint: String::new(),
        attachments: true,
    });
    engine
        .register(NewRegistration::prompt(spec, "Describe $ARGUMENTS"))
        .await
        .unwrap()
        .forget();
    let mut request = ExecuteRequest::new("s", "main", NI, "/describe these");
    request.attachments = vec![image("a.png", png(30)), receipt("notes.txt")];
    let ex = engine.execute(request).await.unwrap().unwrap();
    let Outcome::Success {
        prompt: Some(p), ..
    } = ex.outcome
    else {
        panic!()
    };
    assert_eq!(
        p,
        format!(
            "Describe these\n\nAttachments:\n- a.png (image/png, 30 bytes, blob {})\n- notes.txt (text/plain, 50 bytes, blob {})",
            BlobHash::of(&png(30)),
            BlobHash::of(&text(50))
        )
    );
}

#[tokio::test]
async fn tampered_attachment_bytes_are_refused_on_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let hash = {
        let engine = Engine::open(
            Log::open(&path, LogConfig::default()).unwrap(),
            EngineConfig::default(),
        )
        .await
        .unwrap();
        engine
            .log()
            .put_blob_async(b"original bytes".to_vec())
            .await
            .unwrap()
    };
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let table = cmdlog_test_support::tamper::BLOBS;
        txn.open_table(table)
            .unwrap()
            .insert(&hash.0, &b"evil bytes"[..])
            .unwrap();
        txn.commit().unwrap();
    }
    let engine = Engine::open(
        Log::open(&path, LogConfig::default()).unwrap(),
        EngineConfig::default(),
    )
    .await
    .unwrap();
    let err = engine.read_blob(&hash).unwrap_err();
    assert!(err.to_string().contains("is corrupt"), "{err}");
}
