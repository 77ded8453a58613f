//! The Merkle tree of RFC 9162 §2.1 over stored node hashes: its root at any size,
//! and the inclusion and consistency proofs of §2.1.3.1 and §2.1.4.1, computed
//! from the *complete* subtrees a [`NodeSource`] keeps (so a proof reads
//! O(log² n) hashes and never a leaf's input), and the [`Frontier`] an appender
//! keeps to find which complete subtrees each new leaf closes.
//!
//! Node `(level, index)` is the root of the complete subtree over leaves
//! `index·2^level .. (index+1)·2^level`; level 0 holds the leaf hashes.

use crate::hash::{Hash, empty_root, node_hash};

/// Where the hashes of complete subtrees are kept.
pub trait NodeSource {
    /// What reading a hash can fail with.
    type Error;
    /// The hash of the complete subtree `(level, index)`. Only asked for subtrees
    /// that lie wholly inside the tree size the caller passed.
    fn node(&self, level: u32, index: u64) -> Result<Hash, Self::Error>;
}

/// Hashes kept in memory: `levels[l][i]` is node `(l, i)`.
impl NodeSource for Vec<Vec<Hash>> {
    type Error = std::convert::Infallible;
    fn node(&self, level: u32, index: u64) -> Result<Hash, Self::Error> {
        Ok(self[level as usize][index as usize])
    }
}

/// The largest power of two strictly below `n` (`n` ≥ 2): where RFC 9162 splits a
/// tree of `n` leaves.
fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// MTH of leaves `start..end` (RFC 9162 §2.1.1), `start < end`.
pub fn subtree_root<S: NodeSource>(src: &S, start: u64, end: u64) -> Result<Hash, S::Error> {
    debug_assert!(start < end);
    let n = end - start;
    if n.is_power_of_two() && start.is_multiple_of(n) {
        return src.node(n.trailing_zeros(), start / n);
    }
    let k = split(n);
    let left = subtree_root(src, start, start + k)?;
    let right = subtree_root(src, start + k, end)?;
    Ok(node_hash(&left, &right))
}

/// The root hash of the tree of the first `size` leaves.
pub fn root<S: NodeSource>(src: &S, size: u64) -> Result<Hash, S::Error> {
    if size == 0 {
        return Ok(empty_root());
    }
    subtree_root(src, 0, size)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162
/// §2.1.3.1 `PATH`), the sibling nearest the leaf first.
///
/// # Panics
/// When `index >= size`: callers check the range and say so in their own terms.
pub fn inclusion_proof<S: NodeSource>(
    src: &S,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, S::Error> {
    assert!(index < size, "leaf {index} is not in a tree of {size}");
    let mut proof = Vec::new();
    path(src, index, 0, size, &mut proof)?;
    Ok(proof)
}

fn path<S: NodeSource>(
    src: &S,
    m: u64,
    start: u64,
    n: u64,
    out: &mut Vec<Hash>,
) -> Result<(), S::Error> {
    if n == 1 {
        return Ok(());
    }
    let k = split(n);
    if m < k {
        path(src, m, start, k, out)?;
        out.push(subtree_root(src, start + k, start + n)?);
    } else {
        path(src, m - k, start + k, n - k, out)?;
        out.push(subtree_root(src, start, start + k)?);
    }
    Ok(())
}

/// The consistency proof from the tree of `old` leaves to the tree of `new` leaves
/// (RFC 9162 §2.1.4.1 `PROOF`); empty when `old` is 0 or equals `new`.
///
/// # Panics
/// When `old > new`.
pub fn consistency_proof<S: NodeSource>(
    src: &S,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, S::Error> {
    assert!(old <= new, "a tree of {old} cannot precede one of {new}");
    let mut proof = Vec::new();
    if old > 0 && old < new {
        subproof(src, old, 0, new, true, &mut proof)?;
    }
    Ok(proof)
}

fn subproof<S: NodeSource>(
    src: &S,
    m: u64,
    start: u64,
    n: u64,
    whole: bool,
    out: &mut Vec<Hash>,
) -> Result<(), S::Error> {
    if m == n {
        if !whole {
            out.push(subtree_root(src, start, start + n)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(src, m, start, k, whole, out)?;
        out.push(subtree_root(src, start + k, start + n)?);
    } else {
        subproof(src, m - k, start + k, n - k, false, out)?;
        out.push(subtree_root(src, start, start + k)?);
    }
    Ok(())
}

/// The right edge of a tree: the roots of its complete subtrees, one per set bit
/// of its size, largest first. Enough to append a leaf and to give the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    nodes: Vec<Hash>,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Frontier::default()
    }

    /// The frontier of the tree of the first `size` leaves, read from `src`.
    pub fn of<S: NodeSource>(src: &S, size: u64) -> Result<Self, S::Error> {
        let mut nodes = Vec::with_capacity(size.count_ones() as usize);
        let mut start = 0;
        for level in (0..64).rev() {
            if size & (1 << level) != 0 {
                nodes.push(src.node(level, start >> level)?);
                start += 1 << level;
            }
        }
        Ok(Frontier { size, nodes })
    }

    /// How many leaves the tree has.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf (its hash) and pushes onto `closed` the hashes of the
    /// complete subtrees it closes, by level: the leaf's own, then node
    /// `(1, size/2)` if it completes one, and so on (`trailing_ones(size) + 1`
    /// hashes in all, `size` the leaf's index).
    pub fn push(&mut self, leaf: Hash, closed: &mut Vec<Hash>) {
        closed.push(leaf);
        let mut hash = leaf;
        let mut bits = self.size;
        while bits & 1 == 1 {
            let left = self.nodes.pop().expect("a set bit has its subtree");
            hash = node_hash(&left, &hash);
            closed.push(hash);
            bits >>= 1;
        }
        self.nodes.push(hash);
        self.size += 1;
    }

    /// The tree's root hash.
    pub fn root(&self) -> Hash {
        let mut nodes = self.nodes.iter().rev();
        let Some(last) = nodes.next() else {
            return empty_root();
        };
        nodes.fold(*last, |right, left| node_hash(left, &right))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::leaf_hash;

    /// MTH straight from RFC 9162's recursive definition, over leaf inputs.
    pub(crate) fn reference_root(leaves: &[Vec<u8>]) -> Hash {
        match leaves.len() {
            0 => empty_root(),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = split(n as u64) as usize;
                node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    fn build(n: usize) -> (Vec<Vec<u8>>, Vec<Vec<Hash>>, Vec<Hash>) {
        let leaves: Vec<Vec<u8>> = (0..n).map(|i| format!("leaf {i}").into_bytes()).collect();
        let mut levels: Vec<Vec<Hash>> = vec![vec![]];
        let mut frontier = Frontier::new();
        let mut roots = vec![frontier.root()];
        for leaf in &leaves {
            let mut closed = vec![];
            frontier.push(leaf_hash(leaf), &mut closed);
            for (level, hash) in closed.into_iter().enumerate() {
                if levels.len() <= level {
                    levels.push(vec![]);
                }
                levels[level].push(hash);
            }
            roots.push(frontier.root());
        }
        (leaves, levels, roots)
    }

    #[test]
    fn roots_match_the_recursive_definition_at_every_size() {
        let (leaves, levels, roots) = build(300);
        for size in 0..=leaves.len() {
            let expected = reference_root(&leaves[..size]);
            assert_eq!(roots[size], expected, "frontier root at {size}");
            assert_eq!(
                root(&levels, size as u64).unwrap(),
                expected,
                "stored root at {size}"
            );
            assert_eq!(
                Frontier::of(&levels, size as u64).unwrap().root(),
                expected,
                "frontier read back at {size}"
            );
        }
    }

    #[test]
    fn proofs_have_the_lengths_rfc_9162_gives() {
        let (_, levels, _) = build(8);
        // The RFC's worked tree of 7 leaves (§2.1.5): leaf 0 needs 3 hashes, leaf 6 two.
        assert_eq!(inclusion_proof(&levels, 0, 7).unwrap().len(), 3);
        assert_eq!(inclusion_proof(&levels, 6, 7).unwrap().len(), 2);
        // Consistency 3 → 7 takes 4 hashes, 4 → 7 takes 1, 6 → 7 takes 3.
        assert_eq!(consistency_proof(&levels, 3, 7).unwrap().len(), 4);
        assert_eq!(consistency_proof(&levels, 4, 7).unwrap().len(), 1);
        assert_eq!(consistency_proof(&levels, 6, 7).unwrap().len(), 3);
        assert!(consistency_proof(&levels, 7, 7).unwrap().is_empty());
        assert!(consistency_proof(&levels, 0, 7).unwrap().is_empty());
    }
}
