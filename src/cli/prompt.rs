//! `cmdlog prompt`: the prompt pipeline; prints what the model would receive.

use std::io::Write;

use clap::{Args, ValueEnum};
use cmdlog_engine::parse::parse_line;
use cmdlog_engine::prompt::{PromptError, PromptOutcome, PromptRequest, StreamingBehavior};
use cmdlog_engine::{ExecuteError, Mode, SessionError};
use serde_json::json;

use super::open::{Opened, note_injections, open_session, with_engine};
use super::run::{exit_code, print_outcome};
use super::{CliError, ModeArg, Paths, VerbResult, store_failure};
use crate::render;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DeliveryArg {
    Steer,
    #[value(name = "follow-up", alias = "follow_up")]
    FollowUp,
}

#[derive(Args, Debug)]
pub(crate) struct PromptArgs {
    /// Session id [default: a new session, printed on stderr]
    #[arg(long, env = "CMDLOG_SESSION")]
    session: Option<String>,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// How the prompt joins a session that is streaming a turn
    #[arg(long, value_enum)]
    delivery: Option<DeliveryArg>,
    /// What the user typed
    text: String,
}

async fn prompt(opened: &Opened, args: PromptArgs, json: bool) -> VerbResult {
    let engine = &opened.engine;
    let mode = Mode::from(args.mode);
    // A `/x` that names nothing passes through as text, as the agents send it: say so
    // when it looks like a command file was meant.
    if let Some(parsed) = parse_line(&args.text)
        && engine
            .find(&args.agent, mode, parsed.name.as_str())
            .is_none()
        && opened.explain_unknown(parsed.name.as_str())
    {
        eprintln!(
            "cmdlog: warning: /{} is not a command for agent {} in {mode} mode; the text is sent as typed",
            parsed.name, args.agent
        );
    }
    let session = open_session(engine, args.session, &args.agent, mode).await?;
    let mut request = PromptRequest::new(&session, &args.agent, mode, &args.text);
    request.behavior = args.delivery.map(|d| match d {
        DeliveryArg::Steer => StreamingBehavior::Steer,
        DeliveryArg::FollowUp => StreamingBehavior::FollowUp,
    });
    let outcome = engine.prompt(request).await.map_err(|e| match e {
        PromptError::Streaming { .. } => CliError::usage(format!(
            "{e}; pass --delivery steer or --delivery follow-up"
        )),
        PromptError::Execute(ExecuteError::Session(_))
        | PromptError::Session(SessionError::Ended { .. }) => CliError::not_found(e.to_string()),
        other => store_failure(other),
    })?;
    let mut out = render::Human::stdout(json);
    match outcome {
        PromptOutcome::Delivered {
            seq,
            text,
            delivery,
            from_run,
            runs,
        } => {
            let injections: Vec<String> = runs
                .iter()
                .filter(|r| Some(r.command_id) == from_run)
                .flat_map(|r| r.injections.clone())
                .collect();
            if let Some(run) = runs.iter().find(|r| Some(r.command_id) == from_run) {
                note_injections(&run.name, &injections);
            }
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"session": session, "delivered": true, "seq": seq, "text": text, "delivery": delivery, "from_run": from_run, "injections": injections})
                )?;
            } else {
                writeln!(out, "{text}")?;
            }
            Ok(0)
        }
        PromptOutcome::Handled(execution) => {
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"session": session, "delivered": false, "command_id": execution.command_id, "name": execution.name, "outcome": execution.outcome})
                )?;
                return Ok(exit_code(&execution.outcome));
            }
            drop(out);
            print_outcome(&execution)
        }
    }
}

pub(crate) fn exec(paths: &Paths, args: PromptArgs, json: bool) -> VerbResult {
    with_engine(paths, cmdlog_engine::Lifetime::ShortLived, async |opened| {
        prompt(opened, args, json).await
    })
}
