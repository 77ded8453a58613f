//! `cmdlog log`: events, one per line, optionally following the log as it grows.

use std::io::{self, Write};
use std::time::Duration;

use clap::Args;
use cmdlog_engine::Event;
use cmdlog_store::{Log, LogConfig, OpenError};

use super::open::{open_existing, require_session};
use super::{CliError, Paths, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct LogArgs {
    /// Only this session's events
    #[arg(long)]
    session: Option<String>,
    /// First seq
    #[arg(long, default_value_t = 1)]
    from: u64,
    /// Last seq
    #[arg(long)]
    until: Option<u64>,
    /// Only types starting with this prefix, e.g. "command/"
    #[arg(long = "type")]
    type_prefix: Option<String>,
    /// Keep printing events as they commit
    #[arg(long)]
    follow: bool,
    /// Also the agents' bookkeeping (token counts, snapshots, telemetry from
    /// imported transcripts), which is left out otherwise unless --type asks
    #[arg(long)]
    all: bool,
}

pub(crate) fn print_event(out: &mut impl Write, event: &Event, json: bool) -> io::Result<()> {
    if json {
        writeln!(out, "{}", event.to_json())
    } else {
        writeln!(
            out,
            "{:>6}  {}  {:<22} {:<16} {}",
            event.seq,
            render::utc(event.time()),
            event.data.type_name(),
            event.session.as_deref().unwrap_or("-"),
            event.summary()
        )
    }
}

/// How often `log --follow` looks for new events.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// How long `log --follow` asks the process holding the log to wait for one.
const FOLLOW_WAIT: Duration = Duration::from_secs(5);

pub(crate) fn exec(paths: &Paths, args: LogArgs, json: bool) -> VerbResult {
    let until = args.until.unwrap_or(u64::MAX);
    let mut out = render::Human::stdout(json);
    // Prints the wanted events after `last` up to `until`; returns the last seq seen.
    let print_new = |log: &Log,
                     last: u64,
                     out: &mut render::Human<io::StdoutLock<'static>>|
     -> Result<u64, CliError> {
        let to = until.min(log.head().seq);
        if to <= last {
            return Ok(last);
        }
        let records = match &args.session {
            Some(s) => log
                .stream(s, last)
                .map_err(store_failure)?
                .into_iter()
                .filter(|r| r.seq <= to)
                .collect(),
            None => log.range(last + 1, to).map_err(store_failure)?,
        };
        for record in records {
            let event = Event::decode(record.seq, &record.bytes).map_err(store_failure)?;
            let wanted = match args.type_prefix.as_deref() {
                Some(prefix) => event.data.type_name().starts_with(prefix),
                None => args.all || !event.is_bookkeeping(),
            };
            if wanted {
                print_event(out, &event, json)?;
            }
        }
        Ok(to)
    };
    let log = open_existing(paths)?;
    if let Some(session) = &args.session
        && !args.follow
    {
        require_session(&log, session)?;
    }
    let mut last = print_new(&log, args.from.saturating_sub(1), &mut out)?;
    drop(log);
    if !args.follow {
        return Ok(0);
    }
    // Hold the file only for each short read; a process holding it says when it grew.
    let quick = LogConfig {
        lock_wait: Duration::ZERO,
        ..LogConfig::default()
    };
    while last < until {
        out.flush()?;
        match Log::open_read_only(&paths.log, quick.clone()) {
            Ok(log) => {
                last = print_new(&log, last, &mut out)?;
                while last < until
                    && log.is_through_holder()
                    && log.wait_for_holder(last, FOLLOW_WAIT).is_ok()
                {
                    last = print_new(&log, last, &mut out)?;
                    out.flush()?;
                }
            }
            // A writer holds the file right now, or is recovering it: look again soon.
            Err(OpenError::Locked { .. } | OpenError::NeedsRecovery { .. }) => {}
            Err(e) => return Err(store_failure(e)),
        }
        std::thread::sleep(FOLLOW_POLL);
    }
    Ok(0)
}
