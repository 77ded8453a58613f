//! The registry: a pure fold over `registry/*` events, and per-mode resolution
//! with layers, priorities and shadowing (DESIGN §4).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::command::{CommandSpec, Mode};
use crate::event::{Origin, ProviderRef, Registered, Scope, Seq, UnregisterReason};

/// One registration as the fold knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Seq of its `registry/registered` event.
    pub seq: Seq,
    /// When.
    pub at: u64,
    /// Global or agent-scoped.
    pub scope: Scope,
    /// Provider and precedence.
    pub provider: ProviderRef,
    /// The command.
    pub command: CommandSpec,
    /// Template blob hash (prompt commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Source file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// Seq and reason of its `registry/unregistered`, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<(Seq, UnregisterReason)>,
}

impl Registration {
    /// Whether it is still registered.
    pub fn is_active(&self) -> bool {
        self.ended.is_none()
    }

    /// Resolution order: agent layer before global, then higher priority, then
    /// lower provider order, then lower item order, then source path (so two files of
    /// one folder resolve the same way whatever their history), then earlier
    /// registration.
    fn precedence(&self, other: &Registration) -> Ordering {
        let layer = |r: &Registration| matches!(r.scope, Scope::Global);
        layer(self)
            .cmp(&layer(other))
            .then(other.provider.priority.cmp(&self.provider.priority))
            .then(self.provider.order.cmp(&other.provider.order))
            .then(self.provider.item.cmp(&other.provider.item))
            .then_with(|| origin_path(self).cmp(&origin_path(other)))
            .then(self.seq.cmp(&other.seq))
    }

    /// Why it beats `loser`, in words.
    fn beats_because(&self, loser: &Registration) -> String {
        if self.scope != loser.scope && matches!(loser.scope, Scope::Global) {
            "agent-scoped registration shadows the global one".into()
        } else if self.provider.priority != loser.provider.priority {
            format!(
                "provider {} has priority {} > {} of {}",
                self.provider.id,
                self.provider.priority,
                loser.provider.priority,
                loser.provider.id
            )
        } else if self.provider.order != loser.provider.order {
            format!(
                "equal priority {}; provider {} was registered before {}",
                self.provider.priority, self.provider.id, loser.provider.id
            )
        } else if self.provider.item != loser.provider.item {
            format!(
                "same provider {}; loaded earlier ({} {})",
                self.provider.id,
                self.provider.level,
                self.origin.as_ref().map(|o| o.path.as_str()).unwrap_or("")
            )
        } else {
            "registered earlier".into()
        }
    }
}

/// A candidate for a name in a mode, winner or shadowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate<'a> {
    /// The registration.
    pub registration: &'a Registration,
    /// `None` for the winner; else the seq of the winner and why it wins.
    pub shadowed_by: Option<(Seq, String)>,
}

/// The registry state: every registration ever made, active or ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    registrations: BTreeMap<Seq, Registration>,
    /// name or alias -> seqs of active registrations answering to it.
    by_name: BTreeMap<String, BTreeSet<Seq>>,
}

// Serialized as its registrations; the name index is rebuilt on load.
impl Serialize for Registry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.registrations.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Registry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let registrations = BTreeMap::<Seq, Registration>::deserialize(d)?;
        let mut by_name: BTreeMap<String, BTreeSet<Seq>> = BTreeMap::new();
        for r in registrations.values().filter(|r| r.is_active()) {
            for name in names(&r.command) {
                by_name.entry(name).or_default().insert(r.seq);
            }
        }
        Ok(Registry {
            registrations,
            by_name,
        })
    }
}

/// Why an event did not apply to the registry (the fold ignores it; `verify` reports it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryAnomaly {
    /// An unregister names a registration that does not exist.
    #[error("unregister of seq {0}, which is not a registration")]
    UnknownRegistration(Seq),
    /// An unregister names a registration already ended.
    #[error("unregister of registration {registration}, already ended at seq {ended}")]
    AlreadyEnded {
        /// The registration.
        registration: Seq,
        /// Where it ended.
        ended: Seq,
    },
}

impl Registry {
    /// Folds a `registry/registered`.
    pub fn apply_registered(&mut self, seq: Seq, at: u64, r: &Registered) {
        let registration = Registration {
            seq,
            at,
            scope: r.scope.clone(),
            provider: r.provider.clone(),
            command: r.command.clone(),
            template: r.template.clone(),
            origin: r.origin.clone(),
            ended: None,
        };
        for name in names(&registration.command) {
            self.by_name.entry(name).or_default().insert(seq);
        }
        self.registrations.insert(seq, registration);
    }

    /// Folds a `registry/unregistered`.
    pub fn apply_unregistered(
        &mut self,
        seq: Seq,
        registration: Seq,
        reason: UnregisterReason,
    ) -> Result<(), RegistryAnomaly> {
        let r = self
            .registrations
            .get_mut(&registration)
            .ok_or(RegistryAnomaly::UnknownRegistration(registration))?;
        if let Some((ended, _)) = r.ended {
            return Err(RegistryAnomaly::AlreadyEnded {
                registration,
                ended,
            });
        }
        r.ended = Some((seq, reason));
        for name in names(&r.command) {
            if let Some(set) = self.by_name.get_mut(&name) {
                set.remove(&registration);
                if set.is_empty() {
                    self.by_name.remove(&name);
                }
            }
        }
        Ok(())
    }

    /// A registration by seq, active or not.
    pub fn get(&self, seq: Seq) -> Option<&Registration> {
        self.registrations.get(&seq)
    }

    /// Every registration, by seq.
    pub fn all(&self) -> impl Iterator<Item = &Registration> {
        self.registrations.values()
    }

    /// The active registrations, by seq.
    pub fn active(&self) -> impl Iterator<Item = &Registration> {
        self.registrations.values().filter(|r| r.is_active())
    }

    /// Every active candidate for `name` visible to `agent` in `mode`, winner first;
    /// the rest say what shadows them and why.
    pub fn candidates(&self, agent: &str, mode: Mode, name: &str) -> Vec<Candidate<'_>> {
        let mut found: Vec<&Registration> = self
            .by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|seq| self.registrations.get(seq))
            .filter(|r| r.scope.applies_to(agent) && r.command.supports(mode))
            .collect();
        found.sort_by(|a, b| a.precedence(b));
        let winner = found.first().copied();
        found
            .into_iter()
            .map(|r| Candidate {
                registration: r,
                shadowed_by: match winner {
                    Some(w) if w.seq != r.seq => Some((w.seq, w.beats_because(r))),
                    _ => None,
                },
            })
            .collect()
    }

    /// The registration `/name` runs for `agent` in `mode`.
    pub fn resolve(&self, agent: &str, mode: Mode, name: &str) -> Option<&Registration> {
        self.candidates(agent, mode, name)
            .first()
            .map(|c| c.registration)
    }

    /// Every candidate of every primary name for `agent` in `mode`, name-sorted,
    /// winner first within a name (for `commands --all`).
    pub fn list_all(&self, agent: &str, mode: Mode) -> Vec<Candidate<'_>> {
        let primary: BTreeSet<&str> = self
            .active()
            .filter(|r| r.scope.applies_to(agent) && r.command.supports(mode))
            .map(|r| r.command.name.as_str())
            .collect();
        primary
            .into_iter()
            .flat_map(|name| {
                self.candidates(agent, mode, name)
                    .into_iter()
                    .filter(move |c| c.registration.command.name.as_str() == name)
            })
            .collect()
    }

    /// The effective commands for `agent` in `mode`: name-sorted winners, hidden and
    /// not-user-invocable excluded.
    pub fn list(&self, agent: &str, mode: Mode) -> Vec<&Registration> {
        self.list_all(agent, mode)
            .into_iter()
            .filter(|c| c.shadowed_by.is_none())
            .map(|c| c.registration)
            .filter(|r| !r.command.hidden && r.command.user_invocable)
            .collect()
    }

    /// The commands the model may invoke for `agent`: winners in any mode, not hidden,
    /// `model_invocable`, name-sorted.
    pub fn model_invocable(&self, agent: &str) -> Vec<&Registration> {
        let mut out: BTreeMap<&str, &Registration> = BTreeMap::new();
        for mode in Mode::ALL {
            for r in self.list_all(agent, mode) {
                if r.shadowed_by.is_none() && r.registration.command.is_model_invocable() {
                    out.entry(r.registration.command.name.as_str())
                        .or_insert(r.registration);
                }
            }
        }
        out.into_values().collect()
    }
}

fn origin_path(r: &Registration) -> Option<&str> {
    r.origin.as_ref().map(|o| o.path.as_str())
}

fn names(spec: &CommandSpec) -> impl Iterator<Item = String> + '_ {
    std::iter::once(spec.name.as_str().to_string())
        .chain(spec.alt_names.iter().map(|a| a.as_str().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{CommandKind, CommandName, CommandSource, CommandType};

    fn reg(
        registry: &mut Registry,
        seq: Seq,
        name: &str,
        scope: Scope,
        provider: (&str, i32, u32, u32),
        modes: Option<Vec<Mode>>,
    ) {
        let mut command = CommandSpec::new(
            CommandName::new(name).unwrap(),
            CommandSource::SkillDirCommand,
            CommandKind::File,
        );
        command.command_type = Some(CommandType::Prompt);
        command.supported_modes = modes;
        registry.apply_registered(
            seq,
            0,
            &Registered {
                scope,
                provider: ProviderRef {
                    id: provider.0.into(),
                    priority: provider.1,
                    level: "user".into(),
                    order: provider.2,
                    item: provider.3,
                },
                command,
                template: None,
                origin: None,
            },
        );
    }

    const M: Mode = Mode::NonInteractive;

    #[test]
    fn priority_then_provider_order_then_item_order() {
        let mut r = Registry::default();
        reg(&mut r, 1, "x", Scope::Global, ("codex", 70, 4, 0), None);
        reg(
            &mut r,
            2,
            "x",
            Scope::Global,
            ("claude-plugins", 70, 3, 0),
            None,
        );
        reg(&mut r, 3, "x", Scope::Global, ("gemini", 60, 5, 0), None);
        assert_eq!(r.resolve("main", M, "x").unwrap().seq, 2);
        reg(&mut r, 4, "x", Scope::Global, ("claude", 80, 2, 1), None);
        reg(&mut r, 5, "x", Scope::Global, ("claude", 80, 2, 0), None);
        assert_eq!(r.resolve("main", M, "x").unwrap().seq, 5);
        let c = r.candidates("main", M, "x");
        assert_eq!(c.len(), 5);
        assert!(
            c[1].shadowed_by
                .as_ref()
                .unwrap()
                .1
                .contains("loaded earlier")
        );
        assert!(
            c[2].shadowed_by
                .as_ref()
                .unwrap()
                .1
                .contains("priority 80 > 70")
        );
        assert!(
            c[3].shadowed_by
                .as_ref()
                .unwrap()
                .1
                .contains("priority 80 > 70")
        );

        let mut r = Registry::default();
        reg(&mut r, 1, "x", Scope::Global, ("codex", 70, 4, 0), None);
        reg(
            &mut r,
            2,
            "x",
            Scope::Global,
            ("claude-plugins", 70, 3, 0),
            None,
        );
        let c = r.candidates("main", M, "x");
        assert_eq!(c[0].registration.seq, 2);
        let why = &c[1].shadowed_by.as_ref().unwrap().1;
        assert!(
            why.contains("claude-plugins was registered before codex"),
            "{why}"
        );
    }

    #[test]
    fn agent_layer_shadows_global_for_that_agent_only() {
        let mut r = Registry::default();
        reg(&mut r, 1, "x", Scope::Global, ("native", 100, 0, 0), None);
        reg(
            &mut r,
            2,
            "x",
            Scope::Agent("a".into()),
            ("api", 0, 9, 0),
            None,
        );
        assert_eq!(r.resolve("a", M, "x").unwrap().seq, 2);
        assert_eq!(r.resolve("b", M, "x").unwrap().seq, 1);
        assert_eq!(r.list("b", M).len(), 1);
    }

    #[test]
    fn variants_with_disjoint_modes_coexist() {
        let mut r = Registry::default();
        reg(
            &mut r,
            1,
            "model",
            Scope::Global,
            ("builtin", 1000, 0, 0),
            Some(vec![Mode::Interactive]),
        );
        reg(
            &mut r,
            2,
            "model",
            Scope::Global,
            ("builtin", 1000, 0, 1),
            Some(vec![Mode::NonInteractive, Mode::Acp]),
        );
        assert_eq!(r.resolve("m", Mode::Interactive, "model").unwrap().seq, 1);
        assert_eq!(r.resolve("m", Mode::Acp, "model").unwrap().seq, 2);
        assert_eq!(r.candidates("m", Mode::Acp, "model").len(), 1);
    }

    #[test]
    fn unregister_removes_from_resolution_and_reports_anomalies() {
        let mut r = Registry::default();
        reg(&mut r, 1, "x", Scope::Global, ("api", 0, 0, 0), None);
        reg(&mut r, 2, "x", Scope::Global, ("api", 0, 0, 0), None);
        assert_eq!(r.resolve("m", M, "x").unwrap().seq, 1);
        r.apply_unregistered(3, 1, UnregisterReason::Disposed)
            .unwrap();
        assert_eq!(r.resolve("m", M, "x").unwrap().seq, 2);
        assert_eq!(
            r.apply_unregistered(4, 1, UnregisterReason::Disposed),
            Err(RegistryAnomaly::AlreadyEnded {
                registration: 1,
                ended: 3
            })
        );
        assert_eq!(
            r.apply_unregistered(4, 99, UnregisterReason::Disposed),
            Err(RegistryAnomaly::UnknownRegistration(99))
        );
        r.apply_unregistered(5, 2, UnregisterReason::Disposed)
            .unwrap();
        assert!(r.resolve("m", M, "x").is_none());
        assert!(r.list("m", M).is_empty());
    }

    #[test]
    fn scope_json_is_the_documented_shape() {
        assert_eq!(
            serde_json::to_string(&Scope::Global).unwrap(),
            r#"{"global":true}"#
        );
        assert_eq!(
            serde_json::to_string(&Scope::Agent("a".into())).unwrap(),
            r#"{"agent":"a"}"#
        );
        assert!(serde_json::from_str::<Scope>("{}").is_err());
    }
}
