//! One fact, one event (design R10). The same prompt, tool call or tool result
//! reaches cmdlog up to three times — a hook payload as it happens, the agent's
//! telemetry a few seconds later, its transcript when imported — each path
//! naming it by the agents' own join keys (`observed.fact`: `prompt:<prompt
//! id>`, `tool_call:<tool use id>`, `tool_result:<tool use id>`). The first to
//! arrive is the event; every later one becomes an `agent/observed` naming it,
//! with the source that saw it again and the fields it brought that the first
//! did not carry (the telemetry's duration of a call a hook recorded).

use std::collections::{HashMap, HashSet};

use cmdlog_engine::{AgentObserved, EventData, Observed, Seq};
use cmdlog_store::{Log, ReadError};
use serde_json::{Map, Value};

use crate::plan::{Planned, PlannedData};

/// What a session already states, by fact, and which keys each source already
/// delivered (a telemetry request sent again, an item imported before).
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// fact → the seq of the event that stated it first, and its data's fields.
    known: HashMap<String, (Seq, Map<String, Value>)>,
    /// `observed.key`s of the sources asked for.
    keys: HashSet<String>,
}

impl Facts {
    /// Reads what `session` holds: every event's fact, and the keys delivered
    /// by `source` (when given). One pass over the session's records, decoding
    /// only their `observed` (and the data of the events that state a fact).
    pub(crate) fn read(log: &Log, session: &str, source: Option<&str>) -> Result<Facts, ReadError> {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(default)]
            observed: Option<Observed>,
            #[serde(rename = "type", borrow)]
            type_name: std::borrow::Cow<'a, str>,
            #[serde(borrow)]
            data: Option<&'a serde_json::value::RawValue>,
        }
        let mut facts = Facts::default();
        for record in log.stream(session, 0)? {
            let Ok(probe) = serde_json::from_slice::<Probe>(&record.bytes) else {
                continue;
            };
            let Some(observed) = probe.observed else {
                continue;
            };
            if let (Some(source), Some(key)) = (source, &observed.key)
                && observed.source == source
            {
                facts.keys.insert(key.clone());
            }
            if probe.type_name == "agent/observed" {
                continue;
            }
            if let Some(fact) = observed.fact
                && !facts.known.contains_key(&fact)
            {
                let fields = probe
                    .data
                    .and_then(|d| serde_json::from_str::<Map<String, Value>>(d.get()).ok())
                    .unwrap_or_default();
                facts.known.insert(fact, (record.seq, fields));
            }
        }
        Ok(facts)
    }

    /// Whether the source asked for in [`Facts::read`] delivered `key` before.
    pub(crate) fn delivered(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// The keys the source delivered, taken out.
    pub(crate) fn take_keys(&mut self) -> HashSet<String> {
        std::mem::take(&mut self.keys)
    }

    /// Each planned event in `session` that states a fact the session already
    /// holds becomes an `agent/observed` of the event that stated it. Returns
    /// how many did.
    pub(crate) fn fold_into(&self, session: &str, events: &mut [Planned]) -> usize {
        let mut folded = 0;
        // A run that is a fact already held takes its settling with it: the
        // agent's run was recorded once, with its outcome.
        let mut runs_folded: Vec<usize> = Vec::new();
        for i in 0..events.len() {
            let p = &events[i];
            if p.session.as_deref() != Some(session) {
                continue;
            }
            if let PlannedData::DoneOf { run_index, .. } = &p.data
                && runs_folded.contains(run_index)
            {
                let of_run = match &events[*run_index].data {
                    PlannedData::Ready(EventData::AgentObserved(o)) => Some((o.of, o.fact.clone())),
                    _ => None,
                };
                if let Some((of, fact)) = of_run {
                    let fields = data_fields(&events[i].data);
                    let p = &mut events[i];
                    p.observed = p.observed.take().map(|o| Observed { fact: None, ..o });
                    p.data = PlannedData::Ready(EventData::AgentObserved(AgentObserved {
                        of,
                        fact: format!("{fact}#done"),
                        adds: fields,
                    }));
                    folded += 1;
                }
                continue;
            }
            let Some(fact) = p.observed.as_ref().and_then(|o| o.fact.clone()) else {
                continue;
            };
            // What a source keeps as its bookkeeping states no fact.
            if matches!(p.data, PlannedData::Ready(EventData::AgentEvent(_))) {
                continue;
            }
            let Some((of, first)) = self.known.get(&fact) else {
                continue;
            };
            let adds = data_fields(&p.data)
                .into_iter()
                .filter(|(k, v)| !first.contains_key(k) && !v.is_null())
                .collect();
            let is_run = matches!(p.data, PlannedData::Ready(EventData::CommandRun(_)));
            let p = &mut events[i];
            p.observed = p.observed.take().map(|o| Observed { fact: None, ..o });
            p.data = PlannedData::Ready(EventData::AgentObserved(AgentObserved {
                of: *of,
                fact,
                adds,
            }));
            p.tie = None;
            if is_run {
                runs_folded.push(i);
            }
            folded += 1;
        }
        folded
    }
}

/// The top-level fields of a planned event's data.
fn data_fields(data: &PlannedData) -> Map<String, Value> {
    let value = match data {
        PlannedData::Ready(d) => serde_json::to_value(d).ok(),
        PlannedData::Update(u) => serde_json::to_value(u).ok(),
        PlannedData::DoneOf { outcome, .. } => serde_json::to_value(outcome)
            .ok()
            .map(|o| serde_json::json!({ "outcome": o })),
    };
    match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The sessions a batch's events name, in order of first appearance.
pub(crate) fn sessions_of(events: &[Planned]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in events {
        if let Some(s) = &p.session
            && !out.contains(s)
        {
            out.push(s.clone());
        }
    }
    out
}

/// Whether any event of the batch states a fact (only then is its session read).
pub(crate) fn states_facts(events: &[Planned]) -> bool {
    events
        .iter()
        .any(|p| p.observed.as_ref().is_some_and(|o| o.fact.is_some()))
}

/// The fact a prompt states: its prompt id.
pub(crate) fn prompt(id: Option<&str>) -> Option<String> {
    id.filter(|id| !id.is_empty())
        .map(|id| format!("prompt:{id}"))
}

/// The fact a tool call (`tool_call`) or its settling (`tool_result`) states.
pub(crate) fn tool(kind: &str, id: &str) -> Option<String> {
    (!id.is_empty()).then(|| format!("{kind}:{id}"))
}

/// The fact a planned event states, by the agents' join keys: a prompt by its
/// prompt id, a tool call and its settling by the call's id. A call id cmdlog
/// derived (Gemini CLI's hooks name none) is no join key.
pub(crate) fn of_data(data: &PlannedData) -> Option<String> {
    use crate::updates::Update;
    let settled = |status: &str| matches!(status, "completed" | "failed");
    match data {
        PlannedData::Ready(EventData::SessionPrompt(p)) => prompt(p.prompt_id.as_deref()),
        PlannedData::Ready(EventData::SessionUpdate(u)) => {
            let id = u["toolCallId"]
                .as_str()
                .filter(|id| !id.starts_with("tool-"))?;
            match u["sessionUpdate"].as_str()? {
                "tool_call" => tool("tool_call", id),
                "tool_call_update" if u["status"].as_str().is_some_and(settled) => {
                    tool("tool_result", id)
                }
                _ => None,
            }
        }
        PlannedData::Update(Update::ToolCall { id, .. }) if !id.starts_with("tool-") => {
            tool("tool_call", id)
        }
        PlannedData::Update(Update::ToolCallUpdate { id, status, .. })
            if !id.starts_with("tool-") && settled(status) =>
        {
            tool("tool_result", id)
        }
        _ => None,
    }
}
