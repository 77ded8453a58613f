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
    /// A prompt that is the latest run's expansion.
    FromLatestRun,
    /// A tool call's settling, unless something settled it.
    SettleIfOpen,
    /// A permission request for the session's pending call of its tool and input.
    FindCall,
}
