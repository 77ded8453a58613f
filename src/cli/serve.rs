//! `cmdlog serve`: the daemon (src/daemon) over this workspace's log.

use clap::Args;
use cmdlog_engine::{DiscoveryConfig, discover};

use super::open::{home, open_engine};
use super::{Failure, Paths, STORE, USAGE, VerbResult};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Address to listen on (a non-loopback address needs a token)
    #[arg(long, default_value = "127.0.0.1:4170")]
    addr: std::net::SocketAddr,
    /// Bearer token clients must send
    #[arg(long, env = "CMDLOG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Allow browser requests from this origin (CORS is off otherwise)
    #[arg(long)]
    allow_origin: Option<String>,
}

pub(crate) fn exec(paths: &Paths, args: ServeArgs) -> VerbResult {
    let home = home()?;
    let discovery = discover(&DiscoveryConfig::new(&home, &paths.workspace))
        .map_err(|e| Failure::new(USAGE, e.to_string()))?;
    if !args.addr.ip().is_loopback() && args.token.is_none() {
        return Err(Failure::new(
            USAGE,
            format!(
                "refusing to listen on {} without a token: pass --token or set CMDLOG_TOKEN, or bind a loopback address",
                args.addr
            ),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(STORE, format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let engine = open_engine(paths, &discovery).await?;
        let config = crate::daemon::ServeConfig {
            addr: args.addr,
            token: args.token,
            allow_origin: args.allow_origin,
            workspace: paths.workspace.clone(),
            home,
        };
        crate::daemon::serve(engine, config, &paths.log)
            .await
            .map_err(|e| Failure::new(STORE, e))
    })?;
    Ok(0)
}
