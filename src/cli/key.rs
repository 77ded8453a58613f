//! `cmdlog key`: the log's verifier key, in signed-note form, for auditors and
//! witnesses to check its checkpoints with.

use std::io::Write;

use clap::Args;

use super::checkpoint::{KeyArgs, open_with_identity, signer};
use super::output::print_json;
use super::{Paths, VerbResult};

#[derive(Args, Debug)]
pub(crate) struct KeyVerbArgs {
    #[command(flatten)]
    key: KeyArgs,
}

pub(crate) fn exec(paths: &Paths, args: KeyVerbArgs, json: bool) -> VerbResult {
    let (_log, identity) = open_with_identity(paths)?;
    let signer = signer(&identity, &args.key)?;
    let verifier = signer.verifier().to_string();
    let mut out = std::io::stdout().lock();
    if json {
        print_json(
            &mut out,
            &serde_json::json!({
                "log_id": identity.id,
                "origin": cmdlog_replay::origin(&identity.id),
                "verifier_key": verifier,
            }),
        )?;
    } else {
        writeln!(out, "{verifier}")?;
    }
    Ok(0)
}
