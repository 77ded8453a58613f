//! The data of registry events: `registry/registered`, `registry/unregistered`,
//! `discovery/warning`, and where a registration applies and who provided it.

use serde::{Deserialize, Serialize};

use super::Seq;
use crate::command::CommandSpec;

/// Where a registration applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every agent.
    Global,
    /// One agent; shadows a global registration of the same name for it.
    Agent(String),
}

#[derive(Serialize, Deserialize)]
struct ScopeRepr {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    global: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scope::Global => ScopeRepr {
                global: true,
                agent: None,
            },
            Scope::Agent(a) => ScopeRepr {
                global: false,
                agent: Some(a.clone()),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match ScopeRepr::deserialize(d)? {
            ScopeRepr { agent: Some(a), .. } => Ok(Scope::Agent(a)),
            ScopeRepr { global: true, .. } => Ok(Scope::Global),
            _ => Err(serde::de::Error::custom(
                r#"scope must be {"global":true} or {"agent":ID}"#,
            )),
        }
    }
}

impl Scope {
    /// Whether it applies to `agent`.
    pub fn applies_to(&self, agent: &str) -> bool {
        match self {
            Scope::Global => true,
            Scope::Agent(a) => a == agent,
        }
    }
}

/// Who provided a registration, and where it stands among the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRef {
    /// Provider id: `builtin`, `api`, `native`, `claude`, `codex`, …
    pub id: String,
    /// Higher wins.
    pub priority: i32,
    /// Where inside the provider it came from (`builtin`, `runtime`, `project`, `user`, …).
    pub level: String,
    /// Tie-break among providers of equal priority: lower (registered earlier) wins.
    pub order: u32,
    /// Tie-break inside a provider: lower (loaded earlier) wins.
    #[serde(default)]
    pub item: u32,
}

/// `registry/registered`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registered {
    /// Global or agent-scoped.
    pub scope: Scope,
    /// Who provided it, and its precedence.
    pub provider: ProviderRef,
    /// The full command spec.
    pub command: CommandSpec,
    /// Blob hash of the template body (prompt commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Where a file command came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where a file command came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The file.
    pub path: String,
    /// BLAKE3 of the file's bytes.
    pub content_hash: String,
}

/// `registry/unregistered`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unregistered {
    /// Seq of the `registry/registered` event it ends.
    pub registration: Seq,
    /// Why.
    pub reason: UnregisterReason,
}

/// Why a registration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnregisterReason {
    /// Its disposer was called.
    Disposed,
    /// Its file is gone.
    FileRemoved,
    /// Its file changed (a new registration follows).
    FileChanged,
    /// It had an in-process handler and the process that registered it is gone: a log
    /// opened for writing ends such registrations (built-ins are registered again).
    OwnerExited,
}

/// `discovery/warning`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryWarning {
    /// The provider id.
    pub provider: String,
    /// The file or folder.
    pub path: String,
    /// BLAKE3 of the file's bytes when it was read: the warning is logged once per
    /// (file, content hash, message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// What is wrong and what was done instead.
    pub message: String,
}
