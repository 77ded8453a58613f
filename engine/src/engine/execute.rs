//! Executing a slash line (DESIGN §5): resolve, admit attachments, run, settle.

use std::sync::Arc;
use std::time::Instant;

use cmdlog_store::{AppendError, BlobError, BlobHash};
use tokio_util::sync::CancellationToken;

use super::handler::{CommandResult, HandlerError, Invocation};
use super::sessions::SessionError;
use super::{Engine, lock};
use crate::attachments::SubmittedAttachment;
use crate::attachments::{self, AdmittedBlock};
use crate::command::{Dialect, Mode};
use crate::event::{
    AttachmentAdmitted, CommandDone, CommandRun, EventData, InvocationSource, NewEvent, Outcome,
    RunRelease, Seq,
};
use crate::expand::{
    ExpandError, ExpandInput, Version, expand, injections, parse_version, release_rules,
};
use crate::parse::parse_line;
use crate::registry::Registration;

/// One `execute` call.
#[derive(Debug, Clone)]
pub struct ExecuteRequest {
    /// An open session.
    pub session: String,
    /// The receiving agent.
    pub agent: String,
    /// The mode.
    pub mode: Mode,
    /// The complete slash line.
    pub line: String,
    /// Who invoked it.
    pub source: InvocationSource,
    /// Attachments, in submission order.
    pub attachments: Vec<SubmittedAttachment>,
    /// Cancellation owned by the caller.
    pub cancel: CancellationToken,
    /// The agents' releases the caller knows (`claude --version`, …): a command
    /// of a dialect whose rules changed between releases expands by its agent's.
    pub releases: Vec<KnownRelease>,
}

/// An agent release the caller found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownRelease {
    /// The agent: `claude-code`.
    pub agent: String,
    /// Its version, as it printed it (`2.1.332`).
    pub version: String,
    /// How it was found: `claude --version`, `AI_AGENT`, `transcript`.
    pub from: String,
}

impl ExecuteRequest {
    /// A user invocation of `line` with no attachments.
    pub fn new(session: &str, agent: &str, mode: Mode, line: &str) -> Self {
        ExecuteRequest {
            session: session.into(),
            agent: agent.into(),
            mode,
            line: line.into(),
            source: InvocationSource::User,
            attachments: Vec::new(),
            cancel: CancellationToken::new(),
            releases: Vec::new(),
        }
    }
}

/// What a run of a command in `dialect` records of the release whose rules
/// expanded it (`None` for dialects whose rules did not change), given the
/// releases known.
pub fn run_release(dialect: Dialect, known: &[KnownRelease]) -> Option<RunRelease> {
    let agent = match dialect {
        Dialect::Claude => "claude-code",
        _ => return None,
    };
    let found = known
        .iter()
        .find(|r| r.agent == agent)
        .and_then(|r| parse_version(&r.version).map(|v| (r, v)));
    let rules = release_rules(dialect, found.map(|(_, v)| v))?;
    Some(RunRelease {
        agent: agent.to_string(),
        version: found.map(|(r, _)| r.version.trim().to_string()),
        from: found.map_or_else(|| "assumed".to_string(), |(r, _)| r.from.clone()),
        rules: rules.to_string(),
    })
}

/// A settled execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// Seq of its `command/run` (the command id).
    pub command_id: Seq,
    /// The registration that ran.
    pub registration: Seq,
    /// The command name.
    pub name: String,
    /// How it settled.
    pub outcome: Outcome,
    /// Seq of its `command/done`; `None` when that append failed on the
    /// handler-failure path (the handler's error is the reported failure).
    pub done: Option<Seq>,
    /// Injections in its expansion that its agent would run or read and cmdlog did
    /// not (see [`crate::expand::injections`]).
    pub injections: Vec<String>,
    /// The agent release whose rules expanded it (see [`CommandRun::release`]).
    pub release: Option<RunRelease>,
}

/// `execute` failed loudly: the run could not be recorded, or its success could not.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// The session does not exist or has ended.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The admitted attachments could not be stored: nothing was logged, and at most
    /// unreferenced blobs were left for `cmdlog gc`.
    #[error("could not store the attachments of /{name}, so it did not run: {source}")]
    AttachmentsNotStored {
        /// The command.
        name: String,
        /// Why.
        source: BlobError,
    },
    /// `command/run` could not be appended: the handler did not run.
    #[error("could not record the run of /{name}, so it did not run: {source}")]
    RunNotRecorded {
        /// The command.
        name: String,
        /// Why.
        source: AppendError,
    },
    /// The handler succeeded but its `command/done` could not be appended.
    #[error("/{name} ran (command id {run}) but its result could not be recorded: {source}")]
    DoneNotRecorded {
        /// The command.
        name: String,
        /// Seq of the run.
        run: Seq,
        /// The outcome that was lost.
        outcome: Box<Outcome>,
        /// Why.
        source: AppendError,
    },
}

impl Engine {
    /// Parses and executes a slash line (DESIGN §5). `Ok(None)` when the line is not
    /// a command or names no command for this agent and mode: nothing is logged.
    pub async fn execute(
        &self,
        mut request: ExecuteRequest,
    ) -> Result<Option<Execution>, ExecuteError> {
        let Some(parsed) = parse_line(&request.line) else {
            return Ok(None);
        };
        self.check_session(&request.session)?;
        let Some(registration) = self.find(&request.agent, request.mode, parsed.name.as_str())
        else {
            return Ok(None);
        };
        let command = &registration.command;
        let name = command.name.to_string();

        // Validate attachments before anything is written.
        let (admissions, refusal) = self.validate_attachments(&registration, &mut request);
        // A prompt command's expansion is a pure function of the template and the
        // input: made now, so the run can say which injections it holds.
        let expanding = Instant::now();
        let release = command
            .dialect
            .and_then(|d| run_release(d, &request.releases));
        let version = release
            .as_ref()
            .and_then(|r| r.version.as_deref())
            .and_then(parse_version);
        let expanded = (refusal.is_none() && command.is_prompt())
            .then(|| self.expand_prompt(&registration, &parsed.raw_input, version));
        // The expansion is the prompt command's handler: its time counts as the run's.
        let expansion_us = expanding.elapsed().as_micros() as u64;
        let found_injections = match &expanded {
            Some(Ok(prompt)) => injections(prompt, command.dialect.unwrap_or(Dialect::Markdown)),
            _ => Vec::new(),
        };

        let run = CommandRun {
            registration: registration.seq,
            name: name.clone(),
            mode: request.mode,
            source: request.source,
            raw_input: command.record_input.then(|| parsed.raw_input.clone()),
            attachments: Vec::new(),
            injections: found_injections.clone(),
            release: release.clone(),
        };
        let (command_id, blocks) = self.record_run(&request, run, admissions).await?;

        let started = Instant::now();
        let outcome = match refusal {
            Some(text) => Outcome::error(text),
            None => {
                let outcome = self
                    .settle(
                        &registration,
                        command_id,
                        parsed.raw_input,
                        blocks,
                        expanded,
                        &request,
                    )
                    .await;
                bounded(outcome, registration.command.name.as_str())
            }
        };
        let elapsed_us = started.elapsed().as_micros() as u64 + expansion_us;
        let done = NewEvent {
            observed: None,
            at: self.now(),
            session: Some(request.session.clone()),
            agent: Some(request.agent.clone()),
            data: EventData::CommandDone(CommandDone {
                agent_check: None,
                run: command_id,
                outcome: outcome.clone(),
                elapsed_us,
            }),
        };
        let done = match self.append(vec![done]).await {
            Ok(receipt) => Some(receipt.first),
            // On the failure path the handler's error stays the reported failure.
            Err(_) if outcome.is_error() => None,
            Err(source) => {
                return Err(ExecuteError::DoneNotRecorded {
                    name,
                    run: command_id,
                    outcome: Box::new(outcome),
                    source,
                });
            }
        };
        Ok(Some(Execution {
            command_id,
            registration: registration.seq,
            name,
            outcome,
            done,
            injections: found_injections,
            release,
        }))
    }

    /// The attachments of `request` checked against the command's declaration
    /// and the limits: the admissions, or why they are refused (the run is then
    /// recorded and settled with that error).
    fn validate_attachments(
        &self,
        registration: &Registration,
        request: &mut ExecuteRequest,
    ) -> (Vec<attachments::Admission>, Option<String>) {
        let command = &registration.command;
        let name = command.name.to_string();
        let validated = if request.attachments.is_empty() {
            Ok(Vec::new())
        } else if !command.input.as_ref().is_some_and(|i| i.attachments) {
            Err(format!(
                "/{name} does not take attachments (it does not declare input.attachments); send the line without them"
            ))
        } else {
            let resolver = lock(&self.inner.receipts)
                .as_ref()
                .map(|(_, r)| Arc::clone(r));
            attachments::validate(
                &name,
                &request.session,
                std::mem::take(&mut request.attachments),
                resolver.as_deref(),
                &self.inner.limits,
            )
        };
        match validated {
            Ok(a) => (a, None),
            Err(text) => (Vec::new(), Some(text)),
        }
    }

    /// Records `run` and its admissions: the blobs first (a failure there can
    /// only leave unreferenced blobs), then the admissions and the run in one
    /// atomic append, the run listing their seqs. The run's seq and the blocks
    /// admitted.
    async fn record_run(
        &self,
        request: &ExecuteRequest,
        run: CommandRun,
        mut admissions: Vec<attachments::Admission>,
    ) -> Result<(Seq, Vec<AdmittedBlock>), ExecuteError> {
        let name = run.name.clone();
        let hashes = self
            .inner
            .log
            .put_blobs_async(
                admissions
                    .iter_mut()
                    .map(|a| std::mem::take(&mut a.bytes))
                    .collect(),
            )
            .await
            .map_err(|source| ExecuteError::AttachmentsNotStored {
                name: name.clone(),
                source,
            })?;
        let now = self.now();
        let envelope = |data| NewEvent {
            observed: None,
            at: now,
            session: Some(request.session.clone()),
            agent: Some(request.agent.clone()),
            data,
        };
        let admitted: Vec<NewEvent> = admissions
            .iter()
            .zip(&hashes)
            .map(|(a, hash)| {
                envelope(EventData::AttachmentAdmitted(AttachmentAdmitted {
                    kind: a.kind,
                    blob: hash.to_hex(),
                    media_type: a.media_type.clone(),
                    size: a.size,
                    name: a.name.clone(),
                }))
            })
            .collect();
        let run_event = envelope(EventData::CommandRun(run));
        let count = admitted.len() as u64;
        let not_recorded = |source| ExecuteError::RunNotRecorded {
            name: name.clone(),
            source,
        };
        let receipt = self
            .inner
            .log
            .submit_built(move |first| {
                let mut run_event = run_event.clone();
                if let EventData::CommandRun(run) = &mut run_event.data {
                    run.attachments = (first..first + count).collect();
                }
                admitted
                    .iter()
                    .chain(std::iter::once(&run_event))
                    .map(NewEvent::to_record)
                    .collect()
            })
            .map_err(not_recorded)?
            .await_receipt()
            .await
            .map_err(not_recorded)?;
        let blocks = admissions
            .into_iter()
            .zip(hashes)
            .zip(receipt.first..)
            .map(|((a, blob), seq)| AdmittedBlock {
                seq,
                kind: a.kind,
                name: a.name,
                media_type: a.media_type,
                size: a.size,
                blob,
            })
            .collect();
        Ok((receipt.last, blocks))
    }

    async fn settle(
        &self,
        registration: &Registration,
        command_id: Seq,
        raw_input: String,
        attachments: Vec<AdmittedBlock>,
        expanded: Option<Result<String, ExpansionFailed>>,
        request: &ExecuteRequest,
    ) -> Outcome {
        let name = registration.command.name.as_str();
        if request.cancel.is_cancelled() {
            return Outcome::error("aborted");
        }
        if let Some(expanded) = expanded {
            return match expanded {
                Ok(mut prompt) => {
                    // The model side fetches admitted blocks by their blob hashes.
                    attachments::with_attachments(&mut prompt, &attachments);
                    Outcome::Success {
                        text: None,
                        prompt: Some(prompt),
                        source_event_seq: None,
                    }
                }
                Err(failed) => Outcome::error(failed.to_string()),
            };
        }
        let handler = self
            .inner
            .handlers
            .lock()
            .await
            .get(&registration.seq)
            .cloned();
        let Some(handler) = handler else {
            return Outcome::error(format!(
                "/{name} (registration seq {}) has no handler in this process",
                registration.seq
            ));
        };
        let invocation = Invocation {
            command_id,
            session: request.session.clone(),
            agent: request.agent.clone(),
            mode: request.mode,
            raw_input,
            attachments,
            cancel: request.cancel.clone(),
            engine: self.clone(),
        };
        let mut task = tokio::spawn(handler.call(invocation));
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = request.cancel.cancelled() => {
                task.abort();
                // Wait until the handler's future is dropped, so nothing it holds
                // outlives the recorded outcome.
                let _ = task.await;
                return Outcome::error("aborted");
            }
        };
        match joined {
            Ok(Ok(CommandResult::Success {
                text,
                source_event_seq,
            })) => Outcome::Success {
                text,
                prompt: None,
                source_event_seq,
            },
            Ok(Ok(CommandResult::Error { text })) => Outcome::error(text),
            Ok(Ok(CommandResult::Prompt { text })) => Outcome::Success {
                text: None,
                prompt: Some(text),
                source_event_seq: None,
            },
            Ok(Err(HandlerError(text))) => Outcome::error(format!("/{name} failed: {text}")),
            Err(e) if e.is_panic() => {
                let panic = e.into_panic();
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "no message".into());
                Outcome::error(format!("/{name} panicked: {message}"))
            }
            Err(_) => Outcome::error("aborted"),
        }
    }

    /// A prompt command's expansion of `raw_input` with the template recorded in its
    /// registration, or why its run settles as an error.
    pub(crate) fn expand_prompt(
        &self,
        registration: &Registration,
        raw_input: &str,
        release: Option<Version>,
    ) -> Result<String, ExpansionFailed> {
        let command = &registration.command;
        let name = command.name.as_str();
        let failed = |why: String| ExpansionFailed {
            name: name.to_string(),
            why,
        };
        let Some(hash) = registration.template.as_deref() else {
            return Err(failed("is a prompt command without a template".into()));
        };
        let Some(hash) = BlobHash::from_hex(hash) else {
            return Err(failed(format!("template hash {hash:?} is malformed")));
        };
        let bytes = match self.inner.log.get_blob(&hash) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(failed(format!(
                    "template blob {hash} is missing; run `cmdlog verify`"
                )));
            }
            Err(e) => return Err(failed(e.to_string())),
        };
        let template = String::from_utf8_lossy(&bytes);
        expand(
            &template,
            command.dialect.unwrap_or(Dialect::Markdown),
            &ExpandInput::new(command, raw_input).at_release(release),
        )
        .map_err(|e| match e {
            // A usage error is the agent's own message, shown as it is.
            ExpandError::Usage(text) => ExpansionFailed {
                name: String::new(),
                why: text,
            },
            other => failed(other.to_string()),
        })
    }
}

/// Why a prompt command did not expand: the text its run settles with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) struct ExpansionFailed {
    /// The command, or empty when `why` names it itself.
    name: String,
    why: String,
}

impl std::fmt::Display for ExpansionFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name.as_str() {
            "" => f.write_str(&self.why),
            name if self.why.starts_with("is ") => write!(f, "/{name} {}", self.why),
            name => write!(f, "/{name}: {}", self.why),
        }
    }
}

pub use crate::limits::OUTCOME_BYTES_MAX;

/// `outcome`, or an error outcome naming the limit when its text is over it: an
/// oversized result settles as a normal done, never as a run left open.
fn bounded(outcome: Outcome, name: &str) -> Outcome {
    let size = match &outcome {
        Outcome::Success { text, prompt, .. } => {
            text.as_ref().map_or(0, String::len) + prompt.as_ref().map_or(0, String::len)
        }
        Outcome::Error { text, .. } => text.len(),
    };
    if size <= OUTCOME_BYTES_MAX {
        return outcome;
    }
    let what = match &outcome {
        Outcome::Success {
            prompt: Some(_), ..
        } => "expands to",
        Outcome::Success { .. } => "returned",
        Outcome::Error { .. } => "failed with",
    };
    Outcome::error(format!(
        "/{name} {what} {size} bytes, over the limit of {OUTCOME_BYTES_MAX} bytes; shorten its arguments or its template"
    ))
}
