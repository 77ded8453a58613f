//! cmdlog's tree, proofs, checkpoints and notes checked by implementations we did
//! not write: `tlog_tiles` and `signed_note` (ports of Go's `sumdb/tlog` and
//! `sumdb/note`), on trees of every size up to a few hundred.

use cmdlog_tlog::{
    Checkpoint, Frontier, Hash, KeyKind, Note, NoteVerifier, Signer, consistency_proof,
    inclusion_proof, leaf_hash, root, verify_consistency, verify_inclusion,
};
use tlog_tiles::{
    HashReader, check_record, check_tree, prove_record, prove_tree, stored_hashes, tree_hash,
};

/// `tlog_tiles`'s own store of hashes, appended leaf by leaf.
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

/// Ours: node hashes by level, as the store keeps them.
fn ours(leaves: &[Vec<u8>]) -> Vec<Vec<Hash>> {
    let mut levels: Vec<Vec<Hash>> = vec![vec![]];
    let mut frontier = Frontier::new();
    for leaf in leaves {
        let mut closed = vec![];
        frontier.push(leaf_hash(leaf), &mut closed);
        for (level, hash) in closed.into_iter().enumerate() {
            if levels.len() <= level {
                levels.push(vec![]);
            }
            levels[level].push(hash);
        }
    }
    levels
}

fn theirs(leaves: &[Vec<u8>]) -> TheirStore {
    let mut store = TheirStore::default();
    for (i, leaf) in leaves.iter().enumerate() {
        let hashes = stored_hashes(i as u64, leaf, &store).unwrap();
        store.0.extend(hashes);
    }
    store
}

fn wrap(proof: &[Hash]) -> Vec<tlog_tiles::Hash> {
    proof.iter().map(|h| tlog_tiles::Hash(*h)).collect()
}

/// Random leaves of random lengths (a seed printed, replayable with CMDLOG_SEED).
fn leaves(n: usize) -> Vec<Vec<u8>> {
    let seed: u64 = std::env::var("CMDLOG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| (std::process::id() as u64 * 0x9e37_79b9) | 1);
    println!("seed {seed} (CMDLOG_SEED={seed} replays it)");
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let len = (next() % 300) as usize;
            (0..len).map(|_| next() as u8).collect()
        })
        .collect()
}

#[test]
fn roots_and_inclusion_proofs_agree_with_tlog_tiles_at_every_size_up_to_300() {
    let leaves = leaves(300);
    let (mine, theirs) = (ours(&leaves), theirs(&leaves));
    for size in 0..=leaves.len() as u64 {
        let r = root(&mine, size).unwrap();
        assert_eq!(r, tree_hash(size, &theirs).unwrap().0, "root at {size}");
        for index in 0..size {
            let proof = inclusion_proof(&mine, index, size).unwrap();
            let their_proof = prove_record(size, index, &theirs).unwrap();
            assert_eq!(
                wrap(&proof),
                their_proof,
                "inclusion proof of {index} in {size}"
            );
            let leaf = leaf_hash(&leaves[index as usize]);
            check_record(
                &wrap(&proof),
                size,
                tlog_tiles::Hash(r),
                index,
                tlog_tiles::Hash(leaf),
            )
            .unwrap();
            verify_inclusion(
                &leaf,
                index,
                size,
                &their_proof.iter().map(|h| h.0).collect::<Vec<_>>(),
                &r,
            )
            .unwrap();
        }
    }
}

#[test]
fn consistency_proofs_agree_with_tlog_tiles_for_every_size_pair_up_to_200() {
    let leaves = leaves(200);
    let (mine, theirs) = (ours(&leaves), theirs(&leaves));
    for new in 1..=leaves.len() as u64 {
        let new_root = root(&mine, new).unwrap();
        for old in 1..=new {
            let old_root = root(&mine, old).unwrap();
            let proof = consistency_proof(&mine, old, new).unwrap();
            let their_proof = prove_tree(new, old, &theirs).unwrap();
            assert_eq!(wrap(&proof), their_proof, "consistency {old} → {new}");
            check_tree(
                &wrap(&proof),
                new,
                tlog_tiles::Hash(new_root),
                old,
                tlog_tiles::Hash(old_root),
            )
            .unwrap();
            verify_consistency(old, new, &old_root, &new_root, &proof).unwrap();
        }
    }
}

#[test]
fn signed_checkpoints_are_read_and_verified_by_signed_note_and_tlog_tiles() {
    use signed_note::{StandardVerifier, VerifierList};
    let signer = Signer::from_seed("cmdlog/0123abcd", KeyKind::Ed25519, [42; 32]).unwrap();
    let leaves = leaves(37);
    let checkpoint = Checkpoint {
        origin: "cmdlog/0123abcd".into(),
        size: 37,
        root: root(&ours(&leaves), 37).unwrap(),
        extensions: vec![],
    };
    let note = signer.sign(&checkpoint.to_text()).unwrap();
    // Their reading of our verifier key and note.
    let verifier = StandardVerifier::new(&signer.verifier().to_string()).unwrap();
    let theirs = signed_note::Note::from_bytes(note.as_bytes()).unwrap();
    let (verified, unknown) = theirs
        .verify(&VerifierList::new(vec![Box::new(verifier)]))
        .unwrap();
    assert_eq!((verified.len(), unknown.len()), (1, 0));
    let read = tlog_tiles::Checkpoint::from_bytes(theirs.text()).unwrap();
    assert_eq!(
        (read.origin(), read.size(), read.hash().0),
        ("cmdlog/0123abcd", 37, checkpoint.root)
    );
    // A changed size fails their check.
    let forged = note.replacen("\n37\n", "\n36\n", 1);
    let theirs = signed_note::Note::from_bytes(forged.as_bytes()).unwrap();
    let verifier = StandardVerifier::new(&signer.verifier().to_string()).unwrap();
    assert!(
        theirs
            .verify(&VerifierList::new(vec![Box::new(verifier)]))
            .is_err()
    );

    // Our reading of a note they signed (Go's format for the private key).
    let skey = signer.to_private_string();
    let their_signer = signed_note::StandardSigner::new(&skey).unwrap();
    let mut their_note = signed_note::Note::new(checkpoint.to_text().as_bytes(), &[]).unwrap();
    their_note.add_sigs(&[&their_signer]).unwrap();
    let text = String::from_utf8(their_note.to_bytes()).unwrap();
    assert_eq!(
        text, note,
        "Ed25519 is deterministic: the same note, byte for byte"
    );
    let ours = Note::parse(&text).unwrap();
    ours.verify(&[NoteVerifier::parse(&signer.verifier().to_string()).unwrap()])
        .unwrap();
}
