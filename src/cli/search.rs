//! `cmdlog search QUERY` and `cmdlog index`: the log's full-text index
//! (`cmdlog-index`), brought up to the log's head before each search.

use std::io::Write;

use clap::Args;
use cmdlog_index::{IndexError, SearchIndex};
use cmdlog_store::Log;

use super::open::open_existing;
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

/// The index of the log at `paths` (its folder made owner-only), brought up
/// to date, or made again; how many events it added, and through which seq
/// it covers.
fn synced(paths: &Paths, log: &Log, rebuild: bool) -> Result<(SearchIndex, u64, u64), CliError> {
    let dir = cmdlog_index::dir_of(&paths.log);
    cmdlog_common::private_fs::ensure_private_dir(&dir).map_err(|e| {
        CliError::io(format!("the index folder {}: {e}", dir.display())).hint(
            "it must be a folder of yours that only you can write; remove it and search again",
        )
    })?;
    let rebuilt = rebuild
        .then(|| cmdlog_index::rebuild(&dir, log))
        .transpose();
    let index = SearchIndex::open(&dir).map_err(failure)?;
    let (added, through) = match rebuilt.map_err(failure)? {
        Some(done) => done,
        None => index.sync(log).map_err(failure)?,
    };
    Ok((index, added, through))
}

/// A bad query is usage (2), an index of another log a conflict (1), the
/// rest storage (4).
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
    let (index, _, _) = synced(paths, &log, false)?;
    let (hits, total) = index
        .search(&log, &args.query, args.limit)
        .map_err(failure)?;
    let mut out = render::Human::stdout(json);
    if args.count {
        writeln!(out, "{total}")?;
    } else if total == 0 {
        return Err(CliError::not_found(format!(
            "no match for {:?}",
            args.query
        )));
    }
    for hit in hits.iter().filter(|_| !args.count) {
        if json {
            let mut line = serde_json::to_value(hit).expect("a hit serializes");
            line["snippet"] = hit.marked("[", "]").into();
            writeln!(out, "{line}")?;
            continue;
        }
        let (seq, at, session) = (hit.seq, render::utc(hit.at), hit.session.as_deref());
        writeln!(
            out,
            "{seq:>8}  {at}  {:<22} {}",
            hit.kind,
            session.unwrap_or("-")
        )?;
        let snippet = hit.snippet.replace(['\n', '\r', '\t'], " ");
        write!(out, "          ")?;
        let mut at = 0;
        for r in &hit.highlights {
            write!(out, "{}", &snippet[at..r.start])?;
            out.paint(super::output::colour(), "1;33", &snippet[r.clone()])?;
            at = r.end;
        }
        writeln!(out, "{}", &snippet[at..])?;
    }
    Ok(if total == 0 { 3 } else { 0 })
}

pub(crate) fn index(paths: &Paths, args: IndexArgs, json: bool) -> VerbResult {
    let (_, added, through) = synced(paths, &open_existing(paths)?, args.rebuild)?;
    let mut out = render::Human::stdout(json);
    match json {
        true => writeln!(out, r#"{{"added":{added},"through":{through}}}"#)?,
        false => writeln!(
            out,
            "indexed {added} event(s); the index covers seq 1 through {through}"
        )?,
    }
    Ok(0)
}
