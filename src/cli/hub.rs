//! `cmdlog hub list URL` and `cmdlog hub audit URL`: the logs a hub holds, and
//! one timeline of runs across all of them, read straight from the hub.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use cmdlog_hub::{Audited, HubAuditFilter, HubOptions, hub_audit, list};

use super::audit::{audit_line, parse_since};
use super::output::colour;
use super::{CliError, VerbResult, hub_failure, store_failure};
use crate::render;

/// Where a hub is and how to reach it: the standard NATS options.
#[derive(Args, Debug, Clone)]
pub(crate) struct HubArgs {
    /// The hub's NATS URL (`nats://host:4222`, `tls://…`; several, comma-separated).
    /// Credentials do not belong here (every user can read a command line): give
    /// them in NATS_USER/NATS_PASSWORD, NATS_TOKEN, a file (--password-file,
    /// --token-file, --creds), or the whole URL in NATS_URL
    #[arg(value_name = "URL", env = "NATS_URL", hide_env_values = true)]
    pub(crate) url: String,
    /// The JetStream stream that holds the logs
    #[arg(long, env = "CMDLOG_HUB_STREAM", default_value = "CMDLOG")]
    pub(crate) stream: String,
    /// User name (with --password)
    #[arg(long, env = "NATS_USER", hide_env_values = true)]
    pub(crate) user: Option<String>,
    /// Password (with --user), from the environment: a value on the command line is
    /// refused (use --password-file)
    #[arg(long, env = "NATS_PASSWORD", hide_env_values = true)]
    pub(crate) password: Option<String>,
    /// A file holding the password (its first line)
    #[arg(long, value_name = "FILE", conflicts_with = "password")]
    pub(crate) password_file: Option<PathBuf>,
    /// Token, from the environment: a value on the command line is refused (use
    /// --token-file)
    #[arg(long, env = "NATS_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A file holding the token (its first line)
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub(crate) token_file: Option<PathBuf>,
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
    /// The options the hub library takes. A secret that reached the command line
    /// (in the URL, or as --password/--token) is refused before anything is sent:
    /// every user of the machine can read a process's arguments.
    pub(crate) fn options(&self) -> Result<HubOptions, CliError> {
        let from_env = |name: &str, value: &str| std::env::var(name).is_ok_and(|v| v == value);
        refuse_url_secrets(&self.url)?;
        for (flag, var, value) in [
            ("--password", "NATS_PASSWORD", &self.password),
            ("--token", "NATS_TOKEN", &self.token),
        ] {
            if let Some(value) = value
                && !from_env(var, value)
            {
                return Err(CliError::usage(format!(
                    "{flag} was given on the command line, where every user of this machine can read it (ps)"
                ))
                .hint(format!("set {var}, or use {flag}-file FILE")));
            }
        }
        let secret = |file: &Option<PathBuf>| -> Result<Option<String>, CliError> {
            let Some(file) = file else { return Ok(None) };
            let bytes = cmdlog_common::private_fs::read_untrusted(
                file,
                cmdlog_common::private_fs::Expect {
                    bytes_max: 64 * 1024,
                    private: false,
                },
            )
            .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?;
            let text = String::from_utf8_lossy(&bytes);
            Ok(Some(text.lines().next().unwrap_or("").trim().to_string()))
        };
        Ok(HubOptions {
            url: self.url.clone(),
            stream: self.stream.clone(),
            user: self.user.clone(),
            password: secret(&self.password_file)?.or_else(|| self.password.clone()),
            token: secret(&self.token_file)?.or_else(|| self.token.clone()),
            creds: self.creds.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
        })
    }
}

/// Refuses a hub URL that carries credentials, unless it came from `NATS_URL`:
/// every user of this machine can read a command line (`ps`).
pub(crate) fn refuse_url_secrets(url: &str) -> Result<(), CliError> {
    let shown = cmdlog_hub::shown_url(url);
    if shown == url || std::env::var("NATS_URL").is_ok_and(|v| v == url) {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "the hub URL {shown} was given with credentials on the command line, where every user of this machine can read them (ps)"
    ))
    .hint("give the URL without them and the secret in NATS_PASSWORD or NATS_TOKEN (or --password-file, --token-file, --creds), or the whole URL in NATS_URL"))
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
    /// Make (or check and update) the hub's stream and buckets, with N replicas
    Init {
        #[command(flatten)]
        hub: HubArgs,
        /// Replicas of the stream and the buckets (a three-node cluster: 3)
        #[arg(long, default_value_t = 1)]
        replicas: usize,
    },
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
        /// Stay attached: show each run pushed afterwards once it settles
        #[arg(long)]
        follow: bool,
    },
}

pub(crate) fn exec(args: HubVerbArgs, json: bool) -> VerbResult {
    match args.verb {
        HubVerb::Init { hub, replicas } => {
            let options = hub.options()?;
            let made = runtime()?
                .block_on(async { cmdlog_hub::init(&options.connect().await?, replicas).await })
                .map_err(hub_failure)?;
            let mut out = render::Human::stdout(json);
            if json {
                super::output::print_json(&mut out, &made)?;
            }
            for m in made.iter().filter(|_| !json) {
                writeln!(out, "{m}")?;
            }
            Ok(0)
        }
        HubVerb::List { hub } => list_logs(hub, json),
        HubVerb::Audit {
            hub,
            since,
            agent,
            command,
            follow,
        } => {
            let since = since.as_deref().map(parse_since).transpose()?;
            let command = command.map(|c| c.trim_start_matches('/').to_lowercase());
            let filter = HubAuditFilter {
                since,
                agent,
                command,
                ..Default::default()
            };
            audit_all(hub, filter, follow, json)
        }
    }
}

fn list_logs(args: HubArgs, json: bool) -> VerbResult {
    let options = args.options()?;
    let rt = runtime()?;
    let logs = rt
        .block_on(async {
            let hub = options.connect().await?;
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

fn audit_all(args: HubArgs, filter: HubAuditFilter, follow: bool, json: bool) -> VerbResult {
    let options = args.options()?;
    let mut out = render::Human::stdout(json);
    let on = colour();
    if !json {
        writeln!(
            out,
            "{:<8} {:<12} {:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
            "log", "host", "time", "seq", "session", "agent", "mode", "command", "duration"
        )?;
    }
    // Each run as the merge gives it, by time; a message left out, as found.
    let read = runtime()?.block_on(async {
        let hub = options.connect().await?;
        hub_audit(&hub, &filter, follow, |found| -> Result<(), CliError> {
            let r = match found {
                Audited::Foreign { log_id, foreign: f } => {
                    eprintln!(
                        "cmdlog: hub audit: stream message {} of log {} is not the log's (claims seq {}: {}): forged, or another machine's with this id; left out",
                        f.stream_seq, render::clean(&log_id), f.seq, f.why
                    );
                    return Ok(());
                }
                Audited::Row(r) => r,
            };
            if json {
                let mut value = serde_json::to_value(&r.row).map_err(store_failure)?;
                value["log_id"] = json!(r.log_id);
                value["host"] = json!(r.host);
                writeln!(out, "{value}")?;
            } else {
                let (line, outcome, code) = audit_line(&r.row);
                let short: String = r.log_id.chars().take(8).collect();
                let host: String = r.host.chars().take(12).collect();
                write!(out, "{:<8} {:<12} {line} ", render::clean(&short), render::clean(&host))?;
                out.paint(on, code, &outcome)?;
                writeln!(out)?;
            }
            out.flush()?;
            Ok(())
        })
        .await
    })?;
    if read.rows == 0 && !json {
        writeln!(out, "(no runs match)")?;
    }
    Ok(0)
}
