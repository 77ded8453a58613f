//! Turns for reading and decoding OTLP requests (`POST /v1/logs`), so that the
//! daemon's memory for telemetry stays bounded whatever the exporters send.

/// Turns for reading and decoding OTLP requests: at most
/// [`cmdlog_agents::OTLP_REQUESTS_IN_FLIGHT`] at once, at most
/// [`cmdlog_agents::OTLP_REQUESTS_WAITING_MAX`] waiting. With the per-request
/// bounds of `cmdlog_agents::otel` this bounds the daemon's memory for telemetry
/// whatever the exporters send (`docs/performance.md`).
pub(crate) struct Turns {
    slots: tokio::sync::Semaphore,
    waiting: std::sync::atomic::AtomicUsize,
}

impl Default for Turns {
    fn default() -> Self {
        Turns {
            slots: tokio::sync::Semaphore::new(cmdlog_agents::OTLP_REQUESTS_IN_FLIGHT),
            waiting: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl Turns {
    /// Waits for a turn; `None` when too many wait already.
    pub(crate) async fn wait(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        use std::sync::atomic::Ordering;
        if let Ok(permit) = self.slots.try_acquire() {
            return Some(permit);
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= cmdlog_agents::OTLP_REQUESTS_WAITING_MAX {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let permit = self.slots.acquire().await.ok();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        permit
    }
}
