//! `cmdlog search QUERY` and `cmdlog index`: the log's full-text index
//! (`cmdlog-index`), brought up to the log's head before each search.

use std::io::Write;

use clap::Args;
use cmdlog_index::{Beside, IndexError, Refresh, Span};
use cmdlog_store::Log;

use super::open::open_existing;
use super::{CliError, Paths, VerbResult};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct SearchArgs {
    /// Words (all must match), "a phrase", -word to leave out, OR, and
    /// field:value for session, agent, type, source, tool, file, status
    query: String,
    #[command(flatten)]
    span: SpanArgs,
    /// The most hits shown
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Print how many events match, nothing else
    #[arg(long)]
    count: bool,
    /// One line per session: how many of its events match, and its best hit
    #[arg(long, conflicts_with = "count")]
    sessions: bool,
}

/// `--since` and `--until`: the events appended in a span of time.
#[derive(Args, Debug)]
pub(crate) struct SpanArgs {
    /// Only events appended since a time (2026-11-28, 2026-11-28T09:30:00Z)
    /// or a span back (24h, 2d)
    #[arg(long)]
    since: Option<String>,
    /// Only events appended before a time, or a span back
    #[arg(long)]
    until: Option<String>,
}

impl SpanArgs {
    pub(crate) fn span(&self) -> Result<Span, CliError> {
        let now = super::now_ms();
        let when = |flag, text: &Option<String>| {
            let parse = |t: &str| super::audit::parse_time(flag, t, now);
            text.as_deref().map(parse).transpose()
        };
        Ok(Span {
            since: when("--since", &self.since)?,
            until: when("--until", &self.until)?,
        })
    }
}

#[derive(Args, Debug)]
pub(crate) struct IndexArgs {
    /// Make the index again from the whole log
    #[arg(long)]
    rebuild: bool,
}

/// The index beside the log, brought up to its head (or made again), saying
/// on stderr when it was searched as another process left it.
fn beside(paths: &Paths, log: &Log, refresh: Refresh) -> Result<Beside, CliError> {
    let beside = cmdlog_index::beside(&paths.log, log, refresh).map_err(failure)?;
    let head = log.head().seq;
    if beside.busy && beside.through < head {
        eprintln!(
            "cmdlog: note: another process (cmdlog serve) is indexing the log; searched through seq {} of {head}",
            beside.through
        );
    }
    if beside.rebuilt && refresh == Refresh::Sync {
        eprintln!(
            "cmdlog: note: the log was rewritten since it was indexed; the index was made again"
        );
    }
    Ok(beside)
}

/// A bad query is usage (2), an index of another log a conflict (1), the
/// rest storage (4).
pub(crate) fn failure(e: IndexError) -> CliError {
    match e {
        IndexError::Query(q) => CliError::usage(q.to_string())
            .hint("words, \"a phrase\", -word, OR, and field:value (docs/cli.md, `search`)"),
        e @ IndexError::OtherLog { .. } => CliError::conflict(e.to_string()),
        e @ IndexError::Folder { .. } => CliError::io(e.to_string()).hint(
            "it must be a folder of yours that only you can write; remove it and search again",
        ),
        e => CliError::io(e.to_string()).hint("`cmdlog index --rebuild` makes the index again"),
    }
}

pub(crate) fn search(paths: &Paths, args: SearchArgs, json: bool) -> VerbResult {
    let log = open_existing(paths)?;
    let index = beside(paths, &log, Refresh::Sync)?.index;
    let span = args.span.span()?;
    let mut out = render::Human::stdout(json);
    let none = || CliError::not_found(format!("no match for {:?}", args.query));
    if args.sessions {
        let sessions = index
            .search_sessions(&log, &args.query, span)
            .map_err(failure)?;
        for s in &sessions {
            if json {
                writeln!(out, "{}", serde_json::to_string(s).expect("serializes"))?;
                continue;
            }
            writeln!(out, "{:<22} {:>6} event(s)", s.session, s.count)?;
            s.best
                .iter()
                .try_for_each(|best| print_hit(&mut out, best))?;
        }
        return sessions.is_empty().then(none).map_or(Ok(0), Err);
    }
    let (hits, total) = index
        .search_in(&log, &args.query, args.limit, span)
        .map_err(failure)?;
    if args.count {
        writeln!(out, "{total}")?;
        return Ok(if total == 0 { 3 } else { 0 });
    } else if total == 0 {
        return Err(none());
    }
    for hit in &hits {
        match json {
            true => writeln!(out, "{}", serde_json::to_string(hit).expect("serializes"))?,
            false => print_hit(&mut out, hit)?,
        }
    }
    Ok(0)
}

/// A hit's line (seq, time, type, session) and its snippet, the matched words
/// highlighted, all cleaned for the terminal.
pub(crate) fn print_hit<W: Write>(
    out: &mut render::Human<W>,
    hit: &cmdlog_index::Hit,
) -> std::io::Result<()> {
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
    writeln!(out, "{}", &snippet[at..])
}

pub(crate) fn index(paths: &Paths, args: IndexArgs, json: bool) -> VerbResult {
    let log = open_existing(paths)?;
    let refresh = if args.rebuild {
        Refresh::Rebuild
    } else {
        Refresh::Sync
    };
    let done = beside(paths, &log, refresh)?;
    if done.busy {
        return Err(CliError::conflict(format!(
            "another process (cmdlog serve) is writing the index; it covers seq 1 through {}",
            done.through
        ))
        .hint("the daemon keeps it current; stop it to rebuild the index"));
    }
    let (added, through) = (done.added, done.through);
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
