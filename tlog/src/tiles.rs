//! C2SP tiles (`c2sp.org/tlog-tiles`): the tree cut into tiles of height 8 so a
//! static file server can serve it. A tile at level `L`, index `N` holds up to 256
//! hashes: hash `i` is the root of the complete subtree over leaves
//! `(N·256 + i)·256^L ..` of `256^L` leaves, i.e. node `(8L, N·256 + i)`. The
//! rightmost tile of a level is partial (`.p/<width>`) until it fills. Entry
//! bundles (`tile/entries/N`) hold the leaves' inputs, each behind its length
//! as a big-endian u16.

use crate::hash::Hash;
use crate::tree::NodeSource;

/// Hashes (or entries) in a full tile.
pub const TILE_WIDTH: u64 = 256;
/// Tree levels a tile spans.
pub const TILE_HEIGHT: u32 = 8;

/// A tile's place: its level (`None` for an entry bundle), its index, and its
/// width (256 for a full tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileId {
    /// The tile level, or `None` for a bundle of entries.
    pub level: Option<u32>,
    /// The tile's index on its level.
    pub index: u64,
    /// How many hashes (entries) it holds, 1..=256.
    pub width: u64,
}

impl TileId {
    /// Its path under the log's prefix: `tile/<L>/<N>[.p/<W>]` or
    /// `tile/entries/<N>[.p/<W>]`, `N` in groups of three digits (`x001/x234/067`).
    pub fn path(&self) -> String {
        let level = match self.level {
            Some(level) => level.to_string(),
            None => "entries".to_string(),
        };
        let mut path = format!("tile/{level}/{}", index_path(self.index));
        if self.width < TILE_WIDTH {
            path.push_str(&format!(".p/{}", self.width));
        }
        path
    }

    /// Reads a path written by [`TileId::path`] (after `tile/`), or `None`.
    pub fn parse(path: &str) -> Option<TileId> {
        let (level, rest) = path.split_once('/')?;
        let level = if level == "entries" {
            None
        } else {
            if level.len() > 1 && level.starts_with('0') {
                return None;
            }
            Some(level.parse::<u32>().ok().filter(|l| *l < 64)?)
        };
        let (index, width) = match rest.split_once(".p/") {
            Some((index, width)) => {
                if width.starts_with('0') {
                    return None;
                }
                let width: u64 = width.parse().ok()?;
                if !(1..TILE_WIDTH).contains(&width) {
                    return None;
                }
                (index, width)
            }
            None => (rest, TILE_WIDTH),
        };
        let mut groups = index.split('/').peekable();
        let mut value: u64 = 0;
        while let Some(group) = groups.next() {
            let digits = if groups.peek().is_some() {
                group.strip_prefix('x')?
            } else {
                group
            };
            if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            value = value
                .checked_mul(1000)?
                .checked_add(digits.parse::<u64>().ok()?)?;
        }
        Some(TileId {
            level,
            index: value,
            width,
        })
    }

    /// The leaves an entry bundle (or a level-0 tile) covers.
    pub fn leaves(&self) -> std::ops::Range<u64> {
        let start = self.index * TILE_WIDTH;
        start..start + self.width
    }

    /// Whether this tile exists for a tree of `size` leaves: full tiles wholly
    /// inside it, and the partial tile of exactly the width the tree gives.
    pub fn exists_in(&self, size: u64) -> bool {
        let level = self.level.unwrap_or(0);
        let Some(span) = TILE_WIDTH.checked_pow(level) else {
            return false;
        };
        let hashes = size / span;
        let full = hashes / TILE_WIDTH;
        if self.width == TILE_WIDTH {
            self.index < full
        } else {
            self.index == full && self.width == hashes % TILE_WIDTH
        }
    }
}

impl TileId {
    /// Whether every hash (entry) of this tile is in a tree of `size` leaves: what
    /// a log can serve for any size it checkpointed up to `size` (an older
    /// checkpoint's partial tiles too).
    pub fn within(&self, size: u64) -> bool {
        let level = self.level.unwrap_or(0);
        let Some(span) = TILE_WIDTH.checked_pow(level) else {
            return false;
        };
        self.index
            .checked_mul(TILE_WIDTH)
            .and_then(|i| i.checked_add(self.width))
            .and_then(|end| end.checked_mul(span))
            .is_some_and(|leaves| leaves <= size)
    }
}

/// `N` in groups of three digits, each but the last behind an `x`.
fn index_path(index: u64) -> String {
    let mut groups = vec![format!("{:03}", index % 1000)];
    let mut rest = index / 1000;
    while rest > 0 {
        groups.push(format!("x{:03}", rest % 1000));
        rest /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

/// Every tile (hash tiles of every level, and entry bundles) of a tree of `size`
/// leaves, full ones and the partial rightmost ones.
pub fn tiles_of(size: u64) -> Vec<TileId> {
    let mut tiles = Vec::new();
    let mut hashes = size;
    let mut level = 0;
    while hashes > 0 {
        push_level(&mut tiles, Some(level), hashes);
        hashes /= TILE_WIDTH;
        level += 1;
    }
    push_level(&mut tiles, None, size);
    tiles
}

fn push_level(tiles: &mut Vec<TileId>, level: Option<u32>, hashes: u64) {
    for index in 0..hashes / TILE_WIDTH {
        tiles.push(TileId {
            level,
            index,
            width: TILE_WIDTH,
        });
    }
    if !hashes.is_multiple_of(TILE_WIDTH) {
        tiles.push(TileId {
            level,
            index: hashes / TILE_WIDTH,
            width: hashes % TILE_WIDTH,
        });
    }
}

/// A hash tile's bytes: its hashes back to back.
///
/// # Panics
/// For an entry bundle's id.
pub fn tile_bytes<S: NodeSource>(src: &S, tile: TileId) -> Result<Vec<u8>, S::Error> {
    let level = tile.level.expect("a hash tile");
    let mut bytes = Vec::with_capacity(tile.width as usize * 32);
    for i in 0..tile.width {
        let hash: Hash = src.node(level * TILE_HEIGHT, tile.index * TILE_WIDTH + i)?;
        bytes.extend_from_slice(&hash);
    }
    Ok(bytes)
}

/// An entry bundle's bytes from its entries (each at most 65,535 bytes).
pub fn bundle_bytes<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    for entry in entries {
        let len = u16::try_from(entry.len()).ok()?;
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend_from_slice(entry);
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_spec() {
        let tile = |level, index, width| TileId {
            level,
            index,
            width,
        };
        assert_eq!(tile(Some(0), 1234067, 256).path(), "tile/0/x001/x234/067");
        assert_eq!(tile(Some(2), 0, 1).path(), "tile/2/000.p/1");
        assert_eq!(tile(None, 1000, 112).path(), "tile/entries/x001/000.p/112");
        for t in [
            tile(Some(0), 1234067, 256),
            tile(Some(2), 0, 1),
            tile(None, 1000, 112),
            tile(Some(1), 999, 17),
        ] {
            assert_eq!(
                TileId::parse(t.path().strip_prefix("tile/").unwrap()),
                Some(t)
            );
        }
        for bad in [
            "0/1",
            "0/x001",
            "0/001.p/0",
            "0/001.p/256",
            "01/000",
            "0/x1/000",
            "64/000",
        ] {
            assert_eq!(TileId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tree_of_70000_has_the_tiles_the_spec_lists() {
        let tiles = tiles_of(70_000);
        let level = |l: Option<u32>| tiles.iter().filter(|t| t.level == l).collect::<Vec<_>>();
        assert_eq!(level(Some(0)).len(), 274);
        assert_eq!(level(Some(0)).last().unwrap().width, 112);
        assert_eq!(level(Some(1)).len(), 2);
        assert_eq!(level(Some(1)).last().unwrap().width, 17);
        assert_eq!(level(Some(2)).len(), 1);
        assert_eq!(level(Some(2))[0].width, 1);
        assert_eq!(level(None).len(), 274);
        assert!(tiles.iter().all(|t| t.exists_in(70_000)));
        assert!(
            !TileId {
                level: Some(0),
                index: 273,
                width: 111
            }
            .exists_in(70_000)
        );
    }
}
