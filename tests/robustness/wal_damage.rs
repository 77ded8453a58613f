//! Damage to the write-ahead log that short-lived `cmdlog hook` processes left:
//! never read as the end of the log, named by every verb, dropped only with
//! `cmdlog recover --discard-damaged-wal` (design R14).

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::process::Stdio;

use cmdlog_store::journal_path;
use cmdlog_test_support::Workspace;

/// Where the write-ahead log's frames start (after its header and two mark blocks).
const FRAMES_AT: usize = 3 * 4096;

fn hook(w: &Workspace, payload: &str) {
    let mut hook = w
        .cmd(&["hook", "claude-code"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    assert!(hook.wait().unwrap().success());
}

/// The start of each frame in the write-ahead log.
fn frame_starts(wal: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = FRAMES_AT;
    while wal.get(at..at + 4) == Some(b"CLWF") {
        out.push(at);
        let payload = u32::from_le_bytes(wal[at + 12..at + 16].try_into().unwrap()) as usize;
        let bodies = u64::from_le_bytes(wal[at + 16..at + 24].try_into().unwrap()) as usize;
        at += 40 + payload + bodies;
    }
    out
}

#[test]
fn zeros_over_an_acknowledged_frame_are_named_by_every_verb_never_read_as_the_end() {
    let w = Workspace::new();
    assert!(w.run(&["run", "/help"]).status.success());
    for i in 0..6 {
        hook(
            &w,
            &format!(
                r#"{{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt_id":"p{i}","prompt":"prompt {i}"}}"#
            ),
        );
    }
    let head = w.head().0;
    let wal_path = journal_path(&w.log_path());
    let wal = std::fs::read(&wal_path).unwrap();
    let starts = frame_starts(&wal);
    assert!(starts.len() >= 6, "the hooks left their frames: {starts:?}");
    // What a lost block reads as: 40 zero bytes over the third frame's header.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&wal_path)
        .unwrap();
    file.write_all_at(&[0u8; 40], starts[2] as u64).unwrap();
    let damaged = std::fs::read(&wal_path).unwrap();

    for verb in [&["verify"][..], &["log"], &["sessions"], &["recover"]] {
        let out = w.run(verb);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{verb:?}: {stderr}");
        assert!(
            stderr.contains("damaged frames that were acknowledged")
                && stderr.contains(&format!("to {head} cannot be applied"))
                && stderr.contains("cmdlog recover --discard-damaged-wal"),
            "{verb:?}: {stderr}"
        );
    }
    // A hook never fails its agent: the payload waits in the spill; the damaged
    // frames are left as they are, not overwritten.
    hook(
        &w,
        r#"{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt_id":"p9","prompt":"later"}"#,
    );
    assert_eq!(std::fs::read(&wal_path).unwrap(), damaged);

    // The way out keeps every event before the damage and names the rest.
    let out = w.ok(&["recover", "--discard-damaged-wal"]);
    assert!(out.contains("dropped"), "{out}");
    assert!(out.contains(&format!("to {head}")), "{out}");
    assert!(w.ok(&["verify"]).contains("ok: no violations"));
    assert!(w.ok(&["log"]).contains("log/wal_discarded"));
}
