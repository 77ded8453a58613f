//! `cmdlog acp -- CMD ARGS…`: run an ACP agent behind cmdlog on stdio, for an
//! editor that speaks ACP (`cmdlog_acp::run_proxy` does the work).

use clap::Args;

use super::open::with_engine;
use super::{CliError, Paths, VerbResult};
use cmdlog_acp::AgentCommand;

#[derive(Args, Debug)]
pub(crate) struct AcpArgs {
    /// The agent and its arguments, after `--` (e.g. `-- gemini --experimental-acp`)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "CMD"
    )]
    command: Vec<String>,
}

pub(crate) fn exec(paths: &Paths, args: AcpArgs) -> VerbResult {
    let command =
        AgentCommand::from_words(args.command).map_err(|e| CliError::usage(e.to_string()))?;
    with_engine(paths, cmdlog_engine::Lifetime::LongLived, async |opened| {
        let code = cmdlog_acp::run_proxy(
            opened.engine.clone(),
            &command,
            &paths.workspace,
            tokio::io::stdin(),
            tokio::io::stdout(),
        )
        .await
        .map_err(|e| CliError::io(e.to_string()))?;
        Ok(u8::try_from(code).unwrap_or(1))
    })
}
