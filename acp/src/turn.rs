//! A prompt turn as cmdlog bridges it, the same for the stdio proxy and the
//! daemon: cmdlog's registry sees the prompt first — the agent's own commands
//! ranked above cmdlog's, cmdlog's built-ins off; a command that answers the
//! line itself ends the turn there (its answer is the agent's message, recorded),
//! and anything else goes on to the agent, expanded where a prompt command matched.

use cmdlog_engine::event::Outcome;
use cmdlog_engine::prompt::{PromptError, PromptOutcome, PromptRequest, StreamingBehavior};
use cmdlog_engine::{CancellationToken, Engine, EventData, Mode};
use serde_json::{Value, json};

use crate::record::Recorder;

/// A prompt on its way to the agent.
#[derive(Debug, Clone)]
pub struct TurnPrompt<'a> {
    /// The log's session.
    pub session: &'a str,
    /// The agent the session is recorded under.
    pub agent: &'a str,
    /// The session's mode.
    pub mode: Mode,
    /// The prompt's text (its text blocks).
    pub text: &'a str,
    /// The prompt's blocks as the client sent them.
    pub blocks: &'a [Value],
    /// The prompt's id, recorded with it and with its turn's end.
    pub prompt_id: &'a str,
    /// The client that sent it, as it names itself.
    pub client_id: Option<&'a str>,
    /// Cancels a command the registry runs for the prompt.
    pub cancel: CancellationToken,
    /// Whether cmdlog's built-ins answer: not in front of an agent, whose own
    /// `/help` and `/model` are the ones that mean something there.
    pub builtins: bool,
}

/// What the registry made of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum RegistryTurn {
    /// A command answered the line itself; the agent never hears of it. Its
    /// answer (if any) is recorded as the agent's message.
    Answered {
        /// The answer's text, if it has one.
        message: Option<String>,
        /// How the turn ended: `end_turn`, or `cancelled` for an interrupted run.
        stop_reason: &'static str,
    },
    /// The prompt goes on to the agent with these blocks (the client's own, or
    /// the expansion's text in place of its text blocks).
    Forward {
        /// What to send as `prompt`.
        blocks: Vec<Value>,
        /// Whether the registry changed the text.
        expanded: bool,
    },
}

/// The text of a prompt's text blocks, one line each.
pub fn prompt_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The blocks to send the agent when cmdlog's registry expanded the prompt: the
/// text blocks give way to `text`; the others (images, resources) go as they came.
pub fn with_text(blocks: &[Value], text: &str) -> Vec<Value> {
    let mut out = vec![json!({"type": "text", "text": text})];
    out.extend(blocks.iter().filter(|b| b["type"] != "text").cloned());
    out
}

/// An ACP `agent_message_chunk` update with `text`.
pub fn message_chunk(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

/// Runs the prompt through cmdlog's registry (its run recorded by the engine);
/// a command's answer is recorded through `recorder` as the agent's message.
pub async fn through_registry(
    engine: &Engine,
    recorder: &Recorder,
    prompt: TurnPrompt<'_>,
) -> Result<RegistryTurn, PromptError> {
    let mut request = PromptRequest::new(prompt.session, prompt.agent, prompt.mode, prompt.text);
    request.cancel = prompt.cancel;
    // A turn an earlier process left open does not hold this one back.
    request.behavior = Some(StreamingBehavior::FollowUp);
    request.prompt_id = Some(prompt.prompt_id.to_string());
    request.client_id = prompt.client_id.map(str::to_string);
    request.builtins = prompt.builtins;
    request.blocks = prompt
        .blocks
        .iter()
        .filter(|b| b["type"] != "text")
        .cloned()
        .collect();
    match engine.prompt(request).await? {
        PromptOutcome::Handled(ex) => {
            let (message, stop_reason) = match ex.outcome {
                Outcome::Success { text, .. } => (text, "end_turn"),
                Outcome::Error {
                    interrupted: true,
                    text,
                } => (Some(text), "cancelled"),
                Outcome::Error { text, .. } => (Some(text), "end_turn"),
            };
            let message = message.filter(|t| !t.is_empty());
            if let Some(text) = &message {
                recorder.record(
                    Some(prompt.session),
                    None,
                    EventData::SessionUpdate(message_chunk(text)),
                );
            }
            Ok(RegistryTurn::Answered {
                message,
                stop_reason,
            })
        }
        PromptOutcome::Delivered { text, .. } if text != prompt.text => Ok(RegistryTurn::Forward {
            blocks: with_text(prompt.blocks, &text),
            expanded: true,
        }),
        PromptOutcome::Delivered { .. } => Ok(RegistryTurn::Forward {
            blocks: prompt.blocks.to_vec(),
            expanded: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expansion_replaces_the_text_and_keeps_the_rest() {
        let blocks = vec![
            json!({"type": "text", "text": "/greet world"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
        ];
        assert_eq!(
            with_text(&blocks, "Say hello to world"),
            vec![
                json!({"type": "text", "text": "Say hello to world"}),
                json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            ]
        );
        assert_eq!(prompt_text(&blocks), "/greet world");
    }
}
