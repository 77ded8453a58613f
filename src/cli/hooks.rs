//! `cmdlog hooks install|uninstall <agent>`: cmdlog's entries in the agent's own
//! hook settings (`cmdlog_agents::install` does the edit). It shows the diff, keeps the file
//! as it was in the private state folder, and with `--dry-run` only shows.
//! `cmdlog hooks status`: where they are installed, and when a payload last came.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};

use super::open::home;
use super::{CliError, Paths, VerbResult};
use crate::render;
use std::path::Path;

use cmdlog_agents::{AgentKind, Scope, SettingsFile, SettingsPlan};

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
    /// Where cmdlog's hooks are installed, and when each agent's last payload
    /// reached the log
    Status,
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
pub(super) enum ScopeArg {
    Project,
    User,
}

impl ScopeArg {
    pub(super) fn scope(self) -> Scope {
        match self {
            ScopeArg::Project => Scope::Project,
            ScopeArg::User => Scope::User,
        }
    }
}

/// A settings file cmdlog will not edit is a usage error (exit 2: fix the file or
/// the link); one it could not read or write is an I/O error.
pub(super) fn settings_failure(e: cmdlog_agents::SettingsError) -> CliError {
    match e {
        cmdlog_agents::SettingsError::Io { .. } => CliError::io(e.to_string()),
        e => CliError::usage(e.to_string()),
    }
}

pub(crate) fn exec(paths: &Paths, args: HooksArgs, json: bool) -> VerbResult {
    let (target, installing) = match args.action {
        HooksAction::Install(t) => (t, true),
        HooksAction::Uninstall(t) => (t, false),
        HooksAction::Status => return status(paths, json),
    };
    let agent = AgentKind::parse(&target.agent).map_err(|e| CliError::usage(e.to_string()))?;
    let scope = target.scope.scope();
    let home = home()?;
    let path = cmdlog_agents::settings_path(agent, scope, &paths.workspace, &home);
    let (file, before) = settings_file(&path, agent, paths, &home)?;
    let plan = if installing {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::io(format!("cannot find cmdlog's own path: {e}")))?;
        let command = cmdlog_agents::hook_command(&exe, agent);
        cmdlog_agents::plan_install(&file, &before, agent, &command)
    } else {
        cmdlog_agents::plan_uninstall(&file, &before, agent)
    }
    .map_err(settings_failure)?;
    let told = Told {
        unchanged: match installing {
            true => "hooks already installed",
            false => "has no cmdlog hooks",
        },
        secret: None,
        made_by: "install",
    };
    let done = |edit: &cmdlog_agents::Edit| {
        let events = edit.events.join(", ");
        let verb = if installing { "hooked" } else { "unhooked" };
        format!(
            "{verb} {} event(s) in {}: {events}",
            edit.events.len(),
            path.display()
        )
    };
    let written = show_and_apply(&path, &file, &plan, agent, told, target.dry_run, done)?;
    if let Some(note) = cmdlog_agents::after_install(agent).filter(|_| installing && written) {
        writeln!(render::Human::stdout(false), "{note}")?;
    }
    Ok(0)
}

/// The agent's settings file at `path` (found within its roots, never through
/// a link out of them) and its text.
pub(super) fn settings_file(
    path: &Path,
    agent: AgentKind,
    paths: &Paths,
    home: &Path,
) -> Result<(SettingsFile, String), CliError> {
    let roots = cmdlog_agents::settings_roots(agent, &paths.workspace, home);
    let file = cmdlog_agents::locate_settings(path, &roots).map_err(settings_failure)?;
    let before = cmdlog_agents::read_settings(&file).map_err(settings_failure)?;
    Ok((file, before))
}

/// How a change to an agent's settings file is told.
pub(super) struct Told<'a> {
    /// Why there is nothing to do (`hooks already installed`).
    pub(super) unchanged: &'a str,
    /// What the diff hides (the daemon's token).
    pub(super) secret: Option<&'a str>,
    /// What made the file, when removing the change removes it (`install`).
    pub(super) made_by: &'a str,
}

/// Shows `plan`'s diff of the file at `path` and, unless `dry_run`, writes it
/// (the file as it was kept in the private state folder), saying what was
/// done (`done`); whether it wrote.
pub(super) fn show_and_apply(
    path: &Path,
    file: &SettingsFile,
    plan: &SettingsPlan,
    agent: AgentKind,
    told: Told<'_>,
    dry_run: bool,
    done: impl FnOnce(&cmdlog_agents::Edit) -> String,
) -> Result<bool, CliError> {
    let mut out = render::Human::stdout(false);
    let shown = path.display();
    if !plan.edit.changed() {
        writeln!(
            out,
            "{shown}: nothing to do ({} {})",
            agent.name(),
            told.unchanged
        )?;
        return Ok(false);
    }
    write!(out, "{}", plan.diff(&shown.to_string(), told.secret))?;
    if dry_run {
        writeln!(out, "(dry run: nothing written)")?;
        return Ok(false);
    }
    let tightened = plan.tightening(file).map(|said| format!("{said}\n"));
    let kept = cmdlog_agents::apply_settings(file, plan).map_err(settings_failure)?;
    write!(out, "{}", tightened.unwrap_or_default())?;
    writeln!(out, "{}", done(&plan.edit))?;
    if plan.removes_file() {
        let made_by = told.made_by;
        writeln!(
            out,
            "removed {shown}: there was no such file before cmdlog's {made_by}"
        )?;
    }
    if let Some(kept) = kept {
        writeln!(out, "the file as it was is kept in {}", kept.display())?;
    }
    Ok(true)
}

/// `cmdlog hooks status`.
fn status(paths: &Paths, json: bool) -> VerbResult {
    let home = home()?;
    let log = if paths.log.exists() {
        Some(super::open::open_existing(paths)?)
    } else {
        None
    };
    let status = cmdlog_agents::hooks_status(&paths.workspace, &home, log.as_ref())
        .map_err(super::store_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&status).map_err(super::store_failure)?
        )?;
        return Ok(0);
    }
    for s in &status {
        let installed = if s.installed.is_empty() {
            "not installed".to_string()
        } else {
            s.installed
                .iter()
                .map(|(scope, path)| format!("{scope} {}", path.display()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let last = match (&s.last, s.installed.is_empty()) {
            (Some(l), _) => format!(
                "last payload {} (seq {}, {})",
                render::utc(l.at),
                l.seq,
                l.event
            ),
            (None, true) => "no payload".to_string(),
            (None, false) if s.agent == "codex" => {
                "no payload has arrived: Codex skips hooks it does not trust (see `cmdlog hooks install codex`)"
                    .to_string()
            }
            (None, false) => "no payload has arrived yet".to_string(),
        };
        writeln!(out, "{:<12} {installed}; {last}", s.agent)?;
    }
    Ok(0)
}
