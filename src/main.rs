//! `cmdlog`: the command-line adapter over the cmdlog libraries. It parses flags,
//! hands each verb to its module under `cli/`, and prints failures with their
//! exit codes (`cli/error.rs`): 0 ok; 1 a command settled as error, verify found
//! violations, or two histories conflict; 2 usage; 3 not found (unknown command,
//! session, seq); 4 store error; 5 hub error.

mod cli;
mod render;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::open::open_existing;
use cli::{Kind, Paths, VerbResult};

#[derive(Parser, Debug)]
#[command(
    name = "cmdlog",
    version,
    about = "Slash commands for coding agents, with every registration and run in an append-only log."
)]
struct Cli {
    /// The log file [default: <workspace>/.cmdlog/log.redb]
    #[arg(long, global = true, env = "CMDLOG_LOG")]
    log: Option<PathBuf>,
    /// The workspace folder [default: the current folder]
    #[arg(long, global = true)]
    workspace: Option<PathBuf>,
    /// Machine-readable output
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand, Debug)]
enum Verb {
    /// List the effective commands for an agent and mode
    Commands(cli::commands::CommandsArgs),
    /// Execute one slash line and print its outcome
    Run(cli::run::RunArgs),
    /// Run the prompt pipeline and print what the model would receive
    Prompt(cli::prompt::PromptArgs),
    /// Print events
    Log(cli::log::LogArgs),
    /// Show the registry (or a session) as of a seq, or what changed between two
    Replay(cli::replay::ReplayArgs),
    /// Every session with its time span, runs, errors and agents
    Sessions,
    /// A timeline of runs: input, attachments, outcome, duration
    Audit(cli::audit::AuditArgs),
    /// One event with its context (a run's done, registration and attachments)
    Show(cli::show::ShowArgs),
    /// Find events by their words and facets (the log's full-text index)
    Search(cli::search::SearchArgs),
    /// Bring the log's full-text index up to date, or make it again
    Index(cli::search::IndexArgs),
    /// Check the hash chain, the Merkle tree, seqs, lifecycle invariants and blobs;
    /// with --checkpoint, that the log still holds what a saved checkpoint commits to
    Verify(cli::verify::VerifyArgs),
    /// Print the log's verifier key (signed-note form) to check its checkpoints with
    Key(cli::key::KeyVerbArgs),
    /// Print the signed checkpoint (C2SP) of the log's Merkle tree at its head
    Checkpoint(cli::checkpoint::CheckpointArgs),
    /// Prove a record is in the log, or that the log extends a saved checkpoint
    Prove(cli::prove::ProveArgs),
    /// Write the log's Merkle tree as C2SP tiles, with its checkpoint, into a folder
    Tiles(cli::tiles::TilesArgs),
    /// Apply what a crash left in the write-ahead log; drop a damaged tail on request
    Recover(cli::recover::RecoverArgs),
    /// Remove blobs no event references, once past a grace period
    Gc(cli::gc::GcArgs),
    /// Write a blob's verified bytes to stdout
    Blob(cli::blob::BlobArgs),
    /// Re-expand recorded prompt runs: with the template then (must match) and today's file
    Drift(cli::drift::DriftArgs),
    /// Write a self-contained HTML report of a session (or the whole log)
    Report(cli::report::ReportArgs),
    /// Write the log (or one session) as JSON lines
    Export(cli::export::ExportArgs),
    /// Read a whole-log export into a new, empty log
    Import(cli::import::ImportArgs),
    /// Serve sessions over HTTP with SSE events from the log (docs/http.md)
    Serve(cli::serve::ServeArgs),
    /// The terminal client of a running `cmdlog serve`
    Attach(cli::attach::AttachArgs),
    /// Where the auditor's workbench of this workspace's `cmdlog serve` is
    Ui(cli::ui::UiArgs),
    /// Run an ACP agent behind cmdlog on stdio: `cmdlog acp -- CMD ARGS…`
    Acp(cli::acp::AcpArgs),
    /// Record one hook payload of an agent (read on stdin); silent, always exit 0
    Hook(cli::hook::HookArgs),
    /// Add (or remove) cmdlog's hooks in an agent's settings
    Hooks(cli::hooks::HooksArgs),
    /// Point an agent's OpenTelemetry logs at `cmdlog serve` (or take that out)
    Otel(cli::otel::OtelArgs),
    /// Replicate this log to a NATS JetStream hub (docs/hub.md)
    Push(cli::push::PushArgs),
    /// Rebuild a log from its copy on a hub
    Clone(cli::clone::CloneArgs),
    /// The logs on a hub, and one audit timeline across them
    Hub(cli::hub::HubVerbArgs),
    /// Follow a hub's signed checkpoints and cosign the consistent ones
    Witness(cli::witness::WitnessArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        // A closed stdout pipe (`cmdlog log | head`) is not an error.
        Err(e) if e.kind == Kind::ClosedOutput => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cmdlog: {}", render::clean(&e.message));
            if let Some(hint) = &e.hint {
                eprintln!("hint: {}", render::clean(hint));
            }
            ExitCode::from(e.kind.exit_code())
        }
    }
}

fn dispatch(cli: Cli) -> VerbResult {
    if let Verb::Hook(args) = cli.verb {
        // Its workspace is the agent's project, not the current folder.
        return cli::hook::exec(cli.workspace, cli.log, args);
    }
    let paths = Paths::new(cli.workspace, cli.log)?;
    let json = cli.json;
    match cli.verb {
        Verb::Commands(args) => cli::commands::exec(&paths, args, json),
        Verb::Run(args) => cli::run::exec(&paths, args, json),
        Verb::Prompt(args) => cli::prompt::exec(&paths, args, json),
        Verb::Log(args) => cli::log::exec(&paths, args, json),
        Verb::Replay(args) => cli::replay::exec(&open_existing(&paths)?, args, json),
        Verb::Verify(args) => cli::verify::exec(&paths, args, json),
        Verb::Key(args) => cli::key::exec(&paths, args, json),
        Verb::Checkpoint(args) => cli::checkpoint::exec(&paths, args),
        Verb::Prove(args) => cli::prove::exec(&paths, args, json),
        Verb::Tiles(args) => cli::tiles::exec(&paths, args, json),
        Verb::Recover(args) => cli::recover::exec(&paths, args, json),
        Verb::Gc(args) => cli::gc::exec(&paths, args, json),
        Verb::Sessions => cli::sessions::exec(&open_existing(&paths)?, json),
        Verb::Audit(args) => cli::audit::exec(&open_existing(&paths)?, args, json),
        Verb::Show(args) => cli::show::exec(&open_existing(&paths)?, args, json),
        Verb::Search(args) => cli::search::search(&paths, args, json),
        Verb::Index(args) => cli::search::index(&paths, args, json),
        Verb::Export(args) => cli::export::exec(&open_existing(&paths)?, args),
        Verb::Drift(args) => cli::drift::exec(&paths, args, json),
        Verb::Report(args) => cli::report::exec(&open_existing(&paths)?, args),
        Verb::Import(args) => cli::import::exec(&paths, args, json),
        Verb::Serve(args) => cli::serve::exec(&paths, args),
        Verb::Attach(args) => cli::attach::exec(args),
        Verb::Ui(args) => cli::ui::exec(&paths, args, json),
        Verb::Acp(args) => cli::acp::exec(&paths, args),
        Verb::Hook(_) => unreachable!("handled above"),
        Verb::Hooks(args) => cli::hooks::exec(&paths, args, json),
        Verb::Otel(args) => cli::otel::exec(&paths, args),
        Verb::Blob(args) => cli::blob::exec(&open_existing(&paths)?, args),
        Verb::Push(args) => cli::push::exec(&paths, args, json),
        Verb::Clone(args) => cli::clone::exec(&paths, args, json),
        Verb::Hub(args) => cli::hub::exec(args, json),
        Verb::Witness(args) => cli::witness::exec(&paths, args, json),
    }
}
