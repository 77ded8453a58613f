//! `cmdlog tiles -o DIR`: the log's Merkle tree as C2SP tiles with its signed
//! checkpoint, for a static file server and any tlog client.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::checkpoint::{KeyArgs, checkpoint_failure, open_with_identity, signer};
use super::output::print_json;
use super::{CliError, Paths, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct TilesArgs {
    /// The folder to write `checkpoint`, `tile/<L>/<N>` and `tile/entries/<N>` into
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    #[command(flatten)]
    key: KeyArgs,
}

pub(crate) fn exec(paths: &Paths, args: TilesArgs, json: bool) -> VerbResult {
    let (log, identity) = open_with_identity(paths)?;
    let signer = signer(&identity, &args.key)?;
    let view = log.tree().map_err(store_failure)?;
    let signed = cmdlog_replay::sign(&view, &cmdlog_replay::origin(&identity.id), &signer)
        .map_err(checkpoint_failure)?;
    let written = cmdlog_replay::write_tiles(&log, &view, &signed, &args.output)
        .map_err(|e| CliError::io(e.to_string()).hint("pass a folder you can write with -o DIR"))?;
    for skipped in &written.skipped {
        eprintln!(
            "cmdlog: tiles: left out {}",
            render::clean(&skipped.to_string())
        );
    }
    let mut out = std::io::stdout().lock();
    if json {
        print_json(
            &mut out,
            &serde_json::json!({
                "size": written.size,
                "tiles": written.tiles,
                "entry_bundles": written.bundles,
                "skipped": written.skipped.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                "checkpoint": signed.note,
            }),
        )?;
    } else {
        writeln!(
            out,
            "{} records: {} tiles and {} entry bundles in {}",
            written.size,
            written.tiles,
            written.bundles,
            render::clean(&args.output.display().to_string())
        )?;
    }
    Ok(0)
}
