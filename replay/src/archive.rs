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

/// Replaces every match of `patterns` in an event: in every string, object key and
/// number (matched as written) of its `data`, and in its `session` and `agent` ids.
/// A number or id that matches becomes the string with its matches replaced.
fn redacted_line(seq: Seq, bytes: &[u8], patterns: &[regex::Regex]) -> Vec<u8> {
    fn redact(text: &str, patterns: &[regex::Regex]) -> Option<String> {
        let mut out = None::<String>;
        for p in patterns {
            let current = out.as_deref().unwrap_or(text);
            if p.is_match(current) {
                out = Some(p.replace_all(current, REDACTED).into_owned());
            }
        }
        out
    }
    fn walk(value: &mut serde_json::Value, patterns: &[regex::Regex]) {
        match value {
            serde_json::Value::String(text) => {
                if let Some(r) = redact(text, patterns) {
                    *text = r;
                }
            }
            serde_json::Value::Number(n) => {
                if let Some(r) = redact(&n.to_string(), patterns) {
                    *value = serde_json::Value::String(r);
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk(v, patterns)),
            serde_json::Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut v) in entries {
                    walk(&mut v, patterns);
                    let key = redact(&key, patterns).unwrap_or(key);
                    // Two keys redacted alike keep both values.
                    let mut key = key;
                    while map.contains_key(&key) {
                        key.push('_');
                    }
                    map.insert(key, v);
                }
            }
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return event_line(seq, b"{}");
    };
    if let Some(data) = value.get_mut("data") {
        walk(data, patterns);
    }
    for field in ["session", "agent"] {
        if let Some(id) = value.get_mut(field) {
            walk(id, patterns);
        }
    }
    event_line(
        seq,
        &serde_json::to_vec(&value).expect("JSON values serialize"),
    )
}

/// What a redaction leaves in place of a match.
const REDACTED: &str = "[REDACTED]";

#[derive(Serialize, Deserialize)]
struct TrailerLine {
    export: Trailer,
}

/// The export line of one stored record: for a JSON object (every event), its
/// Merkle leaf input byte for byte (`{"seq":N,…}`, [`cmdlog_store::leaf_input`]),
/// so an auditor can hash an export's lines into the tree a checkpoint signs.
fn event_line(seq: Seq, bytes: &[u8]) -> Vec<u8> {
    if bytes.first() == Some(&b'{') {
        return cmdlog_store::leaf_input(seq, bytes);
    }
    // Not an object: kept whole under "record" (import will refuse it, as
    // `cmdlog verify` would flag it).
    let mut line = format!("{{\"seq\":{seq}").into_bytes();
    line.extend_from_slice(b",\"record\":");
    line.extend_from_slice(
        &serde_json::to_vec(&String::from_utf8_lossy(bytes)).expect("strings serialize"),
    );
    line.push(b'}');
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
    let head_hash = head.hash.to_hex();
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

/// Import failed. [`import_file`] leaves no target behind; [`import`] may have
/// appended the events before the failing line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The input ended without the export trailer: cut, or not a cmdlog export.
    #[error(
        "the export has no trailer line (it was cut, or is not a whole `cmdlog export`); nothing was imported"
    )]
    NoTrailer,
    /// The export was redacted: its events no longer chain to the head it names.
    #[error(
        "the export was written with --redact: its events were changed, so it cannot be imported as a log; nothing was imported"
    )]
    Redacted,
    /// The imported events do not reproduce the export's head hash.
    #[error(
        "the imported events end at hash {got}, but the export says {expected}: the export was edited or damaged; nothing was imported"
    )]
    HeadMismatch {
        /// The head hash the trailer names.
        expected: String,
        /// The head hash the events produce.
        got: String,
    },
    /// Writing the target failed.
    #[error(transparent)]
    Open(#[from] cmdlog_store::OpenError),
    /// Creating or renaming the target's files failed.
    #[error("cannot write {path}: {source}")]
    Target {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
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
    #[serde(rename = "type")]
    type_name: Option<String>,
    session: Option<String>,
    blob: Option<String>,
    export: Option<serde_json::Value>,
}

use crate::limits::IMPORT_BATCH_RECORDS;

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
    let mut trailer_seen = false;
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
            let stream = cmdlog_engine::event::stream_key(
                probe.type_name.as_deref().unwrap_or(""),
                probe.session.as_deref(),
            );
            batch.push(NewRecord {
                stream,
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
            if trailer.export.redacted {
                return Err(ImportError::Redacted);
            }
            if trailer.export.head_seq != next_seq - 1 {
                return Err(bad(format!(
                    "the trailer names head seq {} but the export holds {} events",
                    trailer.export.head_seq,
                    next_seq - 1
                )));
            }
            expected_head_hash = Some(trailer.export.head_hash);
            trailer_seen = true;
        } else {
            return Err(bad(
                "neither an event (seq), a blob nor the export trailer".into()
            ));
        }
        if trailer_seen && probe.export.is_none() {
            return Err(bad("a line after the export trailer".into()));
        }
    }
    if !trailer_seen {
        return Err(ImportError::NoTrailer);
    }
    flush(&mut batch)?;
    let head = log.head();
    let head_hash = head.hash.to_hex();
    if let Some(expected) = &expected_head_hash
        && *expected != head_hash
    {
        return Err(ImportError::HeadMismatch {
            expected: expected.clone(),
            got: head_hash,
        });
    }
    Ok(ImportSummary {
        events: head.seq,
        blobs,
        head_seq: head.seq,
        head_hash,
        expected_head_hash,
    })
}

/// Imports an export into a new log at `target`, atomically: the events go into a
/// temporary file beside it, which becomes `target` only once the whole export was
/// read and its head hash checked out. On any failure no target is left (an empty
/// log already at `target` stays as it was); a non-empty one is refused.
pub fn import_file(
    target: &std::path::Path,
    input: impl BufRead,
    progress: impl FnMut(Seq),
) -> Result<ImportSummary, ImportError> {
    let config = cmdlog_store::LogConfig::default;
    if target.exists() {
        let events = cmdlog_store::Log::open_read_only(target, config())?
            .head()
            .seq;
        if events != 0 {
            return Err(ImportError::NotEmpty { events });
        }
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "log.redb".into());
    let temp = target.with_file_name(format!(".{name}.import-{}", std::process::id()));
    let remove = |path: &std::path::Path| {
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(cmdlog_store::journal_path(path));
    };
    remove(&temp);
    let imported = (|| {
        let log = Log::open(&temp, config())?;
        let summary = import(&log, input, progress)?;
        drop(log);
        Ok(summary)
    })();
    let summary = match imported {
        Ok(summary) => summary,
        Err(e) => {
            remove(&temp);
            return Err(e);
        }
    };
    // Closed cleanly: the log file alone holds everything.
    let target_io = |source| ImportError::Target {
        path: target.to_path_buf(),
        source,
    };
    let _ = std::fs::remove_file(cmdlog_store::journal_path(&temp));
    let _ = std::fs::remove_file(cmdlog_store::journal_path(target));
    if let Err(e) = std::fs::rename(&temp, target) {
        remove(&temp);
        return Err(target_io(e));
    }
    let folder = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    std::fs::File::open(folder)
        .and_then(|f| f.sync_all())
        .map_err(target_io)?;
    Ok(summary)
}
