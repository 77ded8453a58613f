//! `cmdlog hub list URL` and `cmdlog hub audit URL`: the logs a hub holds, and
//! one timeline of runs across all of them, read straight from the hub.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use cmdlog_hub::{HubAuditFilter, HubOptions, hub_audit, list};

use super::audit::{audit_line, parse_since};
use super::output::colour;
use super::{CliError, VerbResult, hub_failure, store_failure};
use crate::render;

/// Where a hub is and how to reach it: the standard NATS options.
#[derive(Args, Debug, Clone)]
pub(crate) struct HubArgs {
    /// The hub's NATS URL (`nats://host:4222`, `tls://…`; several, comma-separated)
    #[arg(value_name = "URL")]
    pub(crate) url: String,
    /// The JetStream stream that holds the logs
    #[arg(long, env = "CMDLOG_HUB_STREAM", default_value = "CMDLOG")]
    pub(crate) stream: String,
    /// User name (with --password)
    #[arg(long, env = "NATS_USER", hide_env_values = true)]
    pub(crate) user: Option<String>,
    /// Password (with --user)
    #[arg(long, env = "NATS_PASSWORD", hide_env_values = true)]
    pub(crate) password: Option<String>,
    /// Token
    #[arg(long, env = "NATS_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A `.creds` file (JWT and NKey seed)
    #[arg(long, env = "NATS_CREDS")]
    pub(crate) creds: Option<PathBuf>,
    /// CA certificate to trust for TLS (PEM)
    #[arg(long, env = "NATS_CA")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Client certificate for TLS (PEM, with --tls-key)
    #[arg(long, env = "NATS_CERT")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// Client key for TLS (PEM)
    #[arg(long, env = "NATS_KEY")]
    pub(crate) tls_key: Option<PathBuf>,
}

impl HubArgs {
    /// The options the hub library takes.
    pub(crate) fn options(&self) -> HubOptions {
        HubOptions {
            url: self.url.clone(),
            stream: self.stream.clone(),
            user: self.user.clone(),
            password: self.password.clone(),
            token: self.token.clone(),
            creds: self.creds.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
        }
    }
}

/// A runtime for the hub verbs (multi-threaded: a clone's appends block).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::hub(format!("cannot start the runtime: {e}")))
}

#[derive(Args, Debug)]
pub(crate) struct HubVerbArgs {
    #[command(subcommand)]
    verb: HubVerb,
}

#[derive(Subcommand, Debug)]
enum HubVerb {
    /// The logs on the hub: id, host, head seq and hash, last push
    List {
        #[command(flatten)]
        hub: HubArgs,
    },
    /// One timeline of runs across every log on the hub
    Audit {
        #[command(flatten)]
        hub: HubArgs,
        /// Only runs since a time (2026-11-28, 2026-11-28T09:30:00Z) or a span back (24h)
        #[arg(long)]
        since: Option<String>,
        /// Only runs recorded by this agent (claude-code, codex, …)
        #[arg(long)]
        agent: Option<String>,
        /// Only this command
        #[arg(long)]
        command: Option<String>,
    },
}

pub(crate) fn exec(args: HubVerbArgs, json: bool) -> VerbResult {
    match args.verb {
        HubVerb::List { hub } => list_logs(hub, json),
        HubVerb::Audit {
            hub,
            since,
            agent,
            command,
        } => {
            let since = since.as_deref().map(parse_since).transpose()?;
            let command = command.map(|c| c.trim_start_matches('/').to_lowercase());
            audit_all(hub, since, agent, command, json)
        }
    }
}

fn list_logs(args: HubArgs, json: bool) -> VerbResult {
    let rt = runtime()?;
    let logs = rt
        .block_on(async {
            let hub = args.options().connect().await?;
            let stream = hub.existing_stream().await?;
            list(&hub, &stream).await
        })
        .map_err(hub_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        super::output::print_json(&mut out, &logs)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{:<32}  {:<20} {:>9}  {:<64}  last push",
        "log", "host", "head seq", "head hash"
    )?;
    for log in &logs {
        writeln!(
            out,
            "{:<32}  {:<20} {:>9}  {:<64}  {}",
            render::clean(&log.id),
            render::clean(&log.host),
            log.head_seq,
            render::clean(&log.head_hash),
            log.last_push
        )?;
    }
    if logs.is_empty() {
        writeln!(
            out,
            "(no logs on this hub yet; `cmdlog push URL` adds this one)"
        )?;
    }
    Ok(0)
}

fn audit_all(
    args: HubArgs,
    since: Option<u64>,
    agent: Option<String>,
    command: Option<String>,
    json: bool,
) -> VerbResult {
    let rt = runtime()?;
    let filter = HubAuditFilter {
        since,
        agent,
        command,
    };
    let rows = rt
        .block_on(async {
            let hub = args.options().connect().await?;
            hub_audit(&hub, &filter).await
        })
        .map_err(hub_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        for r in &rows {
            let mut value = serde_json::to_value(&r.row).map_err(store_failure)?;
            value["log_id"] = json!(r.log_id);
            value["host"] = json!(r.host);
            writeln!(out, "{value}")?;
        }
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<8} {:<12} {:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
        "log", "host", "time", "seq", "session", "agent", "mode", "command", "duration"
    )?;
    for r in &rows {
        let (line, outcome, code) = audit_line(&r.row);
        let short: String = r.log_id.chars().take(8).collect();
        let host: String = r.host.chars().take(12).collect();
        write!(
            out,
            "{:<8} {:<12} {line} ",
            render::clean(&short),
            render::clean(&host)
        )?;
        out.paint(on, code, &outcome)?;
        writeln!(out)?;
    }
    if rows.is_empty() {
        writeln!(out, "(no runs match)")?;
    }
    Ok(0)
}
