// The agents' OpenTelemetry logs, received by `cmdlog serve` at `/v1/logs`:
// the real Claude Code 2.1.332, run headless (`claude -p`) against our fake
// Anthropic API, exporting its events with the documented variables
// (`CLAUDE_CODE_ENABLE_TELEMETRY`, `OTEL_LOGS_EXPORTER=otlp`, an endpoint and
// the daemon's token as a header), once with `http/protobuf` and once with
// `http/json`; then a session with cmdlog's hooks installed as well, and its
// transcript imported: one session, every prompt once, each fact seen by every
// path recorded as `agent/observed` of the first.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { AGENTS, CMDLOG, cmdlog, events, freePort, installed, kindOf, runAgent, world } from "./harness.mjs";
import { claudeEnv, fakeAnthropic } from "./fake-anthropic.mjs";
import { fakeGemini } from "./fake-gemini.mjs";
import { fakeOpenAIChat } from "./fake-openai-chat.mjs";
import { fakeResponses } from "./fake-openai-responses.mjs";
import crypto from "node:crypto";

const SKIP = !CMDLOG ? "CMDLOG_BIN is not set" : !installed() ? "the pinned agents are not installed (npm install --prefix tests/agents-real --no-save)" : false;
const TOKEN = "otel-suite-token-1234567890";

/** `cmdlog serve` in the world's workspace, on a free port, with a token. */
async function daemon(w, extra = []) {
  const port = await freePort();
  const child = spawn(CMDLOG, ["serve", "--addr", `127.0.0.1:${port}`, ...extra], {
    cwd: w.ws,
    env: { ...w.env, CMDLOG_TOKEN: TOKEN },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

/** The environment that points Claude Code's log exporter at the daemon. */
function telemetryEnv(url, protocol) {
  return {
    CLAUDE_CODE_ENABLE_TELEMETRY: "1",
    OTEL_LOGS_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${url}/v1/logs`,
    OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${TOKEN}`,
    OTEL_LOG_USER_PROMPTS: "1",
    OTEL_LOG_TOOL_DETAILS: "1",
    OTEL_LOGS_EXPORT_INTERVAL: "500",
  };
}

function useClaude(w) {
  const dir = path.join(w.root, "bin");
  fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(AGENTS.claude, path.join(dir, "claude"));
  w.env.PATH = `${dir}:${w.env.PATH}`;
  return path.join(dir, "claude");
}

const TOOL_RUN = { args: ["--dangerously-skip-permissions"], env: { IS_SANDBOX: "1" } };
const show = (evs) => evs.map((e) => `${e.seq} ${kindOf(e)} ${e.observed?.source ?? ""} ${JSON.stringify(e.data).slice(0, 140)}`).join("\n");

/** The log once the daemon stopped (Claude Code sends its last batch before it
 * exits, and the daemon answers once it is appended). */
async function stopped(w, d) {
  await d.stop();
  return events(w);
}

for (const protocol of ["http/protobuf", "http/json"]) {
  test(`Claude Code's telemetry (${protocol}) lands as its session`, { skip: SKIP, timeout: 300_000 }, async () => {
    const w = world(`otel-${protocol.replace("/", "-")}`);
    const api = await fakeAnthropic();
    const claude = useClaude(w);
    Object.assign(w.env, claudeEnv(api.url));
    const d = await daemon(w);
    try {
      const res = await runAgent(w, claude, ["-p", "TOOL:echo otel", ...TOOL_RUN.args], {
        env: { ...TOOL_RUN.env, ...telemetryEnv(d.url, protocol) },
        timeoutMs: 120_000,
      });
      assert.equal(res.code, 0, `claude -p failed:\n${res.stdout}\n${res.stderr}`);
      const evs = await stopped(w, d);
      const telemetry = evs.filter((e) => e.observed?.source === "claude-code telemetry");
      assert.ok(telemetry.length > 0, `no telemetry reached the daemon:\n${show(evs)}\n${d.stderr()}`);
      const sessions = new Set(telemetry.map((e) => e.session));
      assert.equal(sessions.size, 1, `one session: ${[...sessions]}`);
      const [session] = sessions;
      const mine = evs.filter((e) => e.session === session);
      const created = mine.filter((e) => e.type === "session/created");
      assert.equal(created.length, 1, show(mine));
      assert.equal(created[0].agent, "claude-code");
      // The prompt, as typed (OTEL_LOG_USER_PROMPTS=1), with Claude Code's prompt id.
      const prompts = mine.filter((e) => e.type === "session/prompt");
      assert.equal(prompts.length, 1, show(mine));
      assert.equal(prompts[0].data.text, "TOOL:echo otel");
      assert.match(prompts[0].data.prompt_id ?? "", /^[0-9a-f-]{36}$/);
      assert.equal(prompts[0].observed.fact, `prompt:${prompts[0].data.prompt_id}`);
      // The tool call (its decision) and its result, by the model's tool use id.
      const call = mine.find((e) => kindOf(e) === "session/update:tool_call");
      assert.ok(call, show(mine));
      assert.match(call.data.toolCallId, /^toolu_fake/);
      assert.equal(call.data.title, "Bash");
      assert.equal(call.data._meta.telemetry.decision, "accept", JSON.stringify(call.data));
      const done = mine.find((e) => kindOf(e) === "session/update:tool_call_update");
      assert.ok(done, show(mine));
      assert.equal(done.data.toolCallId, call.data.toolCallId);
      assert.equal(done.data.status, "completed");
      // OTEL_LOG_TOOL_DETAILS=1: the input comes with the result.
      assert.equal(done.data.rawInput?.command, "echo otel", JSON.stringify(done.data));
      assert.ok(Number(done.data._meta.telemetry.duration_ms) >= 0);
      // Two model requests (the call, then the reply to its result), with the
      // fake's token counts; the agent's time and order kept.
      const requests = mine.filter((e) => e.type === "agent/model_request");
      assert.ok(requests.length >= 2, show(mine));
      for (const r of requests) {
        assert.equal(r.data.input_tokens, 12, JSON.stringify(r.data));
        assert.equal(r.data.output_tokens, 6);
        assert.ok(typeof r.data.duration_ms === "number");
        assert.ok(r.observed.at > 1.7e12 && r.observed.at <= Date.now());
        assert.match(r.observed.key, /^\d+:[0-9a-f]{32}$/);
      }
      const verify = cmdlog(w, ["verify"]);
      assert.match(verify.stdout + verify.stderr, /ok|clean|verified/i);
    } finally {
      await d.stop().catch(() => {});
      await api.close();
      w.cleanup();
    }
  });
}

test("hooks, telemetry and the transcript of one Claude Code session: one session, every prompt once", { skip: SKIP, timeout: 300_000 }, async () => {
  const w = world("otel-three-paths");
  const api = await fakeAnthropic();
  const claude = useClaude(w);
  Object.assign(w.env, claudeEnv(api.url));
  cmdlog(w, ["hooks", "install", "claude-code"]);
  const d = await daemon(w);
  // The telemetry set up by cmdlog itself, in the user's settings (the
  // project's cannot turn it on), then taken out again at the end.
  const userSettings = "home/.claude/settings.json";
  w.put(userSettings, '{\n  "env": {\n    "MINE": "kept"\n  }\n}\n');
  const pristine = w.read(userSettings);
  cmdlog(w, ["otel", "setup", "claude-code", "--url", d.url], { env: { CMDLOG_TOKEN: TOKEN } });
  const configured = JSON.parse(w.read(userSettings));
  assert.equal(configured.env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, `${d.url}/v1/logs`);
  assert.equal(configured.env.MINE, "kept");
  try {
    const env = { ...TOOL_RUN.env };
    const first = await runAgent(w, claude, ["-p", "TOOL:echo three", "--output-format", "json", ...TOOL_RUN.args], { env, timeoutMs: 120_000 });
    assert.equal(first.code, 0, first.stderr);
    // The session's id, as Claude Code printed it (`--output-format json`).
    const session = JSON.parse(first.stdout).session_id;
    assert.ok(session, first.stdout);
    // The same session continued: a second prompt.
    const second = await runAgent(w, claude, ["-p", "and again", "--resume", session, ...TOOL_RUN.args], { env, timeoutMs: 120_000 });
    assert.equal(second.code, 0, second.stderr);
    await d.stop();
    const imported = cmdlog(w, ["import", "--from", "claude-code", "--json"]);
    const evs = events(w);
    const mine = evs.filter((e) => e.session === session);
    const sources = new Set(mine.map((e) => e.observed?.source).filter(Boolean));
    for (const s of ["claude-code hook", "claude-code telemetry", "claude-code transcript"]) {
      assert.ok(sources.has(s), `no ${s} events in the session (${[...sources]}):\n${show(mine)}\n${imported.stdout}`);
    }
    assert.equal(new Set(evs.filter((e) => e.type === "session/created").map((e) => e.session)).size,
      evs.filter((e) => e.type === "session/created").length, "each session created once");
    const prompts = mine.filter((e) => e.type === "session/prompt");
    assert.deepEqual(prompts.map((p) => p.data.text), ["TOOL:echo three", "and again"], show(mine));
    // Each prompt seen by the other two paths, recorded against it.
    for (const p of prompts) {
      const seenBy = mine.filter((e) => e.type === "agent/observed" && e.data.of === p.seq).map((e) => e.observed.source).sort();
      assert.deepEqual(seenBy, ["claude-code telemetry", "claude-code transcript"], `${p.data.text}:\n${show(mine)}`);
    }
    // The tool call once, its result once; the telemetry's duration added to it.
    const calls = mine.filter((e) => kindOf(e) === "session/update:tool_call");
    assert.equal(calls.length, 1, show(mine));
    const results = mine.filter((e) => kindOf(e) === "session/update:tool_call_update" && ["completed", "failed"].includes(e.data.status));
    assert.equal(results.length, 1, show(mine));
    const added = mine.find((e) => e.type === "agent/observed" && e.data.of === results[0].seq && e.observed.source === "claude-code telemetry");
    assert.ok(added?.data.adds?._meta?.telemetry?.duration_ms !== undefined, show(mine));
    // Every agent/observed names an earlier event of the session that states its fact.
    for (const o of mine.filter((e) => e.type === "agent/observed")) {
      const of = mine.find((e) => e.seq === o.data.of);
      assert.ok(of && of.seq < o.seq, JSON.stringify(o));
      assert.equal(of.observed.fact, o.data.fact.replace(/#done$/, ""), JSON.stringify(o));
      assert.ok(!("bookkeeping" in (o.data.adds ?? {})), JSON.stringify(o));
    }
    // Importing again adds nothing; the log verifies.
    const before = events(w).length;
    cmdlog(w, ["import", "--from", "claude-code"]);
    assert.equal(events(w).length, before);
    cmdlog(w, ["verify"]);
    // The user's settings given back as they were.
    cmdlog(w, ["otel", "remove", "claude-code"]);
    assert.equal(w.read(userSettings), pristine);
  } finally {
    await d.stop().catch(() => {});
    await api.close();
    w.cleanup();
  }
});

test("Gemini CLI's telemetry (OTLP/HTTP JSON), set up by cmdlog, lands as its session", { skip: SKIP, timeout: 300_000 }, async () => {
  const w = world("otel-gemini");
  const server = await fakeGemini();
  // The world's user settings, as gemini.test.mjs writes them, without a
  // `telemetry` of their own; the suite's switch-off taken away.
  w.put("home/.gemini/settings.json", JSON.stringify({
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    ide: { enabled: false },
    security: { auth: { selectedType: "gemini-api-key" } },
  }, null, 2));
  delete w.env.GEMINI_TELEMETRY_ENABLED;
  const d = await daemon(w);
  try {
    cmdlog(w, ["otel", "setup", "gemini", "--url", d.url], { env: { CMDLOG_TOKEN: TOKEN } });
    const env = {
      GEMINI_API_KEY: "fake-key-for-loopback",
      GOOGLE_GEMINI_BASE_URL: server.url,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      // Gemini takes no headers from its settings (cmdlog otel setup says so).
      OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${TOKEN}`,
    };
    const res = await runAgent(w, AGENTS.gemini, ["-p", "TOOL:echo gem", "-o", "json", "-m", "gemini-2.5-flash", "--yolo"], { env, timeoutMs: 120_000 });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr.slice(0, 2000)}`);
    const session = JSON.parse(res.stdout).session_id;
    const evs = await stopped(w, d);
    const mine = evs.filter((e) => e.session === session);
    const telemetry = mine.filter((e) => e.observed?.source === "gemini telemetry");
    assert.ok(telemetry.length > 0, `no Gemini telemetry in session ${session}:\n${show(evs)}\n${d.stderr()}`);
    assert.equal(mine.filter((e) => e.type === "session/created").length, 1, show(mine));
    const prompts = mine.filter((e) => e.type === "session/prompt");
    assert.deepEqual(prompts.map((p) => p.data.text), ["TOOL:echo gem"], show(mine));
    const call = mine.find((e) => kindOf(e) === "session/update:tool_call");
    assert.ok(call, show(mine));
    assert.equal(call.data.rawInput?.command, "echo gem", JSON.stringify(call.data));
    const result = mine.find((e) => kindOf(e) === "session/update:tool_call_update");
    assert.equal(result?.data.status, "completed", show(mine));
    const requests = mine.filter((e) => e.type === "agent/model_request");
    assert.ok(requests.length >= 2, show(mine));
    assert.ok(requests.every((r) => typeof r.data.input_tokens === "number"), show(requests));
    cmdlog(w, ["verify"]);
    cmdlog(w, ["otel", "remove", "gemini"]);
    assert.ok(!w.read("home/.gemini/settings.json").includes("telemetry"));
  } finally {
    await d.stop().catch(() => {});
    await server.close();
    w.cleanup();
  }
});

test("Qwen Code's telemetry (OTLP/HTTP JSON), set up by cmdlog, lands as its session", { skip: SKIP, timeout: 300_000 }, async () => {
  const w = world("otel-qwen");
  const fake = await fakeOpenAIChat();
  // As qwen.test.mjs writes the user's settings, without a `telemetry` of their own.
  w.put("home/.qwen/settings.json", JSON.stringify({
    $version: 4,
    privacy: { usageStatisticsEnabled: false },
    general: { enableAutoUpdate: false },
    memory: { enableManagedAutoMemory: false },
  }, null, 2) + "\n");
  const d = await daemon(w);
  try {
    const setup = cmdlog(w, ["otel", "setup", "qwen", "--url", d.url], { env: { CMDLOG_TOKEN: TOKEN } });
    assert.match(setup.stdout, /OTEL_EXPORTER_OTLP_HEADERS/, "says the token goes in the environment");
    const session = crypto.randomUUID();
    const res = await runAgent(w, AGENTS.qwen, ["--yolo", "-p", "please TOOL:echo qw", "--session-id", session], {
      env: {
        ...fake.env,
        QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
        OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${TOKEN}`,
      },
      timeoutMs: 120_000,
    });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr.slice(0, 2000)}`);
    const evs = await stopped(w, d);
    const mine = evs.filter((e) => e.session === session);
    const telemetry = mine.filter((e) => e.observed?.source === "qwen telemetry");
    assert.ok(telemetry.length > 0, `no Qwen telemetry in session ${session}:\n${show(evs)}\n${d.stderr()}`);
    assert.equal(mine.filter((e) => e.type === "session/created").length, 1, show(mine));
    const prompts = mine.filter((e) => e.type === "session/prompt");
    assert.equal(prompts.length, 1, show(mine));
    assert.match(prompts[0].data.text, /TOOL:echo qw/);
    const call = mine.find((e) => kindOf(e) === "session/update:tool_call");
    assert.ok(call, show(mine));
    assert.equal(call.data.rawInput?.command, "echo qw", JSON.stringify(call.data));
    assert.equal(call.observed.fact, `tool_call:${call.data.toolCallId}`, "Qwen names its calls: joined");
    const result = mine.find((e) => kindOf(e) === "session/update:tool_call_update");
    assert.equal(result?.data.status, "completed", show(mine));
    assert.ok(mine.some((e) => e.type === "agent/model_request" && typeof e.data.input_tokens === "number"), show(mine));
    cmdlog(w, ["verify"]);
    cmdlog(w, ["otel", "remove", "qwen"]);
    assert.ok(!w.read("home/.qwen/settings.json").includes("telemetry"));
  } finally {
    await d.stop().catch(() => {});
    await fake.close();
    w.cleanup();
  }
});

test("Codex's telemetry (OTLP/HTTP protobuf), set up by cmdlog, lands as its session", { skip: SKIP, timeout: 300_000 }, async () => {
  const w = world("otel-codex");
  const server = await fakeResponses();
  const codexHome = path.join(w.home, ".codex");
  // As codex.test.mjs writes the user's config.
  w.put("home/.codex/config.toml", [
    'model = "fake-model"',
    'model_provider = "fake"',
    "",
    "[model_providers.fake]",
    'name = "fake"',
    `base_url = "${server.url}"`,
    'wire_api = "responses"',
    'env_key = "FAKE_API_KEY"',
    "",
  ].join("\n"));
  const config = w.read("home/.codex/config.toml");
  const d = await daemon(w);
  try {
    cmdlog(w, ["otel", "setup", "codex", "--url", d.url], { env: { CMDLOG_TOKEN: TOKEN, CODEX_HOME: codexHome } });
    const res = await runAgent(w, AGENTS.codex, ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "TOOL:echo cx"], {
      env: { CODEX_HOME: codexHome, FAKE_API_KEY: "loopback-only" },
      timeoutMs: 120_000,
    });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr.slice(0, 2000)}`);
    const session = /^session id: (\S+)$/m.exec(res.stderr)?.[1];
    assert.ok(session, res.stderr);
    const evs = await stopped(w, d);
    const mine = evs.filter((e) => e.session === session);
    const telemetry = mine.filter((e) => e.observed?.source === "codex telemetry");
    assert.ok(telemetry.length > 0, `no Codex telemetry in session ${session}:\n${show(evs)}\n${d.stderr()}`);
    assert.equal(mine.filter((e) => e.type === "session/created").length, 1, show(mine));
    assert.equal(mine.filter((e) => e.type === "session/prompt").length, 1, show(mine));
    const result = mine.find((e) => kindOf(e) === "session/update:tool_call_update");
    assert.ok(result, show(mine));
    assert.equal(result.observed.fact, `tool_result:${result.data.toolCallId}`);
    assert.ok(mine.some((e) => e.type === "agent/model_request"), show(mine));
    cmdlog(w, ["verify"]);
    cmdlog(w, ["otel", "remove", "codex"], { env: { CODEX_HOME: codexHome } });
    assert.equal(w.read("home/.codex/config.toml"), config);
  } finally {
    await d.stop().catch(() => {});
    await server.close();
    w.cleanup();
  }
});
