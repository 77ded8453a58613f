//! What cmdlog's tests and benches share, in one dev-only crate:
//!
//! - [`Workspace`]: a workspace and a `HOME` in temp folders, and the `cmdlog`
//!   binary run inside them with nothing of the caller's environment that would
//!   change what it does;
//! - [`daemon`]: a `cmdlog serve` child killed and reaped when dropped, and the
//!   HTTP and SSE helpers that talk to it;
//! - [`nats`]: a real `nats-server` with JetStream on a free loopback port;
//! - [`node`]: a Node test suite run from a Rust test, skipped loudly when not
//!   installed;
//! - [`browser`]: headless Chromium for the HTML reports, skipped loudly when
//!   not installed;
//! - [`tree`]: command-file fixtures and an engine over a temp log;
//! - [`tamper`]: a crash's leftovers and damage done below the store's API;
//! - [`otlp`]: OTLP request bodies built as bytes, and a process's peak memory;
//! - [`env_usize`], [`seed`]: the knobs a long or randomized test reads from
//!   the environment; [`running_as_root`] for the tests that mount a tmpfs.

#![allow(missing_docs)] // test helpers: their names say what they do

pub mod browser;
pub mod daemon;
pub mod nats;
pub mod node;
pub mod otlp;
pub mod tamper;
pub mod tree;
mod workspace;

pub use workspace::{Workspace, cmdlog_bin};

/// A count a test reads from the environment variable `name` (rounds, payloads,
/// subscribers), or `default` when it is unset or not a number.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A randomized test's seed: `CMDLOG_SEED`, or one taken from the clock (odd,
/// for the xorshift generators). The test prints it.
pub fn seed() -> u64 {
    std::env::var("CMDLOG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// Whether the tests run as root (mounting a small tmpfs, making another user's
/// folder); the tests that need it say SKIPPED otherwise.
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}
