//! The agreement check: where an agent reports its own expansion of a slash
//! command and cmdlog resolves the same name from the same command files, does
//! cmdlog's expansion say the same thing, byte for byte? Every real session is
//! then a fidelity test of cmdlog's dialects; `cmdlog drift --agents` lists the
//! disagreements.

use cmdlog_engine::Dialect;
use cmdlog_engine::discovery::Discovery;
use cmdlog_engine::event::AgentCheck;
use cmdlog_engine::expand::{ExpandInput, expand};

use crate::hook::Expansion;
use crate::kind::AgentKind;

/// cmdlog's verdict on `expansion`, when the payload carried the agent's
/// expansion and one of the agent's command files answers to the name.
pub(crate) fn check(
    agent: AgentKind,
    discovery: &Discovery,
    expansion: &Expansion,
) -> Option<AgentCheck> {
    let theirs = expansion.prompt.as_deref()?;
    let found = discovery
        .commands
        .iter()
        .filter(|d| {
            agent.providers().contains(&d.provider.id.as_str())
                && d.command.answers_to(&expansion.name)
        })
        .max_by(|a, b| {
            a.provider
                .priority
                .cmp(&b.provider.priority)
                .then(b.provider.item.cmp(&a.provider.item))
        })?;
    let ours = expand(
        &found.template,
        found.command.dialect.unwrap_or(Dialect::Markdown),
        &ExpandInput::new(&found.command, &expansion.raw_input),
    )
    .unwrap_or_else(|e| format!("(cmdlog could not expand it: {e})"));
    let identical = ours == theirs;
    Some(AgentCheck {
        path: found.origin.path.clone(),
        content_hash: found.origin.content_hash.clone(),
        identical,
        cmdlog_prompt: (!identical).then_some(ours),
    })
}
