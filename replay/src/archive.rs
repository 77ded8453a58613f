//! `export` and `import`: a log as JSON lines that `jq` can read and that import
//! back into an empty log with the same head hash.
//!
//! Format, one JSON object per line:
//! - an event: `{"seq":N,` followed by the stored record bytes after their opening
//!   brace — so the line is the event as `cmdlog log --json` shows it, and import
//!   recovers the record bytes exactly;
//! - a blob: `{"blob":"<hex>","size":N,"base64":"…"}` for every blob an exported
//!   event references (whole-log exports only);
//! - last, `{"export":{"version":1,"head_seq":N,"head_hash":"<hex>"}}`.

use std::io::{BufRead, Write};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use cmdlog_store::{AppendError, BlobError, BlobHash, Log, NewRecord, ReadError, Seq};

use crate::gc::{GcError, referenced_blobs};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportSummary {
    /// Events written.
    pub events: u64,
    /// Blobs written.
    pub blobs: u64,
    /// The head the export ends at.
    pub head_seq: Seq,
    /// Its hash.
    pub head_hash: String,
}

/// Export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading the log failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Finding or reading referenced blobs failed.
    #[error(transparent)]
    Blobs(#[from] GcError),
    /// A blob failed its re-hash.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// Writing the output failed.
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
}

#[derive(Serialize, Deserialize)]
struct BlobLine {
    blob: String,
    size: u64,
    base64: String,
}

#[derive(Serialize, Deserialize)]
struct Trailer {
    version: u32,
    head_seq: Seq,
    head_hash: String,
    /// Set when `--redact` changed events: the head hash cannot be reproduced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    redacted: bool,
}

/// Replaces every match of `patterns` in the string values of an event's `data`
/// (keys and structure are kept) and returns the event line.
fn redacted_line(seq: Seq, bytes: &[u8], patterns: &[regex::Regex]) -> Vec<u8> {
    fn walk(value: &mut serde_json::Value, patterns: &[regex::Regex]) {
        match value {
            serde_json::Value::String(text) => {
                for p in patterns {
                    if p.is_match(text) {
                        *text = p.replace_all(text, "[REDACTED]").into_owned();
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk(v, patterns)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| walk(v, patterns)),
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return event_line(seq, b"{}");
    };
    if let Some(data) = value.get_mut("data") {
        walk(data, patterns);
    }
    event_line(
        seq,
        &serde_json::to_vec(&value).expect("JSON values serialize"),
    )
}

#[derive(Serialize, Deserialize)]
struct TrailerLine {
    export: Trailer,
}

/// The export line of one stored record.
fn event_line(seq: Seq, bytes: &[u8]) -> Vec<u8> {
    let mut line = format!("{{\"seq\":{seq}").into_bytes();
    match bytes.get(1..) {
        Some(rest) if bytes.first() == Some(&b'{') && rest.first() != Some(&b'}') => {
            line.push(b',');
            line.extend_from_slice(rest);
        }
        Some(rest) if bytes.first() == Some(&b'{') => line.extend_from_slice(rest),
        // Not an object: keep it whole under "record" (import will refuse it, as
        // `cmdlog verify` would flag it).
        _ => {
            line.extend_from_slice(b",\"record\":");
            line.extend_from_slice(
                &serde_json::to_vec(&String::from_utf8_lossy(bytes)).expect("strings serialize"),
            );
            line.push(b'}');
        }
    }
    line
}

/// Writes the log (or one session's events) as JSON lines. With `redact` patterns,
/// every match in the events' string data becomes `[REDACTED]` and no blob is
/// written (blobs cannot be redacted and keep their address).
pub fn export(
    log: &Log,
    session: Option<&str>,
    redact: &[regex::Regex],
    out: &mut impl Write,
    mut progress: impl FnMut(Seq),
) -> Result<ExportSummary, ExportError> {
    let head = log.head();
    let mut events = 0u64;
    let mut write_error = None;
    let mut write = |seq: Seq, bytes: &[u8]| -> bool {
        let mut line = if redact.is_empty() {
            event_line(seq, bytes)
        } else {
            redacted_line(seq, bytes, redact)
        };
        line.push(b'\n');
        match out.write_all(&line) {
            Ok(()) => {
                events += 1;
                progress(seq);
                true
            }
            Err(e) => {
                write_error = Some(e);
                false
            }
        }
    };
    match session {
        Some(s) => {
            for r in log.stream(s, 0)? {
                if !write(r.seq, &r.bytes) {
                    break;
                }
            }
        }
        None => log.scan(1, head.seq, |r| write(r.seq, &r.bytes))?,
    }
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let mut blobs = 0u64;
    if session.is_none() && redact.is_empty() {
        for hash in referenced_blobs(log)? {
            let Some(bytes) = log.get_blob(&hash)? else {
                continue;
            };
            let line = BlobLine {
                blob: hash.to_hex(),
                size: bytes.len() as u64,
                base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
            };
            serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
            blobs += 1;
        }
    }
    let head_hash = BlobHash(head.hash).to_hex();
    let trailer = TrailerLine {
        export: Trailer {
            version: 1,
            head_seq: head.seq,
            head_hash: head_hash.clone(),
            redacted: !redact.is_empty(),
        },
    };
    serde_json::to_writer(&mut *out, &trailer).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(ExportSummary {
        events,
        blobs,
        head_seq: head.seq,
        head_hash,
    })
}

/// What an import wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportSummary {
    /// Events appended.
    pub events: u64,
    /// Blobs stored.
    pub blobs: u64,
    /// The head after import.
    pub head_seq: Seq,
    /// Its hash.
    pub head_hash: String,
    /// The head the export says it ended at, if it had a trailer.
    pub expected_head_hash: Option<String>,
}

impl ImportSummary {
    /// Whether the import reproduced the exported head hash.
    pub fn matches(&self) -> bool {
        self.expected_head_hash
            .as_deref()
            .is_none_or(|h| h == self.head_hash)
    }
}

/// Import failed. Events before the failing line may already be in the log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The target log is not empty.
    #[error("the target log already holds {events} events; import into a new log (--log NEW_PATH)")]
    NotEmpty {
        /// Its events.
        events: Seq,
    },
    /// A line is not in export form.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// Reading the input failed.
    #[error("cannot read the input: {0}")]
    Input(#[from] std::io::Error),
    /// Appending failed.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// Storing a blob failed.
    #[error(transparent)]
    Blob(#[from] BlobError),
}

#[derive(Deserialize)]
struct Probe {
    seq: Option<Seq>,
    session: Option<String>,
    blob: Option<String>,
    export: Option<serde_json::Value>,
}

/// Appends about this many records per atomic append.
const IMPORT_BATCH_RECORDS: usize = 1000;

/// Reads an export into `log`, which must be empty.
pub fn import(
    log: &Log,
    input: impl BufRead,
    mut progress: impl FnMut(Seq),
) -> Result<ImportSummary, ImportError> {
    if log.head().seq != 0 {
        return Err(ImportError::NotEmpty {
            events: log.head().seq,
        });
    }
    let mut batch: Vec<NewRecord> = Vec::new();
    let mut next_seq: Seq = 1;
    let mut blobs = 0u64;
    let mut expected_head_hash = None;
    let flush = |batch: &mut Vec<NewRecord>| -> Result<(), ImportError> {
        if !batch.is_empty() {
            log.append(std::mem::take(batch))?;
        }
        Ok(())
    };
    for (i, line) in input.lines().enumerate() {
        let n = i as u64 + 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| ImportError::Line { line: n, message };
        let probe: Probe =
            serde_json::from_str(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
        if let Some(seq) = probe.seq {
            if seq != next_seq {
                return Err(bad(format!(
                    "seq {seq} where seq {next_seq} was expected: an import needs a whole-log export, in order"
                )));
            }
            let prefix = format!("{{\"seq\":{seq}");
            let rest = line.strip_prefix(&prefix).ok_or_else(|| {
                bad("an event line must start with {\"seq\":N as cmdlog export writes it".into())
            })?;
            let record = match rest.strip_prefix(',') {
                Some(body) => format!("{{{body}"),
                None => format!("{{{rest}"),
            };
            batch.push(NewRecord {
                stream: probe.session,
                bytes: record.into_bytes(),
            });
            progress(seq);
            next_seq += 1;
            if batch.len() >= IMPORT_BATCH_RECORDS {
                flush(&mut batch)?;
            }
        } else if probe.blob.is_some() {
            let blob: BlobLine =
                serde_json::from_str(&line).map_err(|e| bad(format!("blob line: {e}")))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&blob.base64)
                .map_err(|e| bad(format!("blob {}: bad base64: {e}", blob.blob)))?;
            let hash = BlobHash::of(&bytes);
            if hash.to_hex() != blob.blob {
                return Err(bad(format!(
                    "blob {} holds bytes that hash to {hash}; the export is damaged",
                    blob.blob
                )));
            }
            log.put_blob(bytes)?;
            blobs += 1;
        } else if probe.export.is_some() {
            let trailer: TrailerLine =
                serde_json::from_str(&line).map_err(|e| bad(format!("trailer: {e}")))?;
            // A redacted export cannot reproduce the original head hash.
            expected_head_hash = (!trailer.export.redacted).then_some(trailer.export.head_hash);
        } else {
            return Err(bad(
                "neither an event (seq), a blob nor the export trailer".into()
            ));
        }
    }
    flush(&mut batch)?;
    let head = log.head();
    Ok(ImportSummary {
        events: head.seq,
        blobs,
        head_seq: head.seq,
        head_hash: BlobHash(head.hash).to_hex(),
        expected_head_hash,
    })
}
