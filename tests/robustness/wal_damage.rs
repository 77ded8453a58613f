//! Damage to the write-ahead log that short-lived `cmdlog hook` processes left:
//! never read as the end of the log, named by every verb, dropped only with
//! `cmdlog recover --discard-damaged-wal` (design R14).

use std::os::unix::fs::FileExt;

use cmdlog_store::journal_path;
use cmdlog_test_support::Workspace;

/// Where the write-ahead log's frames start (after its header and two mark blocks).
const FRAMES_AT: usize = 3 * 4096;

fn hook(w: &Workspace, payload: &str) {
    assert!(w.hook("claude-code", payload.as_bytes()).status.success());
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

/// Short-lived appends on an 8 MiB tmpfs (in a mount namespace of its own) filled
/// by another file until they fail, then the file removed: the episode ends with
/// every acknowledged run in the log, a clean `verify` (chain and Merkle tree), and
/// a write-ahead log that did not take the freed space for itself.
#[test]
fn a_full_disk_ends_once_space_is_freed_with_nothing_lost_and_verify_clean() {
    if !cmdlog_test_support::running_as_root() {
        eprintln!("SKIPPED: needs root to mount a small tmpfs");
        return;
    }
    let w = Workspace::new();
    let disk = w.ws.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let script = r#"
set -u
mount -t tmpfs -o size=8m,mode=0700 tmpfs "$DISK" || exit 90
cd "$DISK"
L="$DISK/.cmdlog/log.redb"
"$BIN" --log "$L" run --session s /help >/dev/null 2>&1 || exit 91
for i in $(seq 1 8); do "$BIN" --log "$L" run --session s "/review before$i" >/dev/null 2>&1 || exit 92; done
avail=$(df -k "$DISK" | tail -1 | awk '{print $4}')
fallocate -l $(( (avail - 48) * 1024 )) "$DISK/fill" || exit 93
pad=$(head -c 3000 /dev/zero | tr '\0' y)
for i in $(seq 1 40); do
  if "$BIN" --log "$L" run --session s "/review full$i $pad" >/dev/null 2>>"$ERRS"; then echo "acknowledged full$i"; else echo "failed full$i $?"; fi
done
"$BIN" --log "$L" verify >/dev/null 2>>"$ERRS"; echo "verify while full $?"
rm "$DISK/fill"
"$BIN" --log "$L" verify > "$OUT/verify" 2>&1; echo "verify after $?"
"$BIN" --log "$L" log > "$OUT/log" 2>&1; echo "log after $?"
echo "wal kib $(du -k "$L-wal" | cut -f1)"
"$BIN" --log "$L" run --session s "/review after" >/dev/null 2>&1; echo "run after $?"
"$BIN" --log "$L" verify >/dev/null 2>&1; echo "verify at last $?"
"#;
    let out_dir = w.ws.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let errs = out_dir.join("errs");
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .current_dir(w.ws.path())
        .env("HOME", w.home.path())
        .env("BIN", env!("CARGO_BIN_EXE_cmdlog"))
        .env("DISK", &disk)
        .env("OUT", &out_dir)
        .env("ERRS", &errs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let errors = std::fs::read_to_string(&errs).unwrap_or_default();
    assert!(out.status.success(), "{stdout}\n{errors}");
    let acknowledged: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("acknowledged "))
        .collect();
    assert!(
        stdout.lines().any(|l| l.starts_with("failed full")),
        "the disk never filled: {stdout}"
    );
    assert!(stdout.contains("verify after 0"), "{stdout}\n{}", {
        std::fs::read_to_string(out_dir.join("verify")).unwrap_or_default()
    });
    assert!(stdout.contains("log after 0"), "{stdout}");
    let log = std::fs::read_to_string(out_dir.join("log")).unwrap();
    for run in &acknowledged {
        assert!(
            log.contains(&format!("/review {run} ")),
            "{run} lost:\n{log}"
        );
    }
    let wal_kib: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("wal kib "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wal_kib < 1024, "the write-ahead log took {wal_kib} KiB");
    assert!(stdout.contains("run after 0"), "{stdout}");
    assert!(stdout.contains("verify at last 0"), "{stdout}");
    // Every refusal while full said how much space to free.
    for line in errors.lines().filter(|l| l.contains("No space left")) {
        assert!(
            line.contains("free") && line.contains("on the disk"),
            "{line}"
        );
    }
    println!(
        "full disk: {} runs acknowledged while full, {} refused; verify clean after freeing",
        acknowledged.len(),
        stdout
            .lines()
            .filter(|l| l.starts_with("failed full"))
            .count()
    );
}
