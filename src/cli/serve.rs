//! `cmdlog serve`: the daemon (`cmdlog_server::serve`) over this workspace's log.

use std::sync::Arc;

use clap::Args;
use cmdlog_engine::discovery::{DiscoveryConfig, discover};

use super::open::{home, open_engine};
use super::{CliError, Paths, VerbResult, store_failure};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    key: super::checkpoint::KeyArgs,
    /// Address to listen on (a non-loopback address needs a token)
    #[arg(long, default_value = "127.0.0.1:4170")]
    addr: std::net::SocketAddr,
    /// Bearer token clients must send (not empty)
    #[arg(long, env = "CMDLOG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Allow browser requests from this origin (repeatable; CORS is off otherwise)
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Answer to this host name too (repeatable); a loopback daemon otherwise
    /// answers only to 127.0.0.1, localhost and [::1]
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Run this ACP agent behind the daemon ("CMD ARGS…", split like a shell
    /// would): each session gets an agent session, every message is logged
    #[arg(long, value_name = "COMMAND")]
    agent: Option<String>,
    /// Also replicate the log to this NATS JetStream hub as it grows (as `cmdlog
    /// push --follow`; credentials from NATS_USER/NATS_PASSWORD, NATS_TOKEN,
    /// NATS_CREDS, NATS_CA, NATS_CERT/NATS_KEY)
    #[arg(long, value_name = "URL")]
    push: Option<String>,
    /// Replace common secrets (API keys, bearer tokens, passwords in URLs,
    /// private keys) in the agents' telemetry (`POST /v1/logs`) before it is
    /// recorded, as `hook --redact` and `import --redact` do
    #[arg(long)]
    redact: bool,
    /// Serve no Qwen Code Web Shell at / (docs/http.md)
    #[arg(long)]
    no_web: bool,
    /// Mirror every log on this NATS JetStream hub, read-only, and show them
    /// in the workbench machine by machine (`/ui/hub/`; credentials as for
    /// --push)
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
    /// The hub's stream (with --hub)
    #[arg(long, default_value = "CMDLOG", requires = "hub")]
    hub_stream: String,
    /// With --hub: show what this witness (its key, as `cmdlog witness` prints it) cosigned of each log
    #[arg(long, value_name = "KEY", requires = "hub")]
    witness: Vec<cmdlog_tlog::NoteVerifier>,
    /// The hub's stream (with --push)
    #[arg(
        long,
        env = "CMDLOG_HUB_STREAM",
        default_value = "CMDLOG",
        requires = "push"
    )]
    push_stream: String,
}

pub(crate) fn exec(paths: &Paths, args: ServeArgs) -> VerbResult {
    if args.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(CliError::usage(
            "the token is empty, which would turn authentication off: give a token (--token or CMDLOG_TOKEN), or give none to serve on a loopback address without one",
        ));
    }
    if !args.addr.ip().is_loopback() && args.token.is_none() {
        return Err(CliError::usage(format!(
            "refusing to listen on {} without a token: pass --token or set CMDLOG_TOKEN, or bind a loopback address",
            args.addr
        )));
    }
    for url in [&args.push, &args.hub].into_iter().flatten() {
        super::hub::refuse_url_secrets(url)?;
    }
    let agent = args
        .agent
        .as_deref()
        .map(cmdlog_acp::AgentCommand::parse)
        .transpose()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let home = home()?;
    let config = DiscoveryConfig::from_env(&home, &paths.workspace);
    let discovery = discover(&config).map_err(|e| CliError::usage(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io(format!("cannot start the runtime: {e}")))?;
    let reopen_paths = paths.clone();
    let reopen: cmdlog_server::Reopen = Arc::new(move || {
        let (paths, config) = (reopen_paths.clone(), config.clone());
        Box::pin(async move {
            let discovery = discover(&config)?;
            let (engine, _) = cmdlog_engine::open_workspace(
                &paths.log,
                &paths.workspace,
                &discovery,
                cmdlog_engine::Lifetime::LongLived,
            )
            .await?;
            Ok(engine)
        })
    });
    runtime.block_on(async {
        let engine = open_engine(paths, &discovery, cmdlog_engine::Lifetime::LongLived).await?;
        if let Some(url) = &args.push {
            let identity = cmdlog_engine::identity::ensure_identity_async(engine.log())
                .await
                .map_err(store_failure)?;
            let hub = cmdlog_hub::HubOptions::from_env(url, &args.push_stream);
            let signer = cmdlog_replay::log_signer(&identity.id, args.key.key.as_deref())
                .map_err(|e| {
                    eprintln!(
                        "cmdlog serve --push: warning: no signed checkpoints on the hub ({}): readers of the hub cannot tell its records from forged ones",
                        crate::render::clean(&e.to_string())
                    )
                })
                .ok();
            tokio::spawn(cmdlog_hub::push_forever(
                hub,
                Arc::clone(engine.log()),
                identity.id,
                cmdlog_engine::identity::host_name(),
                signer,
                |m: &str| eprintln!("cmdlog: serve --push: {}", crate::render::clean(m)),
            ));
        }
        let config = cmdlog_server::ServeConfig {
            addr: args.addr,
            token: args.token,
            allow_origins: args.allow_origins,
            allow_hosts: args.allow_hosts,
            workspace: paths.workspace.clone(),
            home,
            reopen,
            agent,
            key: args.key.key.clone(),
            redact: args.redact,
            web: !args.no_web,
            hub: args
                .hub
                .as_deref()
                .map(|url| cmdlog_hub::HubOptions::from_env(url, &args.hub_stream)),
            witnesses: args.witness,
        };
        cmdlog_server::serve(engine, config, &paths.log)
            .await
            .map_err(|e| match e {
                cmdlog_server::ServeError::NoToken(_) => CliError::usage(e.to_string()),
                e => CliError::io(e.to_string()),
            })
    })?;
    Ok(0)
}
