//! What cmdlog checks of the Agent Client Protocol (ACP) payloads it is given:
//! the kinds of session update, and permission options and decisions.
//! The ACP schema is at agentclientprotocol.com (`schema.json`, `$defs/SessionUpdate`,
//! `$defs/RequestPermissionOutcome`).

use serde_json::Value;

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
}
