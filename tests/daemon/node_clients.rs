//! The published clients against cmdlog: runs the Node harness in `tests/node`
//! (`@qwen-code/sdk`'s DaemonClient through a whole session lifecycle against
//! `cmdlog serve --agent`, and `@agentclientprotocol/sdk`'s client through
//! `cmdlog acp`, every frame checked against the ACP schema).
//!
//! It needs the harness's packages: `npm ci --prefix tests/node` (CI runs it and
//! sets CMDLOG_REQUIRE_NODE_TESTS=1, so a missing install fails there). Without
//! them, and without that variable, it says it was skipped and why.

use std::path::Path;
use std::process::Command;

#[test]
fn published_clients_pass_against_cmdlog() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    let required = std::env::var_os("CMDLOG_REQUIRE_NODE_TESTS").is_some_and(|v| v == "1");
    let installed = dir
        .join("node_modules/@qwen-code/sdk/package.json")
        .exists()
        && dir
            .join("node_modules/@agentclientprotocol/sdk/package.json")
            .exists();
    let node = Command::new("node").arg("--version").output();
    if !installed || node.is_err() {
        assert!(
            !required,
            "the Node harness is not installed: run `npm ci --prefix tests/node` (node and npm must be on PATH)"
        );
        eprintln!(
            "SKIPPED: the Node harness is not installed; run `npm ci --prefix tests/node` to test the published clients"
        );
        return;
    }
    let tests = [
        "validate.test.mjs",
        "agent.test.mjs",
        "daemon.test.mjs",
        "acp-proxy.test.mjs",
    ];
    let out = Command::new("node")
        .args(["--test", "--test-concurrency=1", "--test-reporter=tap"])
        .args(tests)
        .current_dir(&dir)
        .env("CMDLOG_BIN", env!("CARGO_BIN_EXE_cmdlog"))
        .env_remove("QWEN_SERVER_TOKEN")
        .env_remove("CMDLOG_TOKEN")
        .output()
        .expect("node runs");
    let report = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("# ") && !l.starts_with("# Subtest"))
        .collect();
    eprintln!("{}", summary.join("\n"));
    assert!(
        out.status.success(),
        "the Node harness failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        summary
            .iter()
            .any(|l| l.starts_with("# pass ") && l != &"# pass 0"),
        "no test ran: {summary:?}"
    );
}
