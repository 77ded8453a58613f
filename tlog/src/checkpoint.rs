//! C2SP tlog checkpoints (`c2sp.org/tlog-checkpoint`): the text a log signs to
//! commit to its tree — the origin (the log's name), the tree size in decimal,
//! the root hash in base64, then optional extension lines.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::hash::Hash;
use crate::note::NoteError;

/// A checkpoint's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's name: `cmdlog.invalid/log/<log id>` for a cmdlog log.
    pub origin: String,
    /// How many leaves (records) the tree holds.
    pub size: u64,
    /// Its RFC 6962 root hash.
    pub root: Hash,
    /// Extension lines (cmdlog writes none).
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// The note text: one line each for the origin, the size and the root, then
    /// the extensions.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        for line in &self.extensions {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    /// Reads a checkpoint from a note's text.
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let malformed = |why: &str| NoteError::Malformed(format!("not a checkpoint: {why}"));
        let mut lines = text
            .strip_suffix('\n')
            .ok_or_else(|| malformed("its text does not end with a newline"))?
            .split('\n');
        let origin = lines.next().filter(|l| !l.is_empty());
        let origin = origin.ok_or_else(|| malformed("no origin line"))?;
        let size = lines.next().ok_or_else(|| malformed("no tree size line"))?;
        if size.is_empty()
            || !size.bytes().all(|b| b.is_ascii_digit())
            || (size.len() > 1 && size.starts_with('0'))
        {
            return Err(malformed("its tree size is not a decimal number"));
        }
        let size: u64 = size
            .parse()
            .map_err(|_| malformed("its tree size is too large"))?;
        let root = lines.next().ok_or_else(|| malformed("no root hash line"))?;
        let root: Hash = B64
            .decode(root)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| malformed("its root hash is not 32 bytes of base64"))?;
        let extensions: Vec<String> = lines.map(str::to_string).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(malformed("an empty extension line"));
        }
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
            extensions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_one() {
        let checkpoint = Checkpoint {
            origin: "cmdlog.invalid/log/abc".into(),
            size: 20852163,
            root: [3; 32],
            extensions: vec![],
        };
        let text = checkpoint.to_text();
        assert_eq!(
            text,
            "cmdlog.invalid/log/abc\n20852163\nAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n"
        );
        assert_eq!(Checkpoint::parse(&text).unwrap(), checkpoint);
        for bad in [
            "o\n01\nAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n",
            "o\n1\nAAAA\n",
            "o\n1\n",
            "\n1\nAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n",
            "o\n-1\nAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n",
        ] {
            assert!(Checkpoint::parse(bad).is_err(), "{bad:?}");
        }
    }
}
