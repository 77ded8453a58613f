//! OpenTelemetry capture: the log records the agents export (OTLP/HTTP, `POST
//! /v1/logs` on `cmdlog serve`) as events of their sessions — prompts, tool
//! calls and their results, model requests with their tokens, cost and
//! duration — beside what hooks and transcripts record of the same sessions,
//! each fact once (`facts.rs`).
//!
//! - [`decode`] reads a request's body (protobuf or JSON, gzip) and
//!   [`response`] / [`status`] write the answers the OTLP spec asks for.
//! - [`ingest`] maps its records (`map.rs`, one table per agent in
//!   `docs/agents.md`), redacts them when asked, and appends them: one atomic
//!   append per agent in the request. Each event keeps the agent's time
//!   (`observed.at`) and, in `observed.key`, the record's `event.sequence` and
//!   hash: a request sent again (an exporter's retry) adds nothing.

mod answer;
mod bounds;
mod events;
mod map;
mod setup;
mod wire;

use std::collections::HashSet;

use cmdlog_engine::event::Observed;
use cmdlog_store::Log;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message;
use serde::Serialize;
use serde_json::Value;

pub use answer::Answer;
pub use bounds::Bound;
pub use setup::{
    Exporter, after_setup, plan_remove, plan_setup, remove, setup, telemetry_settings_path,
};
pub use wire::{Encoding, OtlpError, decode, response, status};

use crate::append::Batch;
use crate::facts::FactCache;
use crate::kind::{AgentKind, session_key};
use crate::plan::Planned;
use crate::record::AppendBatchError;

/// What one request did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ingested {
    /// Records taken (appended, or known already).
    pub accepted: u64,
    /// Records not taken: not from an agent cmdlog knows, or without a session.
    pub rejected: u64,
    /// Why, for the answer's `partial_success.error_message`.
    pub why_rejected: String,
    /// Records delivered before (a retry): nothing appended for them.
    pub duplicates: u64,
    /// Events that state a fact the log held already (from a hook or a
    /// transcript): recorded as `agent/observed` of it.
    pub observed: u64,
    /// Events appended.
    pub events: u64,
    /// Secrets redacted.
    pub redacted: u64,
}

/// Appends what `request`'s records mean to `log` (blocking), `at` the time of
/// the append; with `redact`, secrets in their attributes are replaced first
/// (the vendors' own flags do not hold: `docs/agents.md`). `cache` keeps what
/// the sessions state between requests (a fresh one reads each session whole).
pub fn ingest(
    log: &Log,
    request: &ExportLogsServiceRequest,
    redact: bool,
    at: u64,
    cache: &mut FactCache,
) -> Result<Ingested, AppendBatchError> {
    Telemetry::read(request, redact).append(log, at, cache)
}

/// A request's records as the events they mean, before they meet the log:
/// made without it (a daemon maps requests in parallel, and appends them one
/// at a time).
#[derive(Debug)]
pub struct Telemetry {
    batches: Vec<(AgentKind, Batch, cmdlog_common::secrets::Redaction)>,
    report: Ingested,
}

impl Telemetry {
    /// Maps `request`'s records (`map.rs`), redacting them with `redact`.
    pub fn read(request: &ExportLogsServiceRequest, redact: bool) -> Telemetry {
        read(request, redact)
    }

    /// Appends them to `log` (blocking): records sent before left out, facts
    /// the sessions hold folded into them, the sessions started.
    pub fn append(
        self,
        log: &Log,
        at: u64,
        cache: &mut FactCache,
    ) -> Result<Ingested, AppendBatchError> {
        let Telemetry {
            batches,
            mut report,
        } = self;
        for (agent, mut batch, found) in batches {
            let source = format!("{} telemetry", agent.name());
            batch.tie(log)?;
            let (left_out, folded) = batch.fold_facts(log, Some(&source), cache)?;
            report.duplicates += left_out as u64;
            report.observed += folded as u64;
            batch.create_sessions(|s| log.has_stream(s).map(|seen| !seen))?;
            batch.note_redaction(&source, found.count, found.kinds.into_iter().collect());
            report.redacted += found.count;
            report.events += batch.events.len() as u64;
            batch.append(log, at)?;
        }
        Ok(report)
    }
}

fn read(request: &ExportLogsServiceRequest, redact: bool) -> Telemetry {
    let mut report = Ingested::default();
    let mut no_agent = 0u64;
    let mut no_session = 0u64;
    let mut batches: Vec<(AgentKind, Batch, cmdlog_common::secrets::Redaction)> = Vec::new();
    let mut keys: HashSet<String> = HashSet::new();
    for resource_logs in &request.resource_logs {
        let resource = resource_logs
            .resource
            .as_ref()
            .map(|r| r.attributes.as_slice())
            .unwrap_or_default();
        for scope in &resource_logs.scope_logs {
            for record in &scope.log_records {
                let mut attrs = map::attributes(resource, &record.attributes);
                let body = map::value(record.body.as_ref());
                let Some((agent, name)) = map::agent_and_name(&body, &attrs) else {
                    no_agent += 1;
                    continue;
                };
                let Some(session) = map::session_id(agent, &attrs).map(|s| session_key(agent, s))
                else {
                    no_session += 1;
                    continue;
                };
                report.accepted += 1;
                let key = record_key(record, &attrs);
                if !keys.insert(key.clone()) {
                    report.duplicates += 1;
                    continue;
                }
                let slot = match batches.iter().position(|(a, _, _)| *a == agent) {
                    Some(i) => i,
                    None => {
                        batches.push((agent, Batch::new(agent.name()), Default::default()));
                        batches.len() - 1
                    }
                };
                let (_, batch, found) = &mut batches[slot];
                if redact {
                    let mut whole = Value::Object(std::mem::take(&mut attrs));
                    cmdlog_common::secrets::redact_value(&mut whole, found);
                    if let Value::Object(m) = whole {
                        attrs = m;
                    }
                }
                let nanos = if record.time_unix_nano > 0 {
                    record.time_unix_nano
                } else {
                    record.observed_time_unix_nano
                };
                let source = format!("{} telemetry", agent.name());
                let planned = events::events(agent, &name, &attrs)
                    .into_iter()
                    .map(|(data, fact)| Planned {
                        tie: events::tie(&name, &data),
                        session: Some(session.clone()),
                        observed: Some(Observed {
                            source: source.clone(),
                            key: Some(key.clone()),
                            at: (nanos > 0).then_some(nanos / 1_000_000),
                            fact,
                        }),
                        data,
                    })
                    .collect();
                batch.extend(planned);
            }
        }
    }
    report.rejected = no_agent + no_session;
    report.why_rejected = [
        (no_agent > 0).then(|| {
            format!("{no_agent} record(s) not from an agent cmdlog knows (Claude Code, Codex, Gemini CLI, Qwen Code: event names or service.name)")
        }),
        (no_session > 0).then(|| format!("{no_session} record(s) without session.id")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    Telemetry { batches, report }
}

/// What identifies a record among the ones its agent sent: its
/// `event.sequence` (the agent's order) and the hash of its bytes, so an
/// exporter's retry of the same request is known, and two processes of one
/// session that count from the same sequence are not confused.
fn record_key(
    record: &opentelemetry_proto::tonic::logs::v1::LogRecord,
    attrs: &map::Attributes,
) -> String {
    let mut hex = blake3::hash(&record.encode_to_vec()).to_hex().to_string();
    hex.truncate(32);
    match attrs.get("event.sequence").and_then(|v| match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }) {
        Some(seq) => format!("{seq}:{hex}"),
        None => hex,
    }
}

/// The records of `request`, counted (for the throughput bench).
pub fn records(request: &ExportLogsServiceRequest) -> usize {
    request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum()
}
