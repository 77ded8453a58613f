//! Attachments, `gc` and `blob` through the CLI.

use cmdlog_test_support::Workspace;

use std::path::Path;
use std::process::{Command, Output};

use cmdlog_store::{BlobHash, Log, LogConfig};

const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 1, 2, 3,
];

/// A workspace with a prompt command that takes attachments and two files to attach.
fn workspace() -> Workspace {
    let w = Workspace::new();
    w.write(
        ".claude/commands/describe-it.md",
        "---\ndescription: Describe attachments\nattachments: true\n---\nDescribe: $ARGUMENTS\n",
    );
    w.write("diagram.png", PNG);
    w.write("notes.txt", "meeting notes\n");
    w
}

fn events(w: &Workspace, prefix: &str) -> Vec<serde_json::Value> {
    let o = w.run(&["log", "--json", "--type", prefix]);
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_declaring_command_admits_both_blocks_and_one_that_does_not_refuses() {
    let w = workspace();
    let o = w.run(&[
        "run",
        "--session",
        "s",
        "--attach",
        "diagram.png",
        "--attach",
        "notes.txt",
        "/describe-it look",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let prompt = out(&o);
    assert!(
        prompt.starts_with("Describe: look\n\nAttachments:\n"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "- diagram.png (image/png, {} bytes, blob {})",
            PNG.len(),
            BlobHash::of(PNG)
        )),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "- notes.txt (text/plain, 14 bytes, blob {})",
            BlobHash::of(b"meeting notes\n")
        )),
        "{prompt}"
    );
    let admitted = events(&w, "attachment/");
    assert_eq!(admitted.len(), 2);
    assert_eq!(admitted[0]["data"]["kind"], "image");
    assert_eq!(admitted[1]["data"]["kind"], "file");
    let runs = events(&w, "command/run");
    let run = runs.last().unwrap();
    assert_eq!(
        run["data"]["attachments"],
        serde_json::json!([admitted[0]["seq"], admitted[1]["seq"]])
    );
    assert_eq!(
        run["seq"].as_u64().unwrap(),
        admitted[1]["seq"].as_u64().unwrap() + 1,
        "admissions and run in one append"
    );

    let blobs_before = w.blobs();
    w.write("other.png", [PNG, b"different"].concat());
    let o = w.run(&[
        "run",
        "--session",
        "s",
        "--attach",
        "other.png",
        "/review it",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("/review does not take attachments"),
        "{}",
        err(&o)
    );
    assert_eq!(w.blobs(), blobs_before, "no blob is written for a refusal");
    assert_eq!(events(&w, "attachment/").len(), 2);
}

#[test]
fn paths_outside_the_workspace_and_special_files_are_refused() {
    let w = workspace();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let climb = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    let o = w.run(&["run", "--attach", &climb, "/describe-it"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("outside the workspace; give its absolute path"),
        "{}",
        err(&o)
    );

    let o = w.run(&["run", "--attach", secret.to_str().unwrap(), "/describe-it"]);
    assert!(
        o.status.success(),
        "an explicit absolute path is allowed: {}",
        err(&o)
    );
    assert!(out(&o).contains("- secret.txt (text/plain, 6 bytes"));

    let fifo = w.ws.path().join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let o = w.run(&["run", "--attach", "pipe", "/describe-it"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("not a regular file"), "{}", err(&o));
}

#[test]
fn the_same_5_mib_file_in_100_runs_is_stored_once() {
    let w = workspace();
    let big: Vec<u8> = (0..5 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    w.write("big.bin", &big);
    for i in 0..100 {
        let o = w.run(&[
            "run",
            "--session",
            "s",
            "--attach",
            "big.bin",
            &format!("/describe-it run {i}"),
        ]);
        assert!(o.status.success(), "run {i}: {}", err(&o));
    }
    let hash = BlobHash::of(&big);
    let blobs = w.blobs();
    assert_eq!(blobs.iter().filter(|h| **h == hash).count(), 1);
    assert_eq!(events(&w, "attachment/").len(), 100);
    // Templates (the command file, the bundled ones) and the one attachment.
    assert_eq!(blobs.len(), 1 + 1 + cmdlog_engine::discovery::BUNDLED.len());
}

#[test]
fn gc_frees_exactly_the_orphan_of_a_failed_admission_and_verify_stays_clean() {
    let w = workspace();
    assert!(
        w.run(&["run", "--attach", "notes.txt", "/describe-it"])
            .status
            .success()
    );
    // An admission that failed after its blob was written: the blob is unreferenced.
    let orphan = {
        let log = Log::open(w.log_path(), LogConfig::default()).unwrap();
        log.put_blob(b"bytes of a failed admission".to_vec())
            .unwrap()
    };
    let o = w.run(&["gc"]);
    assert!(
        out(&o).contains("freed 0 blobs, 0 bytes; kept 6 referenced and 1 younger than 1h"),
        "{}",
        out(&o)
    );
    let o = w.run(&["gc", "--grace", "0s", "--dry-run"]);
    assert!(
        out(&o).contains(&format!("would free {orphan}")),
        "{}",
        out(&o)
    );
    assert!(w.blobs().contains(&orphan), "a dry run removes nothing");
    let o = w.run(&["gc", "--grace", "0s"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        out(&o).lines().next().unwrap(),
        format!("freed {orphan} (27 bytes)")
    );
    assert!(
        out(&o).contains("freed 1 blobs, 27 bytes; kept 6 referenced"),
        "{}",
        out(&o)
    );
    assert!(!w.blobs().contains(&orphan));
    let o = w.run(&["verify"]);
    assert!(
        o.status.success() && out(&o).contains("ok: no violations"),
        "{}",
        out(&o)
    );
}

#[test]
fn blob_writes_verified_bytes_and_refuses_tampered_ones() {
    let w = workspace();
    assert!(
        w.run(&["run", "--attach", "diagram.png", "/describe-it"])
            .status
            .success()
    );
    let hash = BlobHash::of(PNG).to_hex();
    let o = w.run(&["blob", &hash]);
    assert!(o.status.success());
    assert_eq!(o.stdout, PNG);
    assert_eq!(w.run(&["blob", "xyz"]).status.code(), Some(2));
    assert_eq!(
        w.run(&["blob", &BlobHash::of(b"absent").to_hex()])
            .status
            .code(),
        Some(3)
    );

    tamper_blob(&w.log_path(), &hash);
    let o = w.run(&["blob", &hash]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("is corrupt"), "{}", err(&o));
    assert!(o.stdout.is_empty(), "tampered bytes are never written out");
    let o = w.run(&["verify"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out(&o).contains(&format!("blob {hash} is corrupt")),
        "{}",
        out(&o)
    );
}

fn tamper_blob(path: &Path, hex: &str) {
    let hash = BlobHash::from_hex(hex).unwrap();
    cmdlog_test_support::tamper::replace_blob(path, &hash.0, b"not the picture");
}
