//! The verifiable log from the command line (DESIGN R9): `key`, `checkpoint`,
//! `prove` and `verify --checkpoint`, checked by verifiers we did not write
//! (`signed_note`, `tlog_tiles`: ports of Go's `sumdb/note` and `sumdb/tlog`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use cmdlog_test_support::Workspace;
use signed_note::{StandardVerifier, VerifierList};
use tlog_tiles::{HashReader, check_record, check_tree, record_hash, stored_hashes, tree_hash};

fn hash(text: &serde_json::Value) -> tlog_tiles::Hash {
    tlog_tiles::Hash(
        B64.decode(text.as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap(),
    )
}

fn proof(value: &serde_json::Value) -> Vec<tlog_tiles::Hash> {
    value.as_array().unwrap().iter().map(hash).collect()
}

/// Their reading of a checkpoint note, verified with the key `cmdlog key` printed.
fn their_checkpoint(vkey: &str, note: &str) -> tlog_tiles::Checkpoint {
    let verifier = StandardVerifier::new(vkey).unwrap();
    let note = signed_note::Note::from_bytes(note.as_bytes()).unwrap();
    let (verified, _) = note
        .verify(&VerifierList::new(vec![Box::new(verifier)]))
        .unwrap();
    assert_eq!(verified.len(), 1);
    tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap()
}

#[derive(Default)]
struct TheirStore(Vec<tlog_tiles::Hash>);

impl HashReader for TheirStore {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<tlog_tiles::Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|&i| {
                self.0
                    .get(i as usize)
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

fn session(ws: &Workspace, n: usize) {
    for i in 0..n {
        ws.ok(&["run", "--session", &format!("s{}", i % 2), "/help"]);
    }
}

#[test]
fn an_independent_verifier_accepts_the_checkpoint_every_proof_and_the_root_of_the_records() {
    let ws = Workspace::new();
    session(&ws, 3);
    let vkey = ws.ok(&["key"]).trim().to_string();
    let old_note = ws.ok(&["checkpoint", "-o", "old.checkpoint"]);
    assert_eq!(
        std::fs::read_to_string(ws.path("ws/old.checkpoint")).unwrap(),
        old_note
    );
    let old = their_checkpoint(&vkey, &old_note);
    session(&ws, 2);
    let note = ws.ok(&["checkpoint"]);
    let checkpoint = their_checkpoint(&vkey, &note);
    let size = checkpoint.size();
    assert_eq!(size, ws.head().0, "the checkpoint is of the head");

    // Every record's proof, and the records' leaves, through their code alone.
    // A leaf is the record's line in `cmdlog export`, byte for byte.
    let export = ws.ok(&["export"]);
    let lines: Vec<&str> = export.lines().collect();
    let mut theirs = TheirStore::default();
    for seq in 1..=size {
        let p = ws.json(&["prove", &seq.to_string(), "--json"]);
        assert_eq!(p["index"], seq - 1);
        assert_eq!(p["size"], size);
        let leaf = B64.decode(p["leaf"].as_str().unwrap()).unwrap();
        let record: serde_json::Value = serde_json::from_slice(&leaf).unwrap();
        assert_eq!(record["seq"], seq, "the leaf names its seq");
        assert_eq!(
            lines[seq as usize - 1].as_bytes(),
            leaf,
            "export line {seq}"
        );
        let cp = their_checkpoint(&vkey, p["checkpoint"].as_str().unwrap());
        assert_eq!(cp.hash(), checkpoint.hash());
        check_record(
            &proof(&p["proof"]),
            size,
            *cp.hash(),
            seq - 1,
            record_hash(&leaf),
        )
        .unwrap();
        let hashes = stored_hashes(seq - 1, &leaf, &theirs).unwrap();
        theirs.0.extend(hashes);
    }
    assert_eq!(
        tree_hash(size, &theirs).unwrap(),
        *checkpoint.hash(),
        "RFC 6962 root of the leaves"
    );
    assert_eq!(tree_hash(old.size(), &theirs).unwrap(), *old.hash());

    // The consistency proof from the saved checkpoint to the head.
    let since = ws.json(&["prove", "--since", "old.checkpoint", "--json"]);
    assert_eq!(
        (since["old_size"].as_u64(), since["size"].as_u64()),
        (Some(old.size()), Some(size))
    );
    let head = their_checkpoint(&vkey, since["checkpoint"].as_str().unwrap());
    check_tree(
        &proof(&since["proof"]),
        size,
        *head.hash(),
        old.size(),
        *old.hash(),
    )
    .unwrap();

    // Without --json: the C2SP tlog-proof and witness request forms.
    let text = ws.ok(&["prove", "2"]);
    assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra "), "{text}");
    assert!(
        text.contains("\nindex 1\n") && text.ends_with(&note),
        "{text}"
    );
    let text = ws.ok(&["prove", "--since", "old.checkpoint"]);
    assert!(text.starts_with(&format!("old {}\n", old.size())), "{text}");

    // verify --checkpoint, with the log's own key and with the key given.
    let o = ws.run(&["verify", "--checkpoint", "old.checkpoint"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = ws.json(&[
        "verify",
        "--json",
        "--checkpoint",
        "old.checkpoint",
        "--vkey",
        &vkey,
    ]);
    assert_eq!(v["checkpoint"]["consistent"], true);

    // The key lives outside the workspace, owner-only; nothing of it in the log.
    let id = ws.json(&["key", "--json"])["log_id"]
        .as_str()
        .unwrap()
        .to_string();
    let key = ws.path(&format!("~/.config/cmdlog/keys/{id}.key"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let secret = std::fs::read_to_string(&key).unwrap();
    // PRIVATE+KEY+<name>+<key id>+<base64>: the base64 may itself hold '+'.
    let secret = secret.trim().splitn(5, '+').nth(4).unwrap().to_string();
    assert!(secret.len() >= 40, "the key's base64: {secret}");
    let log = std::fs::read(ws.log_path()).unwrap();
    assert!(!log.windows(secret.len()).any(|w| w == secret.as_bytes()));
}

#[test]
fn an_older_copy_a_replaced_log_and_a_forged_checkpoint_fail_verify_checkpoint() {
    let ws = Workspace::new();
    session(&ws, 2);
    // A copy of the log as it is now: both of its files, as SQLite's are copied.
    let wal = |p: &std::path::Path| cmdlog_store::journal_path(p);
    let lock = |p: &std::path::Path| cmdlog_store::presence_path(p);
    let older = ws.path("ws/older.redb");
    std::fs::copy(ws.log_path(), &older).unwrap();
    std::fs::copy(wal(&ws.log_path()), wal(&older)).unwrap();
    std::fs::copy(lock(&ws.log_path()), lock(&older)).unwrap();
    session(&ws, 2);
    ws.ok(&["checkpoint", "-o", "later.checkpoint"]);

    // The older copy, put back in place of the log: shorter than the checkpoint.
    let current = ws.path("ws/current.redb");
    std::fs::rename(ws.log_path(), &current).unwrap();
    std::fs::rename(wal(&ws.log_path()), wal(&current)).unwrap();
    std::fs::rename(lock(&ws.log_path()), lock(&current)).unwrap();
    std::fs::copy(&older, ws.log_path()).unwrap();
    std::fs::copy(wal(&older), wal(&ws.log_path())).unwrap();
    std::fs::copy(lock(&older), lock(&ws.log_path())).unwrap();
    let o = ws.run(&["verify", "--checkpoint", "later.checkpoint"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("shorter than the checkpoint"), "{out}");

    // The older copy grown back to the same length with other records: a
    // different tree, though its own chain verifies.
    while ws.head().0 < {
        let cp = std::fs::read_to_string(ws.path("ws/later.checkpoint")).unwrap();
        cp.lines().nth(1).unwrap().parse::<u64>().unwrap()
    } {
        ws.ok(&["run", "--session", "other", "/help"]);
    }
    let o = ws.run(&["verify", "--checkpoint", "later.checkpoint"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("not the tree the checkpoint commits to"),
        "{out}"
    );

    // The real log back: it passes; a checkpoint with its size changed does not.
    std::fs::rename(&current, ws.log_path()).unwrap();
    std::fs::rename(wal(&current), wal(&ws.log_path())).unwrap();
    std::fs::rename(lock(&current), lock(&ws.log_path())).unwrap();
    assert_eq!(
        ws.run(&["verify", "--checkpoint", "later.checkpoint"])
            .status
            .code(),
        Some(0)
    );
    let cp = std::fs::read_to_string(ws.path("ws/later.checkpoint")).unwrap();
    let size: u64 = cp.lines().nth(1).unwrap().parse().unwrap();
    let forged = cp.replacen(&format!("\n{size}\n"), &format!("\n{}\n", size - 1), 1);
    ws.write("forged.checkpoint", forged);
    let o = ws.run(&["verify", "--checkpoint", "forged.checkpoint"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("does not verify"), "{out}");
    // Another key's verifier finds no signature it knows.
    let other = "someone.else+6f6b3eb6+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let o = ws.run(&[
        "verify",
        "--checkpoint",
        "later.checkpoint",
        "--vkey",
        other,
    ]);
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn a_key_given_with_key_is_used_and_a_shared_key_file_is_refused() {
    let ws = Workspace::new();
    session(&ws, 1);
    let key = ws.path("~/ci/log.key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        key.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let vkey = ws.ok(&["key", "--key", key.to_str().unwrap()]);
    assert!(key.exists());
    let by_env = ws.cmd(&["key"]).env("CMDLOG_KEY", &key).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&by_env.stdout), vkey);
    assert_ne!(ws.ok(&["key"]), vkey, "the default key is another");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = ws.run(&["checkpoint", "--key", key.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("owner-only") && err.contains("--key"), "{err}");
    let o = ws.run(&["prove", "999"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Tiles read from a folder `cmdlog tiles` wrote, by their C2SP paths.
struct FromFolder(std::path::PathBuf);

impl tlog_tiles::TileReader for FromFolder {
    fn height(&self) -> u8 {
        8
    }
    fn read_tiles(&self, tiles: &[tlog_tiles::Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        Ok(tiles
            .iter()
            .map(|t| {
                let go = t.path();
                let rest = go.strip_prefix("tile/8/").unwrap();
                let c2sp = match rest.strip_prefix("data/") {
                    Some(rest) => format!("tile/entries/{rest}"),
                    None => format!("tile/{rest}"),
                };
                std::fs::read(self.0.join(&c2sp)).unwrap_or_else(|e| panic!("{c2sp}: {e}"))
            })
            .collect())
    }
    fn save_tiles(&self, _: &[tlog_tiles::Tile], _: &[Vec<u8>]) {}
}

#[test]
fn tiles_written_to_a_folder_serve_a_tlog_client() {
    let ws = Workspace::new();
    session(&ws, 4);
    let vkey = ws.ok(&["key"]).trim().to_string();
    let out = ws.json(&["tiles", "-o", "tlog", "--json"]);
    let dir = ws.path("ws/tlog");
    let note = std::fs::read_to_string(dir.join("checkpoint")).unwrap();
    assert_eq!(out["checkpoint"].as_str(), Some(note.as_str()));
    let checkpoint = their_checkpoint(&vkey, &note);
    let size = checkpoint.size();
    assert_eq!(out["size"], size);
    let folder = FromFolder(dir.clone());
    let reader = tlog_tiles::TileHashReader::new(size, *checkpoint.hash(), &folder);
    assert_eq!(tree_hash(size, &reader).unwrap(), *checkpoint.hash());
    // The entry bundle holds every record's leaf, each proved from the tiles.
    let bundle = std::fs::read(dir.join(format!("tile/entries/000.p/{size}"))).unwrap();
    let mut rest = &bundle[..];
    let mut index = 0;
    while !rest.is_empty() {
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        let entry = &rest[2..2 + len];
        let proof = tlog_tiles::prove_record(size, index, &reader).unwrap();
        check_record(&proof, size, *checkpoint.hash(), index, record_hash(entry)).unwrap();
        rest = &rest[2 + len..];
        index += 1;
    }
    assert_eq!(index, size);
}
