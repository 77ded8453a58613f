//! `cmdlog commands`: the effective commands for an agent and mode.

use std::io::Write;

use clap::{Args, ValueEnum};
use cmdlog_engine::{Engine, Mode};
use cmdlog_replay::RegistryView;
use serde_json::json;

use super::open::with_engine;
use super::output::print_json;
use super::{ModeArg, Paths, VerbResult};
use crate::render;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Table,
    Json,
    Acp,
}

#[derive(Args, Debug)]
pub(crate) struct CommandsArgs {
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Include shadowed entries and what shadows them
    #[arg(long)]
    all: bool,
    /// Only what the model may invoke (name, description, when_to_use, argument_hint)
    #[arg(long)]
    model_invocable: bool,
    /// Output format (--json is the same as --format json)
    #[arg(long, value_enum)]
    format: Option<Format>,
}

async fn commands(engine: &Engine, args: CommandsArgs, json: bool) -> VerbResult {
    let mode = Mode::from(args.mode);
    let format = args
        .format
        .unwrap_or(if json { Format::Json } else { Format::Table });
    let mut out = render::Human::stdout(json);
    if args.model_invocable {
        let list: Vec<_> = engine
            .model_invocable(&args.agent)
            .into_iter()
            .map(|r| {
                json!({
                    "name": r.command.name,
                    "description": r.command.description,
                    "when_to_use": r.command.when_to_use,
                    "argument_hint": r.command.argument_hint,
                })
            })
            .collect();
        if format == Format::Table {
            for c in &list {
                writeln!(
                    out,
                    "/{:<24} {}",
                    c["name"].as_str().unwrap_or(""),
                    c["description"].as_str().unwrap_or("")
                )?;
            }
        } else {
            writeln!(out, "{}", serde_json::Value::Array(list))?;
        }
        return Ok(0);
    }
    if args.all {
        let view = engine.with_state(|s| RegistryView::new(s, &args.agent, mode));
        match format {
            Format::Table => write!(out, "{}", view.render())?,
            _ => print_json(&mut out, &view.commands)?,
        }
        return Ok(0);
    }
    let list = engine.list(&args.agent, mode);
    match format {
        Format::Table => {
            let width = list
                .iter()
                .map(|r| r.command.usage().chars().count())
                .max()
                .unwrap_or(0);
            let label_width = list
                .iter()
                .map(|r| r.command.source_label.chars().count())
                .max()
                .unwrap_or(0);
            for r in &list {
                writeln!(
                    out,
                    "{:<width$}  {:<label_width$}  {}",
                    r.command.usage(),
                    r.command.source_label,
                    r.command.description
                )?;
            }
        }
        Format::Json => {
            let list: Vec<_> = list
                .iter()
                .map(|r| {
                    json!({
                        "name": r.command.name,
                        "description": r.command.description,
                        "argument_hint": r.command.argument_hint,
                        "source": r.command.source,
                        "source_label": r.command.source_label,
                        "command_type": r.command.command_type,
                        "modes": r.command.effective_modes(),
                        "registration": r.seq,
                        "provider": r.provider.id,
                    })
                })
                .collect();
            print_json(&mut out, &list)?;
        }
        Format::Acp => {
            let list: Vec<_> = list
                .iter()
                .map(|r| r.command.acp_available_command())
                .collect();
            print_json(&mut out, &list)?;
        }
    }
    Ok(0)
}

pub(crate) fn exec(paths: &Paths, args: CommandsArgs, json: bool) -> VerbResult {
    with_engine(paths, cmdlog_engine::Lifetime::ShortLived, async |opened| {
        commands(&opened.engine, args, json).await
    })
}
