//! The body of a C2SP `tlog-witness` `add-checkpoint` request: `old <size>`, the
//! consistency proof from that size (one base64 hash a line), a blank line, the
//! signed checkpoint. cmdlog prints it for `prove --since`, and a hub keeps each
//! log's latest checkpoint in this form, so a witness finds the proof beside it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::hash::Hash;
use crate::note::NoteError;

use crate::limits::PROOF_LINES_MAX;

/// A checkpoint with the consistency proof from an older size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size the proof starts from (0: none).
    pub old_size: u64,
    /// The RFC 9162 consistency proof from `old_size` to the checkpoint's size.
    pub proof: Vec<Hash>,
    /// The signed checkpoint note, whole.
    pub note: String,
}

impl AddCheckpoint {
    /// The request body.
    pub fn to_text(&self) -> String {
        let mut text = format!("old {}\n", self.old_size);
        for hash in &self.proof {
            text.push_str(&B64.encode(hash));
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.note);
        text
    }

    /// Reads a request body (the note is checked by whoever verifies it).
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let malformed =
            |why: &str| NoteError::Malformed(format!("not an add-checkpoint body: {why}"));
        let (head, note) = text
            .split_once("\n\n")
            .ok_or_else(|| malformed("no blank line before the checkpoint"))?;
        let mut lines = head.split('\n');
        let old = lines
            .next()
            .and_then(|l| l.strip_prefix("old "))
            .ok_or_else(|| malformed("no `old` line"))?;
        if old.is_empty()
            || !old.bytes().all(|b| b.is_ascii_digit())
            || (old.len() > 1 && old.starts_with('0'))
        {
            return Err(malformed("its old size is not a decimal number"));
        }
        let old_size = old
            .parse()
            .map_err(|_| malformed("its old size is too large"))?;
        let mut proof = Vec::new();
        for line in lines {
            let hash: Hash = B64
                .decode(line)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| malformed("a proof line is not 32 bytes of base64"))?;
            if proof.len() == PROOF_LINES_MAX {
                return Err(malformed("more than 63 proof lines"));
            }
            proof.push(hash);
        }
        Ok(AddCheckpoint {
            old_size,
            proof,
            note: note.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_one() {
        let request = AddCheckpoint {
            old_size: 3,
            proof: vec![[1; 32], [2; 32]],
            note: "o\n4\nAAAA\n\n— o AAAA\n".into(),
        };
        assert_eq!(AddCheckpoint::parse(&request.to_text()).unwrap(), request);
        let empty = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            note: "o\n0\nAAAA\n\n— o AAAA\n".into(),
        };
        assert_eq!(empty.to_text(), "old 0\n\no\n0\nAAAA\n\n— o AAAA\n");
        assert_eq!(AddCheckpoint::parse(&empty.to_text()).unwrap(), empty);
        for bad in [
            "old 1\nAAAA\n\nnote",
            "new 1\n\nnote",
            "old 01\n\nnote",
            "old 1",
        ] {
            assert!(AddCheckpoint::parse(bad).is_err(), "{bad:?}");
        }
    }
}
