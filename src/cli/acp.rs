//! `cmdlog acp -- CMD ARGS…`: run an ACP agent behind cmdlog on stdio, for an
//! editor that speaks ACP (src/acp/proxy.rs does the work).

use clap::Args;

use super::open::with_engine;
use super::{Failure, Paths, STORE, USAGE, VerbResult};
use crate::acp::agent::AgentCommand;

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
    let command = AgentCommand::from_words(args.command).map_err(|e| Failure::new(USAGE, e))?;
    with_engine(paths, async |opened| {
        let code = crate::acp::proxy::run(opened.engine.clone(), &command, &paths.workspace)
            .await
            .map_err(|e| Failure::new(STORE, e))?;
        Ok(u8::try_from(code).unwrap_or(1))
    })
}
