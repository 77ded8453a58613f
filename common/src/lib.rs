//! What every cmdlog crate shares and no domain owns, each in one place:
//!
//! - [`time`]: the wall clock in unix milliseconds, the two ways cmdlog writes a
//!   time (`2026-12-01 15:13:51.118` for people, RFC 3339 for the wire), reading
//!   RFC 3339 and durations;
//! - [`ids`]: ids cmdlog mints (random 128-bit log ids, short hashed ids for
//!   sessions, prompts, permission requests and clients);
//! - [`Backoff`]: doubling waits between retries, with a floor and a ceiling;
//! - [`terminal`]: the sanitiser every piece of outside text passes before it
//!   reaches a terminal;
//! - [`private_fs`]: owner-only folders and files, and reading what others may
//!   have left on disk without following links, blocking or reading too much;
//! - [`secrets`]: the patterns of secrets (API keys, tokens, private keys) and
//!   their redaction from text and JSON, for capture (`--redact`) and export.
//!
//! ```
//! use cmdlog_common::{Backoff, terminal, time};
//! use std::time::Duration;
//!
//! assert_eq!(time::utc(0), "1970-01-01 00:00:00.000");
//! assert_eq!(time::rfc3339(1_500), "1970-01-01T00:00:01.500Z");
//! assert_eq!(time::parse_rfc3339("1970-01-01T00:00:01.500Z"), Some(1_500));
//! assert_eq!(terminal::clean("a\x1b[2Jb"), "a\\u{1b}[2Jb");
//!
//! let mut wait = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
//! assert_eq!(wait.next_wait(), Duration::from_millis(100));
//! assert_eq!(wait.next_wait(), Duration::from_millis(200));
//! ```

mod backoff;
pub mod ids;
pub mod private_fs;
pub mod secrets;
pub mod terminal;
pub mod time;

pub use backoff::Backoff;
