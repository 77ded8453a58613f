//! One hook payload → the events it means. Each agent's documented payload
//! (`docs/agents.md` cites them): Claude Code's and Qwen Code's hook events
//! (`UserPromptSubmit`, `UserPromptExpansion`, `PreToolUse`, …), Codex's (the same
//! names, its own fields), Gemini CLI's (`BeforeAgent`, `BeforeTool`, …). A field
//! that is missing is left out, never an error; an event cmdlog has no typed
//! mapping for is kept whole as `agent/event`.

mod events;

use cmdlog_engine::event::{
    CommandRun, InvocationSource, Observed, PermissionRequested, RunRelease,
};
use cmdlog_engine::{Dialect, EventData, KnownRelease, Mode, run_release};
use serde_json::{Map, Value, json};

use cmdlog_common::time::parse_rfc3339 as parse_time;

use crate::kind::{AgentKind, session_key, text, tool_kind};
use crate::plan::{Planned, PlannedData, Settling, Tie};

/// What one payload becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookPlan {
    /// The session's log key (`None` for a payload without a session id).
    pub session: Option<String>,
    /// The folder the agent worked in.
    pub cwd: Option<String>,
    /// The events, in order.
    pub events: Vec<Planned>,
    /// A slash command the agent expanded: what the agreement check compares.
    pub expansion: Option<Expansion>,
}

/// A slash command the agent expanded itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expansion {
    pub name: String,
    /// The text after the name, as typed.
    pub raw_input: String,
    /// The agent's expansion, when the payload carries it.
    pub prompt: Option<String>,
    /// Where its `command/done` is in the plan.
    pub done_index: usize,
}

/// What holds for some of a plan's events, by their index.
type ByIndex<T> = Vec<(usize, T)>;

/// The fields every payload shares; the rest is the event's own.
const COMMON: [&str; 6] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
    "permission_mode",
];

/// Maps one hook payload of `agent`; `delivery` (the payload's delivery id)
/// becomes the events' `observed.key`.
pub(crate) fn plan(
    agent: AgentKind,
    payload: &Value,
    delivery: Option<&str>,
    release: Option<&str>,
) -> HookPlan {
    let run_release = (agent == AgentKind::ClaudeCode)
        .then(|| {
            let known: Vec<KnownRelease> = release
                .map(|version| KnownRelease {
                    agent: agent.name().into(),
                    version: version.into(),
                    from: "AI_AGENT".into(),
                })
                .into_iter()
                .collect();
            run_release(Dialect::Claude, &known)
        })
        .flatten();
    let event = text(payload, "hook_event_name").unwrap_or("unknown");
    // A subagent's payloads name its parent's session and the subagent
    // (`agent_id`): they belong to the subagent's own session. Its start and
    // stop are the parent's word about it.
    let subagent = text(payload, "agent_id")
        .filter(|a| !a.is_empty())
        .filter(|_| !matches!(event, "SubagentStart" | "SubagentStop"));
    let session = subagent
        .or_else(|| text(payload, "session_id").filter(|s| !s.is_empty()))
        .map(|s| session_key(agent, s));
    let observed = Some(Observed {
        source: format!("{} hook", agent.name()),
        key: delivery.map(str::to_string),
        at: text(payload, "timestamp").and_then(parse_time),
        fact: None,
    });
    let mut planning = Planning {
        agent,
        payload,
        event,
        run_release,
        items: Vec::new(),
        expansion: None,
        ties: Vec::new(),
        named: Vec::new(),
        elsewhere: Vec::new(),
    };
    let planner = events::PLANNERS
        .iter()
        .find(|(names, _)| names.contains(&event))
        .map_or(events::kept as events::Planner, |(_, planner)| *planner);
    planner(&mut planning);
    planning.model_first();
    let Planning {
        items,
        expansion,
        ties,
        named,
        elsewhere,
        ..
    } = planning;
    let mut plan = finish(payload, session, observed, items, expansion, (ties, named));
    for (i, other) in elsewhere {
        plan.events[i].session = Some(session_key(agent, &other));
    }
    plan
}

/// A payload being planned: what each event's planner (`events.rs`) reads and
/// adds to.
pub(crate) struct Planning<'a> {
    pub agent: AgentKind,
    pub payload: &'a Value,
    /// Its `hook_event_name`.
    pub event: &'a str,
    /// The rules a Claude Code run was expanded by: its announced release's.
    pub run_release: Option<RunRelease>,
    /// The events, in order.
    pub items: Vec<PlannedData>,
    pub expansion: Option<Expansion>,
    /// Events tied to what the session holds (`tie.rs`), by index in `items`.
    pub ties: ByIndex<Tie>,
    /// Facts the data does not name (`facts.rs`), by index in `items`.
    pub named: ByIndex<String>,
    /// Events of another session than the payload's (a subagent's, by the
    /// agent's id for it), by index in `items`.
    pub elsewhere: ByIndex<String>,
}

impl Planning<'_> {
    /// A payload that names the session's model (Codex names it in every
    /// one): a switch first, if the model is not the one the session had
    /// (`tie.rs`), since no hook reports `/model` itself.
    fn model_first(&mut self) {
        let Some(model) = text(self.payload, "model").filter(|m| !m.is_empty()) else {
            return;
        };
        // A session's start keeps the model it names as it is.
        if self.items.is_empty() || self.event == "SessionStart" {
            return;
        }
        self.items.insert(
            0,
            PlannedData::Ready(EventData::ModelSwitched(
                cmdlog_engine::event::ModelSwitched {
                    model: model.to_string(),
                },
            )),
        );
        for item in &mut self.items {
            if let PlannedData::DoneOf { run_index, .. } = item {
                *run_index += 1;
            }
        }
        for (i, _) in self.ties.iter_mut() {
            *i += 1;
        }
        for (i, _) in self.named.iter_mut() {
            *i += 1;
        }
        for (i, _) in self.elsewhere.iter_mut() {
            *i += 1;
        }
        if let Some(e) = self.expansion.as_mut() {
            e.done_index += 1;
        }
        self.ties.push((0, Tie::IfModelChanged));
        // The switch is the turn's: its transcript says the turn's model too.
        if let Some(turn) = text(self.payload, "turn_id").filter(|t| !t.is_empty()) {
            self.named.push((0, format!("model:{turn}")));
        }
    }

    /// Ties the next event to settle what its session left open (`tie.rs`).
    fn settle_open(&mut self, why: Settling) {
        self.ties.push((self.items.len(), Tie::SettleOpen(why)));
    }
}

fn finish(
    payload: &Value,
    session: Option<String>,
    observed: Option<Observed>,
    items: Vec<PlannedData>,
    expansion: Option<Expansion>,
    (ties, named): (ByIndex<Tie>, ByIndex<String>),
) -> HookPlan {
    HookPlan {
        session: session.clone(),
        cwd: text(payload, "cwd").map(str::to_string),
        events: items
            .into_iter()
            .enumerate()
            .map(|(i, data)| Planned {
                session: session.clone(),
                observed: observed.clone().map(|o| Observed {
                    fact: named
                        .iter()
                        .find(|(at, _)| *at == i)
                        .map(|(_, fact)| fact.clone())
                        .or_else(|| crate::facts::of_data(&data)),
                    ..o
                }),
                data,
                tie: ties.iter().find(|(at, _)| *at == i).map(|(_, tie)| *tie),
            })
            .collect(),
        expansion,
    }
}

/// A slash line's command name and the text after it (`/review a b` →
/// `review`, ` a b`).
fn split_line(line: &str) -> (String, String) {
    let body = line.trim().trim_start_matches('/');
    match body.find(char::is_whitespace) {
        Some(i) => (body[..i].to_string(), body[i..].to_string()),
        None => (body.to_string(), String::new()),
    }
}

/// Adds the tool and the input that ran (after any other hook's `updatedInput`)
/// to a tool call update, when the payload carries them: a `PostToolUse` without
/// a `PreToolUse` before it still says what ran.
fn with_input(update: &mut Value, payload: &Value) {
    if let Some(tool) = text(payload, "tool_name") {
        update["title"] = json!(tool);
        update["kind"] = json!(tool_kind(tool));
    }
    if let Some(input) = payload.get("tool_input").filter(|i| !i.is_null()) {
        update["rawInput"] = input.clone();
    }
}

/// The payload's fields but the common ones and `also`.
fn rest_of(payload: &Value, also: &[&str]) -> Map<String, Value> {
    payload
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !COMMON.contains(&k.as_str()) && !also.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool call's id: the agent's, or (Gemini gives none) one derived from the
/// tool and its input, the same before and after the call.
fn tool_call_id(payload: &Value) -> String {
    // Qwen Code gives both: a `tool_use_id` of its hooks' own in Pre/PostToolUse
    // and the model's `tool_call_id`, the one its other events and transcript use.
    if let Some(id) = text(payload, "tool_call_id")
        .filter(|id| !id.is_empty())
        .or_else(|| text(payload, "tool_use_id"))
        .filter(|id| !id.is_empty())
    {
        return id.to_string();
    }
    derived_call_id(
        text(payload, "tool_name").unwrap_or(""),
        payload.get("tool_input").unwrap_or(&Value::Null),
    )
}

/// The id cmdlog gives a call whose payload names none: from its tool and
/// input, the same before and after the call.
pub(crate) fn derived_call_id(tool: &str, input: &Value) -> String {
    let basis = format!("{tool}\n{input}");
    let mut hex = cmdlog_store::BlobHash::of(basis.as_bytes()).to_hex();
    hex.truncate(16);
    format!("tool-{hex}")
}

/// A permission request for a tool call, offering allow and reject.
fn permission_request(payload: &Value, kind: &str) -> PermissionRequested {
    let call = tool_call_id(payload);
    PermissionRequested {
        request_id: format!("{kind}-{call}"),
        options: json!([
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]),
        tool_call: Some(json!({
            "toolCallId": call,
            "title": text(payload, "tool_name").unwrap_or("tool"),
            "kind": tool_kind(text(payload, "tool_name").unwrap_or("")),
            "rawInput": payload.get("tool_input").cloned().unwrap_or(Value::Null),
        })),
    }
}

/// A command run an agent reported: its name and the input after it, the mode
/// interactive until the batch learns the session's ([`crate::Batch`]).
fn agent_run(
    name: &str,
    raw_input: &str,
    release: Option<cmdlog_engine::event::RunRelease>,
) -> EventData {
    EventData::CommandRun(CommandRun {
        registration: 0,
        name: name.to_string(),
        mode: Mode::Interactive,
        source: InvocationSource::Agent,
        raw_input: Some(raw_input.to_string()),
        attachments: Vec::new(),
        injections: Vec::new(),
        release,
    })
}
