//! The ACP session updates a transcript's items become: built as values, or —
//! for the readers that keep large fields as JSON text — as an [`Update`] that
//! holds those fields as they were written and serializes to the same JSON.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::kind::tool_kind;

/// An `agent_message_chunk` / `agent_thought_chunk` update of `text` (what an
/// [`Update`] of either kind serializes to; the tests compare them).
#[cfg(test)]
pub(crate) fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// A `tool_call` update (as [`chunk`], for the tests).
#[cfg(test)]
pub(crate) fn tool_call(id: &str, name: &str, input: Value) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": name,
        "kind": tool_kind(name),
        "status": "pending",
        "rawInput": input,
    })
}

/// An `agent_message_chunk` of `text`.
pub(crate) fn message(text: &str) -> Value {
    to_value(Update::message_of(Text::Plain(text.to_string())))
}

/// A turn's end (`turn_complete`), for `stop_reason` (`end_turn`, `cancelled`).
pub(crate) fn turn_complete(stop_reason: &str) -> Value {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct TurnComplete<'a> {
        session_update: &'static str,
        stop_reason: &'a str,
    }
    to_value(TurnComplete {
        session_update: "turn_complete",
        stop_reason,
    })
}

/// A call announced (`tool_call`, pending) by its id, tool and input.
pub(crate) fn call(id: &Value, title: &Value, kind: &Value, input: &Value) -> Value {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Call<'a> {
        session_update: &'static str,
        tool_call_id: &'a Value,
        title: &'a Value,
        kind: &'a Value,
        status: &'static str,
        raw_input: &'a Value,
    }
    to_value(Call {
        session_update: "tool_call",
        tool_call_id: id,
        title,
        kind,
        status: "pending",
        raw_input: input,
    })
}

fn to_value(update: impl Serialize) -> Value {
    serde_json::to_value(update).expect("an update serializes")
}

/// A `tool_call_update` that settles a call.
pub(crate) fn tool_done(id: &str, failed: bool, output: Value) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": if failed { "failed" } else { "completed" },
        "rawOutput": output,
    })
}

/// A session update whose large fields are JSON text read from a transcript:
/// appended without being decoded and encoded again.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // ACP's names: `tool_call_update`
pub(crate) enum Update {
    AgentMessageChunk {
        content: TextContent,
    },
    AgentThoughtChunk {
        content: TextContent,
    },
    ToolCall {
        #[serde(rename = "toolCallId")]
        id: String,
        title: String,
        kind: &'static str,
        status: &'static str,
        #[serde(rename = "rawInput")]
        input: Box<RawValue>,
    },
    ToolCallUpdate {
        #[serde(rename = "toolCallId")]
        id: String,
        status: &'static str,
        #[serde(rename = "rawOutput")]
        output: Box<RawValue>,
    },
}

/// A text content block: its text a JSON string token as written, or text
/// joined from several parts.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TextContent {
    #[serde(rename = "type")]
    kind: &'static str,
    text: Text,
}

/// The text of a [`TextContent`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum Text {
    /// A JSON string token.
    Raw(Box<RawValue>),
    /// Plain text.
    Plain(String),
}

impl Text {
    /// Whether there is no text.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Text::Raw(raw) => raw.get() == "\"\"",
            Text::Plain(s) => s.is_empty(),
        }
    }

    /// The text itself.
    pub(crate) fn into_string(self) -> String {
        match self {
            Text::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or_default(),
            Text::Plain(s) => s,
        }
    }
}

impl PartialEq for Update {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_string(self).ok() == serde_json::to_string(other).ok()
    }
}

impl Update {
    /// [`chunk`] of an agent's message; `text` is a JSON string token.
    pub(crate) fn message(text: &RawValue) -> Update {
        Update::message_of(Text::Raw(text.to_owned()))
    }

    /// [`chunk`] of an agent's thought; `text` is a JSON string token.
    pub(crate) fn thought(text: &RawValue) -> Update {
        Update::thought_of(Text::Raw(text.to_owned()))
    }

    /// [`chunk`] of an agent's message.
    pub(crate) fn message_of(text: Text) -> Update {
        Update::AgentMessageChunk {
            content: TextContent { kind: "text", text },
        }
    }

    /// [`chunk`] of an agent's thought.
    pub(crate) fn thought_of(text: Text) -> Update {
        Update::AgentThoughtChunk {
            content: TextContent { kind: "text", text },
        }
    }

    /// [`tool_call`], with the input as JSON text.
    pub(crate) fn tool_call(id: &str, name: &str, input: &RawValue) -> Update {
        Update::ToolCall {
            id: id.to_string(),
            title: name.to_string(),
            kind: tool_kind(name),
            status: "pending",
            input: input.to_owned(),
        }
    }

    /// [`tool_done`], with the output as JSON text.
    pub(crate) fn tool_done(id: &str, failed: bool, output: &RawValue) -> Update {
        Update::ToolCallUpdate {
            id: id.to_string(),
            status: if failed { "failed" } else { "completed" },
            output: output.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_string()).unwrap()
    }

    #[test]
    fn updates_from_json_text_equal_those_built_as_values() {
        let same = |update: Update, value: Value| {
            let text = serde_json::to_string(&update).unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&text).unwrap(),
                value,
                "{text}"
            );
        };
        same(
            Update::message(&raw(r#""a\tb""#)),
            chunk("agent_message_chunk", "a\tb"),
        );
        same(
            Update::message_of(Text::Plain("a\tb".into())),
            chunk("agent_message_chunk", "a\tb"),
        );
        same(
            Update::thought(&raw(r#""hm""#)),
            chunk("agent_thought_chunk", "hm"),
        );
        same(
            Update::tool_call("t1", "Read", &raw(r#"{"file_path": "x"}"#)),
            tool_call("t1", "Read", json!({"file_path": "x"})),
        );
        same(
            Update::tool_done("t1", true, &raw(r#"[{"type": "text", "text": "no"}]"#)),
            tool_done("t1", true, json!([{"type": "text", "text": "no"}])),
        );
    }
}
