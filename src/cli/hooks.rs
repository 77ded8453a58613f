//! `cmdlog hooks install|uninstall <agent>`: cmdlog's entries in the agent's own
//! hook settings (src/agents/install.rs does the edit). It shows the diff, keeps a
//! backup of the file it changes, and with `--dry-run` only shows.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};

use super::open::home;
use super::{Failure, Paths, STORE, USAGE, VerbResult};
use crate::agents::AgentKind;
use crate::agents::install::{self, Scope};
use crate::render;

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

pub(crate) fn exec(paths: &Paths, args: HooksArgs) -> VerbResult {
    let (target, installing) = match args.action {
        HooksAction::Install(t) => (t, true),
        HooksAction::Uninstall(t) => (t, false),
    };
    let agent = AgentKind::parse(&target.agent).map_err(|e| Failure::new(USAGE, e))?;
    let scope = match target.scope {
        ScopeArg::Project => Scope::Project,
        ScopeArg::User => Scope::User,
    };
    let path = install::settings_path(agent, scope, &paths.workspace, &home()?);
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Failure::new(
                STORE,
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    let edit = if installing {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::new(STORE, format!("cannot find cmdlog's own path: {e}")))?;
        install::install(&path, &before, agent, &install::hook_command(&exe, agent))
    } else {
        install::uninstall(&path, &before, agent)
    }
    .map_err(|e| Failure::new(USAGE, e))?;
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
    write_with_backup(&path, &edit.before, &edit.after)?;
    writeln!(
        out,
        "{} {} event(s) in {}: {}",
        if installing { "hooked" } else { "unhooked" },
        edit.events.len(),
        path.display(),
        edit.events.join(", ")
    )?;
    if installing && agent == AgentKind::Codex {
        writeln!(
            out,
            "Codex runs a new hook only once you trust it: open /hooks in Codex and trust the cmdlog entries."
        )?;
    }
    Ok(0)
}

/// Writes `after` over `path` (aside, then renamed; the file's mode kept), after
/// copying what was there to `<path>.cmdlog-backup`.
fn write_with_backup(path: &std::path::Path, before: &str, after: &str) -> Result<(), Failure> {
    let fail = |what: &str, e: std::io::Error| {
        Failure::new(STORE, format!("cannot {what} {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
    }
    let exists = path.exists();
    if exists {
        let backup = path.with_file_name(format!(
            "{}.cmdlog-backup",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::write(&backup, before).map_err(|e| fail("back up", e))?;
    }
    let tmp = path.with_file_name(format!(
        ".{}.cmdlog-tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&tmp, after).map_err(|e| fail("write", e))?;
    if exists && let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| fail("replace", e))
}
