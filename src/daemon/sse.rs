//! Server-Sent Events over the durable log: where a subscriber starts, and the
//! frame each event becomes.

use cmdlog_engine::{Event, EventData, Mode, Registration};
use serde_json::json;

/// Where a subscriber's cursor starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resume {
    /// No `Last-Event-ID`: only events committed from now on.
    Live,
    /// Everything after this seq (`0` = the whole history).
    After(u64),
}

/// Longest `Last-Event-ID` accepted, in characters (a u64 has at most 20 digits).
const LAST_EVENT_ID_CHARS_MAX: usize = 20;

/// Parses `Last-Event-ID` (the header wins over `?lastEventId=`). Only a plain
/// decimal seq is accepted; anything else is refused with the reason.
pub(crate) fn resume_from(header: Option<&str>, query: Option<&str>) -> Result<Resume, String> {
    let Some(raw) = header.or(query) else {
        return Ok(Resume::Live);
    };
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Resume::Live);
    }
    if raw.len() > LAST_EVENT_ID_CHARS_MAX || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Last-Event-ID {:?} is not an event id: send the decimal seq of the last event you saw (0 for the whole history)",
            raw.chars().take(40).collect::<String>()
        ));
    }
    raw.parse::<u64>()
        .map(Resume::After)
        .map_err(|_| format!("Last-Event-ID {raw} is larger than any seq"))
}

/// The `data:` of an event frame: `{id, v: 1, type, data}` with the event's data as stored.
pub(crate) fn frame_data(event: &Event) -> serde_json::Value {
    let stored = event.to_json();
    json!({
        "id": event.seq,
        "v": 1,
        "type": event.data.type_name(),
        "session": event.session,
        "agent": event.agent,
        "at": event.at,
        "data": stored["data"],
    })
}

/// ACP `AvailableCommand` objects for a listing.
pub(crate) fn available_commands(list: &[Registration]) -> serde_json::Value {
    let commands: Vec<serde_json::Value> = list
        .iter()
        .map(|r| {
            let mut c = json!({"name": r.command.name, "description": r.command.description});
            let hint = r
                .command
                .input
                .as_ref()
                .map(|i| i.hint.clone())
                .filter(|h| !h.is_empty())
                .or_else(|| r.command.argument_hint.clone());
            if let Some(hint) = hint {
                c["input"] = json!({ "hint": hint });
            }
            c
        })
        .collect();
    serde_json::Value::Array(commands)
}

/// What a session's subscriber gets for `event`: its own events as they are,
/// registry changes as an `available_commands_update` for its agent and mode,
/// nothing for other sessions' events.
pub(crate) fn frame_for(
    event: &Event,
    session: &str,
    commands: impl FnOnce() -> Vec<Registration>,
    mode: Mode,
) -> Option<(String, serde_json::Value)> {
    match &event.data {
        EventData::Registered(_) | EventData::Unregistered(_) => {
            let data = json!({
                "id": event.seq,
                "v": 1,
                "type": "available_commands_update",
                "session": session,
                "data": {"mode": mode, "availableCommands": available_commands(&commands())},
            });
            Some(("available_commands_update".to_string(), data))
        }
        _ if event.session.as_deref() == Some(session) => {
            Some((event.data.type_name().to_string(), frame_data(event)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_id() {
        assert_eq!(resume_from(None, None), Ok(Resume::Live));
        assert_eq!(resume_from(Some("0"), None), Ok(Resume::After(0)));
        assert_eq!(
            resume_from(Some("42"), Some("7")),
            Ok(Resume::After(42)),
            "the header wins"
        );
        assert_eq!(resume_from(None, Some("7")), Ok(Resume::After(7)));
        assert_eq!(resume_from(Some(" "), None), Ok(Resume::Live));
        for bad in [
            "-1",
            "1.5",
            "0x10",
            "abc",
            "1e3",
            "+5",
            "99999999999999999999999",
            "18446744073709551616",
        ] {
            assert!(resume_from(Some(bad), None).is_err(), "{bad}");
        }
        assert_eq!(
            resume_from(Some("18446744073709551615"), None),
            Ok(Resume::After(u64::MAX))
        );
    }
}
