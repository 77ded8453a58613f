//! One hook payload into the log: its bytes made ready (`payload.rs`), secrets
//! redacted when asked (and the redaction noted), mapped (`hook.rs`), the agent's
//! expansion of a slash command checked against cmdlog's, then its blobs stored and
//! its events appended as one atomic unit.

use cmdlog_engine::discovery::Discovery;
use cmdlog_engine::event::{AgentEvent, Observed};
use cmdlog_engine::{EventData, Mode};
use cmdlog_store::{AppendError, BlobError, Log, ReadError, Receipt};

use crate::append::Batch;
use crate::facts::FactCache;
use crate::kind::AgentKind;
use crate::payload;
use crate::plan::{Planned, PlannedData};
use crate::{agreement, hook};

/// Why a batch was not appended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendBatchError {
    /// The log could not tell which sessions it has seen.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A blob of the payload could not be stored.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// The append failed.
    #[error(transparent)]
    Append(#[from] AppendError),
}

impl AppendBatchError {
    /// Whether trying again later can help (the log busy, the disk full), as
    /// opposed to a payload the log can never take.
    pub fn retryable(&self) -> bool {
        !matches!(
            self,
            AppendBatchError::Append(
                AppendError::RecordTooLarge { .. }
                    | AppendError::BadStreamKey { .. }
                    | AppendError::Empty
            ) | AppendBatchError::Blob(BlobError::TooLarge { .. })
        )
    }
}

/// One payload of `agent` (its bytes as received), made ready to append under
/// `delivery` (the payload's delivery id: every event's `observed.key`), from
/// the agent `release` it announced to its hook, if any, in the session `mode`
/// the agent told its hook ([`crate::hook_mode`]), if it did. The
/// agent's expansion of a slash command is checked against cmdlog's
/// (`discovery` is asked for only then). A payload that is not JSON is kept as
/// text; one that is not UTF-8 read lossily, its raw bytes kept; large strings
/// go to blobs — each change said by a note in the same append.
pub(crate) fn batch_for(
    agent: AgentKind,
    bytes: &[u8],
    redact: bool,
    delivery: Option<&str>,
    release: Option<&str>,
    mode: Option<Mode>,
    discovery: impl FnOnce() -> Option<Discovery>,
) -> Batch {
    let mut batch = Batch::new(agent.name());
    let source = format!("{} hook", agent.name());
    let observed = Some(Observed {
        source: source.clone(),
        key: delivery.map(str::to_string),
        at: None,
        fact: None,
    });
    let mut found = cmdlog_common::secrets::Redaction::default();
    let prepared = payload::prepare(
        agent.name(),
        bytes,
        |v| {
            if redact {
                cmdlog_common::secrets::redact_value(v, &mut found);
            }
        },
        redact,
    );
    batch.blobs = prepared.blobs;
    let note = |event: AgentEvent, session: Option<String>| Planned {
        session,
        observed: observed.clone(),
        data: PlannedData::Ready(EventData::AgentEvent(event)),
        tie: None,
    };
    let Some(payload) = prepared.json else {
        batch.extend(vec![note(
            AgentEvent {
                agent: agent.name().into(),
                event: "unreadable payload".into(),
                data: serde_json::Value::String(prepared.text),
                bookkeeping: false,
            },
            None,
        )]);
        batch.extend(prepared.notes.into_iter().map(|n| note(n, None)).collect());
        batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
        return batch;
    };
    let mut plan = hook::plan(agent, &payload, delivery, release);
    if let Some(expansion) = &plan.expansion
        && expansion.prompt.is_some()
        && let Some(discovery) = discovery()
        && let Some(check) = agreement::check(agent, &discovery, expansion)
        && let Some(Planned {
            data: PlannedData::DoneOf { agent_check, .. },
            ..
        }) = plan.events.get_mut(expansion.done_index)
    {
        *agent_check = Some(check);
    }
    if agent == AgentKind::Gemini && payload["hook_event_name"] == "AfterAgent" {
        gemini_reply_from_chat(&payload, &mut plan.events);
    }
    if agent == AgentKind::Gemini {
        gemini_subagent(&payload, &mut plan.events);
    }
    if agent == AgentKind::Gemini {
        crate::facts::said(
            plan.events
                .iter_mut()
                .filter_map(|p| Some((&p.data, &mut p.observed.as_mut()?.fact))),
        );
    }
    let session = plan.session.clone();
    batch.extend(plan.events);
    batch.extend(
        prepared
            .notes
            .into_iter()
            .map(|n| note(n, session.clone()))
            .collect(),
    );
    batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
    batch.set_mode(mode);
    batch
}

/// Appends `batch` to `log` (blocking), folding the facts its session's last
/// records state already (`facts.rs`): its blobs first (a failure after them
/// leaves only blobs no event names, which gc collects), then its events in one
/// atomic append, starting the sessions it names that the log has not seen.
pub fn append_to(log: &Log, batch: Batch, at: u64) -> Result<Receipt, AppendBatchError> {
    append_with(
        log,
        batch,
        at,
        &mut FactCache::recent(crate::limits::HOOK_FACTS_LOOK_BACK),
    )
}

/// [`append_to`], for a writer that appends many payloads (the daemon):
/// `cache` keeps what their sessions state between calls.
pub fn append_with(
    log: &Log,
    mut batch: Batch,
    at: u64,
    cache: &mut FactCache,
) -> Result<Receipt, AppendBatchError> {
    for blob in std::mem::take(&mut batch.blobs) {
        log.put_blob(blob)?;
    }
    batch.tie(log)?;
    batch.fold_facts(log, None, cache)?;
    batch.create_sessions(|s| log.has_stream(s).map(|seen| !seen))?;
    Ok(batch.append(log, at)?)
}

/// Gemini CLI's `HOME` for its files: `GEMINI_CLI_HOME`, else `HOME`.
fn gemini_tmp() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .or_else(|| std::env::var_os("HOME"))?;
    Some(std::path::Path::new(&home).join(".gemini/tmp"))
}

/// The payloads of a Gemini CLI subagent's own loop (its calls, their
/// permission notices, its model requests) come with its parent's session
/// id: while a subagent runs (its chat says so, `running_subagent`), they go
/// to its session, begun once (`session/created` with `parent`, tied to the
/// parent's `invoke_agent` call; the fact `subagent:<id>` its chat's import
/// states too).
fn gemini_subagent(payload: &serde_json::Value, events: &mut Vec<Planned>) {
    let event = payload["hook_event_name"].as_str().unwrap_or_default();
    let in_loop = matches!(
        event,
        "BeforeTool"
            | "AfterTool"
            | "Notification"
            | "BeforeModel"
            | "AfterModel"
            | "BeforeToolSelection"
    );
    if !in_loop || payload["tool_name"] == "invoke_agent" || events.is_empty() {
        return;
    }
    let (Some(path), Some(session)) = (
        payload["transcript_path"].as_str(),
        payload["session_id"].as_str(),
    ) else {
        return;
    };
    let Some(child) = gemini_tmp().and_then(|tmp| {
        crate::transcripts::gemini_running_subagent(std::path::Path::new(path), &tmp, session)
    }) else {
        return;
    };
    let parent = crate::kind::session_key(AgentKind::Gemini, session);
    let child_key = crate::kind::session_key(AgentKind::Gemini, &child);
    let observed = events[0].observed.clone().map(|mut o| {
        o.fact = Some(format!("subagent:{child}"));
        o
    });
    for p in events.iter_mut() {
        p.session = Some(child_key.clone());
    }
    events.insert(
        0,
        Planned {
            session: Some(child_key),
            observed,
            data: PlannedData::Ready(EventData::SessionCreated(
                cmdlog_engine::event::SessionCreated {
                    mode: None,
                    parent: Some(cmdlog_engine::event::Parent {
                        session: parent,
                        tool_call_id: None,
                        agent_type: None,
                    }),
                },
            )),
            tie: Some(crate::plan::Tie::SubagentCall),
        },
    );
}

/// Gemini CLI 0.61's `AfterAgent` repeats the later chunks of a streamed reply in
/// `prompt_response` (and says `[no response text]` for none): the reply is taken
/// from its chat (`transcript_path`) when that is one of Gemini's chat files.
fn gemini_reply_from_chat(payload: &serde_json::Value, events: &mut Vec<Planned>) {
    let from_chat = payload["transcript_path"].as_str().and_then(|path| {
        crate::transcripts::gemini_last_reply(std::path::Path::new(path), &gemini_tmp()?)
    });
    let said = payload["prompt_response"].as_str();
    let reply = from_chat.or_else(|| {
        said.filter(|s| *s != "[no response text]")
            .map(str::to_string)
    });
    events.retain(|p| {
        !matches!(&p.data, PlannedData::Ready(EventData::SessionUpdate(u)) if u["sessionUpdate"] == "agent_message_chunk")
    });
    if let Some(reply) = reply.filter(|r| !r.is_empty())
        && let Some(first) = events.first()
    {
        let chunk = Planned {
            session: first.session.clone(),
            observed: first.observed.clone(),
            data: PlannedData::Ready(EventData::SessionUpdate(serde_json::json!({
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": reply},
            }))),
            tie: None,
        };
        events.insert(0, chunk);
    }
}
