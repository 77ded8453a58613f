//! `cmdlog serve` as a C2SP tile server: a tlog client we did not write
//! (`tlog_tiles`' `TileHashReader`, which checks every tile against the signed
//! root before it uses a hash) audits the daemon's log over HTTP alone.

use std::io::Read;

use cmdlog_test_support::Workspace;
use cmdlog_test_support::daemon::http;
use signed_note::{StandardVerifier, VerifierList};
use tlog_tiles::{
    Tile, TileHashReader, TileReader, check_record, prove_record, record_hash, tree_hash,
};

/// Tiles fetched from the daemon, by their C2SP paths.
struct OverHttp {
    base: String,
    token: Option<String>,
}

impl OverHttp {
    fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let mut request = http().get(format!("{}/{path}", self.base));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let mut res = request.call().unwrap();
        let status = res.status().as_u16();
        let mut bytes = vec![];
        res.body_mut().as_reader().read_to_end(&mut bytes).unwrap();
        (status, bytes)
    }
}

/// Go's `tile/8/L/N` and `tile/8/data/N` as C2SP writes them.
fn c2sp(tile: &Tile) -> String {
    let path = tile.path();
    let rest = path.strip_prefix("tile/8/").unwrap();
    match rest.strip_prefix("data/") {
        Some(rest) => format!("tile/entries/{rest}"),
        None => format!("tile/{rest}"),
    }
}

impl TileReader for OverHttp {
    fn height(&self) -> u8 {
        8
    }
    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        Ok(tiles
            .iter()
            .map(|t| {
                let (status, bytes) = self.get(&c2sp(t));
                assert_eq!(
                    status,
                    200,
                    "{}: {}",
                    c2sp(t),
                    String::from_utf8_lossy(&bytes)
                );
                bytes
            })
            .collect())
    }
    fn save_tiles(&self, _: &[Tile], _: &[Vec<u8>]) {}
}

#[test]
fn a_tlog_client_audits_the_daemons_log_from_its_checkpoint_and_tiles() {
    let ws = Workspace::new();
    // Past 256 records, so a level-1 tile exists.
    ws.ok(&["run", "--session", "s", "/help"]);
    while ws.head().0 <= 300 {
        ws.ok(&["run", "--session", "s", "/help"]);
    }
    let vkey = ws.ok(&["key"]).trim().to_string();
    let id = ws.json(&["key", "--json"])["log_id"]
        .as_str()
        .unwrap()
        .to_string();
    let daemon = ws.serve_with("127.0.0.1:0", &[], Some("secret-token"));
    let base = format!("{}/log/{id}", daemon.url);
    let public = OverHttp {
        base: base.clone(),
        token: None,
    };
    let (status, note) = public.get("checkpoint");
    assert_eq!(status, 200);
    // `cmdlog checkpoint` while the daemon holds the log (read through it):
    // the daemon's note, byte for byte (the same key, the same tree).
    assert_eq!(ws.ok(&["checkpoint"]).as_bytes(), &note[..]);
    let note = signed_note::Note::from_bytes(&note).unwrap();
    note.verify(&VerifierList::new(vec![Box::new(
        StandardVerifier::new(&vkey).unwrap(),
    )]))
    .unwrap();
    let checkpoint = tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap();
    let size = checkpoint.size();
    assert!(size > 300, "{size}");

    // Hash tiles need no token; everything a proof needs comes from them.
    let reader = TileHashReader::new(size, *checkpoint.hash(), &public);
    assert_eq!(tree_hash(size, &reader).unwrap(), *checkpoint.hash());
    // Entry bundles are the records: the token is asked for.
    assert_eq!(public.get("tile/entries/000").0, 401);
    let private = OverHttp {
        base,
        token: Some("secret-token".into()),
    };
    let (status, bundle) = private.get("tile/entries/000");
    assert_eq!(status, 200);
    let mut entries = vec![];
    let mut rest = &bundle[..];
    while !rest.is_empty() {
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        entries.push(rest[2..2 + len].to_vec());
        rest = &rest[2 + len..];
    }
    assert_eq!(entries.len(), 256);
    for index in [0u64, 1, 100, 255] {
        let entry = &entries[index as usize];
        let record: serde_json::Value = serde_json::from_slice(entry).unwrap();
        assert_eq!(record["seq"], index + 1);
        let proof = prove_record(size, index, &reader).unwrap();
        check_record(&proof, size, *checkpoint.hash(), index, record_hash(entry)).unwrap();
    }
    // Tiles past the head, malformed paths and other logs are not found.
    assert_eq!(public.get("tile/0/x001/000").0, 404);
    assert_eq!(public.get("tile/0/0").0, 404);
    let other = OverHttp {
        base: format!("{}/log/{}", daemon.url, "0".repeat(32)),
        token: None,
    };
    assert_eq!(other.get("checkpoint").0, 404);
}
