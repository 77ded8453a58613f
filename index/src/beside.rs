//! The index kept beside a log (`.cmdlog/index/`): opened in a folder of the
//! user's own, brought up to the log's head by whoever searches, or kept
//! current by the process that holds the log (`cmdlog serve`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use cmdlog_store::{Log, Seq};

use crate::limits::SETTLE;
use crate::{IndexError, SearchIndex};

/// How [`beside`] brings the index up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Index what the log holds past what the index covers.
    Sync,
    /// Make it again from the whole log.
    Rebuild,
}

/// The index beside a log, as [`beside`] left it.
pub struct Beside {
    /// The index, open.
    pub index: SearchIndex,
    /// Events indexed now.
    pub added: u64,
    /// The seq it covers through.
    pub through: Seq,
    /// Another process was writing it (a daemon keeping it current): it is
    /// searched as its last commit stands.
    pub busy: bool,
    /// It covered a log that was since rewritten, and was made again.
    pub rebuilt: bool,
}

/// Where the index of the log at `log` lives: `index/` beside it.
pub fn dir_of(log: &Path) -> PathBuf {
    log.parent().unwrap_or(Path::new(".")).join("index")
}

/// Opens the index beside the log at `log_path` (its folder made, or checked
/// to be, the user's own and owner-only) and brings it up to the log's head.
/// An index of another log is refused; one of this log rewritten since (its
/// covered seq's chain hash no longer the log's) is made again.
pub fn beside(log_path: &Path, log: &Log, refresh: Refresh) -> Result<Beside, IndexError> {
    let dir = dir_of(log_path);
    cmdlog_common::private_fs::ensure_private_dir(&dir).map_err(|source| IndexError::Folder {
        dir: dir.clone(),
        source,
    })?;
    let mut index = SearchIndex::open(&dir)?;
    let done = match refresh {
        Refresh::Sync => index.sync(log),
        Refresh::Rebuild => index.rebuild(log),
    };
    let (done, rebuilt) = match done {
        Err(IndexError::Diverged { .. }) => (index.rebuild(log), true),
        // A damaged index is made again, never trusted.
        Err(IndexError::Tantivy { .. }) => {
            crate::clear(&dir).map_err(|source| IndexError::Folder {
                dir: dir.clone(),
                source,
            })?;
            index = SearchIndex::open(&dir)?;
            (index.rebuild(log), true)
        }
        done => (done, refresh == Refresh::Rebuild),
    };
    let (added, through, busy) = match done {
        Ok((added, through)) => (added, through, false),
        Err(IndexError::Busy { .. }) => (0, index.covered().map_or(0, |c| c.through), true),
        Err(e) => return Err(e),
    };
    Ok(Beside {
        index,
        added,
        through,
        busy,
        rebuilt,
    })
}

/// Keeps the index beside `log_path` current as `log()` grows, until
/// `stopped()`: indexes each group commit's events shortly after it
/// (the indexed head trails the log's by about [`SETTLE`] plus the time to
/// index them). The writer is held while appends keep coming, so a sync
/// never waits for the last one's merges, and let go once the log is quiet. `log()` gives the log as it is now (a daemon reopens its log
/// after a storage error); `None` while there is none. Gives up, with the
/// error, only when the index cannot be written at all.
pub fn keep_current(
    log_path: &Path,
    log: &dyn Fn() -> Option<std::sync::Arc<Log>>,
    stopped: &dyn Fn() -> bool,
) -> Result<(), IndexError> {
    let mut index: Option<SearchIndex> = None;
    // Held while appends keep coming, so a sync never waits for the last
    // one's merges; let go (its merges done) once the log is quiet, for a
    // `cmdlog index --rebuild` to take.
    let mut writer: Option<tantivy::IndexWriter> = None;
    let mut through = 0;
    let mut failures = 0u32;
    while !stopped() {
        let Some(log) = log() else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let done = match &index {
            None => beside(log_path, &log, Refresh::Sync).map(|b| {
                through = b.through;
                index = Some(b.index);
            }),
            // Quiet, its writer let go: nothing to take it again for.
            Some(_) if writer.is_none() && log.head().seq == through => Ok(()),
            Some(open) => held_sync(open, &mut writer, &log).map(|now| through = now),
        };
        match done {
            Ok(()) | Err(IndexError::Busy { .. }) => failures = 0,
            Err(e) => {
                failures += 1;
                if failures >= 5 {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(200) * failures);
                continue;
            }
        }
        if log.wait_for(through, Duration::from_millis(500)) > through {
            std::thread::sleep(SETTLE);
        } else if let (Some(open), Some(w)) = (&index, writer.take()) {
            open.settle(w)?;
        }
    }
    if let (Some(open), Some(w)) = (&index, writer.take()) {
        open.settle(w)?;
    }
    Ok(())
}

/// One sync of `open` with the writer `writer` holds (taken first when it
/// holds none); an index of this log rewritten since is made again, the
/// writer let go first. The seq it now covers through.
fn held_sync(
    open: &SearchIndex,
    writer: &mut Option<tantivy::IndexWriter>,
    log: &Log,
) -> Result<Seq, IndexError> {
    if writer.is_none() {
        *writer = Some(open.writer()?);
    }
    let held = writer.as_mut().expect("just taken");
    match open.sync_with(held, log) {
        Ok((_, now)) => Ok(now),
        Err(IndexError::Diverged { .. }) => {
            if let Some(w) = writer.take() {
                open.settle(w)?;
            }
            open.rebuild(log).map(|(_, now)| now)
        }
        Err(e) => {
            // A failed sync leaves nothing half-held: the next takes afresh.
            if let Some(w) = writer.take() {
                let _ = open.settle(w);
            }
            Err(e)
        }
    }
}
