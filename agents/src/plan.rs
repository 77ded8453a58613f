//! Events planned from a payload or a transcript, before they have seqs.

use cmdlog_engine::EventData;
use cmdlog_engine::event::{AgentCheck, Observed, Outcome};

use crate::updates::Update;

/// One event to append, before it has a seq.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    /// Its session (the log key), or log-wide.
    pub session: Option<String>,
    pub observed: Option<Observed>,
    pub data: PlannedData,
    /// How it is tied to what its session already holds, if it is.
    pub tie: Option<Tie>,
}

impl Planned {
    /// Whether it is an import's checkpoint of a file (not an item of it).
    pub(crate) fn is_checkpoint(&self) -> bool {
        matches!(
            self.data,
            PlannedData::Ready(EventData::ImportCheckpoint(_))
        )
    }
}

/// An event's data, or a `command/done` for a run planned in the same append.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlannedData {
    Ready(EventData),
    /// A `session/update` whose update is JSON text already (read from a
    /// transcript): appended as it is, never decoded and encoded again.
    Update(Update),
    /// The `command/done` of the run planned at this index of the same append.
    DoneOf {
        run_index: usize,
        outcome: Outcome,
        agent_check: Option<AgentCheck>,
    },
}

/// How a planned event is tied to its session (`tie.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tie {
    /// A run, unless the session shows one since its last prompt.
    FallbackRun,
    /// A prompt that is the latest run's expansion (and, as every prompt,
    /// [`Tie::SettleOpen`] with [`Settling::NextPrompt`]).
    FromLatestRun,
    /// A tool call's settling, unless something settled it.
    SettleIfOpen,
    /// A permission request for the session's pending call of its tool and input.
    FindCall,
    /// What the session left open — calls never settled, permission requests
    /// never answered — is settled just before this event, which shows they
    /// did not run.
    SettleOpen(Settling),
    /// A call's result: a permission request still open for it was granted.
    Granted,
    /// A model the payload names: the session's switch if it had another,
    /// else nothing (the first time, the model is kept as bookkeeping).
    IfModelChanged,
    /// A subagent's session: the call that started it is its parent's latest
    /// pending call.
    SubagentCall,
    /// A permission request for the session's latest pending call (Gemini
    /// CLI's notification names the call by what its dialog shows).
    LatestCall,
    /// A call that opens: a permission request asked before it, naming it by
    /// its tool and input (Qwen Code asks before `PreToolUse`), is tied to it.
    OpensCall,
    /// A call's permission decision, as the agent's telemetry tells it
    /// (`tool_decision`): a request open for the call is answered, with who
    /// decided; a call refused is settled as not run.
    Decided,
}

/// What showed that the calls left open did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settling {
    /// The user's next prompt.
    NextPrompt,
    /// The turn ended.
    TurnEnd,
    /// The user interrupted the turn.
    Interrupted,
    /// The session ended.
    SessionEnd,
}

impl Settling {
    /// What came, in words: "before {this}".
    pub(crate) fn words(self) -> &'static str {
        match self {
            Settling::NextPrompt => "the next prompt",
            Settling::TurnEnd => "the turn's end",
            Settling::Interrupted => "the turn's interruption",
            Settling::SessionEnd => "the session's end",
        }
    }
}
