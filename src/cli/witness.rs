//! `cmdlog witness URL`: follow a hub's signed checkpoints and cosign each one
//! that is signed by its log's key and consistent with the last this witness
//! cosigned (`docs/hub.md`, `docs/verifiable.md`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use cmdlog_hub::Verdict;
use cmdlog_tlog::{KeyKind, NoteVerifier};

use super::hub::{HubArgs, runtime};
use super::output::print_json;
use super::{CliError, Paths, VerbResult, hub_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct WitnessArgs {
    #[command(flatten)]
    hub: HubArgs,
    /// One pass over the checkpoints published since the last, then exit
    #[arg(long)]
    once: bool,
    /// Seconds between passes when following
    #[arg(long, default_value_t = 5, value_name = "SECS")]
    interval: u64,
    /// The witness's cosigning key [default: ~/.config/cmdlog/keys/witness.key,
    /// made owner-only on first need]
    #[arg(long, value_name = "FILE", env = "CMDLOG_WITNESS_KEY")]
    key: Option<PathBuf>,
    /// The witness's name in its cosignatures (a new key only)
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Hold log ID to this verifier key (`cmdlog key` on its machine) instead of
    /// the one the hub published when the witness first saw the log; repeatable
    #[arg(long = "log-key", value_name = "ID=KEY")]
    log_keys: Vec<String>,
}

pub(crate) fn exec(_paths: &Paths, args: WitnessArgs, json: bool) -> VerbResult {
    let path = match &args.key {
        Some(path) => path.clone(),
        None => cmdlog_tlog::keys::key_dir_path()
            .map_err(|e| CliError::usage(format!("no folder for the witness key: {e}")))?
            .join("witness.key"),
    };
    let name = args.name.clone().unwrap_or_else(|| {
        let host: String = cmdlog_engine::identity::host_name()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
            .collect();
        format!("cmdlog-witness/{host}")
    });
    let witness = cmdlog_tlog::keys::load_or_create_signer(&path, &name, KeyKind::Cosignature)
        .map_err(super::checkpoint::key_failure)?;
    if witness.verifier().kind() != KeyKind::Cosignature {
        return Err(CliError::usage(format!(
            "{} is a log's signing key, not a witness's cosigning key",
            path.display()
        )));
    }
    let log_keys = args
        .log_keys
        .iter()
        .map(|pair| {
            let (id, key) = pair
                .split_once('=')
                .ok_or_else(|| CliError::usage(format!("--log-key {pair:?}: give ID=KEY")))?;
            let key = NoteVerifier::parse(key)
                .map_err(|e| CliError::usage(format!("--log-key {id}: {e}")))?;
            Ok((id.to_string(), key))
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let vkey = witness.verifier().to_string();
    eprintln!("cmdlog: witness: cosigning as {}", render::clean(&vkey));
    let options = args.hub.options()?;
    let rt = runtime()?;
    let hub = rt.block_on(options.connect()).map_err(hub_failure)?;
    let mut refused = 0;
    loop {
        let pass = rt
            .block_on(cmdlog_hub::witness_once(&hub, &witness, &log_keys))
            .map_err(hub_failure)?;
        let mut out = render::Human::stdout(json);
        let mut rows = Vec::new();
        for (log, verdict) in &pass.verdicts {
            match verdict {
                Verdict::Cosigned { size } => {
                    rows.push(serde_json::json!({"log_id": log, "size": size, "cosigned": true}));
                    if !json {
                        writeln!(out, "cosigned log {log} at {size} records")?;
                    }
                }
                Verdict::Refused { size, why } => {
                    refused += 1;
                    rows.push(serde_json::json!({"log_id": log, "size": size, "cosigned": false, "why": why}));
                    if !json {
                        writeln!(
                            out,
                            "refused log {log}{}: {}",
                            size.map(|s| format!(" at {s} records")).unwrap_or_default(),
                            render::clean(why)
                        )?;
                    }
                }
            }
        }
        if json {
            print_json(
                &mut out,
                &serde_json::json!({"witness_key": vkey, "checkpoints": rows}),
            )?;
        }
        if args.once {
            return Ok(if refused > 0 { super::SETTLED_ERROR } else { 0 });
        }
        std::thread::sleep(Duration::from_secs(args.interval.max(1)));
    }
}
