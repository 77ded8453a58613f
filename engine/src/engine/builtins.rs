//! The built-in commands: `/help` and the two `/model` variants of seed 000.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::handler::{CommandHandler, CommandResult, HandlerError, Invocation, NewRegistration};
use crate::command::{CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Mode};
use crate::event::{EventData, ModelSwitched};
use crate::event::{ProviderRef, Scope};
use crate::registry::Registration;

pub(crate) struct Builtin {
    pub(crate) spec: CommandSpec,
    pub(crate) provider: ProviderRef,
    pub(crate) handler: Arc<dyn CommandHandler>,
}

impl Builtin {
    /// Whether `r` is this built-in as the current version registers it.
    pub(crate) fn matches(&self, r: &Registration) -> bool {
        r.scope == Scope::Global && r.provider == self.provider && r.command == self.spec
    }

    pub(crate) fn into_registration(self) -> NewRegistration {
        NewRegistration {
            scope: Scope::Global,
            provider: self.provider,
            command: self.spec,
            handler: Some(self.handler),
            template: None,
            origin: None,
        }
    }
}

/// The provider of built-ins: they win over every file and runtime command.
pub const BUILTIN_PRIORITY: i32 = 1000;
/// The id of the provider of cmdlog's built-in commands.
pub const BUILTIN_PROVIDER: &str = "builtin";

fn builtin(
    item: u32,
    name: &str,
    command_type: CommandType,
    modes: &[Mode],
    description: &str,
    hint: Option<&str>,
    handler: Arc<dyn CommandHandler>,
) -> Builtin {
    let mut spec = CommandSpec::new(
        CommandName::new(name).expect("built-in names are valid"),
        CommandSource::BuiltinCommand,
        CommandKind::BuiltIn,
    );
    spec.command_type = Some(command_type);
    spec.supported_modes = Some(modes.to_vec());
    spec.description = description.into();
    spec.argument_hint = hint.map(str::to_string);
    Builtin {
        spec,
        provider: ProviderRef {
            id: BUILTIN_PROVIDER.into(),
            priority: BUILTIN_PRIORITY,
            level: "builtin".into(),
            order: 0,
            item,
        },
        handler,
    }
}

pub(crate) fn definitions() -> Vec<Builtin> {
    vec![
        builtin(
            0,
            "help",
            CommandType::Local,
            &Mode::ALL,
            "List the commands available in this mode",
            None,
            Arc::new(help),
        ),
        builtin(
            1,
            "model",
            CommandType::LocalJsx,
            &[Mode::Interactive],
            "Choose the session model in a dialog",
            None,
            Arc::new(model_dialog),
        ),
        builtin(
            2,
            "model",
            CommandType::Local,
            &[Mode::NonInteractive, Mode::Acp],
            "Show or set the session model",
            Some("[<model-id>]"),
            Arc::new(model_headless),
        ),
    ]
}

/// Renders `/help`: the commands `list` returns, grouped by source label
/// (Built-in, Skill, Custom, then plugins and MCP servers by name).
pub fn render_help(commands: &[Registration], mode: Mode) -> String {
    fn rank(label: &str) -> (u8, &str) {
        match label {
            "Built-in" => (0, label),
            "Skill" => (1, label),
            "Custom" => (2, label),
            _ => (3, label),
        }
    }
    let mut groups: BTreeMap<(u8, &str), Vec<&Registration>> = BTreeMap::new();
    for r in commands {
        groups
            .entry(rank(&r.command.source_label))
            .or_default()
            .push(r);
    }
    let width = commands
        .iter()
        .map(|r| r.command.usage().chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!("Commands available in {mode} mode:\n");
    for ((_, label), commands) in groups {
        out.push_str(&format!("\n{label}:\n"));
        for r in commands {
            let usage = r.command.usage();
            out.push_str(&format!("  {usage:<width$}  {}\n", r.command.description));
        }
    }
    out.pop();
    out
}

async fn help(inv: Invocation) -> Result<CommandResult, HandlerError> {
    let commands = inv.engine.list(&inv.agent, inv.mode);
    Ok(CommandResult::text(render_help(&commands, inv.mode)))
}

fn current_model(inv: &Invocation) -> String {
    inv.engine
        .session(&inv.session)
        .and_then(|s| s.model)
        .unwrap_or_else(|| "(default)".into())
}

async fn model_dialog(inv: Invocation) -> Result<CommandResult, HandlerError> {
    // The interactive host renders the picker; cmdlog records that it was asked for.
    Ok(CommandResult::text(format!(
        "open the model dialog (current model: {})",
        current_model(&inv)
    )))
}

use crate::limits::MODEL_ID_BYTES_MAX;

async fn model_headless(inv: Invocation) -> Result<CommandResult, HandlerError> {
    let wanted = inv.raw_input.trim();
    if wanted.is_empty() {
        return Ok(CommandResult::text(format!(
            "Current model: {}",
            current_model(&inv)
        )));
    }
    if wanted.len() > MODEL_ID_BYTES_MAX
        || wanted.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Ok(CommandResult::Error {
            text: format!(
                "invalid model id {wanted:?}: one word of at most {MODEL_ID_BYTES_MAX} bytes, e.g. /model claude-sonnet-4"
            ),
        });
    }
    let seq = inv
        .engine
        .append_session_event(
            &inv.session,
            Some(&inv.agent),
            EventData::ModelSwitched(ModelSwitched {
                model: wanted.to_string(),
            }),
        )
        .await
        .map_err(|e| HandlerError(e.to_string()))?;
    Ok(CommandResult::Success {
        text: Some(format!("Model set to {wanted}")),
        source_event_seq: Some(seq),
    })
}
