//! Checking inclusion and consistency proofs as RFC 9162 §2.1.3.2 and §2.1.4.2
//! say, with nothing but the proof, the sizes and the roots.

use crate::hash::{Hash, node_hash};

/// Why a proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf {index} is not in a tree of {size} leaves")]
    IndexOutOfRange {
        /// The leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The older tree is larger than the newer one.
    #[error("a tree of {old} leaves cannot precede one of {new}")]
    SizesOutOfOrder {
        /// The older size.
        old: u64,
        /// The newer size.
        new: u64,
    },
    /// The proof has too many or too few hashes for these sizes.
    #[error("a proof of {found} hashes does not fit these tree sizes")]
    WrongLength {
        /// How many hashes it had.
        found: usize,
    },
    /// The proof leads to another root than the one given.
    #[error("the proof leads to another root hash")]
    RootMismatch,
    /// The proof does not reproduce the older root.
    #[error("the proof does not lead to the older tree's root hash")]
    OldRootMismatch,
    /// The proof does not reproduce the newer root.
    #[error("the proof does not lead to the newer tree's root hash")]
    NewRootMismatch,
}

/// The root an inclusion proof leads to from `leaf` at `index` in a tree of `size`.
pub fn root_from_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
) -> Result<Hash, ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return Err(ProofError::WrongLength { found: proof.len() });
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::WrongLength { found: proof.len() });
    }
    Ok(r)
}

/// Checks that `leaf` (a leaf hash) is leaf `index` of the tree of `size` whose
/// root is `root`.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if root_from_inclusion(leaf, index, size, proof)? == *root {
        Ok(())
    } else {
        Err(ProofError::RootMismatch)
    }
}

/// Checks that the tree of `new` leaves with root `new_root` extends the tree of
/// `old` leaves with root `old_root`: the first `old` leaves are the same.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old > new {
        return Err(ProofError::SizesOutOfOrder { old, new });
    }
    if old == new {
        if !proof.is_empty() {
            return Err(ProofError::WrongLength { found: proof.len() });
        }
        return if old_root == new_root {
            Ok(())
        } else {
            Err(ProofError::NewRootMismatch)
        };
    }
    if old == 0 {
        // Every tree extends the empty one.
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(ProofError::WrongLength { found: proof.len() })
        };
    }
    let wrong_length = ProofError::WrongLength { found: proof.len() };
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some((first, rest)) = path.split_first() else {
        return Err(wrong_length);
    };
    let (mut f, mut s) = (old - 1, new - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if s == 0 {
            return Err(wrong_length);
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(wrong_length);
    }
    if fr != *old_root {
        return Err(ProofError::OldRootMismatch);
    }
    if sr != *new_root {
        return Err(ProofError::NewRootMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::leaf_hash;
    use crate::tree::{Frontier, consistency_proof, inclusion_proof, root};
    use proptest::prelude::*;

    fn levels(n: u64) -> Vec<Vec<Hash>> {
        let mut levels: Vec<Vec<Hash>> = vec![vec![]];
        let mut frontier = Frontier::new();
        for i in 0..n {
            let mut closed = vec![];
            frontier.push(leaf_hash(&i.to_le_bytes()), &mut closed);
            for (level, hash) in closed.into_iter().enumerate() {
                if levels.len() <= level {
                    levels.push(vec![]);
                }
                levels[level].push(hash);
            }
        }
        levels
    }

    #[test]
    fn every_inclusion_proof_up_to_129_leaves_verifies_and_no_other_leaf_does() {
        let tree = levels(129);
        for size in 1..=129u64 {
            let r = root(&tree, size).unwrap();
            for index in 0..size {
                let proof = inclusion_proof(&tree, index, size).unwrap();
                let leaf = leaf_hash(&index.to_le_bytes());
                assert_eq!(verify_inclusion(&leaf, index, size, &proof, &r), Ok(()));
                let other = leaf_hash(b"another");
                assert!(verify_inclusion(&other, index, size, &proof, &r).is_err());
                if size > 1 {
                    let moved = (index + 1) % size;
                    assert!(
                        verify_inclusion(&leaf, moved, size, &proof, &r).is_err(),
                        "leaf {index} of {size} also proved at {moved}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_consistency_proof_up_to_129_leaves_verifies() {
        let tree = levels(129);
        for new in 0..=129u64 {
            let new_root = root(&tree, new).unwrap();
            for old in 0..=new {
                let old_root = root(&tree, old).unwrap();
                let proof = consistency_proof(&tree, old, new).unwrap();
                assert_eq!(
                    verify_consistency(old, new, &old_root, &new_root, &proof),
                    Ok(()),
                    "{old} → {new}"
                );
                if old > 0 && old < new {
                    let forged = leaf_hash(b"not the old root");
                    assert!(verify_consistency(old, new, &forged, &new_root, &proof).is_err());
                    assert!(verify_consistency(old, new, &old_root, &forged, &proof).is_err());
                    let mut short = proof.clone();
                    short.pop();
                    assert!(verify_consistency(old, new, &old_root, &new_root, &short).is_err());
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A tree that differs from the old one in any leaf below `old` has no proof
        /// that passes: the proof of the changed tree fails against the old root.
        #[test]
        fn a_changed_prefix_is_never_consistent(new in 2u64..300, old_frac in 0.0f64..1.0, at_frac in 0.0f64..1.0) {
            let old = 1 + ((new - 1) as f64 * old_frac) as u64;
            let changed_at = ((old as f64) * at_frac) as u64 % old;
            let tree = levels(new);
            let old_root = root(&tree, old).unwrap();
            let mut changed = tree.clone();
            changed[0][changed_at as usize] = leaf_hash(b"changed");
            // Rebuild the changed tree's upper levels.
            let mut frontier = Frontier::new();
            let mut rebuilt: Vec<Vec<Hash>> = vec![vec![]];
            for leaf in &changed[0] {
                let mut closed = vec![];
                frontier.push(*leaf, &mut closed);
                for (level, hash) in closed.into_iter().enumerate() {
                    if rebuilt.len() <= level { rebuilt.push(vec![]); }
                    rebuilt[level].push(hash);
                }
            }
            let new_root = root(&rebuilt, new).unwrap();
            let proof = consistency_proof(&rebuilt, old, new).unwrap();
            prop_assert!(verify_consistency(old, new, &old_root, &new_root, &proof).is_err());
        }
    }
}
