//! A session's conversation in the order it happened, for reading: the prompts,
//! the agent's messages (its chunks joined), its thoughts, tool calls with their
//! input and output, permission questions and who answered them, model and mode
//! changes, command runs and the ends of turns. What an auditor reads in the HTML report.

use cmdlog_engine::event::Outcome;
use cmdlog_engine::{Event, EventData, Seq};
use cmdlog_store::Log;
use serde_json::Value;

use crate::audit::AuditError;

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the user (or a command's expansion) sent the agent.
    Prompt {
        /// Seq of the prompt.
        seq: Seq,
        /// Its time, unix ms.
        at: u64,
        /// Its text.
        text: String,
    },
    /// The agent's message: consecutive chunks joined.
    Message {
        /// Seq of its first chunk.
        seq: Seq,
        /// The text.
        text: String,
    },
    /// The agent's thought: consecutive chunks joined.
    Thought {
        /// Seq of its first chunk.
        seq: Seq,
        /// The text.
        text: String,
    },
    /// A tool call, as its updates left it.
    ToolCall {
        /// Seq of the call.
        seq: Seq,
        /// Its id.
        id: String,
        /// Its title.
        title: String,
        /// Its last status.
        status: String,
        /// Its input (`rawInput`), if given.
        input: Option<Value>,
        /// Its output: the text of its content, else its `rawOutput`.
        output: Option<String>,
    },
    /// A permission question and its answer.
    Permission {
        /// Seq of the question.
        seq: Seq,
        /// The request's id.
        request_id: String,
        /// The tool call asked about (its title), if named.
        about: Option<String>,
        /// The options' names.
        options: Vec<String>,
        /// The answer: the option chosen, or `cancelled`; `None` while open.
        answer: Option<String>,
        /// Who answered (`user`, `rule`, `hook`, `classifier`), when a
        /// source said or the sequence shows it.
        decided_by: Option<String>,
        /// The client that voted (its `X-Qwen-Client-Id`), when it said.
        voter: Option<String>,
    },
    /// The session's model or mode changed, or a switch was refused.
    Setting {
        /// Seq of the change.
        seq: Seq,
        /// `model` or `mode`.
        what: &'static str,
        /// The model or mode asked for.
        value: String,
        /// The mode before, as the agent last said it.
        previous: Option<String>,
        /// The client that asked, when it said.
        by: Option<String>,
        /// The agent's refusal, for a switch it refused.
        refused: Option<String>,
    },
    /// A command run and how it settled.
    Run {
        /// Seq of the run.
        seq: Seq,
        /// The line as typed (`/name input`).
        line: String,
        /// How it settled, if it did.
        outcome: Option<Outcome>,
    },
    /// A fact a later capture path stated differently (design R15): what it
    /// said, beside the entry of the event that first stated it.
    Conflict {
        /// Seq of the `agent/observed` holding the later source's content.
        seq: Seq,
        /// Seq of the event that first stated the fact.
        of: Seq,
        /// The later source.
        source: String,
        /// The fact.
        fact: String,
        /// Each field it states differently, with its value as text.
        fields: Vec<(String, String)>,
    },
    /// A turn's end: its stop reason, or its error.
    TurnEnd {
        /// Seq of the end.
        seq: Seq,
        /// `end_turn`, `cancelled`, … or the error's message.
        how: String,
        /// Whether it ended in an error.
        error: bool,
    },
}

/// A permission question's answer as a reader says it: `answered: Allow
/// (allow) (by the user, client web-1)`, or `not answered`.
pub fn permission_answer(entry: &Entry) -> String {
    let Entry::Permission {
        answer: Some(answer),
        decided_by,
        voter,
        ..
    } = entry
    else {
        return "not answered".to_string();
    };
    let who = match decided_by.as_deref() {
        Some("user") => Some("the user"),
        Some("rule") => Some("a permission rule or the approval mode, without asking"),
        Some("hook") => Some("a hook"),
        Some("classifier") => Some("the agent's automatic reviewer"),
        Some(_) => Some("a decider this release does not name"),
        None => None,
    };
    let by = match (who, voter) {
        (Some(who), Some(client)) => format!(" (by {who}, client {client})"),
        (Some(who), None) => format!(" (by {who})"),
        (None, Some(client)) => format!(" (voted by client {client})"),
        (None, None) => String::new(),
    };
    format!("answered: {answer}{by}")
}

/// A [`Entry::Setting`] as a reader says it: `model switched to X`, `mode set
/// to yolo (was default) by client web-1`, `model switch to X refused: …`.
pub fn setting_text(entry: &Entry) -> String {
    let Entry::Setting {
        what,
        value,
        previous,
        by,
        refused,
        ..
    } = entry
    else {
        return String::new();
    };
    let mut text = match (refused, *what) {
        (Some(why), _) => format!("{what} switch to {value} refused by the agent: {why}"),
        (None, "model") => format!("model switched to {value}"),
        (None, _) => format!("{what} set to {value}"),
    };
    if let Some(previous) = previous {
        text.push_str(&format!(" (was {previous})"));
    }
    if let Some(by) = by {
        text.push_str(&format!(", asked by client {by}"));
    }
    text
}

fn text_of(update: &Value) -> &str {
    update
        .pointer("/content/text")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The text of a tool call's `content` (ACP `ToolCallContent` blocks).
fn content_text(update: &Value) -> Option<String> {
    let parts: Vec<&str> = update["content"]
        .as_array()?
        .iter()
        .filter_map(|c| c.pointer("/content/text").and_then(Value::as_str))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

fn option_name(options: &Value, id: &str) -> String {
    options
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["optionId"] == id)
        .and_then(|o| o["name"].as_str())
        .map_or_else(|| id.to_string(), |name| format!("{name} ({id})"))
}

/// The entry of a model switch, a refused one, or a mode change.
fn setting(seq: Seq, data: &EventData) -> Option<Entry> {
    let (what, value, previous, by, refused) = match data {
        EventData::ModelSwitched(m) => ("model", &m.model, None, None, None),
        EventData::ModelSwitchFailed(m) => {
            let why = m.error["message"]
                .as_str()
                .map_or_else(|| m.error.to_string(), str::to_string);
            ("model", &m.model, None, None, Some(why))
        }
        EventData::ModeSet(m) => (
            "mode",
            &m.mode,
            m.previous.clone(),
            m.client_id.clone(),
            None,
        ),
        _ => return None,
    };
    Some(Entry::Setting {
        seq,
        what,
        value: value.clone(),
        previous,
        by,
        refused,
    })
}

/// Folds a session's events into its conversation.
#[derive(Debug, Default)]
pub struct Conversation {
    /// The entries, in the order they happened.
    pub entries: Vec<Entry>,
    /// The options each open permission request offered, by request id.
    offered: std::collections::HashMap<String, Value>,
}

impl Conversation {
    /// Adds one event of the session.
    pub fn apply(&mut self, event: &Event) {
        let seq = event.seq;
        match &event.data {
            EventData::SessionPrompt(p) => self.entries.push(Entry::Prompt {
                seq,
                at: event.time(),
                text: p.text.clone(),
            }),
            EventData::SessionUpdate(update) => self.update(seq, update),
            EventData::PermissionRequested(p) => {
                self.offered.insert(p.request_id.clone(), p.options.clone());
                self.entries.push(Entry::Permission {
                    seq,
                    request_id: p.request_id.clone(),
                    about: p
                        .tool_call
                        .as_ref()
                        .and_then(|c| c["title"].as_str())
                        .map(str::to_string),
                    options: p
                        .options
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| {
                            o["name"]
                                .as_str()
                                .or(o.as_str())
                                .or(o["optionId"].as_str())
                                .unwrap_or("?")
                                .to_string()
                        })
                        .collect(),
                    answer: None,
                    decided_by: None,
                    voter: None,
                });
            }
            EventData::PermissionResolved(r) => self.resolved(r),
            EventData::ModelSwitched(_)
            | EventData::ModelSwitchFailed(_)
            | EventData::ModeSet(_) => self.entries.extend(setting(seq, &event.data)),
            EventData::CommandRun(run) => self.entries.push(Entry::Run {
                seq,
                line: format!("/{}{}", run.name, run.raw_input.as_deref().unwrap_or("")),
                outcome: None,
            }),
            EventData::AgentObserved(o) if !o.differs.is_empty() => {
                self.entries.push(Entry::Conflict {
                    seq,
                    of: o.of,
                    source: event
                        .observed
                        .as_ref()
                        .map(|s| s.source.clone())
                        .unwrap_or_default(),
                    fact: o.fact.clone(),
                    fields: o
                        .differs
                        .iter()
                        .map(|(k, v)| {
                            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                            (k.clone(), text)
                        })
                        .collect(),
                })
            }
            EventData::CommandDone(done) => {
                if let Some(Entry::Run { outcome, .. }) = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| matches!(e, Entry::Run { seq, .. } if *seq == done.run))
                {
                    *outcome = Some(done.outcome.clone());
                }
            }
            // Not part of the conversation.
            EventData::AgentObserved(_)
            | EventData::Registered(_)
            | EventData::Unregistered(_)
            | EventData::DiscoveryWarning(_)
            | EventData::AttachmentAdmitted(_)
            | EventData::SessionCreated(_)
            | EventData::SessionClosed(_)
            | EventData::SessionDied(_)
            | EventData::SessionEnded(_)
            | EventData::PermissionAlreadyResolved(_)
            | EventData::SessionCancelled(_)
            | EventData::WalDiscarded(_)
            | EventData::AcpMessage(_)
            | EventData::AgentEvent(_)
            | EventData::ModelRequest(_)
            | EventData::Redacted(_)
            | EventData::LogIdentity(_)
            | EventData::ImportCheckpoint(_)
            | EventData::Unknown(_) => {}
        }
    }

    /// A permission question answered: its answer, and who gave it.
    fn resolved(&mut self, r: &cmdlog_engine::event::PermissionResolved) {
        let options = self.offered.remove(&r.request_id).unwrap_or(Value::Null);
        let answer = match r.decision["outcome"].as_str() {
            Some("selected") => {
                option_name(&options, r.decision["optionId"].as_str().unwrap_or("?"))
            }
            Some(other) => other.to_string(),
            None => r.decision.as_str().unwrap_or("?").to_string(),
        };
        if let Some(Entry::Permission {
                    answer: slot,
                    decided_by,
                    voter,
                    ..
                }) = self.entries.iter_mut().rev().find(|e| {
                    matches!(e, Entry::Permission { request_id, answer: None, .. } if *request_id == r.request_id)
                }) {
                    *slot = Some(answer);
                    *decided_by = r.decided_by.map(|d| d.name().to_string());
                    voter.clone_from(&r.voter);
                }
    }

    fn update(&mut self, seq: Seq, update: &Value) {
        match update["sessionUpdate"].as_str() {
            Some("agent_message_chunk") => match self.entries.last_mut() {
                Some(Entry::Message { text, .. }) => text.push_str(text_of(update)),
                _ => self.entries.push(Entry::Message {
                    seq,
                    text: text_of(update).to_string(),
                }),
            },
            Some("agent_thought_chunk") => match self.entries.last_mut() {
                Some(Entry::Thought { text, .. }) => text.push_str(text_of(update)),
                _ => self.entries.push(Entry::Thought {
                    seq,
                    text: text_of(update).to_string(),
                }),
            },
            Some("tool_call") => self.entries.push(Entry::ToolCall {
                seq,
                id: update["toolCallId"].as_str().unwrap_or("").to_string(),
                title: update["title"].as_str().unwrap_or("").to_string(),
                status: update["status"].as_str().unwrap_or("pending").to_string(),
                input: update.get("rawInput").filter(|v| !v.is_null()).cloned(),
                output: content_text(update),
            }),
            Some("tool_call_update") => {
                let id = update["toolCallId"].as_str().unwrap_or("");
                let found = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| matches!(e, Entry::ToolCall { id: i, .. } if i == id));
                let entry = match found {
                    Some(entry) => entry,
                    // A call known only from its result (a `PostToolUse`
                    // without its `PreToolUse`, a telemetry `tool_result`):
                    // shown where its result came.
                    None => {
                        self.entries.push(Entry::ToolCall {
                            seq,
                            id: id.to_string(),
                            title: String::new(),
                            status: String::new(),
                            input: None,
                            output: None,
                        });
                        self.entries.last_mut().expect("just pushed")
                    }
                };
                if let Entry::ToolCall {
                    status,
                    input,
                    output,
                    title,
                    ..
                } = entry
                {
                    if let Some(s) = update["status"].as_str() {
                        *status = s.to_string();
                    }
                    if let Some(t) = update["title"].as_str() {
                        *title = t.to_string();
                    }
                    if let Some(i) = update.get("rawInput").filter(|v| !v.is_null()) {
                        *input = Some(i.clone());
                    }
                    if let Some(text) = content_text(update) {
                        *output = Some(text);
                    } else if let Some(raw) = update.get("rawOutput").filter(|v| !v.is_null()) {
                        *output = Some(match raw.as_str() {
                            Some(s) => s.to_string(),
                            None => raw.to_string(),
                        });
                    }
                }
            }
            Some("turn_complete") => self.entries.push(Entry::TurnEnd {
                seq,
                how: update["stopReason"]
                    .as_str()
                    .unwrap_or("end_turn")
                    .to_string(),
                error: false,
            }),
            Some("turn_error") => self.entries.push(Entry::TurnEnd {
                seq,
                how: update["message"]
                    .as_str()
                    .unwrap_or("the turn failed")
                    .to_string(),
                error: true,
            }),
            _ => {}
        }
    }
}

/// The conversation of `session`, from the log, in the order things happened:
/// by each event's time (the agent's own, for what an agent reported), so
/// what an import added later sits where it happened; events of the same
/// time keep their order in the log. The session's beginning comes first
/// whatever its time: Claude Code writes the `/clear` that began a session
/// into it, stamped before its `SessionStart`.
pub fn conversation(log: &Log, session: &str) -> Result<Vec<Entry>, AuditError> {
    let mut events = Vec::new();
    for record in log.stream(session, 0)? {
        events.push(Event::decode(record.seq, &record.bytes)?);
    }
    events.sort_by_key(|e| (!matches!(e.data, EventData::SessionCreated(_)), e.time()));
    let mut c = Conversation::default();
    for event in &events {
        c.apply(event);
    }
    Ok(c.entries)
}
