//! Events planned from a payload or a transcript, before they have seqs.

use cmdlog_engine::{AgentCheck, EventData, Observed, Outcome};

use crate::updates::Update;

/// One event to append, before it has a seq.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    /// Its session (the log key), or log-wide.
    pub session: Option<String>,
    pub observed: Option<Observed>,
    pub data: PlannedData,
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
