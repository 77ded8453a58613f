//! An ACP agent as a child process: started from a command line, spoken to over
//! its stdin and stdout, its stderr passed on escaped, its exit reported.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::rpc::{Incoming, Peer, RpcError};

/// The ACP protocol version cmdlog speaks (`PROTOCOL_VERSION` of schema v1).
pub const PROTOCOL_VERSION: u64 = 1;

/// An agent command line that names no program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentCommandError {
    /// Quotes do not balance.
    #[error("cannot split the agent command {line:?}: unbalanced quotes")]
    Unbalanced {
        /// The command line as given.
        line: String,
    },
    /// No program.
    #[error("the agent command is empty: give the program that speaks ACP on stdio")]
    Empty,
}

/// Why an agent could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The program could not be run.
    #[error("cannot start the agent `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The process came without a pipe cmdlog asked for.
    #[error("the agent has no {0}")]
    NoPipe(&'static str),
}

/// How to start the agent: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program, looked up on `PATH` as a shell would.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl AgentCommand {
    /// Splits a command line as a POSIX shell would (quotes, backslashes), without
    /// running a shell.
    pub fn parse(line: &str) -> Result<Self, AgentCommandError> {
        let words = shlex::split(line).ok_or_else(|| AgentCommandError::Unbalanced {
            line: line.to_string(),
        })?;
        Self::from_words(words)
    }

    /// A program and its arguments, already split.
    pub fn from_words(words: Vec<String>) -> Result<Self, AgentCommandError> {
        let mut words = words.into_iter();
        let program = words
            .next()
            .filter(|p| !p.is_empty())
            .ok_or(AgentCommandError::Empty)?;
        Ok(AgentCommand {
            program,
            args: words.collect(),
        })
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|w| {
                shlex::try_quote(w)
                    .map(|q| q.into_owned())
                    .unwrap_or_else(|_| w.to_string())
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How an agent process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// Its exit status, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// Said in words: "the agent was killed by signal 9".
    pub how: String,
}

impl AgentExit {
    /// The signal's name (`SIGKILL`), as Node.js gives a child's `signalCode`.
    pub fn signal_name(&self) -> Option<String> {
        let n = self.signal?;
        let name = match n {
            1 => "SIGHUP",
            2 => "SIGINT",
            3 => "SIGQUIT",
            4 => "SIGILL",
            6 => "SIGABRT",
            7 => "SIGBUS",
            8 => "SIGFPE",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            13 => "SIGPIPE",
            14 => "SIGALRM",
            15 => "SIGTERM",
            _ => return Some(format!("SIG{n}")),
        };
        Some(name.to_string())
    }
}

/// A running agent.
pub struct AgentProcess {
    /// The JSON-RPC connection over its stdio.
    pub peer: Arc<Peer>,
    /// Becomes `Some(how it ended)` when the process exits.
    pub exit: watch::Receiver<Option<AgentExit>>,
    /// Its pid, for messages.
    pub pid: Option<u32>,
}

/// Starts `command` in `cwd` with its stdin and stdout piped to us; its stderr
/// lines go to ours, escaped and prefixed.
pub(crate) fn start(
    command: &AgentCommand,
    cwd: &Path,
) -> Result<(Child, ChildStdin, ChildStdout), StartError> {
    let mut child = tokio::process::Command::new(&command.program)
        .args(&command.args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| StartError::Spawn {
            command: command.display(),
            source,
        })?;
    let stdin = child.stdin.take().ok_or(StartError::NoPipe("stdin"))?;
    let stdout = child.stdout.take().ok_or(StartError::NoPipe("stdout"))?;
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("agent: {}", cmdlog_common::terminal::clean(&line));
            }
        });
    }
    Ok((child, stdin, stdout))
}

/// Starts `command` in `cwd` as an agent cmdlog speaks to: what it asks of us
/// goes to `handler` (see [`Peer::start`]).
pub fn spawn(
    command: &AgentCommand,
    cwd: &Path,
    handler: impl FnMut(&Arc<Peer>, Incoming) + Send + 'static,
) -> Result<AgentProcess, StartError> {
    let (mut child, stdin, stdout) = start(command, cwd)?;
    let pid = child.id();
    let peer = Peer::start(stdout, stdin, handler);
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(async move {
        let exit = match child.wait().await {
            Ok(status) => {
                let (code, signal) = (
                    status.code(),
                    std::os::unix::process::ExitStatusExt::signal(&status),
                );
                let how = match (code, signal) {
                    (Some(code), _) => format!("the agent exited with status {code}"),
                    (None, Some(signal)) => format!("the agent was killed by signal {signal}"),
                    _ => "the agent exited".to_string(),
                };
                AgentExit { code, signal, how }
            }
            Err(e) => AgentExit {
                code: None,
                signal: None,
                how: format!("the agent could not be waited for: {e}"),
            },
        };
        let _ = exit_tx.send(Some(exit));
    });
    Ok(AgentProcess { peer, exit, pid })
}

/// The `initialize` request cmdlog sends: protocol 1, no file system or terminal
/// offered (cmdlog has none to lend), its name and version.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "cmdlog", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The text of an agent's answer to `session/prompt`: its stop reason.
pub fn stop_reason(result: &Value) -> Result<String, RpcError> {
    result
        .get("stopReason")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            RpcError::new(
                crate::rpc::INTERNAL_ERROR,
                "the agent's answer to session/prompt has no stopReason",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell_without_one() {
        let c = AgentCommand::parse(r#"node "my agent.js" --flag 'a b'"#).unwrap();
        assert_eq!(c.program, "node");
        assert_eq!(c.args, ["my agent.js", "--flag", "a b"]);
        assert_eq!(c.display(), "node 'my agent.js' --flag 'a b'");
        assert!(
            AgentCommand::parse("")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            AgentCommand::parse("node 'x")
                .unwrap_err()
                .to_string()
                .contains("quotes")
        );
    }
}
