//! `cmdlog`: the command-line adapter over the cmdlog libraries. It parses flags,
//! calls one library function per verb, renders the result, and maps errors to
//! exit codes: 0 ok; 1 a command settled as error or verify found violations;
//! 2 usage; 3 not found (unknown command, session, seq); 4 store error.

mod attach;
mod daemon;
mod render;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cmdlog_engine::{
    DiscoveryConfig, Engine, EngineConfig, Event, ExecuteError, ExecuteRequest, Mode, Outcome,
    PromptError, PromptOutcome, PromptRequest, SessionError, StreamingBehavior,
    SubmittedAttachment, WorkspaceReceipts, discover, valid_id,
};
use cmdlog_replay::{
    AuditFilter, AuditRow, DriftStatus, RegistryDiff, RegistryView, SessionView, audit, collect,
    export, import, plan_gc_with, sessions, show, state_at_with, verify,
};
use cmdlog_store::{Log, LogConfig};
use serde_json::json;

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
    Commands(CommandsArgs),
    /// Execute one slash line and print its outcome
    Run(RunArgs),
    /// Run the prompt pipeline and print what the model would receive
    Prompt(PromptArgs),
    /// Print events
    Log(LogArgs),
    /// Show the registry (or a session) as of a seq, or what changed between two
    Replay(ReplayArgs),
    /// Every session with its time span, runs, errors and agents
    Sessions,
    /// A timeline of runs: input, attachments, outcome, duration
    Audit(AuditArgs),
    /// One event with its context (a run's done, registration and attachments)
    Show(ShowArgs),
    /// Check the hash chain, seqs, lifecycle invariants and blobs
    Verify,
    /// Remove blobs no event references, once past a grace period
    Gc(GcArgs),
    /// Write a blob's verified bytes to stdout
    Blob(BlobArgs),
    /// Re-expand recorded prompt runs: with the template then (must match) and today's file
    Drift(DriftArgs),
    /// Write a self-contained HTML report of a session (or the whole log)
    Report(ReportArgs),
    /// Write the log (or one session) as JSON lines
    Export(ExportArgs),
    /// Read a whole-log export into a new, empty log
    Import(ImportArgs),
    /// Serve sessions over HTTP with SSE events from the log (docs/http.md)
    Serve(ServeArgs),
    /// The terminal client of a running `cmdlog serve`
    Attach(AttachArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Interactive,
    #[value(name = "non_interactive", alias = "non-interactive")]
    NonInteractive,
    Acp,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Interactive => Mode::Interactive,
            ModeArg::NonInteractive => Mode::NonInteractive,
            ModeArg::Acp => Mode::Acp,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Table,
    Json,
    Acp,
}

#[derive(Args, Debug)]
struct CommandsArgs {
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Include shadowed entries and what shadows them
    #[arg(long)]
    all: bool,
    /// Only what the model may invoke (name, description, when_to_use, argument_hint)
    #[arg(long)]
    model_invocable: bool,
    /// Output format (--json is the same as --format json)
    #[arg(long, value_enum)]
    format: Option<Format>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Session id [default: a new session, printed on stderr]
    #[arg(long, env = "CMDLOG_SESSION")]
    session: Option<String>,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// A file to attach (repeatable)
    #[arg(long = "attach")]
    attach: Vec<PathBuf>,
    /// The slash line, e.g. "/help"
    line: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DeliveryArg {
    Steer,
    #[value(name = "follow-up", alias = "follow_up")]
    FollowUp,
}

#[derive(Args, Debug)]
struct PromptArgs {
    /// Session id [default: a new session, printed on stderr]
    #[arg(long, env = "CMDLOG_SESSION")]
    session: Option<String>,
    /// Receiving agent
    #[arg(long, default_value = "main")]
    agent: String,
    /// Execution mode
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
    /// How the prompt joins a session that is streaming a turn
    #[arg(long, value_enum)]
    delivery: Option<DeliveryArg>,
    /// What the user typed
    text: String,
}

#[derive(Args, Debug)]
struct LogArgs {
    /// Only this session's events
    #[arg(long)]
    session: Option<String>,
    /// First seq
    #[arg(long, default_value_t = 1)]
    from: u64,
    /// Last seq
    #[arg(long)]
    until: Option<u64>,
    /// Only types starting with this prefix, e.g. "command/"
    #[arg(long = "type")]
    type_prefix: Option<String>,
    /// Keep printing events as they commit
    #[arg(long)]
    follow: bool,
}

#[derive(Args, Debug)]
struct GcArgs {
    /// Keep unreferenced blobs younger than this (an admission may be in flight)
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    grace: Duration,
    /// Say what would be freed without removing anything
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct BlobArgs {
    /// The blob's BLAKE3 hash (64 hex characters)
    hash: String,
}

#[derive(Args, Debug)]
struct AuditArgs {
    /// Only this session
    #[arg(long)]
    session: Option<String>,
    /// Only runs since a time (2026-11-28, 2026-11-28T09:30:00Z) or for a span back (24h, 2d)
    #[arg(long)]
    since: Option<String>,
    /// Only this command
    #[arg(long)]
    command: Option<String>,
    /// Only runs that settled as errors
    #[arg(long)]
    errors: bool,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Only this session
    #[arg(long)]
    session: Option<String>,
    /// The HTML file to write
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Args, Debug)]
struct DriftArgs {
    /// Only this run (the seq of its command/run)
    run: Option<u64>,
}

#[derive(Args, Debug)]
struct ExportArgs {
    /// Only this session's events (for reading; an import needs a whole-log export)
    #[arg(long)]
    session: Option<String>,
    /// Write to this file instead of stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace matches of this regular expression in event data with [REDACTED]
    /// (repeatable); blobs are then left out
    #[arg(long = "redact", value_name = "PATTERN")]
    redact: Vec<String>,
}

#[derive(Args, Debug)]
struct ServeArgs {
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

#[derive(Args, Debug)]
struct AttachArgs {
    /// The daemon's URL (`cmdlog serve` prints it; .cmdlog/daemon.json has it)
    #[arg(long, env = "CMDLOG_DAEMON_URL")]
    daemon_url: Option<String>,
    /// Bearer token for the daemon
    #[arg(long, env = "CMDLOG_DAEMON_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Session to attach to (created if new) [default: a new session]
    #[arg(long)]
    session: Option<String>,
}

#[derive(Args, Debug)]
struct ImportArgs {
    /// The export to read (`-` for stdin)
    file: PathBuf,
}

#[derive(Args, Debug)]
struct ShowArgs {
    /// The event's seq
    seq: u64,
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// Replay up to and including this seq [default: the head]
    #[arg(long, conflicts_with = "diff")]
    until: Option<u64>,
    /// What changed in the registry between seq N and seq M
    #[arg(long, num_args = 2, value_names = ["N", "M"], conflicts_with = "session")]
    diff: Option<Vec<u64>>,
    /// Show this session instead of the registry
    #[arg(long)]
    session: Option<String>,
    /// Agent whose view of the registry to show
    #[arg(long, default_value = "main")]
    agent: String,
    /// Mode whose view of the registry to show
    #[arg(long, value_enum, default_value = "non_interactive")]
    mode: ModeArg,
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

const SETTLED_ERROR: u8 = 1;
const USAGE: u8 = 2;
const NOT_FOUND: u8 = 3;
const STORE: u8 = 4;

fn store_failure(e: impl std::fmt::Display) -> Failure {
    Failure::new(STORE, e.to_string())
}

/// An open failure; a lock held by `cmdlog serve` names the daemon and how to reach it.
fn open_failure(e: cmdlog_store::OpenError) -> Failure {
    if let cmdlog_store::OpenError::Locked { path } = &e
        && let Ok(text) = std::fs::read_to_string(daemon::daemon_file(path))
        && let Ok(info) = serde_json::from_str::<serde_json::Value>(&text)
    {
        return Failure::new(
            STORE,
            format!(
                "{} is held by cmdlog serve (pid {}, {}): use its HTTP API (docs/http.md), e.g. curl {}/session/ID/events, or stop it first",
                path.display(),
                info["pid"],
                info["url"].as_str().unwrap_or("?"),
                info["url"].as_str().unwrap_or("")
            ),
        );
    }
    store_failure(e)
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::new(STORE, format!("cannot write output: {e}"))
    }
}

type Outcome_ = Result<u8, Failure>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        // A closed stdout pipe (`cmdlog log | head`) is not an error.
        Err(f) if f.message.contains("Broken pipe") => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("cmdlog: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

struct Paths {
    workspace: PathBuf,
    log: PathBuf,
}

fn paths(cli: &Cli) -> Result<Paths, Failure> {
    let workspace = match &cli.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()
            .map_err(|e| Failure::new(USAGE, format!("cannot read the current folder: {e}")))?,
    };
    let log = cli
        .log
        .clone()
        .unwrap_or_else(|| workspace.join(".cmdlog").join("log.redb"));
    Ok(Paths { workspace, log })
}

fn dispatch(cli: Cli) -> Outcome_ {
    let paths = paths(&cli)?;
    let json = cli.json;
    match cli.verb {
        Verb::Commands(args) => {
            with_engine(&paths, async |engine| commands(engine, args, json).await)
        }
        Verb::Run(args) => with_engine(&paths, async |engine| run(engine, args, json).await),
        Verb::Prompt(args) => with_engine(&paths, async |engine| prompt(engine, args, json).await),
        Verb::Log(args) => log_verb(&paths, args, json),
        Verb::Replay(args) => replay(&open_existing(&paths)?, args, json),
        Verb::Verify => verify_verb(&open_existing(&paths)?, json),
        Verb::Gc(args) => gc(&open_existing_writable(&paths)?, args, json),
        Verb::Sessions => sessions_verb(&open_existing(&paths)?, json),
        Verb::Audit(args) => audit_verb(&open_existing(&paths)?, args, json),
        Verb::Show(args) => show_verb(&open_existing(&paths)?, args, json),
        Verb::Export(args) => export_verb(&open_existing(&paths)?, args),
        Verb::Drift(args) => drift_verb(&paths, args, json),
        Verb::Report(args) => report_verb(&open_existing(&paths)?, args),
        Verb::Import(args) => import_verb(&paths, args, json),
        Verb::Serve(args) => serve_verb(&paths, args),
        Verb::Attach(args) => {
            let Some(url) = args.daemon_url else {
                return Err(Failure::new(
                    USAGE,
                    "attach needs the daemon's URL: pass --daemon-url or set CMDLOG_DAEMON_URL (start one with `cmdlog serve`)",
                ));
            };
            attach::attach(attach::AttachConfig {
                url,
                token: args.token,
                session: args.session,
            })
            .map(|()| 0)
            .map_err(|e| Failure::new(STORE, e))
        }
        Verb::Blob(args) => blob(&open_existing(&paths)?, args),
    }
}

/// Refuses a missing log: read verbs never create one.
fn require_log(paths: &Paths) -> Result<(), Failure> {
    if paths.log.exists() {
        return Ok(());
    }
    Err(Failure::new(
        NOT_FOUND,
        format!(
            "no log at {}; run a command first (cmdlog run /help) or pass --log",
            paths.log.display()
        ),
    ))
}

/// Opens a log that must already exist, read-only.
fn open_existing(paths: &Paths) -> Result<Log, Failure> {
    require_log(paths)?;
    match Log::open_read_only(&paths.log, LogConfig::default()) {
        // A crash left the file mid-commit: a writable open recovers it.
        Err(cmdlog_store::OpenError::NeedsRecovery { .. }) => open_existing_writable(paths),
        other => other.map_err(open_failure),
    }
}

/// Opens a log that must already exist, for writing (gc).
fn open_existing_writable(paths: &Paths) -> Result<Log, Failure> {
    require_log(paths)?;
    Log::open(&paths.log, LogConfig::default()).map_err(open_failure)
}

/// Refuses a session with no events, pointing at `cmdlog sessions`.
fn require_session(log: &Log, session: &str) -> Result<(), Failure> {
    if log
        .stream_seqs(session, 0)
        .map_err(store_failure)?
        .is_empty()
    {
        return Err(Failure::new(
            NOT_FOUND,
            format!("no events for session {session:?}; `cmdlog sessions` lists them"),
        ));
    }
    Ok(())
}

/// The user's home folder: `$HOME`.
fn home() -> Result<PathBuf, Failure> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Failure::new(
                USAGE,
                "HOME is not set; cmdlog reads ~/.claude, ~/.codex and the like from it",
            )
        })
}

/// Opens the log for writing, the engine with the workspace's receipt resolver, and
/// syncs `discovery` into the log (printing new warnings).
async fn open_engine(
    paths: &Paths,
    discovery: &cmdlog_engine::Discovery,
) -> Result<Engine, Failure> {
    let log = Log::open(&paths.log, LogConfig::default()).map_err(open_failure)?;
    let engine = Engine::open(log, EngineConfig::default())
        .await
        .map_err(store_failure)?;
    engine
        .register_receipt_resolver(WorkspaceReceipts::new(&paths.workspace))
        .map_err(store_failure)?;
    let report = engine.sync(discovery).await.map_err(store_failure)?;
    for w in &report.warnings {
        eprintln!("cmdlog: warning: {}: {}", w.path, w.message);
    }
    Ok(engine)
}

/// Opens the engine, syncs command-file discovery into the log, then runs `f`.
fn with_engine(paths: &Paths, f: impl AsyncFnOnce(&Engine) -> Outcome_) -> Outcome_ {
    let discovery = discover(&DiscoveryConfig::new(home()?, &paths.workspace))
        .map_err(|e| Failure::new(USAGE, e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(STORE, format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let engine = open_engine(paths, &discovery).await?;
        f(&engine).await
    })
}

async fn commands(engine: &Engine, args: CommandsArgs, json: bool) -> Outcome_ {
    let mode = Mode::from(args.mode);
    let format = args
        .format
        .unwrap_or(if json { Format::Json } else { Format::Table });
    let mut out = io::stdout().lock();
    if args.model_invocable {
        let list: Vec<_> = engine
            .model_invocable(&args.agent)
            .into_iter()
            .map(|r| {
                json!({
                    "name": r.command.name,
                    "description": r.command.description,
                    "when_to_use": r.command.when_to_use,
                    "argument_hint": r.command.argument_hint,
                })
            })
            .collect();
        if format == Format::Table {
            for c in &list {
                writeln!(
                    out,
                    "/{:<24} {}",
                    c["name"].as_str().unwrap_or(""),
                    c["description"].as_str().unwrap_or("")
                )?;
            }
        } else {
            writeln!(out, "{}", serde_json::Value::Array(list))?;
        }
        return Ok(0);
    }
    if args.all {
        let view = engine.with_state(|s| RegistryView::new(s, &args.agent, mode));
        match format {
            Format::Table => write!(out, "{}", view.render())?,
            _ => print_json(&mut out, &view.commands)?,
        }
        return Ok(0);
    }
    let list = engine.list(&args.agent, mode);
    match format {
        Format::Table => {
            let width = list
                .iter()
                .map(|r| r.command.usage().chars().count())
                .max()
                .unwrap_or(0);
            let label_width = list
                .iter()
                .map(|r| r.command.source_label.chars().count())
                .max()
                .unwrap_or(0);
            for r in &list {
                writeln!(
                    out,
                    "{:<width$}  {:<label_width$}  {}",
                    r.command.usage(),
                    r.command.source_label,
                    r.command.description
                )?;
            }
        }
        Format::Json => {
            let list: Vec<_> = list
                .iter()
                .map(|r| {
                    json!({
                        "name": r.command.name,
                        "description": r.command.description,
                        "argument_hint": r.command.argument_hint,
                        "source": r.command.source,
                        "source_label": r.command.source_label,
                        "command_type": r.command.command_type,
                        "modes": r.command.effective_modes(),
                        "registration": r.seq,
                        "provider": r.provider.id,
                    })
                })
                .collect();
            print_json(&mut out, &list)?;
        }
        Format::Acp => {
            let list: Vec<_> = list
                .iter()
                .map(|r| r.command.acp_available_command())
                .collect();
            print_json(&mut out, &list)?;
        }
    }
    Ok(0)
}

fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = blake3_like(nanos, std::process::id());
    hasher.truncate(12);
    format!("s-{hasher}")
}

fn blake3_like(nanos: u128, pid: u32) -> String {
    // A unique-enough id from time and pid; not a secret.
    let mut bytes = nanos.to_le_bytes().to_vec();
    bytes.extend_from_slice(&pid.to_le_bytes());
    cmdlog_store::BlobHash::of(&bytes).to_hex()
}

/// The session to use: the one named (created on first use) or a new one, whose id
/// is printed on stderr.
async fn open_session(
    engine: &Engine,
    session: Option<String>,
    agent: &str,
    mode: Mode,
) -> Result<String, Failure> {
    if !valid_id(agent) {
        return Err(Failure::new(
            USAGE,
            format!("invalid agent id {agent:?}: use letters, digits, . _ : -"),
        ));
    }
    let session = match session {
        Some(s) => s,
        None => {
            let s = new_session_id();
            eprintln!("session: {s}");
            s
        }
    };
    engine
        .ensure_session(&session, agent, mode)
        .await
        .map_err(|e| match e {
            SessionError::InvalidId { .. } => Failure::new(USAGE, e.to_string()),
            SessionError::Ended { .. } | SessionError::Unknown { .. } => {
                Failure::new(NOT_FOUND, e.to_string())
            }
            other => store_failure(other),
        })?;
    Ok(session)
}

async fn prompt(engine: &Engine, args: PromptArgs, json: bool) -> Outcome_ {
    let mode = Mode::from(args.mode);
    let session = open_session(engine, args.session, &args.agent, mode).await?;
    let mut request = PromptRequest::new(&session, &args.agent, mode, &args.text);
    request.behavior = args.delivery.map(|d| match d {
        DeliveryArg::Steer => StreamingBehavior::Steer,
        DeliveryArg::FollowUp => StreamingBehavior::FollowUp,
    });
    let outcome = engine.prompt(request).await.map_err(|e| match e {
        PromptError::Streaming { .. } => Failure::new(
            USAGE,
            format!("{e}; pass --delivery steer or --delivery follow-up"),
        ),
        PromptError::Execute(ExecuteError::Session(_))
        | PromptError::Session(SessionError::Ended { .. }) => {
            Failure::new(NOT_FOUND, e.to_string())
        }
        other => store_failure(other),
    })?;
    let mut out = io::stdout().lock();
    match outcome {
        PromptOutcome::Delivered {
            seq,
            text,
            delivery,
            from_run,
            ..
        } => {
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"session": session, "delivered": true, "seq": seq, "text": text, "delivery": delivery, "from_run": from_run})
                )?;
            } else {
                writeln!(out, "{text}")?;
            }
            Ok(0)
        }
        PromptOutcome::Handled(execution) => {
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"session": session, "delivered": false, "command_id": execution.command_id, "name": execution.name, "outcome": execution.outcome})
                )?;
                return Ok(exit_code(&execution.outcome));
            }
            drop(out);
            print_outcome(&execution)
        }
    }
}

/// 0 for a success, 1 for a command that settled as an error.
fn exit_code(outcome: &Outcome) -> u8 {
    if outcome.is_error() { SETTLED_ERROR } else { 0 }
}

/// Prints a settled execution: success text on stdout, an error on stderr (exit 1).
fn print_outcome(execution: &cmdlog_engine::Execution) -> Outcome_ {
    match &execution.outcome {
        Outcome::Success { text, prompt, .. } => {
            if let Some(body) = prompt.as_deref().or(text.as_deref()) {
                writeln!(io::stdout().lock(), "{body}")?;
            }
            Ok(0)
        }
        Outcome::Error { text, .. } => {
            eprintln!(
                "/{} failed (command id {}): {text}",
                execution.name, execution.command_id
            );
            Ok(SETTLED_ERROR)
        }
    }
}

async fn run(engine: &Engine, args: RunArgs, json: bool) -> Outcome_ {
    let mode = Mode::from(args.mode);
    if !args.line.starts_with('/') {
        return Err(Failure::new(
            USAGE,
            format!(
                "{:?} is not a slash line; try: cmdlog run \"/help\"",
                args.line
            ),
        ));
    }
    // A line that names no command logs nothing, not even a new session.
    let name = args.line[1..].split_whitespace().next().unwrap_or("");
    let unknown = || {
        Failure::new(
            NOT_FOUND,
            format!(
                "unknown command /{name} for agent {} in {mode} mode; nothing was logged. `cmdlog commands --mode {mode}` lists what is available",
                args.agent
            ),
        )
    };
    match cmdlog_engine::parse_line(&args.line) {
        Some(parsed)
            if engine
                .find(&args.agent, mode, parsed.name.as_str())
                .is_some() => {}
        _ if !valid_id(&args.agent) => {}
        _ => return Err(unknown()),
    }
    let session = open_session(engine, args.session, &args.agent, mode).await?;
    // Each --attach is a staged file receipt: the path as typed, resolved by the
    // workspace resolver (relative paths stay inside the workspace).
    let attachments = args
        .attach
        .iter()
        .map(|path| SubmittedAttachment::FileReceipt {
            receipt: path.display().to_string(),
        })
        .collect();
    let mut request = ExecuteRequest::new(&session, &args.agent, mode, &args.line);
    request.attachments = attachments;
    let execution = engine.execute(request).await.map_err(|e| match e {
        ExecuteError::Session(_) => Failure::new(NOT_FOUND, e.to_string()),
        other => store_failure(other),
    })?;
    let Some(execution) = execution else {
        let name = args.line[1..].split_whitespace().next().unwrap_or("");
        return Err(Failure::new(
            NOT_FOUND,
            format!(
                "unknown command /{name} for agent {} in {mode} mode; nothing was logged. `cmdlog commands --mode {mode}` lists what is available",
                args.agent
            ),
        ));
    };
    let mut out = io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({
                "session": session,
                "command_id": execution.command_id,
                "registration": execution.registration,
                "name": execution.name,
                "outcome": execution.outcome,
                "done": execution.done,
            })
        )?;
        return Ok(exit_code(&execution.outcome));
    }
    drop(out);
    print_outcome(&execution)
}

fn print_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).expect("cmdlog's views serialize");
    writeln!(out, "{text}")
}

fn print_event(out: &mut impl Write, event: &Event, json: bool) -> io::Result<()> {
    if json {
        writeln!(out, "{}", event.to_json())
    } else {
        writeln!(
            out,
            "{:>6}  {}  {:<22} {:<16} {}",
            event.seq,
            render::utc(event.at),
            event.data.type_name(),
            event.session.as_deref().unwrap_or("-"),
            render::summary(event)
        )
    }
}

/// How often `log --follow` looks for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

fn log_verb(paths: &Paths, args: LogArgs, json: bool) -> Outcome_ {
    let until = args.until.unwrap_or(u64::MAX);
    let mut out = io::stdout().lock();
    // Prints the wanted events after `last` up to `until`; returns the last seq seen.
    let print_new = |log: &Log, last: u64, out: &mut io::StdoutLock<'_>| -> Result<u64, Failure> {
        let to = until.min(log.head().seq);
        if to <= last {
            return Ok(last);
        }
        let records = match &args.session {
            Some(s) => log
                .stream(s, last)
                .map_err(store_failure)?
                .into_iter()
                .filter(|r| r.seq <= to)
                .collect(),
            None => log.range(last + 1, to).map_err(store_failure)?,
        };
        for record in records {
            let event = Event::decode(record.seq, &record.bytes).map_err(store_failure)?;
            let wanted = args
                .type_prefix
                .as_deref()
                .is_none_or(|p| event.data.type_name().starts_with(p));
            if wanted {
                print_event(out, &event, json)?;
            }
        }
        Ok(to)
    };
    let log = open_existing(paths)?;
    if let Some(session) = &args.session
        && !args.follow
    {
        require_session(&log, session)?;
    }
    let mut last = print_new(&log, args.from.saturating_sub(1), &mut out)?;
    drop(log);
    if !args.follow {
        return Ok(0);
    }
    // Other processes append while we wait: hold the file only for each short read.
    let quick = LogConfig {
        lock_wait: Duration::ZERO,
        ..LogConfig::default()
    };
    while last < until {
        out.flush()?;
        std::thread::sleep(FOLLOW_POLL);
        match Log::open_read_only(&paths.log, quick.clone()) {
            Ok(log) => last = print_new(&log, last, &mut out)?,
            // A writer holds the file right now, or is recovering it: look again soon.
            Err(
                cmdlog_store::OpenError::Locked { .. }
                | cmdlog_store::OpenError::NeedsRecovery { .. },
            ) => {}
            Err(e) => return Err(store_failure(e)),
        }
    }
    Ok(0)
}

fn replay(log: &Log, args: ReplayArgs, json: bool) -> Outcome_ {
    let head = log.head().seq;
    if let Some(points) = &args.diff {
        let (from, to) = (points[0].min(points[1]), points[0].max(points[1]));
        if to > head {
            return Err(Failure::new(
                NOT_FOUND,
                format!(
                    "seq {to} is past the head of the log (seq {head}); pick seqs up to {head}"
                ),
            ));
        }
        let mode = Mode::from(args.mode);
        let view = |seq| -> Result<RegistryView, Failure> {
            let bar = Progress::new(seq, "replay");
            let state = state_at_with(log, seq, bar.tick()).map_err(store_failure)?;
            bar.finish();
            Ok(RegistryView::new(&state, &args.agent, mode))
        };
        let diff = RegistryDiff::between(&view(from)?, &view(to)?);
        let mut out = io::stdout().lock();
        if json {
            print_json(&mut out, &diff)?;
        } else {
            write!(out, "{}", diff.render())?;
        }
        return Ok(0);
    }
    let until = args.until.unwrap_or(head);
    if until > head {
        return Err(Failure::new(
            NOT_FOUND,
            format!(
                "seq {until} is past the head of the log (seq {head}); pick a seq up to {head}"
            ),
        ));
    }
    let mut out = io::stdout().lock();
    if let Some(session) = &args.session {
        let view = SessionView::load(log, session, until).map_err(store_failure)?;
        if view.events == 0 {
            return Err(Failure::new(
                NOT_FOUND,
                format!("session {session:?} has no events up to seq {until}"),
            ));
        }
        if json {
            print_json(&mut out, &view)?;
        } else {
            writeln!(out, "session {} as of seq {until}", view.id)?;
            writeln!(
                out,
                "  agent {}  mode {}  model {}",
                view.agent.as_deref().unwrap_or("-"),
                view.mode
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "-".into()),
                view.model.as_deref().unwrap_or("(default)")
            )?;
            if let Some((seq, how, reason)) = &view.ended {
                writeln!(
                    out,
                    "  {how} at seq {seq}{}",
                    reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )?;
            }
            for r in &view.runs {
                let outcome = match &r.outcome {
                    Some(o) => render::outcome_line(o),
                    None => "no done yet".into(),
                };
                writeln!(
                    out,
                    "  {:>6}  {}  /{}{}  -> {outcome}",
                    r.seq,
                    render::utc(r.at),
                    r.name,
                    r.raw_input.as_deref().unwrap_or(" (input not recorded)")
                )?;
            }
        }
        return Ok(0);
    }
    let bar = Progress::new(until, "replay");
    let state = state_at_with(log, until, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let view = RegistryView::new(&state, &args.agent, Mode::from(args.mode));
    if json {
        print_json(&mut out, &view)?;
    } else {
        write!(out, "{}", view.render())?;
    }
    Ok(0)
}

fn verify_verb(log: &Log, json: bool) -> Outcome_ {
    let bar = Progress::new(log.head().seq, "verify");
    let report = verify(log, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &report)?;
    } else {
        writeln!(
            out,
            "{} events, {} blobs checked",
            report.events, report.blobs
        )?;
        writeln!(
            out,
            "head seq {} hash {}",
            report.head_seq, report.head_hash
        )?;
        for run in &report.open_runs {
            writeln!(
                out,
                "open run: seq {} /{} in session {} (in flight, or its process died)",
                run.seq,
                run.name,
                run.session.as_deref().unwrap_or("-")
            )?;
        }
        if report.is_clean() {
            writeln!(out, "ok: no violations")?;
        } else {
            for v in &report.violations {
                match v.seq {
                    Some(seq) => writeln!(out, "violation at seq {seq}: {}", v.message)?,
                    None => writeln!(out, "violation: {}", v.message)?,
                }
            }
        }
    }
    Ok(if report.is_clean() { 0 } else { SETTLED_ERROR })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn gc(log: &Log, args: GcArgs, json: bool) -> Outcome_ {
    let grace_ms = args.grace.as_millis() as u64;
    let bar = Progress::new(log.head().seq, "gc");
    let plan = plan_gc_with(log, now_ms(), grace_ms, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let removed = if args.dry_run {
        0
    } else {
        collect(log, &plan).map_err(store_failure)?
    };
    let mut out = io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({"dry_run": args.dry_run, "removed": removed, "plan": plan})
        )?;
        return Ok(0);
    }
    let verb = if args.dry_run { "would free" } else { "freed" };
    for b in &plan.collect {
        writeln!(out, "{verb} {} ({} bytes)", b.hash, b.size)?;
    }
    writeln!(
        out,
        "{verb} {} blobs, {} bytes; kept {} referenced and {} younger than {}",
        plan.collect.len(),
        plan.bytes,
        plan.referenced,
        plan.in_grace.len(),
        humantime::format_duration(args.grace)
    )?;
    Ok(0)
}

fn blob(log: &Log, args: BlobArgs) -> Outcome_ {
    let Some(hash) = cmdlog_store::BlobHash::from_hex(&args.hash) else {
        return Err(Failure::new(
            USAGE,
            format!(
                "{:?} is not a blob hash: give 64 hex characters, as `cmdlog log --json` shows them",
                args.hash
            ),
        ));
    };
    match log.get_blob(&hash) {
        Ok(Some(bytes)) => {
            io::stdout().lock().write_all(&bytes)?;
            Ok(0)
        }
        Ok(None) => Err(Failure::new(
            NOT_FOUND,
            format!("no blob {hash} in this log (collected by gc, or never stored)"),
        )),
        Err(e @ cmdlog_store::BlobError::Mismatch { .. }) => {
            Err(Failure::new(SETTLED_ERROR, e.to_string()))
        }
        Err(e) => Err(store_failure(e)),
    }
}

/// Whether to colour stdout: a terminal, and `NO_COLOR` unset.
fn colour() -> bool {
    use std::io::IsTerminal;
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn sessions_verb(log: &Log, json: bool) -> Outcome_ {
    let list = sessions(log, |_| {}).map_err(store_failure)?;
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &list)?;
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<20} {:<23} {:<23} {:>5} {:>6} {:>11}  agents",
        "session", "first", "last", "runs", "errors", "interrupted"
    )?;
    for s in &list {
        let errors = if s.errors > 0 {
            paint(on, "31", &format!("{:>6}", s.errors))
        } else {
            format!("{:>6}", 0)
        };
        let agents: Vec<&str> = s.agents.iter().map(String::as_str).collect();
        writeln!(
            out,
            "{:<20} {} {} {:>5} {errors} {:>11}  {}{}",
            s.id,
            render::utc(s.first_at),
            render::utc(s.last_at),
            s.runs,
            s.interrupted,
            agents.join(","),
            s.ended
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        )?;
    }
    Ok(0)
}

/// `--since`: an absolute time (`2026-11-28`, `2026-11-28T09:30:00Z`) or a span back
/// from now (`24h`, `2d`).
fn parse_since(text: &str) -> Result<u64, Failure> {
    if let Ok(span) = humantime::parse_duration(text) {
        return Ok(now_ms().saturating_sub(span.as_millis() as u64));
    }
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_string()
    };
    humantime::parse_rfc3339_weak(&full)
        .or_else(|_| humantime::parse_rfc3339(&full))
        .map(|t| t.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0))
        .map_err(|_| Failure::new(USAGE, format!("--since {text:?}: give a date (2026-11-28), a UTC time (2026-11-28T09:30:00Z) or a span back (24h, 2d)")))
}

fn audit_verb(log: &Log, args: AuditArgs, json: bool) -> Outcome_ {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let filter = AuditFilter {
        session: args.session,
        since_ms: args.since.as_deref().map(parse_since).transpose()?,
        command: args
            .command
            .map(|c| c.trim_start_matches('/').to_lowercase()),
        errors_only: args.errors,
    };
    let rows = audit(log, &filter, |_| {}).map_err(store_failure)?;
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &rows)?;
        return Ok(0);
    }
    let on = colour();
    writeln!(
        out,
        "{:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
        "time", "seq", "session", "agent", "mode", "command", "duration"
    )?;
    for row in &rows {
        writeln!(out, "{}", audit_line(row, on))?;
    }
    if rows.is_empty() {
        writeln!(out, "(no runs match)")?;
    }
    Ok(0)
}

fn audit_line(row: &AuditRow, on: bool) -> String {
    let input = match &row.input {
        Some(i) => format!("/{}{i}", row.command),
        None => format!("/{} (input not recorded)", row.command),
    };
    let input = if row.attachments.is_empty() {
        input
    } else {
        format!("{input} [{}]", row.attachments.join(", "))
    };
    let input: String = if input.chars().count() > 40 {
        format!("{}…", input.chars().take(39).collect::<String>())
    } else {
        input
    };
    let (outcome, code) = match &row.outcome {
        None => (
            "no done yet (in flight, or its process died)".to_string(),
            "33",
        ),
        Some(
            o @ Outcome::Error {
                interrupted: true, ..
            },
        ) => (render::outcome_line(o), "33"),
        Some(o @ Outcome::Error { .. }) => (render::outcome_line(o), "31"),
        Some(o) => (render::outcome_line(o), "32"),
    };
    format!(
        "{} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} {}",
        render::utc(row.at),
        row.seq,
        row.session.as_deref().unwrap_or("-"),
        row.agent.as_deref().unwrap_or("-"),
        row.mode.as_str(),
        input,
        row.elapsed_us
            .map(render::duration)
            .unwrap_or_else(|| "-".into()),
        paint(on, code, &outcome)
    )
}

fn show_verb(log: &Log, args: ShowArgs, json: bool) -> Outcome_ {
    let Some(shown) = show(log, args.seq).map_err(store_failure)? else {
        return Err(Failure::new(
            NOT_FOUND,
            format!(
                "no event at seq {}; the log's head is seq {}",
                args.seq,
                log.head().seq
            ),
        ));
    };
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &shown)?;
        return Ok(0);
    }
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("events serialize");
    writeln!(out, "{}", pretty(&shown.event))?;
    for r in &shown.related {
        writeln!(
            out,
            "\n{} (seq {}):\n{}",
            r.role,
            r.event["seq"],
            pretty(&r.event)
        )?;
    }
    if let Some(t) = &shown.template {
        writeln!(out, "\ntemplate as registered:\n{t}")?;
    }
    Ok(0)
}

/// Logs at least this long get progress bars.
const PROGRESS_EVENTS_MIN: u64 = 20_000;

/// A progress bar on stderr, drawn only when stderr is a terminal and the work is
/// large; silent otherwise.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(total: u64, what: &str) -> Self {
        use std::io::IsTerminal;
        if total < PROGRESS_EVENTS_MIN || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:>8} {wide_bar} {pos}/{len} events, {eta} left",
        ) {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        Progress(Some(bar))
    }

    fn tick(&self) -> impl FnMut(u64) + '_ {
        move |seq| {
            if let Some(bar) = &self.0 {
                bar.set_position(seq);
            }
        }
    }

    fn finish(self) {
        if let Some(bar) = self.0 {
            bar.finish_and_clear();
        }
    }
}

fn export_verb(log: &Log, args: ExportArgs) -> Outcome_ {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let redact = args
        .redact
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| {
                Failure::new(
                    USAGE,
                    format!("--redact {p:?} is not a regular expression: {e}"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bar = Progress::new(log.head().seq, "export");
    let summary = match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| {
                Failure::new(USAGE, format!("cannot create {}: {e}", path.display()))
            })?;
            let mut out = io::BufWriter::new(file);
            export(log, args.session.as_deref(), &redact, &mut out, bar.tick())
        }
        None => export(
            log,
            args.session.as_deref(),
            &redact,
            &mut io::BufWriter::new(io::stdout().lock()),
            bar.tick(),
        ),
    }
    .map_err(|e| match e {
        cmdlog_replay::ExportError::Write(io) => Failure::from(io),
        other => store_failure(other),
    })?;
    bar.finish();
    eprintln!(
        "exported {} events and {} blobs; head seq {} hash {}",
        summary.events, summary.blobs, summary.head_seq, summary.head_hash
    );
    Ok(0)
}

fn import_verb(paths: &Paths, args: ImportArgs, json: bool) -> Outcome_ {
    let input: Box<dyn io::BufRead> = if args.file.as_os_str() == "-" {
        Box::new(io::BufReader::new(io::stdin().lock()))
    } else {
        let file = std::fs::File::open(&args.file).map_err(|e| {
            Failure::new(
                NOT_FOUND,
                format!("cannot open {}: {e}", args.file.display()),
            )
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
    let log = Log::open(&paths.log, LogConfig::default()).map_err(store_failure)?;
    let bar = Progress::new(lines, "import");
    let summary = import(&log, input, bar.tick());
    bar.finish();
    let summary = summary.map_err(|e| match e {
        cmdlog_replay::ImportError::NotEmpty { .. } | cmdlog_replay::ImportError::Line { .. } => {
            Failure::new(USAGE, e.to_string())
        }
        other => store_failure(other),
    })?;
    let bar = Progress::new(log.head().seq, "verify");
    let report = verify(&log, bar.tick()).map_err(store_failure)?;
    bar.finish();
    let mut out = io::stdout().lock();
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
        match &summary.expected_head_hash {
            Some(h) if *h == summary.head_hash => writeln!(out, "matches the export's head hash")?,
            Some(h) => writeln!(
                out,
                "DIFFERS from the export's head hash {h}: the export was edited or damaged"
            )?,
            None => writeln!(
                out,
                "no head hash to compare with (a redacted export, or no trailer)"
            )?,
        }
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
    Ok(if summary.matches() && report.is_clean() {
        0
    } else {
        SETTLED_ERROR
    })
}

fn drift_verb(paths: &Paths, args: DriftArgs, json: bool) -> Outcome_ {
    let today = discover(&DiscoveryConfig::new(home()?, &paths.workspace))
        .map_err(|e| Failure::new(USAGE, e.to_string()))?;
    let log = open_existing(paths)?;
    if let Some(run) = args.run {
        let is_run = matches!(
            log.get(run)
                .map_err(store_failure)?
                .map(|r| Event::decode(r.seq, &r.bytes)),
            Some(Ok(Event {
                data: cmdlog_engine::EventData::CommandRun(_),
                ..
            }))
        );
        if !is_run {
            return Err(Failure::new(
                NOT_FOUND,
                format!(
                    "seq {run} is not a command/run; `cmdlog audit` lists runs with their seqs"
                ),
            ));
        }
    }
    let report = cmdlog_replay::drift(&log, args.run, &today).map_err(store_failure)?;
    let mut out = io::stdout().lock();
    if json {
        print_json(&mut out, &report)?;
    } else {
        for r in &report.runs {
            let verdict = match r.status {
                DriftStatus::Same => "same",
                DriftStatus::Drifted => "template drifted",
                DriftStatus::Regression => {
                    "ENGINE REGRESSION: the recorded template expands differently now"
                }
                DriftStatus::FileGone => "same; the file is gone today",
                DriftStatus::InputNotRecorded => "skipped: input not recorded",
                DriftStatus::TemplateUnavailable => {
                    "skipped: template blob missing or corrupt (run cmdlog verify)"
                }
            };
            writeln!(
                out,
                "run {} /{} (registration {}{}): {verdict}",
                r.run,
                r.command,
                r.registration,
                r.path
                    .as_deref()
                    .map(|p| format!(", {p}"))
                    .unwrap_or_default()
            )?;
            if let Some(diff) = &r.diff {
                write!(out, "{diff}")?;
            }
        }
        writeln!(
            out,
            "checked {} prompt runs: {} same, {} drifted, {} file gone, {} skipped, {} engine regressions",
            report.runs.len(),
            report.count(DriftStatus::Same),
            report.count(DriftStatus::Drifted),
            report.count(DriftStatus::FileGone),
            report.count(DriftStatus::InputNotRecorded)
                + report.count(DriftStatus::TemplateUnavailable),
            report.regressions()
        )?;
    }
    Ok(if report.regressions() > 0 {
        SETTLED_ERROR
    } else {
        0
    })
}

fn report_verb(log: &Log, args: ReportArgs) -> Outcome_ {
    if let Some(s) = &args.session {
        require_session(log, s)?;
    }
    let html = cmdlog_replay::render_report(log, args.session.as_deref()).map_err(store_failure)?;
    std::fs::write(&args.output, html).map_err(|e| {
        Failure::new(
            USAGE,
            format!("cannot write {}: {e}", args.output.display()),
        )
    })?;
    eprintln!("wrote {}", args.output.display());
    Ok(0)
}

fn serve_verb(paths: &Paths, args: ServeArgs) -> Outcome_ {
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
        let config = daemon::ServeConfig {
            addr: args.addr,
            token: args.token,
            allow_origin: args.allow_origin,
            workspace: paths.workspace.clone(),
            home,
        };
        daemon::serve(engine, config, &paths.log)
            .await
            .map_err(|e| Failure::new(STORE, e))
    })?;
    Ok(0)
}
