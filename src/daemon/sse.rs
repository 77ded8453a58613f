//! Server-Sent Events over the durable log: where a subscriber starts, and the
//! frame each event becomes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cmdlog_engine::{Event, EventData, Registration};
use cmdlog_store::{Log, ReadError, Seq};
use serde_json::json;

/// An event as every subscriber needs it: decoded once, its frame data serialised
/// once, shared by all subscribers of its session.
#[derive(Debug)]
pub(crate) struct SharedFrame {
    pub(crate) seq: Seq,
    pub(crate) session: Option<String>,
    /// `true` for `registry/*` events (each session renders its own command list).
    pub(crate) registry: bool,
    /// The SSE `event:` name.
    pub(crate) name: String,
    /// The SSE `data:` of a session event.
    pub(crate) data: String,
}

/// The most recent frames, shared by every subscriber: under fan-out, the first
/// subscriber to reach a seq decodes it and the others reuse it. Bounded: older
/// frames are read from the log again.
#[derive(Debug)]
pub(crate) struct FrameCache {
    frames: Mutex<BTreeMap<Seq, Arc<SharedFrame>>>,
    capacity: usize,
}

impl FrameCache {
    pub(crate) fn new(capacity: usize) -> Self {
        FrameCache {
            frames: Mutex::new(BTreeMap::new()),
            capacity,
        }
    }

    /// The frames of every record in `from..=to`, in seq order.
    pub(crate) fn window(
        &self,
        log: &Log,
        from: Seq,
        to: Seq,
    ) -> Result<Vec<Arc<SharedFrame>>, ReadError> {
        {
            let frames = self.frames.lock().unwrap_or_else(|p| p.into_inner());
            let hit: Vec<Arc<SharedFrame>> = frames
                .range(from..=to)
                .map(|(_, f)| Arc::clone(f))
                .collect();
            if hit.len() as u64 == to + 1 - from {
                return Ok(hit);
            }
        }
        let built: Vec<Arc<SharedFrame>> = log
            .range(from, to)?
            .into_iter()
            .filter_map(|r| Event::decode(r.seq, &r.bytes).ok())
            .map(|e| {
                Arc::new(SharedFrame {
                    seq: e.seq,
                    session: e.session.clone(),
                    registry: matches!(
                        e.data,
                        EventData::Registered(_) | EventData::Unregistered(_)
                    ),
                    name: e.data.type_name().to_string(),
                    data: frame_data(&e).to_string(),
                })
            })
            .collect();
        let mut frames = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        for f in &built {
            frames.insert(f.seq, Arc::clone(f));
        }
        while frames.len() > self.capacity {
            frames.pop_first();
        }
        Ok(built)
    }
}

pub(crate) use cmdlog_engine::{Resume, parse_last_event_id as resume_from};

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
    serde_json::Value::Array(
        list.iter()
            .map(|r| r.command.acp_available_command())
            .collect(),
    )
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

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn last_event_id_never_panics_and_accepts_only_decimals(header in "\\PC{0,40}", query in "\\PC{0,40}") {
            let parsed = resume_from(Some(&header), Some(&query));
            let trimmed = header.trim();
            match parsed {
                Ok(Resume::After(n)) => prop_assert_eq!(trimmed.parse::<u64>().ok(), Some(n)),
                Ok(Resume::Live) => prop_assert!(trimmed.is_empty()),
                Err(_) => prop_assert!(trimmed.parse::<u64>().is_err() || !trimmed.bytes().all(|b| b.is_ascii_digit())),
            }
        }

        #[test]
        fn any_decimal_seq_round_trips(n in any::<u64>()) {
            prop_assert_eq!(resume_from(Some(&n.to_string()), None), Ok(Resume::After(n)));
            prop_assert_eq!(resume_from(None, Some(&n.to_string())), Ok(Resume::After(n)));
        }
    }
}
