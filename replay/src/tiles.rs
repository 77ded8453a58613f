//! The log as C2SP tiles (`c2sp.org/tlog-tiles`): each tile's bytes from the
//! stored tree, entry bundles from the records' leaf inputs, and a folder of
//! them with the checkpoint, for any static file server or tlog client.

use std::io::Write;
use std::path::{Path, PathBuf};

use cmdlog_store::{Log, ReadError, Seq, TreeError, TreeView};
use cmdlog_tlog::tiles::{self, TileId};

use crate::checkpoint::SignedCheckpoint;

/// Why a tile could not be given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TileError {
    /// No such tile in the tree at this size (or a malformed path).
    #[error("no tile {0} in this log's tree")]
    NotFound(String),
    /// A leaf input is longer than an entry bundle can hold (65,535 bytes).
    #[error(
        "entry bundle {tile}: record {seq} is {bytes} bytes as a leaf, more than the 65,535 an entry bundle holds"
    )]
    EntryTooLarge {
        /// The bundle's path.
        tile: String,
        /// The record.
        seq: Seq,
        /// Its leaf input's length.
        bytes: usize,
    },
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The tree could not be read.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The folder could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The bytes of the tile at `path` (after `tile/`), from `view`'s tree; any tile
/// whose hashes (entries) are all in it.
pub fn tile_at(log: &Log, view: &TreeView, path: &str) -> Result<Vec<u8>, TileError> {
    let tile = TileId::parse(path)
        .filter(|t| t.within(view.size()))
        .ok_or_else(|| TileError::NotFound(format!("tile/{path}")))?;
    tile_bytes(log, view, tile)
}

fn tile_bytes(log: &Log, view: &TreeView, tile: TileId) -> Result<Vec<u8>, TileError> {
    if tile.level.is_some() {
        return Ok(tiles::tile_bytes(view, tile)?);
    }
    let leaves = tile.leaves();
    let mut inputs = Vec::with_capacity(tile.width as usize);
    let mut failed = None;
    log.scan(leaves.start + 1, leaves.end, |record| {
        let leaf = cmdlog_store::leaf_input(record.seq, &record.bytes);
        if leaf.len() > usize::from(u16::MAX) {
            failed = Some((record.seq, leaf.len()));
            return false;
        }
        inputs.push(leaf);
        true
    })?;
    if let Some((seq, bytes)) = failed {
        return Err(TileError::EntryTooLarge {
            tile: tile.path(),
            seq,
            bytes,
        });
    }
    Ok(tiles::bundle_bytes(inputs.iter().map(Vec::as_slice)).expect("lengths checked"))
}

/// What [`write_tiles`] wrote.
#[derive(Debug, Default)]
pub struct TilesWritten {
    /// The tree size they are of.
    pub size: u64,
    /// Hash tiles written.
    pub tiles: usize,
    /// Entry bundles written.
    pub bundles: usize,
    /// Entry bundles left out: one of their records is too large for a bundle.
    pub skipped: Vec<TileError>,
}

/// Writes every tile of `view` (full and partial, entry bundles included) and
/// `checkpoint` under `dir` in the C2SP layout. Each file is written whole under
/// a fresh name and renamed into place (a link in the folder is replaced, never
/// written through); the checkpoint last, so a reader never sees a checkpoint
/// whose tiles are missing.
pub fn write_tiles(
    log: &Log,
    view: &TreeView,
    checkpoint: &SignedCheckpoint,
    dir: &Path,
) -> Result<TilesWritten, TileError> {
    let mut written = TilesWritten {
        size: view.size(),
        ..TilesWritten::default()
    };
    for tile in tiles::tiles_of(view.size()) {
        let bytes = match tile_bytes(log, view, tile) {
            Ok(bytes) => bytes,
            Err(e @ TileError::EntryTooLarge { .. }) => {
                written.skipped.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        write_whole(dir, &dir.join(tile.path()), &bytes)?;
        if tile.level.is_some() {
            written.tiles += 1;
        } else {
            written.bundles += 1;
        }
    }
    write_whole(dir, &dir.join("checkpoint"), checkpoint.note.as_bytes())?;
    Ok(written)
}

/// Writes `path` (inside `dir`) whole; no link inside `dir` is followed.
fn write_whole(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), TileError> {
    let failed = |source| TileError::Write {
        path: path.to_path_buf(),
        source,
    };
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    if let Some(parent) = path.parent() {
        cmdlog_common::private_fs::create_dirs_within(dir, parent).map_err(failed)?;
    }
    let (fresh, mut file) = cmdlog_common::private_fs::create_fresh_beside(path).map_err(failed)?;
    let done = file
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&fresh, path));
    if let Err(e) = done {
        let _ = std::fs::remove_file(&fresh);
        return Err(failed(e));
    }
    Ok(())
}
