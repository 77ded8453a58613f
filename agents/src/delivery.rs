//! One hook delivery: a payload an agent gave its hook, with what identifies
//! it and how to map it, in one shape whichever path records it — the short
//! hook process, the daemon (`POST /hook/{agent}`, its metadata in the query)
//! or the spill folder — and the one function that records it
//! ([`record_delivery`]): repeats skipped by delivery id, mapped, facts folded,
//! appended.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

use base64::Engine as _;
use cmdlog_engine::Mode;
use cmdlog_engine::discovery::Discovery;
use cmdlog_engine::event::Observed;
use cmdlog_store::{Log, Receipt};
use serde::{Deserialize, Serialize};

use crate::facts::FactCache;
use crate::kind::AgentKind;
use crate::limits::{RECENT_DELIVERIES_MAX, RECENT_DELIVERIES_RECORDS};
use crate::record::{AppendBatchError, append_with, batch_for};

/// One hook payload on its way to the log, as every path carries it: the
/// hook itself, the daemon (its metadata in the query, [`DeliveryQuery`]) and
/// the spill folder (this, as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookDelivery {
    /// The agent's name (`claude-code`, …).
    pub agent: String,
    /// Whether the hook was asked to redact secrets.
    #[serde(default)]
    pub redact: bool,
    /// When cmdlog received it, unix ms.
    pub received_at: u64,
    /// What identifies this delivery: a payload recorded once under it is never
    /// recorded again, whichever path (daemon, spill, the hook itself) gets there.
    #[serde(default)]
    pub delivery: String,
    /// The payload as the agent wrote it, when it is UTF-8.
    #[serde(default)]
    pub payload: String,
    /// The payload's bytes (base64) when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// The agent's release, as it announced it to its hook (`AI_AGENT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// The session's mode (`interactive`, `non_interactive`), as the agent told
    /// its hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

impl HookDelivery {
    /// The session's mode as the hook was told it.
    pub fn mode(&self) -> Option<cmdlog_engine::Mode> {
        self.mode.as_deref().and_then(cmdlog_engine::Mode::parse)
    }

    /// A payload of `agent` received at `received_at` (unix ms), with a fresh
    /// delivery id.
    pub fn new(agent: &str, redact: bool, received_at: u64, bytes: Vec<u8>) -> HookDelivery {
        let mut seed = blake3::Hasher::new();
        seed.update(&received_at.to_le_bytes());
        seed.update(cmdlog_common::ids::new_id("", 32).as_bytes());
        seed.update(&bytes);
        let delivery = format!(
            "d-{}",
            cmdlog_common::ids::hex(&seed.finalize().as_bytes()[..12])
        );
        HookDelivery::with_id(agent, redact, received_at, delivery, bytes)
    }

    /// A payload under a delivery id given with it.
    fn with_id(
        agent: &str,
        redact: bool,
        received_at: u64,
        delivery: String,
        bytes: Vec<u8>,
    ) -> HookDelivery {
        let (payload, payload_base64) = match String::from_utf8(bytes) {
            Ok(text) => (text, None),
            Err(e) => (
                String::new(),
                Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            ),
        };
        HookDelivery {
            agent: agent.to_string(),
            redact,
            received_at,
            delivery,
            payload,
            payload_base64,
            release: None,
            mode: None,
        }
    }

    /// The payload's bytes, as the agent sent them.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        match &self.payload_base64 {
            Some(b64) => Cow::Owned(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap_or_default(),
            ),
            None => Cow::Borrowed(self.payload.as_bytes()),
        }
    }
}

impl HookDelivery {
    /// The agent it is from (Claude Code when the name is not one cmdlog knows:
    /// the spill folder's entries are read back by name).
    pub fn kind(&self) -> AgentKind {
        AgentKind::parse(&self.agent).unwrap_or(AgentKind::ClaudeCode)
    }

    /// Its metadata as the daemon's query string takes it ([`DeliveryQuery`]).
    pub fn query(&self) -> String {
        let mut query = format!(
            "redact={}&receivedAt={}&delivery={}",
            self.redact, self.received_at, self.delivery
        );
        if let Some(r) = self
            .release
            .as_deref()
            .filter(|r| cmdlog_engine::expand::parse_version(r).is_some())
        {
            query.push_str(&format!("&release={r}"));
        }
        if let Some(m) = self.mode() {
            query.push_str(&format!("&mode={}", m.as_str()));
        }
        query
    }

    /// A delivery the daemon received: `agent`'s `payload` with the metadata of
    /// its query, each value checked (a delivery id `d-…` of at most 64
    /// characters, a release that reads as a version, a mode other than ACP);
    /// what fails its check is left out.
    pub fn from_query(agent: AgentKind, query: DeliveryQuery, payload: Vec<u8>) -> HookDelivery {
        let received_at = query
            .received_at
            .unwrap_or_else(cmdlog_common::time::now_ms);
        // The hook named its delivery: no id of the daemon's own is made.
        let id = query
            .delivery
            .filter(|d| d.starts_with("d-") && d.len() <= 64)
            .unwrap_or_default();
        let redact = query.redact.unwrap_or(false);
        let mut delivery = HookDelivery::with_id(agent.name(), redact, received_at, id, payload);
        delivery.release = query
            .release
            .filter(|r| r.len() <= 32 && cmdlog_engine::expand::parse_version(r).is_some());
        delivery.mode = query
            .mode
            .as_deref()
            .and_then(Mode::parse)
            .filter(|m| *m != Mode::Acp)
            .map(|m| m.as_str().to_string());
        delivery
    }

    /// The events it means, as one batch (`discovery` is asked for the
    /// workspace's commands only when a payload needs them).
    pub fn batch(&self, discovery: impl FnOnce() -> Option<Discovery>) -> crate::Batch {
        batch_for(
            self.kind(),
            &self.bytes(),
            self.redact,
            Some(self.delivery.as_str()).filter(|d| !d.is_empty()),
            self.release.as_deref(),
            self.mode(),
            discovery,
        )
    }
}

/// A delivery's metadata as the daemon's `POST /hook/{agent}` query carries it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryQuery {
    /// Whether to redact secrets.
    pub redact: Option<bool>,
    /// When the hook received it, unix ms.
    pub received_at: Option<u64>,
    /// Its delivery id.
    pub delivery: Option<String>,
    /// The agent's release.
    pub release: Option<String>,
    /// The session's mode.
    pub mode: Option<String>,
}

/// Records `delivery` in `log`: left out when `recent` (the delivery ids the
/// log holds, when the caller keeps them) names it; else mapped, its facts
/// folded against `facts`, appended as one unit and remembered. `None` for a
/// repeat.
pub fn record_delivery(
    log: &Log,
    delivery: &HookDelivery,
    discovery: impl FnOnce() -> Option<Discovery>,
    mut recent: Option<&mut RecentDeliveries>,
    facts: &mut FactCache,
) -> Result<Option<Receipt>, AppendBatchError> {
    let id = delivery.delivery.as_str();
    if !id.is_empty() && recent.as_ref().is_some_and(|r| r.contains(id)) {
        return Ok(None);
    }
    let receipt = append_with(log, delivery.batch(discovery), delivery.received_at, facts)?;
    if let Some(recent) = recent.as_mut() {
        recent.insert(id);
    }
    Ok(Some(receipt))
}

/// Delivery ids the log holds, remembered (at most [`RECENT_DELIVERIES_MAX`]).
#[derive(Debug, Default)]
pub struct RecentDeliveries {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl RecentDeliveries {
    /// The delivery ids of the last [`RECENT_DELIVERIES_RECORDS`] records of `log`.
    pub fn from_log_tail(log: &Log) -> RecentDeliveries {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default)]
            observed: Option<Observed>,
        }
        let mut recent = RecentDeliveries::default();
        let head = log.head().seq;
        let from = head.saturating_sub(RECENT_DELIVERIES_RECORDS) + 1;
        let _ = log.scan(from, head, |record| {
            if let Ok(Probe {
                observed: Some(Observed { key: Some(key), .. }),
            }) = serde_json::from_slice::<Probe>(&record.bytes)
                && key.starts_with("d-")
            {
                recent.insert(&key);
            }
            true
        });
        recent
    }

    /// Whether `delivery` is known to be in the log.
    pub fn contains(&self, delivery: &str) -> bool {
        self.ids.contains(delivery)
    }

    /// Remembers `delivery` (forgetting the oldest past the limit).
    pub fn insert(&mut self, delivery: &str) {
        if delivery.is_empty() || !self.ids.insert(delivery.to_string()) {
            return;
        }
        self.order.push_back(delivery.to_string());
        if self.order.len() > RECENT_DELIVERIES_MAX
            && let Some(old) = self.order.pop_front()
        {
            self.ids.remove(&old);
        }
    }
}
