//! The data of session events (`session/*`, `permission/*`), of what an agent
//! reported (`agent/event`, `acp/message`) and of the log itself
//! (`log/wal_discarded`, `log/redacted`).

use serde::{Deserialize, Serialize};

use super::Seq;
use crate::command::Mode;

/// `session/created`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionCreated {
    /// The session's mode, fixed at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The session whose tool call started this one: a subagent's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
}

/// Where a subagent's session came from: the session that delegated to it,
/// and the tool call that did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Parent {
    /// The delegating session's id (its log key).
    pub session: String,
    /// The tool call that started the subagent, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The kind of agent (`general-purpose`, `Explore`, …), as the agent names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
}

/// `session/closed`, `session/died`, `session/ended`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionEnded {
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What else the agent said about it (`session/ended`: the rest of its
    /// payload), as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

/// How a prompt reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The session was idle: sent at once.
    Idle,
    /// Injected into the running turn.
    Steer,
    /// Queued after the running turn.
    FollowUp,
}

/// `session/prompt`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPrompt {
    /// The text delivered to the model.
    pub text: String,
    /// How.
    pub delivery: Delivery,
    /// The run whose expansion it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_run: Option<Seq>,
    /// Injections in the text that the command's agent would run or read and cmdlog
    /// did not, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<String>,
    /// The client's id for the prompt (`promptId` on the daemon's wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The prompt's ACP content blocks other than text (images, resources), as sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<serde_json::Value>,
    /// The client that sent it, as it names itself (`X-Qwen-Client-Id` on the
    /// daemon's wire): that client knows its own prompt, and its echo says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// `permission/requested`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequested {
    /// The request id.
    pub request_id: String,
    /// The options offered.
    #[serde(default)]
    pub options: serde_json::Value,
    /// The ACP `ToolCallUpdate` the request is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<serde_json::Value>,
}

/// `permission/resolved` (and `permission/already_resolved`)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PermissionResolved {
    /// The request id.
    pub request_id: String,
    /// The decision.
    pub decision: serde_json::Value,
    /// The client that voted (its `X-Qwen-Client-Id`), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voter: Option<String>,
    /// The prompt whose turn asked (`permission/already_resolved`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// Who decided, when a source said or the sequence shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<Decider>,
}

/// Who answered a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// A person: in the agent's dialog, or a client's vote.
    User,
    /// A permission rule or the session's approval mode (the agent's
    /// settings: `config`), without asking.
    Rule,
    /// A hook that answered for the user.
    Hook,
    /// The agent's automatic reviewer (an auto mode's classifier).
    Classifier,
    /// A name this release does not know, kept readable.
    #[serde(other)]
    Other,
}

impl Decider {
    /// Its name in the log.
    pub fn name(self) -> &'static str {
        match self {
            Decider::User => "user",
            Decider::Rule => "rule",
            Decider::Hook => "hook",
            Decider::Classifier => "classifier",
            Decider::Other => "other",
        }
    }
}

/// `session/model_switched`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSwitched {
    /// The new model.
    pub model: String,
}

/// `session/mode_set`: the agent's mode for the session (an approval mode:
/// Qwen Code's `default`, `auto-edit`, `yolo`…) set through ACP
/// `session/set_mode` at a client's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeSet {
    /// The mode now.
    pub mode: String,
    /// The mode before, as the agent last said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The client that asked, as it names itself (`X-Qwen-Client-Id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// `session/model_switch_failed`: the agent refused a model switch; the
/// session's model stays what it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSwitchFailed {
    /// The model asked for.
    pub model: String,
    /// The agent's error (its JSON-RPC `error`: `code`, `message`, `data`?).
    pub error: serde_json::Value,
}

/// `session/cancelled`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionCancelled {
    /// The run cancelled, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Seq>,
    /// The prompt whose turn was cancelled, when one was under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
}

/// `log/wal_discarded`: what a recovery dropped from a damaged write-ahead log, and
/// why. The events it held are gone; this says so in the log itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalDiscarded {
    /// The write-ahead log's path.
    pub wal: String,
    /// What was wrong with it.
    pub problem: String,
    /// The last seq kept from before the damage.
    pub kept_through: Seq,
    /// First and last seq of the dropped records that could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_seqs: Option<(Seq, Seq)>,
    /// Readable frames dropped.
    pub dropped_frames: u64,
}

/// The stream key `log/identity` records are stored under (not a valid session
/// id, so no session's stream can take it): the log's id is found without a scan.
pub const IDENTITY_STREAM: &str = "@log/identity";

/// `log/identity`: the log's own id, given once (when the log is created, or on
/// the first writable open of a log made before ids existed). A hub keys each
/// log's copy by it; a clone keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogIdentity {
    /// 32 lowercase hex digits, random.
    pub id: String,
    /// The machine's host name when the id was given.
    pub host: String,
    /// When the id was given, unix ms.
    pub created_at: u64,
}

/// The stream key `import/checkpoint` records are stored under (not a valid
/// session id): an import finds what it read before without a scan.
pub const IMPORT_STREAM: &str = "@import";

/// `import/checkpoint`: a transcript file was imported whole as it stood — its
/// size and BLAKE3 hash when read. Appended with the file's last items (or
/// alone, when it added none): an import that finds the file unchanged reads
/// it no further.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportCheckpoint {
    /// What was imported: `codex transcript`, …
    pub source: String,
    /// The file's absolute path.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The BLAKE3 hash of those bytes, 64 lowercase hex digits.
    pub blake3: String,
}

/// `agent/event`: something an agent reported (a hook event, a transcript line)
/// that no typed event records, kept as the agent gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// The agent: `claude-code`, `codex`, `gemini`, `qwen`.
    pub agent: String,
    /// Its name for what happened (`SessionStart`, `Notification`, `summary`, …).
    pub event: String,
    /// What it said, as given (redacted when asked).
    #[serde(default)]
    pub data: serde_json::Value,
    /// The agent's own bookkeeping (token counts, snapshots, telemetry, settings
    /// echoes from a transcript): kept, and left out of the views unless asked
    /// for (`--all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bookkeeping: bool,
}

/// `agent/observed`: a fact an earlier event of the session states (a prompt, a
/// tool call, its result), seen again by another capture path — a hook, the
/// agent's telemetry, its transcript — on the agents' join keys. The fact stays
/// one event; this one records the source (its envelope's `observed`) and the
/// fields it brought that the first did not have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentObserved {
    /// The seq of the event that first stated the fact.
    pub of: Seq,
    /// The fact, as the agents' join keys name it (`prompt:<prompt id>`,
    /// `tool_call:<tool use id>`, `tool_result:<tool use id>`, …).
    pub fact: String,
    /// Fields this source saw that the first event does not carry (the
    /// telemetry's duration of a tool call a hook recorded), as it gave them.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub adds: serde_json::Map<String, serde_json::Value>,
    /// The fields of the fact's content (a prompt's text, a call's input, a
    /// result's status and output) this source states differently from the
    /// first event, as this source gave them: a conflict between sources, kept,
    /// never dropped (design R15). The first event keeps its own values.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub differs: serde_json::Map<String, serde_json::Value>,
}

impl AgentObserved {
    /// One line: the fact, the event that states it, the fields added.
    pub fn summary(&self) -> String {
        let adds: Vec<&str> = self.adds.keys().map(String::as_str).collect();
        let adds = if adds.is_empty() {
            String::new()
        } else {
            format!(", adds {}", adds.join(", "))
        };
        let differs: Vec<&str> = self.differs.keys().map(String::as_str).collect();
        let differs = if differs.is_empty() {
            String::new()
        } else {
            format!(", CONFLICT: states {} differently", differs.join(", "))
        };
        format!(
            "{} seen again (the event at seq {}){adds}{differs}",
            self.fact, self.of
        )
    }
}

/// `agent/model_request`: one request an agent made to its model, as its
/// telemetry reported it (Claude Code's `api_request` / `api_error`, Gemini CLI's
/// and Qwen Code's `api_response` / `api_error`, Codex's `api_request`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's request id (`req_…`), where the agent names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    /// What the agent computed it cost, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// How long it took, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The error, for a request that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The HTTP status of a failed request, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u64>,
}

impl ModelRequest {
    /// One line: the model, its tokens, cost, duration, error (its first line).
    pub fn summary(&self) -> String {
        let mut parts = vec![self.model.clone().unwrap_or_else(|| "model".into())];
        if let (Some(i), Some(o)) = (self.input_tokens, self.output_tokens) {
            parts.push(format!("{i} in / {o} out tokens"));
        }
        if let Some(c) = self.cost_usd {
            parts.push(format!("${c:.4}"));
        }
        if let Some(d) = self.duration_ms {
            parts.push(format!("{d} ms"));
        }
        if let Some(e) = &self.error {
            parts.push(format!("error: {}", e.lines().next().unwrap_or("")));
        }
        parts.join(", ")
    }
}

/// `log/redacted`: secrets were replaced before the events that follow it in the
/// same append were written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redacted {
    /// What was redacted: `claude-code hook`, `gemini transcript`, …
    pub source: String,
    /// How many secrets were replaced.
    pub count: u64,
    /// Which kinds (`api_key`, `bearer_token`, `url_password`, …).
    pub kinds: Vec<String>,
}

/// Which way an ACP message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcpDirection {
    /// From the client (or the daemon acting as one) to the agent.
    ToAgent,
    /// From the agent to the client.
    FromAgent,
}

impl AcpMessage {
    /// The session's title the agent sent, and its source, when this is
    /// Qwen Code's `qwen/notify/session/title-update` (`titleSource` `auto`
    /// for one the agent made, `manual` for a user's). A title empty, with
    /// control characters, or longer than `TITLE_CHARS_MAX` (200) is none.
    pub fn session_title(&self) -> Option<(&str, Option<&str>)> {
        if self.direction != AcpDirection::FromAgent
            || self.message["method"] != "qwen/notify/session/title-update"
        {
            return None;
        }
        let params = &self.message["params"];
        let title = params["title"].as_str().filter(|t| {
            !t.trim().is_empty()
                && t.chars().count() <= crate::limits::TITLE_CHARS_MAX
                && !t.chars().any(char::is_control)
        })?;
        let source = params["titleSource"]
            .as_str()
            .filter(|s| matches!(*s, "auto" | "manual"));
        Some((title, source))
    }
}

/// `acp/message`: a JSON-RPC message of an ACP connection cmdlog bridged that no
/// typed event records (`initialize`, `session/new`, `fs/*`, errors, extensions),
/// as it crossed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcpMessage {
    /// Which way it went.
    pub direction: AcpDirection,
    /// The message.
    pub message: serde_json::Value,
}
