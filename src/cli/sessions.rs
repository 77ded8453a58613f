//! `cmdlog sessions`: every session with its span, runs, errors and agents.

use std::io::Write;

use cmdlog_replay::sessions;
use cmdlog_store::Log;

use super::output::{colour, print_json};
use super::{VerbResult, store_failure};
use crate::render;

pub(crate) fn exec(log: &Log, json: bool) -> VerbResult {
    let list = sessions(log, |_| {}).map_err(store_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        print_json(&mut out, &list)?;
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<20} {:<23} {:<23} {:>5} {:>6} {:>11}  agents",
        "session", "first", "last", "runs", "errors", "interrupted"
    )?;
    for s in &list {
        write!(
            out,
            "{:<20} {} {} {:>5} ",
            s.id,
            render::utc(s.first_at),
            render::utc(s.last_at),
            s.runs,
        )?;
        out.paint(on && s.errors > 0, "31", &format!("{:>6}", s.errors))?;
        let agents: Vec<&str> = s.agents.iter().map(String::as_str).collect();
        writeln!(
            out,
            " {:>11}  {}{}{}",
            s.interrupted,
            agents.join(","),
            s.ended
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default(),
            s.conflicts_note()
        )?;
    }
    if let Some(identity) = cmdlog_engine::identity::read_identity(log).map_err(store_failure)? {
        writeln!(out, "{}", crate::render::identity(&identity))?;
    }
    Ok(0)
}
