//! Server-Sent Events over the durable log: where a subscriber starts, and the
//! frame each event becomes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cmdlog_engine::{Event, Registration};
use cmdlog_store::{Log, ReadError, Seq};

use crate::limits::LAST_EVENT_ID_CHARS_MAX;

/// An event as every subscriber needs it: decoded once, its wire frame and its
/// record serialised once, shared by all subscribers of its session.
#[derive(Debug)]
pub(crate) struct SharedFrame {
    pub seq: Seq,
    pub at: u64,
    pub session: Option<String>,
    /// The event's log type.
    pub type_name: String,
    /// The wire frame, for a shown session event.
    pub wire: Option<WireFrame>,
    /// How it moves its session's current turn (see [`crate::wire::turn_mark`]).
    pub turn: Option<crate::wire::TurnMark>,
    /// The log record as JSON, for cmdlog's own clients.
    pub record: String,
}

/// The most recent frames, shared by every subscriber: under fan-out, the first
/// subscriber to reach a seq decodes it and the others reuse it. Bounded in frames
/// and in bytes: older frames are read from the log again.
#[derive(Debug)]
pub(crate) struct FrameCache {
    frames: Mutex<Cached>,
    frames_max: usize,
    bytes_max: usize,
    /// Whether command runs are shown (see [`crate::wire::project`]).
    pub(crate) runs: bool,
}

#[derive(Debug, Default)]
struct Cached {
    frames: BTreeMap<Seq, Arc<SharedFrame>>,
    bytes: usize,
}

/// A shown event's frame on the wire: its type, serialised `data`, and for the
/// envelope the prompt it belongs to and the client it answers.
#[derive(Debug)]
pub(crate) struct WireFrame {
    pub kind: &'static str,
    pub data: String,
    pub prompt_id: Option<String>,
    /// `originatorClientId`: the client whose request it echoes.
    pub originator: Option<String>,
}

impl SharedFrame {
    fn bytes(&self) -> usize {
        self.record.len()
            + self.type_name.len()
            + self.wire.as_ref().map_or(0, |w| w.data.len())
            + 96
    }

    /// Builds the frame of a decoded event; `runs`: whether command runs are
    /// shown (see [`crate::wire::project`]).
    pub(crate) fn of(e: &Event, runs: bool) -> SharedFrame {
        SharedFrame {
            seq: e.seq,
            at: e.at,
            session: e.session.clone(),
            type_name: e.data.type_name().to_string(),
            wire: e
                .session
                .as_deref()
                .and_then(|s| crate::wire::project(e, s, runs))
                .map(|(kind, data)| WireFrame {
                    kind,
                    prompt_id: crate::wire::frame_prompt_id(e, kind, &data),
                    originator: crate::wire::originator(e),
                    data: data.to_string(),
                }),
            turn: crate::wire::turn_mark(e),
            record: e.to_json().to_string(),
        }
    }
}

impl FrameCache {
    pub(crate) fn new(frames_max: usize, bytes_max: usize, runs: bool) -> Self {
        FrameCache {
            frames: Mutex::new(Cached::default()),
            frames_max,
            bytes_max,
            runs,
        }
    }

    /// The frames of the records from `from` on, in seq order, up to `to` or until
    /// they hold `bytes_max` bytes (at least one frame): what one subscriber holds
    /// at a time, whatever the size of the events. Also the last seq read.
    pub(crate) fn window(
        &self,
        log: &Log,
        from: Seq,
        to: Seq,
        bytes_max: usize,
    ) -> Result<(Vec<Arc<SharedFrame>>, Seq), ReadError> {
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut next = from;
        {
            let cached = self.frames.lock().unwrap_or_else(|p| p.into_inner());
            for (&seq, frame) in cached.frames.range(from..=to) {
                if seq != next || (bytes >= bytes_max && !out.is_empty()) {
                    break;
                }
                bytes += frame.bytes();
                out.push(Arc::clone(frame));
                next = seq + 1;
            }
        }
        if next > to || bytes >= bytes_max {
            return Ok((out, next - 1));
        }
        let mut built = Vec::new();
        let mut through = next - 1;
        log.scan(next, to, |r| {
            through = r.seq;
            if let Ok(e) = Event::decode(r.seq, &r.bytes) {
                let frame = Arc::new(SharedFrame::of(&e, self.runs));
                bytes += frame.bytes();
                built.push(frame);
            }
            bytes < bytes_max
        })?;
        let mut cached = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        for f in &built {
            if cached.frames.insert(f.seq, Arc::clone(f)).is_none() {
                cached.bytes += f.bytes();
            }
        }
        while cached.frames.len() > self.frames_max || cached.bytes > self.bytes_max {
            match cached.frames.pop_first() {
                Some((_, f)) => cached.bytes -= f.bytes(),
                None => break,
            }
        }
        out.extend(built);
        Ok((out, through))
    }
}

/// Where an event stream resumes, from a `Last-Event-ID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// No id: only events committed from now on.
    Live,
    /// Everything after this event id (`0` = the whole history).
    After(u64),
}

/// A `Last-Event-ID` that is not an event id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidLastEventId {
    /// Not a plain decimal number (shown cut to 40 characters).
    #[error(
        "Last-Event-ID {0:?} is not an event id: send the decimal seq of the last event you saw (0 for the whole history)"
    )]
    NotANumber(String),
    /// Larger than any id.
    #[error("Last-Event-ID {0} is larger than any seq")]
    TooLarge(String),
}

/// Parses `Last-Event-ID` (the header wins over the `lastEventId` query value).
/// Only a plain decimal id is accepted; anything else is refused with the reason.
pub fn parse_last_event_id(
    header: Option<&str>,
    query: Option<&str>,
) -> Result<Resume, InvalidLastEventId> {
    let Some(raw) = header.or(query) else {
        return Ok(Resume::Live);
    };
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Resume::Live);
    }
    if raw.len() > LAST_EVENT_ID_CHARS_MAX || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InvalidLastEventId::NotANumber(
            raw.chars().take(40).collect(),
        ));
    }
    raw.parse::<u64>()
        .map(Resume::After)
        .map_err(|_| InvalidLastEventId::TooLarge(raw.to_string()))
}

pub(crate) use parse_last_event_id as resume_from;

/// ACP `AvailableCommand` objects for a listing; `input` is `null` for a command
/// without an argument hint, as `qwen serve` lists them.
pub(crate) fn available_commands(list: &[Registration]) -> serde_json::Value {
    serde_json::Value::Array(
        list.iter()
            .map(|r| {
                let mut c = r.command.acp_available_command();
                if c.get("input").is_none() {
                    c["input"] = serde_json::Value::Null;
                }
                c
            })
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
