//! A hook payload as the agent sent it — any size, any bytes — made ready to map:
//! text that is not UTF-8 is read lossily and its raw bytes kept as blobs, strings
//! too large for a record are moved to blobs (a marker naming the blob stays in
//! their place), and each change is said by an `agent/event` note in the same
//! append. Nothing the agent sent is dropped.

use cmdlog_engine::event::AgentEvent;
use cmdlog_store::BlobHash;
use serde_json::{Value, json};

use crate::limits::{
    BLOB_PART_BYTES, PAYLOAD_BYTES_MAX, PAYLOAD_INLINE_BYTES_MAX, STRING_INLINE_BYTES_MAX,
};

/// A payload made ready: the JSON (or the text, when it is not JSON), the blobs
/// to store first, and the notes that say what was moved where.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The payload as JSON, large strings replaced by markers.
    pub(crate) json: Option<Value>,
    /// The payload as text when it is not JSON (a marker when it is large).
    pub(crate) text: String,
    /// Blob bodies to store before the append, in order.
    pub(crate) blobs: Vec<Vec<u8>>,
    /// `agent/event` notes: what was moved, or not kept, and why.
    pub(crate) notes: Vec<AgentEvent>,
}

/// The blob parts of `bytes` (each at most [`BLOB_PART_BYTES`]): their hashes, hex;
/// the bodies join `blobs`.
fn to_blobs(bytes: &[u8], blobs: &mut Vec<Vec<u8>>) -> Vec<String> {
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .chunks(BLOB_PART_BYTES)
        .map(|part| {
            blobs.push(part.to_vec());
            BlobHash::of(part).to_hex()
        })
        .collect()
}

/// The text left where a large string was: says how large and where it went.
fn marker(bytes: usize, hashes: &[String]) -> String {
    format!(
        "[cmdlog: {bytes} bytes stored as blob {}]",
        hashes.join(" + ")
    )
}

/// Moves every string over [`STRING_INLINE_BYTES_MAX`] to blobs; returns what was
/// moved, by JSON pointer.
fn move_large_strings(
    value: &mut Value,
    pointer: &mut String,
    limit: usize,
    blobs: &mut Vec<Vec<u8>>,
    moved: &mut serde_json::Map<String, Value>,
) {
    match value {
        Value::String(s) if s.len() > limit => {
            let hashes = to_blobs(s.as_bytes(), blobs);
            moved.insert(pointer.clone(), json!({"bytes": s.len(), "blobs": hashes}));
            *s = marker(s.len(), &hashes);
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                move_large_strings(item, pointer, limit, blobs, moved);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                move_large_strings(item, pointer, limit, blobs, moved);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Prepares `bytes` of `agent`'s payload; `redact` replaces secrets first (and
/// then keeps no raw bytes that would hold them).
pub(crate) fn prepare(
    agent: &str,
    bytes: &[u8],
    redact: impl FnOnce(&mut Value),
    redacting: bool,
) -> Prepared {
    let mut out = Prepared::default();
    let note = |event: &str, data: Value| AgentEvent {
        agent: agent.to_string(),
        event: event.to_string(),
        data,
        bookkeeping: false,
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(e) => {
            let lossy = String::from_utf8_lossy(bytes);
            let raw = if redacting {
                // Raw bytes would keep the secrets the redaction removes.
                json!({"bytes": bytes.len(), "firstInvalidByte": e.valid_up_to(), "raw": "not kept: --redact was given"})
            } else {
                let hashes = to_blobs(bytes, &mut out.blobs);
                json!({"bytes": bytes.len(), "firstInvalidByte": e.valid_up_to(), "rawBlobs": hashes})
            };
            out.notes.push(note("payload not UTF-8", raw));
            lossy
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(mut value) => {
            redact(&mut value);
            let mut moved = serde_json::Map::new();
            // Strings over the inline limit go; if many smaller ones still make the
            // payload too large for one record, the limit halves until it fits.
            let mut limit = STRING_INLINE_BYTES_MAX;
            loop {
                move_large_strings(
                    &mut value,
                    &mut String::new(),
                    limit,
                    &mut out.blobs,
                    &mut moved,
                );
                let size = serde_json::to_vec(&value).map_or(0, |v| v.len());
                if size <= PAYLOAD_INLINE_BYTES_MAX || limit <= 1024 {
                    break;
                }
                limit /= 2;
            }
            if !moved.is_empty() {
                out.notes
                    .push(note("payload strings in blobs", Value::Object(moved)));
            }
            out.json = Some(value);
        }
        Err(_) => {
            let mut raw = Value::String(text.into_owned());
            redact(&mut raw);
            let Value::String(raw) = raw else {
                unreachable!("a string redacts to a string")
            };
            if raw.len() > STRING_INLINE_BYTES_MAX {
                let hashes = to_blobs(raw.as_bytes(), &mut out.blobs);
                out.text = marker(raw.len(), &hashes);
            } else {
                out.text = raw;
            }
        }
    }
    out
}

/// Reads a payload to its end: its bytes, whole, up to [`PAYLOAD_BYTES_MAX`]; past
/// that, a small JSON payload (`hook_event_name` `cmdlog/payload-too-large`) with
/// the size and BLAKE3 hash of what was sent, so the record says what it could
/// not keep. Never stops early: the agent's pipe is read to its end.
pub fn read_payload(mut reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    (&mut reader)
        .take(PAYLOAD_BYTES_MAX as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() <= PAYLOAD_BYTES_MAX {
        return Ok(bytes);
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes);
    let mut total = bytes.len() as u64;
    drop(bytes);
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
    Ok(
        json!({"hook_event_name": "cmdlog/payload-too-large", "bytes": total,
        "blake3": hasher.finalize().to_hex().to_string(), "limit": PAYLOAD_BYTES_MAX})
        .to_string()
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_strings_and_raw_bytes_go_to_blobs_and_are_said() {
        let big = "x".repeat(STRING_INLINE_BYTES_MAX + 1);
        let payload = json!({"tool_response": {"output": big}, "small": "kept"}).to_string();
        let p = prepare("claude-code", payload.as_bytes(), |_| {}, false);
        let json = p.json.unwrap();
        assert_eq!(json["small"], "kept");
        let shown = json["tool_response"]["output"].as_str().unwrap();
        assert!(
            shown.starts_with("[cmdlog: 1048577 bytes stored as blob "),
            "{shown}"
        );
        assert_eq!(p.blobs.len(), 1);
        assert_eq!(p.blobs[0].len(), big.len());
        assert_eq!(p.notes[0].data["/tool_response/output"]["bytes"], 1_048_577);

        let mut bytes = br#"{"prompt": "caf"#.to_vec();
        bytes.push(0xe9); // Latin-1, not UTF-8
        bytes.extend_from_slice(br#""}"#);
        let p = prepare("qwen", &bytes, |_| {}, false);
        assert_eq!(p.json.unwrap()["prompt"], "caf\u{fffd}");
        assert_eq!(p.notes[0].event, "payload not UTF-8");
        assert_eq!(p.blobs, vec![bytes.clone()], "the raw bytes are kept");
        let p = prepare("qwen", &bytes, |_| {}, true);
        assert!(p.blobs.is_empty(), "no raw bytes when redacting");
    }
}
