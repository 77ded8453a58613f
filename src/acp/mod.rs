//! The Agent Client Protocol (agentclientprotocol.com, schema v1) as cmdlog
//! bridges it: JSON-RPC over stdio ([`rpc`]), an agent as a child process
//! ([`agent`]), and the recording of what crosses ([`record`]). The daemon's
//! bridge (`serve --agent`) and the stdio proxy (`cmdlog acp`) are built on these.

pub(crate) mod agent;
pub(crate) mod commands;
pub(crate) mod proxy;
pub(crate) mod record;
pub(crate) mod rpc;

use serde_json::{Value, json};

/// The blocks to send the agent when cmdlog's registry expanded the prompt: the
/// text blocks give way to `text`; the others (images, resources) go as they came.
pub(crate) fn with_text(blocks: &[Value], text: &str) -> Vec<Value> {
    let mut out = vec![json!({"type": "text", "text": text})];
    out.extend(blocks.iter().filter(|b| b["type"] != "text").cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expansion_replaces_the_text_and_keeps_the_rest() {
        let blocks = vec![
            json!({"type": "text", "text": "/greet world"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
        ];
        assert_eq!(
            with_text(&blocks, "Say hello to world"),
            vec![
                json!({"type": "text", "text": "Say hello to world"}),
                json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            ]
        );
    }
}
