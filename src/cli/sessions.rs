//! `cmdlog sessions`: every session with its span, runs, errors and agents.

use std::io::Write;

use cmdlog_replay::{as_tree, sessions};
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
    // A subagent's session under the session that delegated to it.
    for (depth, s) in as_tree(&list) {
        let id = s.tree_id(depth);
        write!(
            out,
            "{id:<20} {} {} {:>5} ",
            render::utc(s.first_at),
            render::utc(s.last_at),
            s.runs,
        )?;
        out.paint(on && s.errors > 0, "31", &format!("{:>6}", s.errors))?;
        let agents: Vec<&str> = s.agents.iter().map(String::as_str).collect();
        let ended = s.ended.as_deref().map(|e| format!("  ({e})"));
        writeln!(
            out,
            " {:>11}  {}{}{}",
            s.interrupted,
            agents.join(","),
            ended.unwrap_or_default(),
            s.notes()
        )?;
    }
    if let Some(identity) = cmdlog_engine::identity::read_identity(log).map_err(store_failure)? {
        writeln!(out, "{}", crate::render::identity(&identity))?;
    }
    Ok(0)
}
