//! The data of command events: `attachment/admitted`, `command/run`,
//! `command/done`, and how a command settled.

use serde::{Deserialize, Serialize};

use super::Seq;
use crate::command::Mode;

/// `attachment/admitted`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentAdmitted {
    /// `image` or `file`.
    pub kind: AttachmentKind,
    /// Blob hash of the bytes.
    pub blob: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Display name.
    pub name: String,
}

/// The kind of an attachment block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// An image block.
    Image,
    /// A file block.
    File,
}

/// Who invoked a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum InvocationSource {
    /// A person typed it.
    #[default]
    User,
    /// The model called it as a tool.
    Model,
    /// A program called the API.
    Api,
    /// The agent ran it itself; cmdlog observed it through the agent's hook or
    /// transcript. Its `registration` is cmdlog's registration of the same
    /// command file when there is one, else 0.
    Agent,
}

/// `command/run`: its seq is the command id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// Seq of the registration that resolved.
    pub registration: Seq,
    /// The command name as resolved (lowercase).
    pub name: String,
    /// The execution mode.
    pub mode: Mode,
    /// Who invoked it.
    pub source: InvocationSource,
    /// The exact text after the name; absent when the command sets `record_input: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// Seqs of the `attachment/admitted` events appended with it.
    #[serde(default)]
    pub attachments: Vec<Seq>,
    /// Injections in its expansion that the command's agent would run or read and
    /// cmdlog did not (shell commands, file references), as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<String>,
    /// The agent release whose rules expanded it, for a dialect whose rules
    /// changed between releases (Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<RunRelease>,
}

/// The agent release whose rules expanded a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRelease {
    /// The agent: `claude-code`.
    pub agent: String,
    /// Its version, when it was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How it was known: `claude --version`, `AI_AGENT` (a hook's environment),
    /// `transcript`; `assumed` when it was not, and the current rules applied.
    pub from: String,
    /// The rules applied: `Claude Code 2.1.210 and later`, ….
    pub rules: String,
}

/// `command/done`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandDone {
    /// Seq of its `command/run`.
    pub run: Seq,
    /// How it settled.
    pub outcome: Outcome,
    /// Handler time in microseconds.
    pub elapsed_us: u64,
    /// For a run the agent did itself: whether cmdlog's own expansion of the same
    /// command file agrees with the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_check: Option<AgentCheck>,
}

/// cmdlog's expansion of a command an agent expanded itself, compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCheck {
    /// The command file cmdlog resolved the same name to.
    pub path: String,
    /// Its content hash (BLAKE3 hex) when compared.
    pub content_hash: String,
    /// Whether cmdlog's expansion is byte for byte the agent's.
    pub identical: bool,
    /// cmdlog's expansion, when it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdlog_prompt: Option<String>,
}

/// How a command settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// It succeeded.
    Success {
        /// Text to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The prompt to send to the model (prompt commands).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// An earlier event that owns a richer presentation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source_event_seq: Option<Seq>,
    },
    /// It failed, was refused, was cancelled, or was interrupted by a crash.
    Error {
        /// What went wrong.
        text: String,
        /// Set when the process ended before it settled.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
}

impl Outcome {
    /// A success with text.
    pub fn text(text: impl Into<String>) -> Self {
        Outcome::Success {
            text: Some(text.into()),
            prompt: None,
            source_event_seq: None,
        }
    }

    /// An error.
    pub fn error(text: impl Into<String>) -> Self {
        Outcome::Error {
            text: text.into(),
            interrupted: false,
        }
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Outcome::Error { .. })
    }
}
