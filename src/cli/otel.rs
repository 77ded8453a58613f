//! `cmdlog otel setup|remove <agent>`: the settings that point an agent's
//! OpenTelemetry logs at `cmdlog serve` (`cmdlog_agents::otel` makes the edit).
//! It shows the diff, keeps the file as it was in the private state folder, and
//! with `--dry-run` only shows — as `hooks install` does.

use std::io::Write;

use clap::{Args, Subcommand};

use super::hooks::{ScopeArg, Told, settings_failure, settings_file, show_and_apply};
use super::open::home;
use super::{CliError, Paths, VerbResult};
use crate::render;
use cmdlog_agents::otel::Exporter;
use cmdlog_agents::{AgentKind, Scope};

#[derive(Args, Debug)]
pub(crate) struct OtelArgs {
    #[command(subcommand)]
    action: OtelAction,
}

#[derive(Subcommand, Debug)]
enum OtelAction {
    /// Point the agent's telemetry (OpenTelemetry logs) at `cmdlog serve`
    Setup(Target),
    /// Take cmdlog's telemetry settings out again
    Remove(Target),
}

#[derive(Args, Debug)]
struct Target {
    /// claude-code, codex, gemini or qwen
    agent: String,
    /// The user's settings (every project; the default: an endpoint and a
    /// token do not belong in a repository) or the project's (Gemini CLI and
    /// Qwen Code only)
    #[arg(long, value_enum, default_value = "user")]
    scope: ScopeArg,
    /// The daemon's URL (default: the running daemon of this workspace, else
    /// http://127.0.0.1:4170, `cmdlog serve`'s default)
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The daemon's token, sent as a bearer header by the agent
    #[arg(long, env = "CMDLOG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Show the change without writing it
    #[arg(long)]
    dry_run: bool,
}

pub(crate) fn exec(paths: &Paths, args: OtelArgs) -> VerbResult {
    let (target, adding) = match args.action {
        OtelAction::Setup(t) => (t, true),
        OtelAction::Remove(t) => (t, false),
    };
    let agent = AgentKind::parse(&target.agent).map_err(|e| CliError::usage(e.to_string()))?;
    let scope = target.scope.scope();
    let url = match target.url {
        Some(url) => url,
        None => cmdlog_agents::DaemonFile::read(&paths.log)
            .map(|d| d.url)
            .unwrap_or_else(|| "http://127.0.0.1:4170".to_string()),
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(CliError::usage(format!(
            "--url {url:?}: give the daemon's http:// or https:// URL"
        )));
    }
    let exporter = Exporter {
        url,
        token: target.token.filter(|t| !t.trim().is_empty()),
    };
    if adding && exporter.token.is_some() && scope == Scope::Project {
        return Err(CliError::usage(
            "refusing to write the daemon's token into a project's settings (a repository is shared): use --scope user",
        ));
    }
    let home = home()?;
    let path = cmdlog_agents::otel::telemetry_settings_path(agent, scope, &paths.workspace, &home)
        .map_err(settings_failure)?;
    let (file, before) = settings_file(&path, agent, paths, &home)?;
    let plan = if adding {
        cmdlog_agents::otel::plan_setup(&file, &before, agent, &exporter)
    } else {
        cmdlog_agents::otel::plan_remove(&file, &before, agent, &exporter)
    }
    .map_err(settings_failure)?;
    let told = Told {
        unchanged: match adding {
            true => "telemetry already points at the daemon",
            false => "has no telemetry settings of cmdlog's",
        },
        // The token is the daemon's secret: not shown in the diff.
        secret: exporter.token.as_deref(),
        made_by: "setup",
    };
    let done = |edit: &cmdlog_agents::Edit| {
        let verb = if adding { "set" } else { "removed" };
        format!("{verb} {} in {}", edit.events.join(", "), path.display())
    };
    if !show_and_apply(&path, &file, &plan, agent, told, target.dry_run, done)? {
        return Ok(0);
    }
    let mut out = render::Human::stdout(false);
    for line in adding
        .then(|| cmdlog_agents::otel::after_setup(agent, &exporter))
        .into_iter()
        .flatten()
    {
        writeln!(out, "{line}")?;
    }
    Ok(0)
}
