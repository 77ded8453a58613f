//! Waits between retries: each one twice the last, from a floor to a ceiling.

use std::time::Duration;

/// Doubling waits between retries, from `first` up to `max`; [`Backoff::reset`]
/// after a success starts again from `first`.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Waits from `first`, doubling, never over `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        assert!(
            first <= max,
            "a backoff's first wait is at most its ceiling"
        );
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The wait before the next retry; the one after is twice as long.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// The wait [`Backoff::next_wait`] will give, without moving on.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// Starts again from the first wait (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_ceiling_and_start_over_after_a_reset() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let waits: Vec<u64> = (0..5).map(|_| b.next_wait().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        b.reset();
        assert_eq!(b.peek(), Duration::from_secs(1));
    }
}
