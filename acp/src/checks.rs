//! What cmdlog checks of the Agent Client Protocol (ACP) payloads it is given:
//! the kinds of session update, and permission options and decisions.
//! The ACP schema is at agentclientprotocol.com (`schema.json`, `$defs/SessionUpdate`,
//! `$defs/RequestPermissionOutcome`).

use serde_json::Value;

/// An ACP payload that lacks a field its schema requires, or has a value the
/// schema does not allow; the text names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidPayload(String);

impl From<String> for InvalidPayload {
    fn from(text: String) -> Self {
        InvalidPayload(text)
    }
}

impl From<&str> for InvalidPayload {
    fn from(text: &str) -> Self {
        InvalidPayload(text.to_string())
    }
}

/// The `sessionUpdate` kinds of ACP's `SessionUpdate` (schema v1, including the
/// three the npm schema 2.4 adds).
pub const SESSION_UPDATE_KINDS: [&str; 14] = [
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
];

/// Whether `kind` is an ACP `sessionUpdate` kind.
pub fn is_session_update_kind(kind: &str) -> bool {
    SESSION_UPDATE_KINDS.contains(&kind)
}

/// The option ids a permission request offers: ACP `PermissionOption` objects
/// (`optionId`) or plain strings.
pub fn option_ids(options: &Value) -> Vec<String> {
    options
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|o| match o {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(m) => m
                        .get("optionId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A vote on a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// One of the request's options.
    Selected(String),
    /// The prompt turn was cancelled: no option chosen.
    Cancelled,
}

/// Reads a decision: an option id, `{"optionId"}`, ACP's outcome
/// `{"outcome":"selected","optionId"}` / `{"outcome":"cancelled"}`, or the
/// `RequestPermissionResponse` `{"outcome": {…}}` around it. `None` when it is none
/// of these.
pub fn permission_decision(value: &Value) -> Option<PermissionDecision> {
    match value {
        Value::String(s) => Some(PermissionDecision::Selected(s.clone())),
        Value::Object(m) => {
            if let Some(inner @ Value::Object(_)) = m.get("outcome") {
                return permission_decision(inner);
            }
            match m.get("outcome").and_then(Value::as_str) {
                Some("cancelled") => Some(PermissionDecision::Cancelled),
                Some("selected") | None => m
                    .get("optionId")
                    .and_then(Value::as_str)
                    .map(|id| PermissionDecision::Selected(id.to_string())),
                Some(_) => None,
            }
        }
        _ => None,
    }
}

/// Checks the required fields of an ACP `ContentBlock` (`$defs/ContentBlock`).
pub fn check_content_block(block: &Value) -> Result<(), InvalidPayload> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .ok_or("a content block needs a type: text, image, audio, resource_link or resource")?;
    let needs: &[&str] = match kind {
        "text" => &["text"],
        "image" | "audio" => &["data", "mimeType"],
        "resource_link" => &["uri", "name"],
        "resource" => &["resource"],
        other => {
            return Err(format!(
                "unknown content block type {other:?}: use text, image, audio, resource_link or resource"
            ).into());
        }
    };
    for field in needs {
        let present = match *field {
            "resource" => block.get("resource").is_some_and(Value::is_object),
            f => block.get(f).is_some_and(Value::is_string),
        };
        if !present {
            return Err(format!("a {kind} content block needs {field}").into());
        }
    }
    Ok(())
}

/// The tool kinds of ACP's `ToolKind`.
const TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];
/// The statuses of ACP's `ToolCallStatus`.
const TOOL_STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "failed"];

/// Checks an ACP `ToolCallUpdate` (`toolCall` of a permission request, and the
/// `tool_call_update` session update): a `toolCallId`, and known kind and status.
pub fn check_tool_call_update(call: &Value) -> Result<(), InvalidPayload> {
    if !call.is_object() {
        return Err("a tool call is an object with a toolCallId".into());
    }
    if !call.get("toolCallId").is_some_and(Value::is_string) {
        return Err("a tool call needs a toolCallId string".into());
    }
    check_enum(call, "kind", &TOOL_KINDS)?;
    check_enum(call, "status", &TOOL_STATUSES)
}

fn check_enum(object: &Value, field: &str, allowed: &[&str]) -> Result<(), InvalidPayload> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        Some(other) => Err(format!("{field} {other} is not one of {}", allowed.join(", ")).into()),
    }
}

/// The kinds of ACP's `PermissionOptionKind`.
pub const PERMISSION_OPTION_KINDS: [&str; 4] =
    ["allow_once", "allow_always", "reject_once", "reject_always"];

/// Checks the options of a permission request: ACP `PermissionOption` objects
/// `{optionId, name, kind}`, at least one.
pub fn check_permission_options(options: &Value) -> Result<(), InvalidPayload> {
    let list = options
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or("options is a non-empty array of {optionId, name, kind}")?;
    for (i, option) in list.iter().enumerate() {
        for field in ["optionId", "name"] {
            if !option.get(field).is_some_and(Value::is_string) {
                return Err(format!("option {} needs a {field} string", i + 1).into());
            }
        }
        let kind = option.get("kind").and_then(Value::as_str).unwrap_or("");
        if !PERMISSION_OPTION_KINDS.contains(&kind) {
            return Err(format!(
                "option {} needs a kind: {}",
                i + 1,
                PERMISSION_OPTION_KINDS.join(", ")
            )
            .into());
        }
    }
    Ok(())
}

/// Checks the required fields of an ACP `SessionUpdate` (`$defs/SessionUpdate`),
/// by its `sessionUpdate` kind.
pub fn check_session_update(update: &Value) -> Result<(), InvalidPayload> {
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .ok_or("an update needs a sessionUpdate field")?;
    let field = |name: &str| update.get(name).filter(|v| !v.is_null());
    let need = |name: &str, ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(format!("a {kind} update needs {name}").into())
        }
    };
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            let content = field("content")
                .ok_or_else(|| InvalidPayload(format!("a {kind} update needs content")))?;
            check_content_block(content)
        }
        "tool_call" => {
            need("title", field("title").is_some_and(Value::is_string))?;
            check_tool_call_update(update)
        }
        "tool_call_update" => check_tool_call_update(update),
        "plan" => need("entries", field("entries").is_some_and(Value::is_array)),
        "available_commands_update" => {
            let list = field("availableCommands")
                .and_then(Value::as_array)
                .ok_or("an available_commands_update needs availableCommands")?;
            for c in list {
                if !c.get("name").is_some_and(Value::is_string)
                    || !c.get("description").is_some_and(Value::is_string)
                {
                    return Err("each available command needs a name and a description".into());
                }
            }
            Ok(())
        }
        "current_mode_update" => need(
            "currentModeId",
            field("currentModeId").is_some_and(Value::is_string),
        ),
        "config_option_update" => need(
            "configOptions",
            field("configOptions").is_some_and(Value::is_array),
        ),
        "usage_update" => need(
            "used and size",
            field("used").is_some_and(Value::is_u64) && field("size").is_some_and(Value::is_u64),
        ),
        "notice" => need("title", field("title").is_some_and(Value::is_string)),
        "compaction_update" => need(
            "compactionId and status",
            field("compactionId").is_some_and(Value::is_string)
                && field("status").is_some_and(Value::is_string),
        ),
        "compaction_summary_chunk" => {
            need(
                "compactionId",
                field("compactionId").is_some_and(Value::is_string),
            )?;
            check_content_block(field("content").ok_or("a compaction_summary_chunk needs content")?)
        }
        "session_info_update" => Ok(()),
        other => Err(format!(
            "unknown sessionUpdate {other:?}: use one of {}",
            SESSION_UPDATE_KINDS.join(", ")
        )
        .into()),
    }
}

/// The stop reasons of ACP's `StopReason`.
pub const STOP_REASONS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_in_every_documented_shape() {
        let selected = Some(PermissionDecision::Selected("allow".into()));
        assert_eq!(permission_decision(&json!("allow")), selected);
        assert_eq!(permission_decision(&json!({"optionId": "allow"})), selected);
        assert_eq!(
            permission_decision(&json!({"outcome": {"outcome": "selected", "optionId": "allow"}})),
            selected
        );
        assert_eq!(
            permission_decision(&json!({"outcome": "cancelled"})),
            Some(PermissionDecision::Cancelled)
        );
        assert_eq!(permission_decision(&json!({"outcome": "maybe"})), None);
        assert_eq!(permission_decision(&json!(3)), None);
        assert_eq!(
            option_ids(&json!([{"optionId": "a", "kind": "allow_once"}, "b", 3])),
            ["a", "b"]
        );
    }

    #[test]
    fn session_updates_need_their_schema_fields() {
        let ok = [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "kind": "read", "status": "pending"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
            json!({"sessionUpdate": "plan", "entries": []}),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "a", "description": "b"}]}),
            json!({"sessionUpdate": "session_info_update"}),
        ];
        for u in ok {
            assert_eq!(check_session_update(&u), Ok(()), "{u}");
        }
        let bad = [
            (json!({"content": {}}), "sessionUpdate"),
            (json!({"sessionUpdate": "agent_message_chunk"}), "content"),
            (
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}),
                "text",
            ),
            (
                json!({"sessionUpdate": "tool_call", "toolCallId": "t"}),
                "title",
            ),
            (
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "weird"}),
                "kind",
            ),
            (
                json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "a"}]}),
                "description",
            ),
            (json!({"sessionUpdate": "nonsense"}), "unknown"),
        ];
        for (u, says) in bad {
            let e = check_session_update(&u).unwrap_err().to_string();
            assert!(e.contains(says), "{u}: {e}");
        }
        assert!(
            check_permission_options(
                &json!([{"optionId": "a", "name": "A", "kind": "allow_once"}])
            )
            .is_ok()
        );
        assert!(check_permission_options(&json!(["allow"])).is_err());
        assert!(check_permission_options(&json!([])).is_err());
    }
}
