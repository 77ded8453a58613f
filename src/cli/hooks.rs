//! `cmdlog hooks install|uninstall <agent>`: cmdlog's entries in the agent's own
//! hook settings (`cmdlog_agents::install` does the edit). It shows the diff, keeps the file
//! as it was in the private state folder, and with `--dry-run` only shows.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};

use super::open::home;
use super::{CliError, Paths, VerbResult};
use crate::render;
use cmdlog_agents::{AgentKind, Scope};

#[derive(Args, Debug)]
pub(crate) struct HooksArgs {
    #[command(subcommand)]
    action: HooksAction,
}

#[derive(Subcommand, Debug)]
enum HooksAction {
    /// Add cmdlog's hook entries to the agent's settings
    Install(Target),
    /// Remove them
    Uninstall(Target),
}

#[derive(Args, Debug)]
struct Target {
    /// claude-code, codex, gemini or qwen
    agent: String,
    /// The project's settings (this workspace) or the user's (every project)
    #[arg(long, value_enum, default_value = "project")]
    scope: ScopeArg,
    /// Show the change without writing it
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ScopeArg {
    Project,
    User,
}

/// A settings file cmdlog will not edit is a usage error (exit 2: fix the file or
/// the link); one it could not read or write is an I/O error.
fn settings_failure(e: cmdlog_agents::SettingsError) -> CliError {
    match e {
        cmdlog_agents::SettingsError::Io { .. } => CliError::io(e.to_string()),
        e => CliError::usage(e.to_string()),
    }
}

pub(crate) fn exec(paths: &Paths, args: HooksArgs) -> VerbResult {
    let (target, installing) = match args.action {
        HooksAction::Install(t) => (t, true),
        HooksAction::Uninstall(t) => (t, false),
    };
    let agent = AgentKind::parse(&target.agent).map_err(|e| CliError::usage(e.to_string()))?;
    let scope = match target.scope {
        ScopeArg::Project => Scope::Project,
        ScopeArg::User => Scope::User,
    };
    let home = home()?;
    let path = cmdlog_agents::settings_path(agent, scope, &paths.workspace, &home);
    let roots = cmdlog_agents::settings_roots(agent, &paths.workspace, &home);
    let file = cmdlog_agents::locate_settings(&path, &roots).map_err(settings_failure)?;
    let before = cmdlog_agents::read_settings(&file).map_err(settings_failure)?;
    let plan = if installing {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::io(format!("cannot find cmdlog's own path: {e}")))?;
        cmdlog_agents::plan_install(
            &file,
            &before,
            agent,
            &cmdlog_agents::hook_command(&exe, agent),
        )
    } else {
        cmdlog_agents::plan_uninstall(&file, &before, agent)
    }
    .map_err(settings_failure)?;
    let edit = &plan.edit;
    let mut out = render::Human::stdout(false);
    if !edit.changed() {
        writeln!(
            out,
            "{}: nothing to do ({} {})",
            path.display(),
            agent.name(),
            if installing {
                "hooks already installed"
            } else {
                "has no cmdlog hooks"
            }
        )?;
        return Ok(0);
    }
    let label = path.display().to_string();
    let diff = similar::TextDiff::from_lines(&edit.before, &edit.after)
        .unified_diff()
        .context_radius(2)
        .header(&label, &label)
        .to_string();
    write!(out, "{diff}")?;
    if target.dry_run {
        writeln!(out, "(dry run: nothing written)")?;
        return Ok(0);
    }
    let kept = cmdlog_agents::apply_settings(&file, &plan).map_err(settings_failure)?;
    writeln!(
        out,
        "{} {} event(s) in {}: {}",
        if installing { "hooked" } else { "unhooked" },
        edit.events.len(),
        path.display(),
        edit.events.join(", ")
    )?;
    if plan.removes_file() {
        writeln!(
            out,
            "removed {}: there was no such file before cmdlog's install",
            path.display()
        )?;
    }
    if let Some(kept) = kept {
        writeln!(out, "the file as it was is kept in {}", kept.display())?;
    }
    if installing && agent == AgentKind::Codex {
        writeln!(
            out,
            "Codex runs a new hook only once you trust it: open /hooks in Codex and trust the cmdlog entries."
        )?;
    }
    Ok(0)
}
