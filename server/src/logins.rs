//! Who is logged in to the workbench (`/ui/`): each browser that gave the
//! token holds a random login id in its cookie until it expires or logs out;
//! failed logins are counted so that repeated ones are answered slowly.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use crate::limits::{UI_FAILURE_WINDOW, UI_FAILURES_FREE, UI_LOGIN_TTL, UI_LOGINS_MAX};

/// The browsers logged in to the workbench, and recent failed logins.
#[derive(Default)]
pub(crate) struct Logins {
    logins: Mutex<HashMap<String, Instant>>,
    failures: Mutex<Vec<Instant>>,
}

impl Logins {
    /// Whether `id` is a login of this daemon that has not expired.
    pub(crate) fn logged_in(&self, id: &str) -> bool {
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        logins.retain(|_, until| *until > now);
        // Each stored id compared in constant time.
        logins
            .keys()
            .any(|known| bool::from(known.as_bytes().ct_eq(id.as_bytes())))
    }

    pub(crate) fn log_in(&self) -> String {
        let id = format!(
            "{}{}",
            cmdlog_common::ids::random_128(),
            cmdlog_common::ids::random_128()
        );
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        logins.retain(|_, until| *until > now);
        if logins.len() >= UI_LOGINS_MAX {
            // The oldest login goes first.
            if let Some(oldest) = logins
                .iter()
                .min_by_key(|(_, u)| **u)
                .map(|(k, _)| k.clone())
            {
                logins.remove(&oldest);
            }
        }
        logins.insert(id.clone(), now + UI_LOGIN_TTL);
        id
    }

    pub(crate) fn log_out(&self, id: &str) {
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        logins.retain(|known, _| !bool::from(known.as_bytes().ct_eq(id.as_bytes())));
    }

    /// Notes a failed login; how long to wait before answering it.
    pub(crate) fn failed(&self) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        failures.retain(|t| now.duration_since(*t) < UI_FAILURE_WINDOW);
        failures.push(now);
        let over = failures.len().saturating_sub(UI_FAILURES_FREE) as u64;
        Duration::from_millis((over * 500).min(5_000))
    }
}
