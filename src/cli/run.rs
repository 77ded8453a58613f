//! `cmdlog run`: execute one slash line and print its outcome.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use cmdlog_engine::attachments::SubmittedAttachment;
use cmdlog_engine::event::Outcome;
use cmdlog_engine::{ExecuteError, ExecuteRequest, Mode, valid_id};
use serde_json::json;

use super::open::{Opened, note_injections, open_session, with_engine};
use super::{CliError, ModeArg, Paths, SETTLED_ERROR, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// Session id [default: a new session, printed on stderr]
    #[arg(long, env = "CMDLOG_SESSION")]
    session: Option<String>,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// A file to attach (repeatable)
    #[arg(long = "attach")]
    attach: Vec<PathBuf>,
    /// The slash line, e.g. "/help"
    line: String,
}

/// 0 for a success, 1 for a command that settled as an error.
pub(crate) fn exit_code(outcome: &Outcome) -> u8 {
    if outcome.is_error() { SETTLED_ERROR } else { 0 }
}

/// Prints a settled execution: success text on stdout, an error on stderr (exit 1).
pub(crate) fn print_outcome(execution: &cmdlog_engine::Execution) -> VerbResult {
    match &execution.outcome {
        Outcome::Success { text, prompt, .. } => {
            if let Some(body) = prompt.as_deref().or(text.as_deref()) {
                // Exactly the text (what the agent would send its model); a line
                // end of our own only on a terminal, for the shell's prompt.
                let mut out = render::Human::stdout(false);
                write!(out, "{body}")?;
                if !body.ends_with('\n') && std::io::stdout().is_terminal() {
                    writeln!(out)?;
                }
            }
            Ok(0)
        }
        Outcome::Error { text, .. } => {
            eprintln!(
                "/{} failed (command id {}): {}",
                execution.name,
                execution.command_id,
                render::clean(text)
            );
            Ok(SETTLED_ERROR)
        }
    }
}

async fn run(opened: &Opened, args: RunArgs, json: bool) -> VerbResult {
    let engine = &opened.engine;
    let mode = Mode::from(args.mode);
    if !args.line.starts_with('/') {
        return Err(CliError::usage(format!(
            "{:?} is not a slash line; try: cmdlog run \"/help\"",
            args.line
        )));
    }
    // A line that names no command logs nothing, not even a new session.
    let name = args.line[1..].split_whitespace().next().unwrap_or("");
    let unknown = || {
        CliError::not_found(format!(
            "unknown command /{name} for agent {} in {mode} mode; nothing was logged. `cmdlog commands --mode {mode}` lists what is available",
            args.agent
        ))
    };
    match cmdlog_engine::parse::parse_line(&args.line) {
        Some(parsed)
            if engine
                .find(&args.agent, mode, parsed.name.as_str())
                .is_some() => {}
        _ if !valid_id(&args.agent) => {}
        _ => {
            opened.explain_unknown(name);
            return Err(unknown());
        }
    }
    let session = open_session(engine, args.session, &args.agent, mode).await?;
    // Each --attach is a staged file receipt: the path as typed, resolved by the
    // workspace resolver (relative paths stay inside the workspace).
    let attachments = args
        .attach
        .iter()
        .map(|path| SubmittedAttachment::FileReceipt {
            receipt: path.display().to_string(),
        })
        .collect();
    let mut request = ExecuteRequest::new(&session, &args.agent, mode, &args.line);
    request.attachments = attachments;
    request.releases = cmdlog_agents::installed_releases(&opened.config.workspace);
    let execution = engine.execute(request).await.map_err(|e| match e {
        ExecuteError::Session(_) => CliError::not_found(e.to_string()),
        other => store_failure(other),
    })?;
    let Some(execution) = execution else {
        let name = args.line[1..].split_whitespace().next().unwrap_or("");
        return Err(CliError::not_found(format!(
            "unknown command /{name} for agent {} in {mode} mode; nothing was logged. `cmdlog commands --mode {mode}` lists what is available",
            args.agent
        )));
    };
    note_injections(&execution.name, &execution.injections);
    if let Some(release) = execution.release.as_ref().filter(|r| r.from == "assumed") {
        eprintln!(
            "cmdlog: /{} expanded by the rules of {}: the installed release is not known (no `claude` on PATH); set CMDLOG_AGENT_RELEASES={}=X.Y.Z to name it",
            render::clean(&execution.name),
            release.rules,
            release.agent
        );
    }
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            json!({
                "session": session,
                "command_id": execution.command_id,
                "registration": execution.registration,
                "name": execution.name,
                "outcome": execution.outcome,
                "done": execution.done,
                "injections": execution.injections,
            })
        )?;
        return Ok(exit_code(&execution.outcome));
    }
    drop(out);
    print_outcome(&execution)
}

pub(crate) fn exec(paths: &Paths, args: RunArgs, json: bool) -> VerbResult {
    with_engine(paths, cmdlog_engine::Lifetime::ShortLived, async |opened| {
        run(opened, args, json).await
    })
}
