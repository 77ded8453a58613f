//! `cmdlog import`: read a whole-log export into a new, empty log; or, with
//! `--from AGENT`, an agent's transcripts into this log (src/agents/transcripts).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use cmdlog_replay::{ImportError, import_file, verify};
use cmdlog_store::{Log, LogConfig};
use serde_json::json;

use super::progress::Progress;
use super::{CliError, Paths, SETTLED_ERROR, VerbResult, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct ImportArgs {
    /// The export to read (`-` for stdin); with --from, transcript files or folders
    /// [default: where the agent keeps them]
    files: Vec<PathBuf>,
    /// Read this agent's transcripts: claude-code, codex, gemini or qwen
    #[arg(long, value_name = "AGENT")]
    from: Option<String>,
    /// With --from: only what changed since then (`7d`, `12h`, or a date
    /// `2026-11-01`)
    #[arg(long, value_name = "WHEN", requires = "from")]
    since: Option<String>,
    /// With --from: replace common secrets before anything is written
    #[arg(long, requires = "from")]
    redact: bool,
}

/// The export an import reads.
struct ExportFile {
    file: PathBuf,
}

pub(crate) fn exec(paths: &Paths, args: ImportArgs, json: bool) -> VerbResult {
    if let Some(agent) = &args.from {
        return super::import_agent::exec(
            paths,
            agent,
            &args.files,
            args.since.as_deref(),
            args.redact,
            json,
        );
    }
    let [file] = args.files.as_slice() else {
        return Err(CliError::usage(
            "import reads one export file (or - for stdin); to read an agent's transcripts, use --from AGENT",
        ));
    };
    let args = ExportFile { file: file.clone() };
    let input: Box<dyn io::BufRead> = if args.file.as_os_str() == "-" {
        Box::new(io::BufReader::new(io::stdin().lock()))
    } else {
        let file = std::fs::File::open(&args.file).map_err(|e| {
            CliError::not_found(format!("cannot open {}: {e}", args.file.display()))
        })?;
        Box::new(io::BufReader::new(file))
    };
    // For a file, count its lines first so the progress bar knows the total.
    let lines = if args.file.as_os_str() == "-" {
        0
    } else {
        std::fs::read(&args.file)
            .map(|b| b.iter().filter(|c| **c == b'\n').count() as u64)
            .unwrap_or(0)
    };
    let bar = Progress::new(lines, "import");
    let summary = import_file(&paths.log, input, bar.tick());
    bar.finish();
    let summary = summary.map_err(|e| match e {
        ImportError::NotEmpty { .. } | ImportError::Line { .. } => CliError::usage(e.to_string()),
        ImportError::NoTrailer | ImportError::Redacted | ImportError::HeadMismatch { .. } => {
            CliError::conflict(e.to_string())
        }
        other => store_failure(other),
    })?;
    let log = Log::open_read_only(&paths.log, LogConfig::default()).map_err(super::open_failure)?;
    let bar = Progress::new(log.head().seq, "verify");
    let report = verify(&log, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let mut out = render::Human::stdout(json);
    if json {
        writeln!(
            out,
            "{}",
            json!({"import": summary, "verify_clean": report.is_clean(), "violations": report.violations})
        )?;
    } else {
        writeln!(
            out,
            "imported {} events and {} blobs into {}",
            summary.events,
            summary.blobs,
            paths.log.display()
        )?;
        writeln!(
            out,
            "head seq {} hash {}",
            summary.head_seq, summary.head_hash
        )?;
        writeln!(out, "matches the export's head hash")?;
        if report.is_clean() {
            writeln!(out, "verify: ok")?;
        } else {
            for v in &report.violations {
                writeln!(
                    out,
                    "violation at seq {}: {}",
                    v.seq.unwrap_or(0),
                    v.message
                )?;
            }
        }
    }
    Ok(if report.is_clean() { 0 } else { SETTLED_ERROR })
}
