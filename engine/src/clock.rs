//! The injectable clock: every event's `at` comes from here.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};

/// A source of unix-millisecond timestamps.
pub trait Clock: Send + Sync + Debug {
    /// Now, in unix milliseconds.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        cmdlog_common::time::now_ms()
    }
}

/// A clock that stands still until told to move (tests).
#[derive(Debug, Default)]
pub struct FixedClock(AtomicU64);

impl FixedClock {
    /// A clock at `ms`.
    pub fn at(ms: u64) -> Self {
        FixedClock(AtomicU64::new(ms))
    }

    /// Moves it forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
