//! A transcript file as read: its items before they are events, and the
//! JSON-lines reader the formats share.

use cmdlog_engine::event::{CommandRun, Delivery, InvocationSource, Outcome, SessionPrompt};
use cmdlog_engine::{EventData, Mode};
use serde_json::Value;

use crate::kind::AgentKind;
use crate::plan::PlannedData;
use crate::updates::Update;

/// One item of a transcript, before it is an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// What identifies it in its file (`uuid`, item id, or `line N`).
    pub key: String,
    /// When it happened, unix ms.
    pub at: Option<u64>,
    pub data: PlannedData,
    /// The fact it states, where the data does not say it (a run's prompt id):
    /// see `facts.rs`.
    pub fact: Option<String>,
}

/// A subagent's own transcript (Claude Code's `<session>/subagents/agent-<id>.jsonl`,
/// Qwen Code's `subagents/<session>/agent-<id>.jsonl`): the session that
/// delegated to it, and what its `.meta.json` says of the call that did.
pub(crate) struct Subagent {
    pub parent: String,
    pub meta: Value,
}

/// One transcript file, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Transcript {
    /// The agent's session id.
    pub session: Option<String>,
    pub items: Vec<Item>,
    /// Lines that did not parse: their 1-based numbers.
    pub malformed: Vec<usize>,
    /// Lines read.
    pub lines: usize,
    /// The agent's release as the transcript names it (its latest line's), for
    /// the runs that follow: the rules their expansions were made by.
    pub release: Option<String>,
    /// The session's mode, where the transcript says it (docs/agents.md).
    pub mode: Option<Mode>,
    /// The id its prompts take where no record names one (a Qwen Code
    /// subagent's: `subagent:<id>`, as its hooks name its turn).
    pub turn_of: Option<String>,
}

impl Transcript {
    /// Adds an item (`run` and its `done` are added with [`Transcript::run`]).
    pub(crate) fn push(&mut self, key: String, at: Option<u64>, data: EventData) {
        self.items.push(Item {
            key,
            at,
            data: PlannedData::Ready(data),
            fact: None,
        });
    }

    /// A prompt.
    pub(crate) fn prompt(&mut self, key: String, at: Option<u64>, text: String) {
        self.prompt_as(key, at, text, Delivery::Idle);
    }

    /// A prompt delivered as `delivery` (a message typed while a turn ran).
    pub(crate) fn prompt_as(
        &mut self,
        key: String,
        at: Option<u64>,
        text: String,
        delivery: Delivery,
    ) {
        self.push(
            key,
            at,
            EventData::SessionPrompt(SessionPrompt {
                text,
                delivery,
                from_run: None,
                injections: Vec::new(),
                client_id: None,
                prompt_id: None,
                blocks: Vec::new(),
            }),
        );
    }

    /// An ACP session update that is JSON text already.
    pub(crate) fn update_raw(&mut self, key: String, at: Option<u64>, update: Update) {
        self.items.push(Item {
            key,
            at,
            data: PlannedData::Update(update),
            fact: None,
        });
    }

    /// An ACP session update.
    pub(crate) fn update(&mut self, key: String, at: Option<u64>, update: Value) {
        self.push(key, at, EventData::SessionUpdate(update));
    }

    /// A slash command the agent ran, and how it settled (its expansion, or the
    /// output of a built-in).
    pub(crate) fn run(
        &mut self,
        key: String,
        at: Option<u64>,
        line: &str,
        prompt: Option<String>,
        text: Option<String>,
    ) {
        let outcome = Outcome::Success {
            text,
            prompt,
            source_event_seq: None,
        };
        self.run_as(key, at, line, outcome);
    }

    /// A slash command the agent ran, settled as `outcome`.
    pub(crate) fn run_as(&mut self, key: String, at: Option<u64>, line: &str, outcome: Outcome) {
        let line = line.trim();
        let body = line.strip_prefix('/').unwrap_or(line);
        let (name, rest) = match body.find(char::is_whitespace) {
            Some(i) => (&body[..i], &body[i..]),
            None => (body, ""),
        };
        let run_index = self.items.len();
        self.items.push(Item {
            key: format!("{key}#run"),
            at,
            data: PlannedData::Ready(EventData::CommandRun(CommandRun {
                registration: 0,
                name: name.to_lowercase(),
                mode: Mode::Interactive,
                source: InvocationSource::Agent,
                raw_input: Some(rest.to_string()),
                attachments: Vec::new(),
                injections: Vec::new(),
                release: self.run_release(),
            })),
            fact: None,
        });
        self.items.push(Item {
            key: format!("{key}#done"),
            at,
            data: PlannedData::DoneOf {
                run_index,
                outcome,
                agent_check: None,
            },
            fact: None,
        });
    }

    /// Names the agent's prompt id on the items from `from` on (a line's
    /// prompt, or the run a typed slash command made): the join key its hooks
    /// and telemetry use for the same prompt (`facts.rs`).
    pub(crate) fn with_prompt_id(&mut self, from: usize, id: Option<&str>) {
        let Some(id) = id.filter(|id| !id.is_empty()) else {
            return;
        };
        for item in self.items.iter_mut().skip(from) {
            match &mut item.data {
                PlannedData::Ready(EventData::SessionPrompt(p)) => {
                    p.prompt_id = Some(id.to_string())
                }
                PlannedData::Ready(EventData::CommandRun(_)) => {
                    item.fact = Some(format!("command:{id}"))
                }
                _ => {}
            }
        }
    }

    /// Begins a subagent's session (`id`): the session that delegated to it
    /// and, from its `meta` (Claude Code's `.meta.json`: `toolUseId`,
    /// `agentType`), the call that did. States the fact `subagent:<id>`, as
    /// the hooks' `SubagentStart` does.
    pub(crate) fn begin_subagent(&mut self, id: &str, parent: &str, meta: &Value, at: Option<u64>) {
        let text = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
        self.items.push(Item {
            key: format!("{id}#began"),
            at,
            data: PlannedData::Ready(EventData::SessionCreated(
                cmdlog_engine::event::SessionCreated {
                    mode: None,
                    parent: Some(cmdlog_engine::event::Parent {
                        session: parent.to_string(),
                        tool_call_id: text("toolUseId"),
                        agent_type: text("agentType"),
                    }),
                },
            )),
            fact: Some(format!("subagent:{id}")),
        });
    }

    /// Ends a subagent's session, begun in this transcript, where its meta
    /// file says it finished
    /// (Claude Code's `finished: true`, Qwen Code's `status` other than
    /// running), as the hooks' `SubagentStop` ends it: the same end, joined
    /// by its order.
    pub(crate) fn end_subagent(&mut self, meta: &Value) {
        let began = self.items.iter().any(|i| i.key.ends_with("#began"));
        let finished = meta["finished"] == true
            || meta["status"]
                .as_str()
                .is_some_and(|s| !matches!(s, "running" | "pending" | "paused"));
        if !began || !finished {
            return;
        }
        let at = meta["lastUpdatedAt"]
            .as_str()
            .and_then(cmdlog_common::time::parse_rfc3339)
            .or_else(|| self.items.iter().rev().find_map(|i| i.at));
        self.items.push(Item {
            key: "subagent#ended".into(),
            at,
            data: PlannedData::Ready(EventData::SessionEnded(
                cmdlog_engine::event::SessionEnded {
                    reason: Some("subagent_stop".into()),
                    details: None,
                },
            )),
            fact: Some(crate::facts::SESSION_END.to_string()),
        });
    }

    /// Names the fact the last item states.
    pub(crate) fn name_last(&mut self, fact: Option<String>) {
        if let Some(item) = self.items.last_mut() {
            item.fact = fact;
        }
    }

    /// Names each turn's end (`turn_end:<prompt id>`) and its last reply
    /// before the end (`reply:<prompt id>`) by the prompt the turn answers,
    /// where the transcript names the prompt's id: the join keys the hooks'
    /// turn end (`Stop`) uses for the same (`facts.rs`).
    pub(crate) fn turn_facts(&mut self) {
        if let Some(turn) = self.turn_of.clone() {
            for item in &mut self.items {
                if let PlannedData::Ready(EventData::SessionPrompt(p)) = &mut item.data
                    && p.prompt_id.is_none()
                {
                    p.prompt_id = Some(turn.clone());
                }
            }
        }
        let mut prompt: Option<String> = None;
        let mut last_reply: Option<usize> = None;
        for i in 0..self.items.len() {
            let item = &mut self.items[i];
            match &item.data {
                PlannedData::Ready(EventData::SessionPrompt(p)) => {
                    prompt = p.prompt_id.clone();
                    last_reply = None;
                }
                // A turn the agent began itself, naming its prompt id.
                PlannedData::Ready(EventData::AgentEvent(e))
                    if !e.bookkeeping
                        && e.data["promptId"]
                            .as_str()
                            .is_some_and(|id| Some(id) != prompt.as_deref()) =>
                {
                    prompt = e.data["promptId"].as_str().map(str::to_string);
                    last_reply = None;
                }
                PlannedData::Update(Update::AgentMessageChunk { .. }) => last_reply = Some(i),
                PlannedData::Ready(EventData::SessionUpdate(u)) => {
                    match u["sessionUpdate"].as_str() {
                        Some("agent_message_chunk") => last_reply = Some(i),
                        Some("turn_complete") => {
                            if let Some(id) = prompt.as_deref() {
                                if item.fact.is_none() {
                                    item.fact = crate::facts::tool("turn_end", id);
                                }
                                if let Some(r) = last_reply.take()
                                    && self.items[r].fact.is_none()
                                {
                                    self.items[r].fact = crate::facts::tool("reply", id);
                                }
                            }
                            last_reply = None;
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        // The transcript ends in a turn no record ended (a subagent's: Claude
        // Code writes no turn end there): its last reply is the turn's.
        if let (Some(r), Some(id)) = (last_reply, prompt.as_deref())
            && self.items[r].fact.is_none()
        {
            self.items[r].fact = crate::facts::tool("reply", id);
        }
    }

    /// What a run records of the release whose rules expanded it: Claude Code's,
    /// from the transcript's `version`.
    fn run_release(&self) -> Option<cmdlog_engine::event::RunRelease> {
        let version = self.release.as_ref()?;
        let known = [cmdlog_engine::KnownRelease {
            agent: "claude-code".into(),
            version: version.clone(),
            from: "transcript".into(),
        }];
        cmdlog_engine::run_release(cmdlog_engine::Dialect::Claude, &known)
            .filter(|r| r.version.is_some())
    }

    /// Something with no typed event, kept as it was: the agent's bookkeeping,
    /// which the views leave out unless asked.
    pub(crate) fn other(
        &mut self,
        agent: AgentKind,
        key: String,
        at: Option<u64>,
        event: &str,
        data: Value,
    ) {
        self.agent_event(agent, key, at, event, data, true);
    }

    /// Something with no typed event that a person auditing the session reads
    /// (a prompt the agent's scheduler sent, say), kept as it was.
    pub(crate) fn noted(
        &mut self,
        agent: AgentKind,
        key: String,
        at: Option<u64>,
        event: &str,
        data: Value,
    ) {
        self.agent_event(agent, key, at, event, data, false);
    }

    fn agent_event(
        &mut self,
        agent: AgentKind,
        key: String,
        at: Option<u64>,
        event: &str,
        data: Value,
        bookkeeping: bool,
    ) {
        self.push(
            key,
            at,
            EventData::AgentEvent(cmdlog_engine::event::AgentEvent {
                agent: agent.name().into(),
                event: event.into(),
                data,
                bookkeeping,
            }),
        );
    }
}

/// The lines of a JSON-lines transcript, with their 1-based numbers. Each call
/// to [`JsonLines::next_line`] counts the lines it passes in the transcript;
/// blank lines are skipped. The file is read whole and each line parsed where
/// it lies, by the reader of its format.
pub(crate) struct JsonLines {
    text: Vec<u8>,
    at: usize,
    number: usize,
}

impl JsonLines {
    pub(crate) fn new(text: Vec<u8>) -> Self {
        JsonLines {
            text,
            at: 0,
            number: 0,
        }
    }

    /// The next line that is not blank, as bytes, with its number; the reader
    /// parses it (and names it in `t.malformed` when it does not parse).
    pub(crate) fn next_line(&mut self, t: &mut Transcript) -> Option<(usize, &[u8])> {
        while self.at < self.text.len() {
            let rest = &self.text[self.at..];
            let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            let start = self.at;
            self.at += len + 1;
            self.number += 1;
            t.lines += 1;
            let line = &self.text[start..start + len];
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some((self.number, line));
            }
        }
        None
    }
}
