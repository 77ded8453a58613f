//! The published clients against cmdlog: runs the Node harness in `tests/node`
//! (`@qwen-code/sdk`'s DaemonClient through a whole session lifecycle against
//! `cmdlog serve --agent`, and `@agentclientprotocol/sdk`'s client through
//! `cmdlog acp`, every frame checked against the ACP schema).
//!
//! It needs the harness's packages: `npm ci --prefix tests/node` (CI runs it and
//! sets CMDLOG_REQUIRE_NODE_TESTS=1, so a missing install fails there). Without
//! them, and without that variable, it says it was skipped and why.

use std::path::Path;

use cmdlog_test_support::node::NodeSuite;

#[test]
fn published_clients_pass_against_cmdlog() {
    NodeSuite {
        dir: &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node"),
        tests: &[
            "validate.test.mjs",
            "agent.test.mjs",
            "daemon.test.mjs",
            "acp-proxy.test.mjs",
        ],
        installed: &[
            "@qwen-code/sdk/package.json",
            "@agentclientprotocol/sdk/package.json",
        ],
        required_by: "CMDLOG_REQUIRE_NODE_TESTS",
        install: "npm ci --prefix tests/node",
        what: "the Node harness (the published qwen and ACP clients)",
        figures: &[],
        cmdlog: env!("CARGO_BIN_EXE_cmdlog"),
        unset: &["QWEN_SERVER_TOKEN", "CMDLOG_TOKEN"],
    }
    .run();
}
