//! C2SP signed notes (`c2sp.org/signed-note`) with Ed25519 keys, and the
//! timestamped cosignatures of witnesses (`c2sp.org/tlog-cosignature`,
//! `cosignature/v1`).
//!
//! A note is a text of lines ending in `\n`, a blank line, then one line per
//! signature: `— <key name> <base64(key id ‖ signature)>`. A key id is the first
//! four bytes of `SHA-256(name ‖ "\n" ‖ type ‖ public key)`, type 0x01 for a
//! signer's Ed25519 key and 0x04 for a witness's cosigning key. A verifier key is
//! written `<name>+<key id, 8 hex digits>+<base64(type ‖ public key)>`.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::limits::{NOTE_BYTES_MAX, NOTE_SIGNATURES_MAX};

/// Why a note, a key or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// The note is not in the signed-note format.
    #[error("not a signed note: {0}")]
    Malformed(String),
    /// A key name is empty or holds a space or a `+`.
    #[error("{0:?} cannot name a key: a key name is non-empty, with no spaces and no '+'")]
    BadKeyName(String),
    /// A verifier key string could not be read.
    #[error("not a verifier key (<name>+<8 hex digits>+<base64 key>): {0}")]
    BadVerifierKey(String),
    /// A private key could not be read.
    #[error("not a note signing key (PRIVATE+KEY+<name>+<8 hex digits>+<base64 key>): {0}")]
    BadSignerKey(String),
    /// A signature by a known key does not verify: the note was changed or forged.
    #[error(
        "the signature of {name} does not verify: the note was changed after it was signed, or forged"
    )]
    InvalidSignature {
        /// The key's name.
        name: String,
    },
    /// No signature by any of the given keys.
    #[error("no signature by {wanted}")]
    Unsigned {
        /// The keys looked for.
        wanted: String,
    },
}

/// What a key signs: the note itself, or a checkpoint it cosigns as a witness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A signed-note Ed25519 key (type 0x01): the log's own.
    Ed25519,
    /// A `cosignature/v1` Ed25519 key (type 0x04): a witness's.
    Cosignature,
}

impl KeyKind {
    fn type_byte(self) -> u8 {
        match self {
            KeyKind::Ed25519 => 0x01,
            KeyKind::Cosignature => 0x04,
        }
    }
}

fn check_name(name: &str) -> Result<(), NoteError> {
    if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
        return Err(NoteError::BadKeyName(name.to_string()));
    }
    Ok(())
}

/// `SHA-256(name ‖ "\n" ‖ type ‖ key)[..4]` as a big-endian u32.
fn key_id(name: &str, kind: KeyKind, key: &VerifyingKey) -> u32 {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update(b"\n");
    hasher.update([kind.type_byte()]);
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The message a `cosignature/v1` signs: the checkpoint's text under a time line.
fn cosigned_message(text: &str, timestamp: u64) -> Vec<u8> {
    format!("cosignature/v1\ntime {timestamp}\n{text}").into_bytes()
}

/// A private key that signs notes (or cosigns checkpoints) under a name.
#[derive(Clone)]
pub struct Signer {
    name: String,
    kind: KeyKind,
    key: SigningKey,
    id: u32,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key itself.
        write!(f, "Signer({})", self.verifier())
    }
}

impl Signer {
    /// The signer of `name` with the Ed25519 key made from `seed` (32 secret bytes).
    pub fn from_seed(name: &str, kind: KeyKind, seed: [u8; 32]) -> Result<Self, NoteError> {
        check_name(name)?;
        let key = SigningKey::from_bytes(&seed);
        let id = key_id(name, kind, &key.verifying_key());
        Ok(Signer {
            name: name.to_string(),
            kind,
            key,
            id,
        })
    }

    /// Reads a private key written by [`Signer::to_private_string`] (the form Go's
    /// `golang.org/x/mod/sumdb/note` writes: `PRIVATE+KEY+<name>+<id>+<base64>`).
    pub fn parse_private(text: &str) -> Result<Self, NoteError> {
        let bad = |why: &str| NoteError::BadSignerKey(why.to_string());
        let rest = text
            .trim_end_matches('\n')
            .strip_prefix("PRIVATE+KEY+")
            .ok_or_else(|| bad("it does not start with PRIVATE+KEY+"))?;
        let (name, id, key) = split_key(rest).ok_or_else(|| bad("it has not three parts"))?;
        let bytes = B64.decode(key).map_err(|_| bad("its key is not base64"))?;
        let kind = match bytes.first() {
            Some(0x01) => KeyKind::Ed25519,
            Some(0x04) => KeyKind::Cosignature,
            _ => {
                return Err(bad(
                    "its key type is not Ed25519 (0x01) or cosignature (0x04)",
                ));
            }
        };
        let seed: [u8; 32] = bytes[1..]
            .try_into()
            .map_err(|_| bad("its key is not 32 bytes"))?;
        let signer = Signer::from_seed(name, kind, seed).map_err(|e| bad(&e.to_string()))?;
        if format!("{:08x}", signer.id) != id {
            return Err(bad("its key id does not match its name and key"));
        }
        Ok(signer)
    }

    /// The private key as one line (no newline); a secret.
    pub fn to_private_string(&self) -> String {
        let mut bytes = vec![self.kind.type_byte()];
        bytes.extend_from_slice(self.key.as_bytes());
        format!(
            "PRIVATE+KEY+{}+{:08x}+{}",
            self.name,
            self.id,
            B64.encode(bytes)
        )
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public half, to check what this key signs.
    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier {
            name: self.name.clone(),
            kind: self.kind,
            key: self.key.verifying_key(),
            id: self.id,
        }
    }

    /// Signs `text` (lines ending in `\n`) and returns the signed note.
    pub fn sign(&self, text: &str) -> Result<String, NoteError> {
        check_text(text)?;
        Ok(format!("{text}\n{}", self.signature_line(text, 0)))
    }

    /// The signature line this key adds to a note whose text is `text`; for a
    /// cosigning key, a `cosignature/v1` made at `timestamp` (unix seconds).
    pub fn signature_line(&self, text: &str, timestamp: u64) -> String {
        let mut value = self.id.to_be_bytes().to_vec();
        match self.kind {
            KeyKind::Ed25519 => {
                value.extend_from_slice(&self.key.sign(text.as_bytes()).to_bytes());
            }
            KeyKind::Cosignature => {
                value.extend_from_slice(&timestamp.to_be_bytes());
                let message = cosigned_message(text, timestamp);
                value.extend_from_slice(&self.key.sign(&message).to_bytes());
            }
        }
        format!("— {} {}\n", self.name, B64.encode(value))
    }
}

/// Splits `<name>+<id>+<key>`.
fn split_key(text: &str) -> Option<(&str, &str, &str)> {
    let (name, rest) = text.split_once('+')?;
    let (id, key) = rest.split_once('+')?;
    Some((name, id, key))
}

/// The public key that checks a signer's notes: `<name>+<id>+<base64>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    name: String,
    kind: KeyKind,
    key: VerifyingKey,
    id: u32,
}

impl std::str::FromStr for NoteVerifier {
    type Err = NoteError;

    fn from_str(text: &str) -> Result<Self, NoteError> {
        NoteVerifier::parse(text)
    }
}

impl NoteVerifier {
    /// Reads a verifier key string.
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let bad = |why: &str| NoteError::BadVerifierKey(format!("{why} in {text:?}"));
        let (name, id, key) = split_key(text.trim()).ok_or_else(|| bad("three parts missing"))?;
        check_name(name).map_err(|_| bad("a bad key name"))?;
        if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("a key id that is not 8 hex digits"));
        }
        let bytes = B64
            .decode(key)
            .map_err(|_| bad("a key that is not base64"))?;
        let kind = match bytes.first() {
            Some(0x01) => KeyKind::Ed25519,
            Some(0x04) => KeyKind::Cosignature,
            _ => {
                return Err(bad(
                    "a key type other than Ed25519 (0x01) or cosignature (0x04)",
                ));
            }
        };
        let public: [u8; 32] = bytes[1..]
            .try_into()
            .map_err(|_| bad("a key that is not 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&public).map_err(|_| bad("an invalid Ed25519 key"))?;
        let verifier = NoteVerifier {
            name: name.to_string(),
            kind,
            id: key_id(name, kind, &key),
            key,
        };
        if format!("{:08x}", verifier.id) != id.to_ascii_lowercase() {
            return Err(bad("a key id that does not match its name and key"));
        }
        Ok(verifier)
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it checks notes or cosignatures.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// Its key id: the first four bytes of `SHA-256(name ‖ "\n" ‖ type ‖ key)`.
    pub fn key_id(&self) -> u32 {
        self.id
    }

    /// Checks one signature by this key over `text`: `Some(timestamp)` (0 for a
    /// plain note signature) when it holds.
    fn check(&self, text: &str, value: &[u8]) -> Option<u64> {
        match self.kind {
            KeyKind::Ed25519 => {
                let signature = Signature::from_slice(value.get(4..)?).ok()?;
                self.key
                    .verify(text.as_bytes(), &signature)
                    .ok()
                    .map(|()| 0)
            }
            KeyKind::Cosignature => {
                let timestamp = u64::from_be_bytes(value.get(4..12)?.try_into().ok()?);
                let signature = Signature::from_slice(value.get(12..)?).ok()?;
                let message = cosigned_message(text, timestamp);
                self.key
                    .verify(&message, &signature)
                    .ok()
                    .map(|()| timestamp)
            }
        }
    }
}

impl fmt::Display for NoteVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bytes = vec![self.kind.type_byte()];
        bytes.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.id, B64.encode(bytes))
    }
}

/// One signature line of a note, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name it gives.
    pub name: String,
    /// The key id it gives.
    pub id: u32,
    /// The decoded value: the key id, then the signature (and a cosignature's time).
    pub value: Vec<u8>,
}

/// A signed note as read: its text and its signature lines, none checked yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    text: String,
    signatures: Vec<NoteSignature>,
}

fn check_text(text: &str) -> Result<(), NoteError> {
    if !text.ends_with('\n') {
        return Err(NoteError::Malformed(
            "its text does not end with a newline".into(),
        ));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(NoteError::Malformed(
            "its text holds a control character".into(),
        ));
    }
    Ok(())
}

impl Note {
    /// Reads a signed note (its signatures are checked by [`Note::verify`]).
    pub fn parse(note: &str) -> Result<Self, NoteError> {
        let malformed = |why: &str| NoteError::Malformed(why.to_string());
        if note.len() > NOTE_BYTES_MAX {
            return Err(malformed("it is longer than 64 KiB"));
        }
        let split = note
            .rfind("\n\n")
            .ok_or_else(|| malformed("no blank line before its signatures"))?;
        let (text, lines) = (&note[..=split], &note[split + 2..]);
        check_text(text)?;
        if lines.is_empty() || !lines.ends_with('\n') {
            return Err(malformed("its signature lines do not end with a newline"));
        }
        let mut signatures = Vec::new();
        for line in lines.lines() {
            let rest = line
                .strip_prefix("— ")
                .ok_or_else(|| malformed("a signature line does not start with '— '"))?;
            let (name, value) = rest
                .split_once(' ')
                .ok_or_else(|| malformed("a signature line has no signature"))?;
            check_name(name)?;
            let value = B64
                .decode(value)
                .map_err(|_| malformed("a signature is not base64"))?;
            if value.len() < 5 {
                return Err(malformed("a signature is too short"));
            }
            let id = u32::from_be_bytes([value[0], value[1], value[2], value[3]]);
            if signatures.len() == NOTE_SIGNATURES_MAX {
                return Err(malformed("it has more than 100 signatures"));
            }
            signatures.push(NoteSignature {
                name: name.to_string(),
                id,
                value,
            });
        }
        Ok(Note {
            text: text.to_string(),
            signatures,
        })
    }

    /// The signed text, with its last newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its signature lines.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Checks the signatures made by `verifiers`: every line that names one of
    /// them (name and key id) must hold, and at least one must be there. Lines of
    /// other keys are ignored. Returns, per verifier found, its name and its
    /// timestamp (0 for a note signature).
    pub fn verify(&self, verifiers: &[NoteVerifier]) -> Result<Vec<(String, u64)>, NoteError> {
        let mut found = Vec::new();
        for signature in &self.signatures {
            let Some(verifier) = verifiers
                .iter()
                .find(|v| v.name == signature.name && v.id == signature.id)
            else {
                continue;
            };
            match verifier.check(&self.text, &signature.value) {
                Some(timestamp) => found.push((verifier.name.clone(), timestamp)),
                None => {
                    return Err(NoteError::InvalidSignature {
                        name: verifier.name.clone(),
                    });
                }
            }
        }
        if found.is_empty() {
            let wanted = verifiers
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(NoteError::Unsigned { wanted });
        }
        Ok(found)
    }

    /// The note with `line` (a signature line ending in `\n`) added.
    pub fn with_signature_line(note: &str, line: &str) -> String {
        format!("{note}{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_note_spec_example_verifies() {
        // The example key and note of c2sp.org/signed-note.
        let vkey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
        let verifier = NoteVerifier::parse(vkey).unwrap();
        assert_eq!(verifier.to_string(), vkey);
        let note = "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
        let parsed = Note::parse(note).unwrap();
        assert_eq!(
            parsed.verify(std::slice::from_ref(&verifier)).unwrap(),
            vec![("example.com/foo".to_string(), 0)]
        );
        let changed = note.replace("example message", "exemplary message");
        assert!(matches!(
            Note::parse(&changed).unwrap().verify(&[verifier]),
            Err(NoteError::InvalidSignature { .. })
        ));
    }

    #[test]
    fn signing_round_trips_and_other_keys_are_ignored() {
        let signer = Signer::from_seed("cmdlog.invalid/log/1", KeyKind::Ed25519, [7; 32]).unwrap();
        let other = Signer::from_seed("someone.else", KeyKind::Ed25519, [8; 32]).unwrap();
        let note = signer.sign("a\nb\n").unwrap();
        let with_other = Note::with_signature_line(&note, &other.signature_line("a\nb\n", 0));
        let parsed = Note::parse(&with_other).unwrap();
        assert_eq!(parsed.text(), "a\nb\n");
        assert_eq!(parsed.verify(&[signer.verifier()]).unwrap().len(), 1);
        assert!(matches!(
            Note::parse(&note).unwrap().verify(&[other.verifier()]),
            Err(NoteError::Unsigned { .. })
        ));
        let again = Signer::parse_private(&signer.to_private_string()).unwrap();
        assert_eq!(again.verifier(), signer.verifier());
        assert_eq!(
            NoteVerifier::parse(&signer.verifier().to_string()).unwrap(),
            signer.verifier()
        );
    }

    #[test]
    fn the_cosignature_spec_example_reads_as_a_log_signature_and_a_timestamped_cosignature() {
        // The example checkpoint of c2sp.org/tlog-cosignature (its keys are not
        // published: the layout is what can be checked).
        let note = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n\
                    — example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n\
                    — witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n";
        let parsed = Note::parse(note).unwrap();
        let checkpoint = crate::Checkpoint::parse(parsed.text()).unwrap();
        assert_eq!(
            (checkpoint.origin.as_str(), checkpoint.size),
            ("example.com/behind-the-sofa", 20852163)
        );
        let [log, witness] = parsed.signatures() else {
            panic!("two signature lines")
        };
        assert_eq!(
            (log.name.as_str(), log.value.len()),
            ("example.com/behind-the-sofa", 68)
        );
        assert_eq!(witness.name, "witness.example.com/w1");
        assert_eq!(witness.id, 0x8d66cf3f);
        assert_eq!(
            witness.value.len(),
            4 + 8 + 64,
            "key id, timestamp, signature"
        );
        let timestamp = u64::from_be_bytes(witness.value[4..12].try_into().unwrap());
        assert_eq!(
            timestamp, 1679315147,
            "the time the spec's signed message shows"
        );
    }

    #[test]
    fn cosignatures_carry_their_time_and_bind_it() {
        let witness = Signer::from_seed("witness.example", KeyKind::Cosignature, [9; 32]).unwrap();
        let text = "origin\n3\nAAAA\n";
        let line = witness.signature_line(text, 1_700_000_000);
        let note = Note::parse(&format!("{text}\n{line}")).unwrap();
        assert_eq!(
            note.verify(&[witness.verifier()]).unwrap(),
            vec![("witness.example".to_string(), 1_700_000_000)]
        );
        // The same key as a plain note key has another key id: ignored.
        let plain = Signer::from_seed("witness.example", KeyKind::Ed25519, [9; 32]).unwrap();
        assert!(matches!(
            note.verify(&[plain.verifier()]),
            Err(NoteError::Unsigned { .. })
        ));
    }

    #[test]
    fn malformed_notes_and_keys_are_refused() {
        for bad in [
            "no blank line\n— a AAAAAAA=\n",
            "text\n\nnot a signature\n",
            "text\n\n",
            "t\r\n\n— a AAAAAAAA\n",
        ] {
            assert!(Note::parse(bad).is_err(), "{bad:?}");
        }
        for bad in [
            "a+b",
            "a+0000000g+AQ==",
            "a b+00000000+AQ==",
            "a+00000000+AQ==",
        ] {
            assert!(NoteVerifier::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Signer::from_seed("has space", KeyKind::Ed25519, [0; 32]).is_err());
        assert!(Signer::from_seed("has+plus", KeyKind::Ed25519, [0; 32]).is_err());
    }
}
