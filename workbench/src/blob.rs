//! A value the log keeps as blobs (a long prompt, a big tool output, an
//! agent's large message), loaded when the reader asks for it: its page
//! shows the text, its download the bytes. Where a page shows an event that
//! names blobs — `[cmdlog: N bytes stored as blob H1 + H2]`, `"blob": "H"`,
//! `"blobs": ["H1", …]` — it links them here.

use askama::Template;
use cmdlog_store::{BlobHash, Log};

use crate::limits::{BLOB_PARTS_MAX, BLOB_SHOWN_BYTES_MAX};
use crate::text::shown;
use crate::{PageError, Site, log_error};

/// The hashes of a blob page's path piece (`H1+H2`), checked.
fn parts(hashes: &str) -> Result<Vec<BlobHash>, PageError> {
    let parts: Vec<&str> = hashes.split('+').collect();
    if parts.len() > BLOB_PARTS_MAX {
        return Err(PageError::NoBlob {
            hash: format!("{} parts", parts.len()),
            why: format!("a page joins at most {BLOB_PARTS_MAX}"),
        });
    }
    parts
        .iter()
        .map(|h| {
            BlobHash::from_hex(h).ok_or_else(|| PageError::NoBlob {
                hash: shown(&h.chars().take(80).collect::<String>()),
                why: "not a blob hash (64 hex digits)".into(),
            })
        })
        .collect()
}

/// The bytes of the blobs `hashes` names (`H1+H2`), joined in order; each is
/// re-hashed as it is read.
pub fn blob_bytes(log: &Log, hashes: &str) -> Result<Vec<u8>, PageError> {
    let mut bytes = Vec::new();
    for hash in parts(hashes)? {
        match log.get_blob(&hash).map_err(log_error)? {
            Some(part) => bytes.extend_from_slice(&part),
            None => {
                return Err(PageError::NoBlob {
                    hash: hash.to_hex(),
                    why: "the log holds no such blob (never stored, or removed by redaction or gc)"
                        .into(),
                });
            }
        }
    }
    Ok(bytes)
}

#[derive(Template)]
#[template(path = "blob.html")]
struct BlobPage {
    title: String,
    query: String,
    hashes: String,
    short: String,
    bytes: usize,
    text: String,
    cut: usize,
    site: Site,
}

/// The page of the value stored as the blobs `hashes` (`H1+H2`): its text
/// (shown visibly, at most [`BLOB_SHOWN_BYTES_MAX`] bytes) and a link to
/// download its bytes whole.
pub fn blob_page(log: &Log, hashes: &str, site: &Site) -> Result<String, PageError> {
    let bytes = blob_bytes(log, hashes)?;
    let mut end = bytes.len().min(BLOB_SHOWN_BYTES_MAX);
    let text = loop {
        match std::str::from_utf8(&bytes[..end]) {
            Ok(text) => break std::borrow::Cow::Borrowed(text),
            // A character cut by the cap: end before it.
            Err(e) if e.error_len().is_none() && end < bytes.len() => end = e.valid_up_to(),
            Err(_) => break String::from_utf8_lossy(&bytes[..end]),
        }
    };
    BlobPage {
        title: format!("Blob {}", &hashes[..12.min(hashes.len())]),
        query: String::new(),
        hashes: hashes.to_ascii_lowercase(),
        short: hashes
            .split('+')
            .map(|h| &h[..12.min(h.len())])
            .collect::<Vec<_>>()
            .join(" + "),
        bytes: bytes.len(),
        text: shown(&text),
        cut: bytes.len() - end,
        site: site.clone(),
    }
    .render()
    .map_err(PageError::from)
}
