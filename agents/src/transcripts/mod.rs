//! `cmdlog import --from <agent>`: the transcripts an agent keeps, read as that
//! agent writes them (one module each; `docs/agents.md` cites the formats), and
//! appended as sessions with their original times (`observed.at`; the events'
//! own `at` stays the time of the import). Every item is keyed by its source
//! (file and line or item id): importing again adds nothing. A line that does not
//! parse is counted and named, never fatal. A file imported whole is
//! checkpointed in the log (`checkpoint.rs`): unchanged, it is not parsed again.

mod batches;
mod checkpoint;
mod claude;
mod codex;
mod files;
mod gemini;
mod gemini_chats;
mod importer;
mod lenient;
mod qwen;
mod transcript;

pub(crate) use claude::agents_own;
pub use files::{TranscriptRead, default_roots, files, read_transcript};
pub(crate) use gemini_chats::last_reply as gemini_last_reply;
pub(crate) use gemini_chats::running_subagent as gemini_running_subagent;
pub use importer::{ImportError, ImportSummary, import};
