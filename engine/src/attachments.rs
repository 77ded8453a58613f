//! Attachment admission (DESIGN §5 steps 3–6, seed 001): validation without writes,
//! media types sniffed from content, staged file receipts resolved by the one
//! registered resolver, and limits that name themselves.

use std::path::{Path, PathBuf};

use cmdlog_store::BlobHash;

use crate::event::{AttachmentKind, Seq};

/// An attachment submitted with a line, before admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmittedAttachment {
    /// Encoded image bytes.
    Image {
        /// Display name.
        name: String,
        /// Bytes.
        bytes: Vec<u8>,
    },
    /// File bytes sent with the request (the daemon's base64 attachments).
    File {
        /// Display name.
        name: String,
        /// Bytes.
        bytes: Vec<u8>,
    },
    /// A staged file receipt, resolved by the receipt resolver.
    FileReceipt {
        /// The receipt.
        receipt: String,
    },
}

/// Limits on what one invocation may carry. Each refusal names the limit it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentLimits {
    /// Most image blocks per invocation (`images_max`). Default 10.
    pub images_max: usize,
    /// Largest image (`image_bytes_max`). Default 10 MiB.
    pub image_bytes_max: u64,
    /// Largest file block (`file_bytes_max`). Default 32 MiB (the store's blob limit).
    pub file_bytes_max: u64,
    /// Most bytes in all blocks of one invocation (`total_bytes_max`). Default 64 MiB.
    pub total_bytes_max: u64,
}

impl Default for AttachmentLimits {
    fn default() -> Self {
        AttachmentLimits {
            images_max: limits::ATTACHED_IMAGES_MAX,
            image_bytes_max: limits::ATTACHED_IMAGE_BYTES_MAX,
            file_bytes_max: limits::ATTACHED_FILE_BYTES_MAX,
            total_bytes_max: limits::ATTACHED_TOTAL_BYTES_MAX,
        }
    }
}

use crate::limits;

const MIB: u64 = 1024 * 1024;

/// A staged file, as a resolver hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFile {
    /// Display name (the file name).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A receipt that cannot be resolved, with the reason and the way out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReceiptError(pub String);

/// The sole authority that turns staged file receipts into bytes.
pub trait FileReceiptResolver: Send + Sync + 'static {
    /// Resolves `receipt` for `session`; refuses anything over `bytes_max` without
    /// reading it.
    fn resolve(
        &self,
        session: &str,
        receipt: &str,
        bytes_max: u64,
    ) -> Result<ResolvedFile, ReceiptError>;
}

/// The CLI's resolver: a receipt is a path as the user typed it. Relative paths
/// must stay inside the workspace (after following symlinks); an absolute path
/// given explicitly is taken as the user's choice. Only regular files.
#[derive(Debug, Clone)]
pub struct WorkspaceReceipts {
    workspace: PathBuf,
}

impl WorkspaceReceipts {
    /// Receipts relative to `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        WorkspaceReceipts {
            workspace: workspace.into(),
        }
    }
}

impl FileReceiptResolver for WorkspaceReceipts {
    fn resolve(
        &self,
        _session: &str,
        receipt: &str,
        bytes_max: u64,
    ) -> Result<ResolvedFile, ReceiptError> {
        let refuse = |why: String| Err(ReceiptError(format!("cannot attach {receipt:?}: {why}")));
        let given = Path::new(receipt);
        let path = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.workspace.join(given)
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => return refuse(format!("{e}")),
        };
        if !meta.is_file() {
            return refuse(
                "not a regular file (a folder, FIFO, socket or device); attach a file".into(),
            );
        }
        if !given.is_absolute() {
            let inside = match (path.canonicalize(), self.workspace.canonicalize()) {
                (Ok(file), Ok(ws)) => file.starts_with(ws),
                _ => false,
            };
            if !inside {
                return refuse(
                    "it resolves outside the workspace; give its absolute path to attach it anyway"
                        .into(),
                );
            }
        }
        if meta.len() > bytes_max {
            return refuse(format!(
                "it is {}, over the largest attachment allowed ({})",
                human(meta.len()),
                human(bytes_max)
            ));
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => return refuse(format!("{e}")),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| receipt.to_string());
        Ok(ResolvedFile { name, bytes })
    }
}

/// An admitted block, as a handler receives it (in submission order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmittedBlock {
    /// Seq of its `attachment/admitted`.
    pub seq: Seq,
    /// Image or file.
    pub kind: AttachmentKind,
    /// Display name.
    pub name: String,
    /// Media type, sniffed from the content.
    pub media_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Where its bytes are: read them back with [`crate::Engine::read_blob`].
    pub blob: BlobHash,
}

/// Ends a prompt command's expansion with its admitted blocks, one line each,
/// after a blank line (whether or not the expansion ended its last line).
pub fn with_attachments(prompt: &mut String, blocks: &[AdmittedBlock]) {
    if blocks.is_empty() {
        return;
    }
    prompt.push_str(if prompt.ends_with('\n') { "\n" } else { "\n\n" });
    prompt.push_str("Attachments:");
    for block in blocks {
        prompt.push('\n');
        prompt.push_str(&block.prompt_line());
    }
}

impl AdmittedBlock {
    /// The line a prompt command's expansion ends with for this block.
    pub fn prompt_line(&self) -> String {
        format!(
            "- {} ({}, {} bytes, blob {})",
            self.name, self.media_type, self.size, self.blob
        )
    }
}

/// A validated attachment, not yet written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    pub(crate) kind: AttachmentKind,
    pub(crate) name: String,
    pub(crate) media_type: String,
    /// Taken by the blob store; `size` stays.
    pub(crate) bytes: Vec<u8>,
    pub(crate) size: u64,
}

/// The media type of `bytes`, from their content, and whether it is an image.
pub fn sniff(bytes: &[u8]) -> (String, bool) {
    match infer::get(bytes) {
        Some(t) => (
            t.mime_type().to_string(),
            t.matcher_type() == infer::MatcherType::Image,
        ),
        None if std::str::from_utf8(bytes).is_ok() => ("text/plain".into(), false),
        None => ("application/octet-stream".into(), false),
    }
}

/// `12.5 MiB`-style sizes for messages.
fn human(bytes: u64) -> String {
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

/// Display names: no control characters, at most 255 characters.
fn clean_name(name: &str) -> String {
    let cleaned: String = name.chars().filter(|c| !c.is_control()).take(255).collect();
    if cleaned.is_empty() {
        "attachment".into()
    } else {
        cleaned
    }
}

/// Validates every attachment without writing anything. `Err` is the refusal text
/// the run settles with.
pub(crate) fn validate(
    command: &str,
    session: &str,
    submitted: Vec<SubmittedAttachment>,
    resolver: Option<&dyn FileReceiptResolver>,
    limits: &AttachmentLimits,
) -> Result<Vec<Admission>, String> {
    let mut admissions = Vec::with_capacity(submitted.len());
    let mut total = 0u64;
    let mut images = 0usize;
    // The bytes move through to the blob store: an 8 MiB attachment is not copied.
    for (i, attachment) in submitted.into_iter().enumerate() {
        let n = i + 1;
        let (name, bytes, must_be_image) = match attachment {
            SubmittedAttachment::Image { name, bytes } => (clean_name(&name), bytes, true),
            SubmittedAttachment::File { name, bytes } => (clean_name(&name), bytes, false),
            SubmittedAttachment::FileReceipt { receipt } => {
                let Some(resolver) = resolver else {
                    return Err(format!(
                        "/{command}: attachment {n} is a file receipt, but no file receipt resolver is registered; register one (the CLI does for --attach)"
                    ));
                };
                let bytes_max = limits.file_bytes_max.max(limits.image_bytes_max);
                let file = resolver
                    .resolve(session, &receipt, bytes_max)
                    .map_err(|e| format!("/{command}: attachment {n}: {e}"))?;
                (clean_name(&file.name), file.bytes, false)
            }
        };
        let (media_type, is_image) = sniff(&bytes);
        if must_be_image && !is_image {
            return Err(format!(
                "/{command}: attachment {n} ({name}) is sent as an image but its content is {media_type}; send it as a file"
            ));
        }
        let size = bytes.len() as u64;
        let (kind, limit, limit_name) = if is_image {
            images += 1;
            if images > limits.images_max {
                return Err(format!(
                    "/{command}: more than {} images in one invocation (images_max); send fewer",
                    limits.images_max
                ));
            }
            (
                AttachmentKind::Image,
                limits.image_bytes_max,
                "image_bytes_max",
            )
        } else {
            (
                AttachmentKind::File,
                limits.file_bytes_max,
                "file_bytes_max",
            )
        };
        if size > limit {
            return Err(format!(
                "/{command}: attachment {n} ({name}) is {}, over the limit of {} ({limit_name})",
                human(size),
                human(limit)
            ));
        }
        total += size;
        if total > limits.total_bytes_max {
            return Err(format!(
                "/{command}: attachments add up to more than {} (total_bytes_max) at attachment {n} ({name}); send fewer or smaller",
                human(limits.total_bytes_max)
            ));
        }
        admissions.push(Admission {
            kind,
            name,
            media_type,
            bytes,
            size,
        });
    }
    Ok(admissions)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const PNG: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];

    #[test]
    fn media_types_come_from_content() {
        assert_eq!(sniff(PNG), ("image/png".into(), true));
        assert_eq!(sniff(b"%PDF-1.7\n"), ("application/pdf".into(), false));
        assert_eq!(sniff(b"plain notes"), ("text/plain".into(), false));
        assert_eq!(
            sniff(&[0xff, 0x00, 0xfe]),
            ("application/octet-stream".into(), false)
        );
    }

    #[test]
    fn names_are_cleaned() {
        assert_eq!(clean_name("a\u{1b}[31mb\n.png"), "a[31mb.png");
        assert_eq!(clean_name("\n"), "attachment");
        assert_eq!(clean_name(&"x".repeat(300)).len(), 255);
    }

    #[test]
    fn the_workspace_resolver_keeps_to_the_workspace() {
        let outside = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("in.txt"), "inside").unwrap();
        std::fs::create_dir(ws.path().join("dir")).unwrap();
        std::fs::write(outside.path().join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            ws.path().join("link.txt"),
        )
        .unwrap();
        let r = WorkspaceReceipts::new(ws.path());
        let ok = r.resolve("s", "in.txt", 100).unwrap();
        assert_eq!(
            (ok.name.as_str(), ok.bytes.as_slice()),
            ("in.txt", &b"inside"[..])
        );
        for (receipt, words) in [
            ("../escape.txt", "No such file"),
            ("link.txt", "outside the workspace"),
            ("dir", "not a regular file"),
            ("missing.txt", "No such file"),
        ] {
            let err = r.resolve("s", receipt, 100).unwrap_err();
            assert!(err.0.contains(words), "{receipt}: {err}");
        }
        // A relative path that climbs out to a file that exists is refused too…
        let escape = format!(
            "../{}/secret.txt",
            outside.path().file_name().unwrap().to_string_lossy()
        );
        assert!(
            r.resolve("s", &escape, 100)
                .unwrap_err()
                .0
                .contains("outside the workspace")
        );
        // …while an explicit absolute path is the user's choice.
        let abs = outside.path().join("secret.txt");
        assert_eq!(
            r.resolve("s", abs.to_str().unwrap(), 100).unwrap().bytes,
            b"outside"
        );
        assert!(
            r.resolve("s", "in.txt", 3)
                .unwrap_err()
                .0
                .contains("over the largest attachment")
        );
    }
}
