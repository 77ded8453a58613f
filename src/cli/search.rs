//! `cmdlog search QUERY` and `cmdlog index`: the log's full-text index
//! (`cmdlog-index`), brought up to the log's head before each search.

use std::io::Write;

use clap::Args;
use cmdlog_index::{IndexError, SearchIndex};
use cmdlog_store::Log;

use super::open::open_existing;
use super::output::colour;
use super::{CliError, Paths, VerbResult};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct SearchArgs {
    /// Words (all must match), "a phrase", -word to leave out, OR, and
    /// field:value for session, agent, type, source, tool, file, status
    query: String,
    /// The most hits shown
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Print how many events match, nothing else
    #[arg(long)]
    count: bool,
}

#[derive(Args, Debug)]
pub(crate) struct IndexArgs {
    /// Make the index again from the whole log
    #[arg(long)]
    rebuild: bool,
}

/// The index of `log`, in its folder (made owner-only), brought up to date.
fn synced(paths: &Paths, log: &Log) -> Result<(SearchIndex, u64), CliError> {
    let dir = index_dir(paths)?;
    let index = SearchIndex::open(&dir).map_err(failure)?;
    let (added, _) = index.sync(log).map_err(failure)?;
    Ok((index, added))
}

fn index_dir(paths: &Paths) -> Result<std::path::PathBuf, CliError> {
    let dir = cmdlog_index::dir_of(&paths.log);
    cmdlog_common::private_fs::ensure_private_dir(&dir).map_err(|e| {
        CliError::io(format!("the index folder {}: {e}", dir.display())).hint(
            "it must be a folder of yours that only you can write; remove it and search again",
        )
    })
}

/// An index failure with its exit code: a bad query is usage (2), an index
/// of another log a conflict (1), the rest storage (4).
fn failure(e: IndexError) -> CliError {
    match e {
        IndexError::Query(q) => CliError::usage(q.to_string())
            .hint("words, \"a phrase\", -word, OR, and field:value (docs/cli.md, `search`)"),
        e @ (IndexError::OtherLog { .. } | IndexError::Diverged { .. }) => {
            CliError::conflict(e.to_string())
        }
        e => CliError::io(e.to_string()),
    }
}

pub(crate) fn search(paths: &Paths, args: SearchArgs, json: bool) -> VerbResult {
    let log = open_existing(paths)?;
    let (index, _) = synced(paths, &log)?;
    let (hits, total) = index
        .search(&log, &args.query, args.limit.max(1))
        .map_err(failure)?;
    let mut out = render::Human::stdout(json);
    if args.count {
        writeln!(out, "{total}")?;
        return Ok(if total == 0 { 3 } else { 0 });
    }
    if total == 0 {
        return Err(CliError::not_found(format!(
            "no match for {:?}",
            args.query
        )));
    }
    if json {
        for hit in &hits {
            let mut line = serde_json::to_value(hit).expect("a hit serializes");
            line["snippet"] = marked(&hit.snippet, &hit.highlights, "[", "]").into();
            writeln!(out, "{line}")?;
        }
        return Ok(0);
    }
    let on = colour();
    for hit in &hits {
        write!(
            out,
            "{:>8}  {}  {:<22} {}\n          ",
            hit.seq,
            render::utc(hit.at),
            hit.kind,
            hit.session.as_deref().unwrap_or("-"),
        )?;
        let mut at = 0;
        let snippet = hit.snippet.replace(['\n', '\r', '\t'], " ");
        for range in &hit.highlights {
            out.write_all(snippet[at..range.start].as_bytes())?;
            out.paint(on, "1;33", &snippet[range.clone()])?;
            at = range.end;
        }
        writeln!(out, "{}", &snippet[at..])?;
    }
    if total > hits.len() {
        writeln!(out, "{} of {total} shown (--limit N for more)", hits.len())?;
    }
    Ok(0)
}

/// `snippet` with each highlighted range between `open` and `close`.
fn marked(snippet: &str, highlights: &[std::ops::Range<usize>], open: &str, close: &str) -> String {
    let mut s = String::with_capacity(snippet.len() + highlights.len() * 2);
    let mut at = 0;
    for r in highlights {
        s.push_str(&snippet[at..r.start]);
        s.push_str(open);
        s.push_str(&snippet[r.clone()]);
        s.push_str(close);
        at = r.end;
    }
    s.push_str(&snippet[at..]);
    s
}

pub(crate) fn index(paths: &Paths, args: IndexArgs, json: bool) -> VerbResult {
    let log = open_existing(paths)?;
    let (added, through) = if args.rebuild {
        let dir = index_dir(paths)?;
        cmdlog_index::rebuild(&dir, &log).map_err(failure)?
    } else {
        let (index, added) = synced(paths, &log)?;
        (added, index.covered().map_or(0, |c| c.through))
    };
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            serde_json::json!({"added": added, "through": through})
        )?;
    } else {
        writeln!(
            out,
            "indexed {added} event(s); the index covers seq 1 through {through}"
        )?;
    }
    Ok(0)
}
