//! `cmdlog replay`: the registry or a session as of a seq, or what changed between two.

use std::io::Write;

use clap::Args;
use cmdlog_engine::Mode;
use cmdlog_replay::{RegistryDiff, RegistryView, SessionView, state_at_with};
use cmdlog_store::Log;

use super::output::print_json;
use super::progress::Progress;
use super::{CliError, ModeArg, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// Replay up to and including this seq [default: the head]
    #[arg(long, conflicts_with = "diff")]
    until: Option<u64>,
    /// What changed in the registry between seq N and seq M
    #[arg(long, num_args = 2, value_names = ["N", "M"], conflicts_with = "session")]
    diff: Option<Vec<u64>>,
    /// Show this session instead of the registry
    #[arg(long)]
    session: Option<String>,
    /// Agent whose view of the registry to show
    #[arg(long, default_value = "main")]
    agent: String,
    /// Mode whose view of the registry to show
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
}

pub(crate) fn exec(log: &Log, args: ReplayArgs, json: bool) -> VerbResult {
    let head = log.head().seq;
    if let Some(points) = &args.diff {
        let (from, to) = (points[0].min(points[1]), points[0].max(points[1]));
        if to > head {
            return Err(CliError::not_found(format!(
                "seq {to} is past the head of the log (seq {head}); pick seqs up to {head}"
            )));
        }
        let mode = Mode::from(args.mode);
        let view = |seq| -> Result<RegistryView, CliError> {
            let bar = Progress::new(seq, "replay");
            let state = state_at_with(log, seq, bar.tick()).map_err(store_failure)?;
            bar.finish();
            Ok(RegistryView::new(&state, &args.agent, mode))
        };
        let diff = RegistryDiff::between(&view(from)?, &view(to)?);
        let mut out = render::Human::stdout(json);
        if json {
            print_json(&mut out, &diff)?;
        } else {
            write!(out, "{}", diff.render())?;
        }
        return Ok(0);
    }
    let until = args.until.unwrap_or(head);
    if until > head {
        return Err(CliError::not_found(format!(
            "seq {until} is past the head of the log (seq {head}); pick a seq up to {head}"
        )));
    }
    let mut out = render::Human::stdout(json);
    if let Some(session) = &args.session {
        let view = SessionView::load(log, session, until).map_err(store_failure)?;
        if view.events == 0 {
            return Err(CliError::not_found(format!(
                "session {session:?} has no events up to seq {until}"
            )));
        }
        if json {
            print_json(&mut out, &view)?;
        } else {
            writeln!(out, "session {} as of seq {until}", view.id)?;
            writeln!(
                out,
                "  agent {}  mode {}  model {}",
                view.agent.as_deref().unwrap_or("-"),
                view.mode
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "-".into()),
                view.model.as_deref().unwrap_or("(default)")
            )?;
            if let Some((seq, how, reason)) = &view.ended {
                writeln!(
                    out,
                    "  {how} at seq {seq}{}",
                    reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )?;
            }
            for r in &view.runs {
                let outcome = match &r.outcome {
                    Some(o) => o.line(),
                    None => "no done yet".into(),
                };
                writeln!(
                    out,
                    "  {:>6}  {}  /{}{}  -> {outcome}",
                    r.seq,
                    render::utc(r.at),
                    r.name,
                    r.raw_input.as_deref().unwrap_or(" (input not recorded)")
                )?;
            }
        }
        return Ok(0);
    }
    let bar = Progress::new(until, "replay");
    let state = state_at_with(log, until, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let view = RegistryView::new(&state, &args.agent, Mode::from(args.mode));
    if json {
        print_json(&mut out, &view)?;
    } else {
        write!(out, "{}", view.render())?;
    }
    Ok(0)
}
