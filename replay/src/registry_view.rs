//! The registry as of a seq, as people read it.

use std::collections::BTreeMap;

use serde::Serialize;

use cmdlog_engine::{CommandType, LogState, Mode, Registration, Seq};

/// One candidate for a name: the winner or a shadowed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandEntry {
    /// The name.
    pub name: String,
    /// Seq of its registration.
    pub registration: Seq,
    /// `active` (the winner) or `shadowed`.
    pub status: &'static str,
    /// The winner that shadows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<Seq>,
    /// Why it is shadowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Provider id.
    pub provider: String,
    /// Provider priority.
    pub priority: i32,
    /// `global` or the agent id.
    pub scope: String,
    /// Source class.
    pub source: cmdlog_engine::CommandSource,
    /// Source label.
    pub source_label: String,
    /// Command type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_type: Option<CommandType>,
    /// Effective modes.
    pub modes: Vec<Mode>,
    /// Description.
    pub description: String,
    /// Argument hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// Hidden from listings.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// Source file of a file command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Template blob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

impl CommandEntry {
    fn new(r: &Registration, shadowed: Option<(Seq, String)>) -> Self {
        let (shadowed_by, why) = match shadowed {
            Some((by, why)) => (Some(by), Some(why)),
            None => (None, None),
        };
        CommandEntry {
            name: r.command.name.to_string(),
            registration: r.seq,
            status: if shadowed_by.is_some() {
                "shadowed"
            } else {
                "active"
            },
            shadowed_by,
            why,
            provider: r.provider.id.clone(),
            priority: r.provider.priority,
            scope: match &r.scope {
                cmdlog_engine::event::Scope::Global => "global".into(),
                cmdlog_engine::event::Scope::Agent(a) => a.clone(),
            },
            source: r.command.source,
            source_label: r.command.source_label.clone(),
            command_type: r.command.command_type,
            modes: r.command.effective_modes(),
            description: r.command.description.clone(),
            argument_hint: r.command.argument_hint.clone(),
            hidden: r.command.hidden,
            path: r.origin.as_ref().map(|o| o.path.clone()),
            template: r.template.clone(),
        }
    }
}

/// The registry as of a seq for one agent and mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryView {
    /// The seq it is as of.
    pub until: Seq,
    /// The agent.
    pub agent: String,
    /// The mode.
    pub mode: Mode,
    /// Every candidate, name-sorted, winner first within a name.
    pub commands: Vec<CommandEntry>,
    /// Active registrations not available to this agent in this mode (other modes or
    /// other agents), so the view accounts for every active registration.
    pub elsewhere: Vec<CommandEntry>,
}

impl RegistryView {
    /// Builds the view from a folded state.
    pub fn new(state: &LogState, agent: &str, mode: Mode) -> Self {
        let commands: Vec<CommandEntry> = state
            .registry
            .list_all(agent, mode)
            .into_iter()
            .map(|c| CommandEntry::new(c.registration, c.shadowed_by))
            .collect();
        let listed: std::collections::BTreeSet<Seq> =
            commands.iter().map(|c| c.registration).collect();
        let elsewhere = state
            .registry
            .active()
            .filter(|r| !listed.contains(&r.seq))
            .map(|r| CommandEntry::new(r, None))
            .collect();
        RegistryView {
            until: state.applied,
            agent: agent.into(),
            mode,
            commands,
            elsewhere,
        }
    }

    /// A plain-text table.
    pub fn render(&self) -> String {
        let mut out = format!(
            "registry as of seq {} for agent {} in {} mode\n",
            self.until, self.agent, self.mode
        );
        for c in &self.commands {
            match (&c.shadowed_by, &c.why) {
                (Some(by), Some(why)) => out.push_str(&format!(
                    "  /{:<20} seq {:<6} {:<14} shadowed by seq {by}: {why}\n",
                    c.name, c.registration, c.provider
                )),
                _ => out.push_str(&format!(
                    "  /{:<20} seq {:<6} {:<14} {}\n",
                    c.name, c.registration, c.provider, c.description
                )),
            }
        }
        if !self.elsewhere.is_empty() {
            out.push_str("not available here (other modes or agents):\n");
            for c in &self.elsewhere {
                let modes: Vec<&str> = c.modes.iter().map(|m| m.as_str()).collect();
                out.push_str(&format!(
                    "  /{:<20} seq {:<6} {:<14} modes {}, scope {}\n",
                    c.name,
                    c.registration,
                    c.provider,
                    modes.join(","),
                    c.scope
                ));
            }
        }
        out
    }
}

/// A name whose winner stayed but whose shadowed entries changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShadowingChange {
    /// The name.
    pub name: String,
    /// Registrations shadowed before.
    pub before: Vec<Seq>,
    /// Registrations shadowed after.
    pub after: Vec<Seq>,
}

/// A name whose winner changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WinnerChange {
    /// The winner before.
    pub before: CommandEntry,
    /// The winner after.
    pub after: CommandEntry,
    /// Whether the template text differs.
    pub template_changed: bool,
}

/// What changed in the registry between two views (same agent and mode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryDiff {
    /// The earlier seq.
    pub from: Seq,
    /// The later seq.
    pub to: Seq,
    /// Names that became available.
    pub added: Vec<CommandEntry>,
    /// Names that stopped being available.
    pub removed: Vec<CommandEntry>,
    /// Names that resolve to another registration (an edited file, a new provider).
    pub changed: Vec<WinnerChange>,
    /// Names with the same winner whose shadowed entries changed.
    pub shadowing: Vec<ShadowingChange>,
}

impl RegistryDiff {
    /// Compares two views.
    pub fn between(before: &RegistryView, after: &RegistryView) -> Self {
        fn by_name(v: &RegistryView) -> BTreeMap<&str, (&CommandEntry, Vec<Seq>)> {
            let mut out: BTreeMap<&str, (&CommandEntry, Vec<Seq>)> = BTreeMap::new();
            for c in &v.commands {
                match c.shadowed_by {
                    None => {
                        out.entry(&c.name).or_insert((c, Vec::new()));
                    }
                    Some(_) => {
                        if let Some((_, shadowed)) = out.get_mut(c.name.as_str()) {
                            shadowed.push(c.registration);
                        }
                    }
                }
            }
            out
        }
        let (a, b) = (by_name(before), by_name(after));
        let mut diff = RegistryDiff {
            from: before.until,
            to: after.until,
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            shadowing: Vec::new(),
        };
        for (name, (old, old_shadowed)) in &a {
            match b.get(name) {
                None => diff.removed.push((*old).clone()),
                Some((new, new_shadowed)) => {
                    if old.registration != new.registration {
                        diff.changed.push(WinnerChange {
                            before: (*old).clone(),
                            after: (*new).clone(),
                            template_changed: old.template != new.template,
                        });
                    } else if old_shadowed != new_shadowed {
                        diff.shadowing.push(ShadowingChange {
                            name: name.to_string(),
                            before: old_shadowed.clone(),
                            after: new_shadowed.clone(),
                        });
                    }
                }
            }
        }
        for (name, (new, _)) in &b {
            if !a.contains_key(name) {
                diff.added.push((*new).clone());
            }
        }
        diff
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.shadowing.is_empty()
    }

    /// A plain-text report.
    pub fn render(&self) -> String {
        let mut out = format!(
            "registry changes from seq {} to seq {}\n",
            self.from, self.to
        );
        for c in &self.added {
            out.push_str(&format!(
                "  + /{:<20} seq {:<6} {}\n",
                c.name, c.registration, c.provider
            ));
        }
        for c in &self.removed {
            out.push_str(&format!(
                "  - /{:<20} seq {:<6} {}\n",
                c.name, c.registration, c.provider
            ));
        }
        for c in &self.changed {
            let what = if c.template_changed {
                "template changed"
            } else {
                "now resolves elsewhere"
            };
            out.push_str(&format!(
                "  ~ /{:<20} seq {} ({}) -> seq {} ({}): {what}\n",
                c.before.name,
                c.before.registration,
                c.before.provider,
                c.after.registration,
                c.after.provider
            ));
        }
        for s in &self.shadowing {
            out.push_str(&format!(
                "  ! /{:<20} shadowed {:?} -> {:?}\n",
                s.name, s.before, s.after
            ));
        }
        if self.is_empty() {
            out.push_str("  (no change)\n");
        }
        out
    }
}
