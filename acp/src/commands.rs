//! An ACP agent's own commands (its `available_commands_update`) in cmdlog's
//! registry, as the `acp-agent` provider: a slash line naming one is logged as a
//! run and handed to the agent unchanged. Inside a bridge the agent's commands
//! win: they rank above every command of cmdlog's, and cmdlog's built-ins yield
//! (a bridge's prompts run with them off), so `/model` and `/help` are the
//! agent's.

use std::collections::HashMap;
use std::sync::Arc;

use cmdlog_engine::event::{ProviderRef, Scope};
use cmdlog_engine::{
    CommandHandler, CommandKind, CommandName, CommandResult, CommandSource, CommandSpec,
    CommandType, Disposer, Engine, Invocation, Mode, NewRegistration,
};
use serde_json::Value;

/// The provider's priority: above every command of cmdlog's, built-ins included
/// ([`cmdlog_engine::BUILTIN_PRIORITY`]), so the agent's command of a name wins.
pub const AGENT_PROVIDER_PRIORITY: i32 = 2000;

const _: () = assert!(AGENT_PROVIDER_PRIORITY > cmdlog_engine::BUILTIN_PRIORITY);

/// The agent's commands registered, by name.
pub struct AgentCommands {
    label: String,
    registered: tokio::sync::Mutex<HashMap<String, (Value, Disposer)>>,
    /// Names already said to be unusable (said once, not per session).
    unusable: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl AgentCommands {
    /// `label` names the agent in listings (its command line).
    pub fn new(label: &str) -> Self {
        AgentCommands {
            label: label.to_string(),
            registered: tokio::sync::Mutex::new(HashMap::new()),
            unusable: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        }
    }

    /// Makes the registered commands the agent's `availableCommands`: new ones
    /// registered, gone or changed ones unregistered.
    pub async fn sync(&self, engine: &Engine, list: &Value) {
        let mut registered = self.registered.lock().await;
        let wanted: HashMap<String, Value> = list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["name"].as_str()?.trim_start_matches('/').to_string(),
                    c.clone(),
                ))
            })
            .collect();
        let gone: Vec<String> = registered
            .iter()
            .filter(|(name, (was, _))| wanted.get(*name) != Some(was))
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            if let Some((_, disposer)) = registered.remove(&name) {
                let _ = disposer.dispose().await;
            }
        }
        let mut names: Vec<&String> = wanted.keys().collect();
        names.sort();
        let mut unusable = Vec::new();
        for (item, name) in names.into_iter().enumerate() {
            if registered.contains_key(name) {
                continue;
            }
            let command = &wanted[name];
            let Some(new) = registration(name, command, &self.label, item as u32) else {
                unusable.push(name.clone());
                continue;
            };
            match engine.register(new).await {
                Ok(disposer) => {
                    registered.insert(name.clone(), (command.clone(), disposer));
                }
                Err(e) => eprintln!(
                    "cmdlog: cannot register the agent's /{}: {}",
                    cmdlog_common::terminal::clean(name),
                    cmdlog_common::terminal::clean(&e.to_string())
                ),
            }
        }
        // Gemini CLI lists subcommands as names with spaces ("memory show"): said
        // once, in one line.
        let mut said = self.unusable.lock().unwrap_or_else(|p| p.into_inner());
        unusable.retain(|n| said.insert(n.clone()));
        if !unusable.is_empty() {
            let names: Vec<String> = unusable
                .iter()
                .map(|n| format!("{:?}", cmdlog_common::terminal::clean(n)))
                .collect();
            eprintln!(
                "cmdlog: {} of the agent's commands are not valid command names ({}); lines naming them go to the agent as plain prompts",
                names.len(),
                names.join(", ")
            );
        }
    }

    /// Unregisters them all (the agent is gone).
    pub async fn clear(&self) {
        for (_, (_, disposer)) in self.registered.lock().await.drain() {
            let _ = disposer.dispose().await;
        }
    }
}

/// The registration of one of the agent's commands: a handler that hands the line
/// to the agent unchanged, so the run is logged and the agent does the work.
fn registration(name: &str, command: &Value, label: &str, item: u32) -> Option<NewRegistration> {
    let mut spec = CommandSpec::new(
        CommandName::new(name).ok()?,
        CommandSource::PluginCommand,
        CommandKind::Skill,
    );
    spec.command_type = Some(CommandType::Local);
    // The agent offers it wherever it runs: in every mode.
    spec.supported_modes = Some(Mode::ALL.to_vec());
    spec.description = command["description"].as_str().unwrap_or("").to_string();
    spec.argument_hint = command["input"]["hint"].as_str().map(str::to_string);
    spec.source_label = label.to_string();
    let line_name = name.to_string();
    let handler: Arc<dyn CommandHandler> = Arc::new(move |inv: Invocation| {
        let text = format!("/{line_name}{}", inv.raw_input);
        async move { Ok(CommandResult::Prompt { text }) }
    });
    Some(NewRegistration {
        scope: Scope::Global,
        provider: ProviderRef {
            id: "acp-agent".into(),
            priority: AGENT_PROVIDER_PRIORITY,
            level: "runtime".into(),
            order: 1,
            item,
        },
        command: spec,
        handler: Some(handler),
        template: None,
        origin: None,
    })
}

/// The list a client sees: the agent's commands as it sent them (each one's
/// `_meta` too), then cmdlog's of the names the agent does not have.
pub fn merge(agent: &Value, ours: &Value) -> Value {
    let agent = agent.as_array().cloned().unwrap_or_default();
    let taken: std::collections::HashSet<String> = agent
        .iter()
        .filter_map(|c| c["name"].as_str())
        .map(|n| n.trim_start_matches('/').to_string())
        .collect();
    let mut out = agent;
    out.extend(
        ours.as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["name"].as_str().is_some_and(|n| !taken.contains(n)))
            .cloned(),
    );
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_agents_commands_win_and_keep_their_meta() {
        let agent = json!([
            {"name": "review", "description": "agent's", "_meta": {"source": "skill"}},
            {"name": "compress", "description": "c"}
        ]);
        let ours = json!([{"name": "review", "description": "ours"}, {"name": "greet", "description": "g"}]);
        let merged = merge(&agent, &ours);
        let names: Vec<&str> = merged
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["review", "compress", "greet"]);
        assert_eq!(merged[0], agent[0], "the agent's entry as it sent it");
    }
}
