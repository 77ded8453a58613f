//! One fact, one event (design R10). The same prompt, tool call or tool result
//! reaches cmdlog up to three times — a hook payload as it happens, the agent's
//! telemetry a few seconds later, its transcript when imported — each path
//! naming it by the agents' own join keys (`observed.fact`: `prompt:<prompt
//! id>`, `tool_call:<tool use id>`, `tool_result:<tool use id>`). The first to
//! arrive is the event; every later one becomes an `agent/observed` naming it,
//! with the source that saw it again and the fields it brought that the first
//! did not carry (the telemetry's duration of a call a hook recorded).

use std::collections::{HashMap, HashSet};

use cmdlog_engine::event::{AgentObserved, Observed};
use cmdlog_engine::{EventData, Seq};
use cmdlog_store::{Log, ReadError};
use serde_json::{Map, Value};

use crate::limits::FACT_CACHE_SESSIONS;
use crate::plan::{Planned, PlannedData};

/// What a fact joined by its content begins with (`said:<kind>:<hash>`):
/// Gemini CLI's hooks name no prompt or call, and its chat's ids no hook
/// knows, so what it said is joined by what was said, in order ([`said`]).
pub(crate) const SAID: &str = "said:";

/// A session's end, joined by its order: the n-th end one source reports of a
/// session (the hooks' `SessionEnd`, Claude Code's transcript saving the
/// session's costs) is the n-th another did.
pub(crate) const SESSION_END: &str = "said:session_end";

/// An event's top-level fields, each with a hash of its value.
type Fields = Vec<(String, u64)>;

/// What a turn's reply is joined by (`reply:<prompt id>`). A turn may say
/// several replies (Codex's goes on when a sub-agent's notification comes in
/// after its model answered), and each source may see another of them: the
/// hooks' `Stop` names the reply the turn had when it fired, a transcript names
/// the turn's last. So a reply is the one of its turn that has its text; where
/// no text is the same, the turn's last reply of another source is that reply
/// said differently (design R15).
const REPLY: &str = "reply:";

/// One event stating a fact: its seq, its source, and its data's top-level
/// fields, each with a hash of its value (a later source that states the
/// fact's content differently is told apart: design R15).
#[derive(Debug)]
struct Stated {
    seq: Seq,
    source: String,
    fields: Fields,
}

impl Stated {
    /// The hash of its `content` (a reply's text).
    fn content(&self) -> Option<u64> {
        self.fields
            .iter()
            .find(|(name, _)| name == "content")
            .map(|(_, hash)| *hash)
    }
}

/// What a session already states, by fact, and which keys the sources asked
/// for already delivered (a telemetry request sent again, an item imported
/// before). Read once, then brought up to date with the records appended
/// since ([`Facts::refresh`]).
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// fact → the event that stated it first (a turn's reply: every event
    /// that stated it, in order — see [`REPLY`]).
    known: HashMap<String, Vec<Stated>>,
    /// (reply, source): the replies a later source's reply has been folded
    /// into, each once for each source.
    claimed: HashSet<(Seq, String)>,
    /// What was said, joined by its content (`said:…`: Gemini CLI's, whose
    /// hooks name nothing): every event stating each, in order, with its
    /// source — the n-th time one source says it is the n-th time another did.
    said: HashMap<String, Vec<(Seq, String, Fields)>>,
    /// (source, `said:` fact) → how many of the other sources' events of it
    /// that source's have been folded into: as the log shows…
    matched: HashMap<(String, String), usize>,
    /// …and since it was last read (appended by then: cleared on refresh).
    matched_since: HashMap<(String, String), usize>,
    /// source → the `observed.key`s it delivered, for the sources wanted.
    keys: HashMap<String, HashSet<String>>,
    wanted: Keys,
    /// The last record of the session read.
    through: Seq,
}

/// Whose delivered keys a [`Facts`] keeps.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) enum Keys {
    /// None.
    #[default]
    None,
    /// One source's (`claude-code transcript`).
    Of(String),
    /// Every telemetry source's: what a daemon needs to know a retry.
    Telemetry,
}

impl Keys {
    fn wants(&self, source: &str) -> bool {
        match self {
            Keys::None => false,
            Keys::Of(s) => s == source,
            Keys::Telemetry => source.ends_with(" telemetry"),
        }
    }
}

impl Facts {
    /// Reads what `session` holds: every event's fact, and the keys delivered
    /// by the sources `wanted`. One pass over the session's records, decoding
    /// only their `observed` (and the field names of the events that state a
    /// fact).
    pub(crate) fn read(log: &Log, session: &str, wanted: Keys) -> Result<Facts, ReadError> {
        let mut facts = Facts {
            wanted,
            ..Facts::default()
        };
        facts.refresh(log, session)?;
        Ok(facts)
    }

    /// Reads the records of `session` appended since the last read.
    pub(crate) fn refresh(&mut self, log: &Log, session: &str) -> Result<(), ReadError> {
        self.matched_since.clear();
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(default)]
            observed: Option<Observed>,
            #[serde(rename = "type", borrow)]
            type_name: std::borrow::Cow<'a, str>,
            #[serde(borrow)]
            data: Option<&'a serde_json::value::RawValue>,
        }
        for record in log.stream(session, self.through)? {
            self.through = self.through.max(record.seq);
            let Ok(probe) = serde_json::from_slice::<Probe>(&record.bytes) else {
                continue;
            };
            let Some(observed) = probe.observed else {
                continue;
            };
            if let Some(key) = &observed.key
                && self.wanted.wants(&observed.source)
            {
                self.keys
                    .entry(observed.source.clone())
                    .or_default()
                    .insert(key.clone());
            }
            if probe.type_name == "agent/observed" {
                let Some(o) = probe
                    .data
                    .and_then(|d| serde_json::from_str::<AgentObserved>(d.get()).ok())
                else {
                    continue;
                };
                if o.fact.starts_with(SAID) {
                    *self.matched.entry((observed.source, o.fact)).or_default() += 1;
                } else if o.fact.starts_with(REPLY) {
                    self.claimed.insert((o.of, observed.source));
                }
                continue;
            }
            if let Some(fact) = observed.fact
                && (fact.starts_with(SAID)
                    || fact.starts_with(REPLY)
                    || !self.known.contains_key(&fact))
            {
                let fields = probe
                    .data
                    .and_then(|d| serde_json::from_str::<Map<String, Value>>(d.get()).ok())
                    // A field the first event left empty is one a later source adds;
                    // so is what cmdlog inferred (a call settled for want of a
                    // result: `rawOutput.settled`), which a source that saw the
                    // call end says better.
                    .map(|m| {
                        let inferred = m
                            .get("rawOutput")
                            .is_some_and(|o| o.get("settled").is_some());
                        m.into_iter()
                            .filter(move |(k, _)| {
                                !(inferred && matches!(k.as_str(), "rawOutput" | "status"))
                            })
                            .filter(|(_, v)| !says_nothing(v))
                            .map(|(k, v)| (k, value_hash(&v)))
                            .collect()
                    })
                    .unwrap_or_default();
                if fact.starts_with(SAID) {
                    let source = observed.source.clone();
                    self.said
                        .entry(fact)
                        .or_default()
                        .push((record.seq, source, fields));
                } else {
                    self.known.entry(fact).or_default().push(Stated {
                        seq: record.seq,
                        source: observed.source,
                        fields,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether `source` delivered `key` before (a source wanted when read).
    pub(crate) fn delivered(&self, source: &str, key: &str) -> bool {
        self.keys.get(source).is_some_and(|k| k.contains(key))
    }

    /// The keys `source` delivered, taken out.
    pub(crate) fn take_keys(&mut self, source: &str) -> HashSet<String> {
        self.keys.remove(source).unwrap_or_default()
    }

    /// Each planned event in `session` that states a fact the session already
    /// holds becomes an `agent/observed` of the event that stated it. Returns
    /// how many did.
    pub(crate) fn fold_into(&mut self, session: &str, events: &mut [Planned]) -> usize {
        self.name_replies(session, events);
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
                        differs: Map::new(),
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
            let source = p
                .observed
                .as_ref()
                .map(|o| o.source.clone())
                .unwrap_or_default();
            let Some((of, first)) = self.stated(&fact, &source, &p.data) else {
                continue;
            };
            let mut adds = Map::new();
            let mut differs = Map::new();
            for (k, v) in data_fields(&p.data) {
                if says_nothing(&v) {
                    continue;
                }
                match first.iter().find(|(name, _)| *name == k) {
                    None => {
                        adds.insert(k, v);
                    }
                    Some((_, hash)) if content_field(&fact, &k) && *hash != value_hash(&v) => {
                        differs.insert(k, v);
                    }
                    Some(_) => {}
                }
            }
            let is_run = matches!(p.data, PlannedData::Ready(EventData::CommandRun(_)));
            let p = &mut events[i];
            p.observed = p.observed.take().map(|o| Observed { fact: None, ..o });
            p.data = PlannedData::Ready(EventData::AgentObserved(AgentObserved {
                of,
                fact,
                adds,
                differs,
            }));
            p.tie = None;
            if is_run {
                runs_folded.push(i);
            }
            folded += 1;
        }
        folded
    }

    /// The event of the session that an event of `source` stating `fact`
    /// with `data` states again (now counted as matched, or claimed), and its
    /// fields; None when the session holds none.
    fn stated(&mut self, fact: &str, source: &str, data: &PlannedData) -> Option<(Seq, Fields)> {
        if fact.starts_with(SAID) {
            let key = (source.to_string(), fact.to_string());
            let n = self.matched.get(&key).copied().unwrap_or(0)
                + self.matched_since.get(&key).copied().unwrap_or(0);
            let found = self
                .said
                .get(fact)
                .and_then(|all| all.iter().filter(|(_, s, _)| *s != source).nth(n))
                .map(|(seq, _, fields)| (*seq, fields.clone()))?;
            *self.matched_since.entry(key).or_default() += 1;
            Some(found)
        } else if fact.starts_with(REPLY) {
            let content = data_fields(data).get("content").map(value_hash);
            self.reply_stated(fact, source, content)
        } else {
            self.known
                .get(fact)
                .and_then(|all| all.first())
                .map(|first| (first.seq, first.fields.clone()))
        }
    }

    /// The reply of the session that a reply of `source` stating `fact`, with
    /// `content`, states again (see [`REPLY`]), now claimed: the one with the
    /// same text (of any source: one source saying it twice says it once), else
    /// the first another source stated that none claimed yet. None when the
    /// reply is one no other source saw.
    fn reply_stated(
        &mut self,
        fact: &str,
        source: &str,
        content: Option<u64>,
    ) -> Option<(Seq, Fields)> {
        let all = self.known.get(fact)?;
        let claimed = |s: &Stated| self.claimed.contains(&(s.seq, source.to_string()));
        let free = |s: &&Stated| !claimed(s);
        let found = all
            .iter()
            .filter(free)
            .find(|s| content.is_some() && s.content() == content)
            .or_else(|| all.iter().filter(free).find(|s| s.source != source))?;
        self.claimed.insert((found.seq, source.to_string()));
        Some((found.seq, found.fields.clone()))
    }

    /// Names each reply of `session`'s `events` that no join key named, where
    /// a later reply of its turn names it (`reply:<prompt id>`, a turn's last)
    /// and the session holds a reply of that turn with its text from another
    /// source: a turn that said several replies, of which the other source saw
    /// this one (see [`REPLY`]).
    fn name_replies(&self, session: &str, events: &mut [Planned]) {
        let mut unnamed: Vec<usize> = Vec::new();
        for i in 0..events.len() {
            let p = &events[i];
            if p.session.as_deref() != Some(session) {
                continue;
            }
            let Some(observed) = p.observed.as_ref() else {
                continue;
            };
            let kind = update_kind(&p.data);
            match (&observed.fact, kind.as_deref()) {
                (None, Some("agent_message_chunk")) => unnamed.push(i),
                (Some(fact), _) if fact.starts_with(REPLY) => {
                    let Some(all) = self.known.get(fact) else {
                        unnamed.clear();
                        continue;
                    };
                    let fact = fact.clone();
                    for j in std::mem::take(&mut unnamed) {
                        let content = data_fields(&events[j].data).get("content").map(value_hash);
                        let source = events[j].observed.as_ref().map(|o| o.source.as_str());
                        let seen = all.iter().any(|s| {
                            Some(s.source.as_str()) != source
                                && content.is_some()
                                && s.content() == content
                        });
                        if seen && let Some(o) = events[j].observed.as_mut() {
                            o.fact = Some(fact.clone());
                        }
                    }
                }
                (_, Some("turn_complete")) => unnamed.clear(),
                _ if matches!(p.data, PlannedData::Ready(EventData::SessionPrompt(_))) => {
                    unnamed.clear()
                }
                _ => {}
            }
        }
    }
}

/// The kind of a planned session update (`agent_message_chunk`, …).
fn update_kind(data: &PlannedData) -> Option<String> {
    match data {
        PlannedData::Ready(EventData::SessionUpdate(u)) => {
            u["sessionUpdate"].as_str().map(str::to_string)
        }
        PlannedData::Update(u) => serde_json::to_value(u)
            .ok()
            .and_then(|v| v["sessionUpdate"].as_str().map(str::to_string)),
        _ => None,
    }
}

/// The facts of the sessions one writer appends to (the daemon: hooks and
/// telemetry of many sessions), kept between its appends and brought up to
/// date from the log before each use: each delivery reads only what was
/// appended since the last, not its whole session again.
#[derive(Debug, Default)]
pub struct FactCache {
    sessions: HashMap<String, Facts>,
    /// Sessions by last use, oldest first (at most [`FACT_CACHE_SESSIONS`]).
    order: std::collections::VecDeque<String>,
    /// Only a session's last records are read, at most this many (a short
    /// process that appends one payload: `cmdlog hook`).
    window: Option<usize>,
}

impl FactCache {
    /// A cache for one delivery that reads only each session's last `records`
    /// (`cmdlog hook` without a daemon: what its session's hooks stated last;
    /// the telemetry, which needs a daemon, is not there to fold against).
    pub(crate) fn recent(records: usize) -> FactCache {
        FactCache {
            window: Some(records),
            ..FactCache::default()
        }
    }

    /// What `session` states, up to date with the log.
    pub(crate) fn facts(&mut self, log: &Log, session: &str) -> Result<&mut Facts, ReadError> {
        if let Some(i) = self.order.iter().position(|s| s == session) {
            let s = self.order.remove(i).expect("found above");
            self.order.push_back(s);
        } else {
            self.order.push_back(session.to_string());
            if self.order.len() > FACT_CACHE_SESSIONS
                && let Some(old) = self.order.pop_front()
            {
                self.sessions.remove(&old);
            }
        }
        if !self.sessions.contains_key(session) {
            let through = match self.window {
                Some(records) => {
                    let seqs = log.stream_seqs(session, 0)?;
                    seqs.len().checked_sub(records + 1).map_or(0, |i| seqs[i])
                }
                None => 0,
            };
            self.sessions.insert(
                session.to_string(),
                Facts {
                    wanted: Keys::Telemetry,
                    through,
                    ..Facts::default()
                },
            );
        }
        let facts = self.sessions.get_mut(session).expect("inserted above");
        facts.refresh(log, session)?;
        Ok(facts)
    }
}

/// A hash of a field's value, to tell two sources' values apart without keeping
/// them. A string that holds JSON (telemetry gives a call's input as text) is
/// hashed as the JSON it holds, so one input given two ways is one value.
fn value_hash(value: &Value) -> u64 {
    let parsed = match value {
        Value::String(s) if s.starts_with(['{', '[']) => serde_json::from_str::<Value>(s).ok(),
        _ => None,
    };
    let hash = blake3::hash(parsed.as_ref().unwrap_or(value).to_string().as_bytes());
    u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// Whether a source's value says nothing (telemetry without the prompt's text
/// gives an empty one): no conflict with a value that says something.
fn says_nothing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Whether `field` is part of what `fact` states (where two sources must agree),
/// not of how a source describes it (titles, timings, its own bookkeeping).
fn content_field(fact: &str, field: &str) -> bool {
    let kind = fact.split(':').next().unwrap_or("");
    match kind {
        "prompt" => field == "text",
        "tool_call" => field == "rawInput",
        "tool_result" => matches!(field, "status" | "rawOutput"),
        "reply" => field == "content",
        "turn_end" => field == "stopReason",
        _ => false,
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

/// Names what each event said by its content (`said:<kind>:<hash>`), where
/// nothing names it otherwise: a prompt by its text, a call and its settling
/// by its tool and input, a reply by its text, a turn's end by the reply it
/// ends with. For Gemini CLI, on both sides: its hooks' payloads and its chat.
pub(crate) fn said<'a>(events: impl Iterator<Item = (&'a PlannedData, &'a mut Option<String>)>) {
    // A call's content by its id (a chat's settling names only the id).
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut last_reply: Option<String> = None;
    for (data, fact) in events {
        // An update as a value: borrowed where it is one already.
        let update: Option<std::borrow::Cow<'_, Value>> = match data {
            PlannedData::Ready(EventData::SessionUpdate(u)) => Some(std::borrow::Cow::Borrowed(u)),
            PlannedData::Update(u) => serde_json::to_value(u).ok().map(std::borrow::Cow::Owned),
            _ => None,
        };
        let named = match (data, update.as_deref()) {
            (PlannedData::Ready(EventData::SessionPrompt(p)), _) => {
                last_reply = None;
                Some(format!("prompt:{}", content_hash(p.text.trim())))
            }
            (_, Some(u)) => match u["sessionUpdate"].as_str() {
                Some("tool_call") => {
                    let call = call_hash(&u["title"], &u["rawInput"]);
                    calls.insert(
                        u["toolCallId"].as_str().unwrap_or("").to_string(),
                        call.clone(),
                    );
                    Some(format!("call:{call}"))
                }
                Some("tool_call_update")
                    if matches!(u["status"].as_str(), Some("completed" | "failed")) =>
                {
                    let call = if u["title"].is_string() {
                        call_hash(&u["title"], &u["rawInput"])
                    } else {
                        calls
                            .get(u["toolCallId"].as_str().unwrap_or(""))
                            .cloned()
                            .unwrap_or_default()
                    };
                    Some(format!("result:{call}"))
                }
                Some("agent_message_chunk") => {
                    let reply = content_hash(u["content"]["text"].as_str().unwrap_or("").trim());
                    last_reply = Some(reply.clone());
                    Some(format!("reply:{reply}"))
                }
                Some("turn_complete") => last_reply.take().map(|r| format!("turn_end:{r}")),
                _ => None,
            },
            _ => None,
        };
        if let Some(named) = named {
            *fact = Some(format!("{SAID}{named}"));
        }
    }
}

/// What a settling of the call of `title` and `input` said, by its content,
/// where its id is cmdlog's own (Gemini CLI's hooks name no call).
pub(crate) fn said_result(id: &str, title: &Value, input: &Value) -> Option<String> {
    id.starts_with("tool-")
        .then(|| format!("{SAID}result:{}", call_hash(title, input)))
}

fn call_hash(title: &Value, input: &Value) -> String {
    content_hash(&format!("{title}\n{}", normal(input)))
}

/// A JSON value as one text, whatever the order of its keys was.
fn normal(value: &Value) -> String {
    match value {
        Value::String(s) if s.starts_with('{') => serde_json::from_str::<Value>(s)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| s.clone()),
        other => other.to_string(),
    }
}

fn content_hash(text: &str) -> String {
    let mut hex = blake3::hash(text.as_bytes()).to_hex().to_string();
    hex.truncate(16);
    hex
}

/// The fact a prompt states: its prompt id.
pub(crate) fn prompt(id: Option<&str>) -> Option<String> {
    id.filter(|id| !id.is_empty())
        .map(|id| format!("prompt:{id}"))
}

/// The fact a tool call (`tool_call`) or its settling (`tool_result`) states,
/// or a turn's end (`turn_end`) or last reply (`reply`) by its prompt's id.
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
