//! A session's shown frames as the wire numbers them: the ids that count the
//! session's shown events and the turn each frame belongs to, read in seq
//! order — for the event stream (`events.rs`) and for the journal a reloaded
//! page gets whole from `POST /session/{id}/load`, so it renders the
//! conversation at once and resumes the stream after it.

use cmdlog_engine::Event;
use cmdlog_store::{Log, ReadError, Seq};

use crate::limits::{JOURNAL_BYTES_MAX, JOURNAL_EVENTS_MAX};
use crate::sse::SharedFrame;
use crate::wire::{self, Envelope, TurnMark, envelope};

/// Where the numbering stands: the id the next shown frame gets, and the
/// prompt whose turn is under way.
pub(crate) struct Numbering {
    pub(crate) next_id: u64,
    pub(crate) turn: Option<String>,
}

/// A shown frame, numbered: its id, kind and envelope.
pub(crate) struct Numbered {
    pub(crate) id: u64,
    pub(crate) kind: &'static str,
    pub(crate) envelope: String,
}

impl Numbering {
    /// Takes the session's next frame `f`; its envelope when it is shown.
    /// `record`: the log record to carry along (cmdlog's own clients).
    pub(crate) fn take(&mut self, f: &SharedFrame, record: Option<&str>) -> Option<Numbered> {
        if let Some(TurnMark::Opens(id)) = &f.turn {
            self.turn = Some(id.clone());
        }
        let numbered = f.wire.as_ref().map(|frame| {
            let (id, kind) = (self.next_id, frame.kind);
            self.next_id += 1;
            // A frame's own prompt (a turn's end, a cancel), else the turn under way.
            let prompt_id = frame
                .prompt_id
                .as_deref()
                .or_else(|| self.turn.as_deref().filter(|_| wire::in_turn(kind)));
            let about = Envelope {
                prompt_id,
                originator: frame.originator.as_deref(),
                source: Some((f.seq, f.type_name.as_str(), f.at)),
                record,
            };
            Numbered {
                id,
                kind,
                envelope: envelope(Some(id), kind, &frame.data, about),
            }
        });
        if f.turn == Some(TurnMark::Closes) {
            self.turn = None;
        }
        numbered
    }
}

/// A session's history as a reloaded page gets it whole.
pub(crate) struct Journal {
    /// Every shown frame's envelope, in order, numbered from 1.
    pub(crate) envelopes: Vec<String>,
    /// The last id (0 for none): the stream resumes after it.
    pub(crate) last_id: u64,
    /// Whether a turn is under way at its end: its end is still to come, on
    /// the stream.
    pub(crate) turn_open: bool,
}

/// Every shown frame of `session` up to `head`, numbered from 1. `None` when the session is too large to send
/// whole (more than [`JOURNAL_EVENTS_MAX`] events or [`JOURNAL_BYTES_MAX`]
/// bytes of envelopes): its client then reads it on the event stream.
pub(crate) fn journal(
    log: &Log,
    session: &str,
    head: Seq,
    runs: bool,
) -> Result<Option<Journal>, ReadError> {
    let seqs: Vec<Seq> = log
        .stream_seqs(session, 0)?
        .into_iter()
        .filter(|&s| s <= head)
        .collect();
    if seqs.len() > JOURNAL_EVENTS_MAX {
        return Ok(None);
    }
    let mut numbering = Numbering {
        next_id: 1,
        turn: None,
    };
    let (mut envelopes, mut bytes) = (Vec::new(), 0);
    for seq in seqs {
        let Some(record) = log.get(seq)? else {
            continue;
        };
        let Ok(event) = Event::decode(record.seq, &record.bytes) else {
            continue;
        };
        if let Some(n) = numbering.take(&SharedFrame::of(&event, runs), None) {
            bytes += n.envelope.len();
            if bytes > JOURNAL_BYTES_MAX {
                return Ok(None);
            }
            envelopes.push(n.envelope);
        }
    }
    Ok(Some(Journal {
        envelopes,
        last_id: numbering.next_id - 1,
        turn_open: numbering.turn.is_some(),
    }))
}
