// The time a real agent's turn takes, four ways, interleaved in one run: Qwen
// Code 0.24.4 over ACP directly (`qwen --acp`), through `cmdlog acp`, behind
// the real `qwen serve`, and behind `cmdlog serve --agent "qwen --acp"` (both
// daemons driven by @qwen-code/sdk's DaemonClient). One session each, opened
// first; then ROUNDS rounds, each sending one prompt to every way in turn, so
// the machine's drift falls on all four alike. Prints the median and p95 per way
// (docs/performance.md has the figures and the command). Not a test: run it by
// hand on a quiet machine, with a release build:
//
//   cargo build --release
//   cd tests/agents-real && CMDLOG_BIN=$PWD/../../target/release/cmdlog node latency.mjs [ROUNDS]
import { spawn } from "node:child_process";
import { DaemonClient, DaemonSessionClient } from "@qwen-code/sdk/daemon";

import { AGENTS, CMDLOG, NODE, freePort, installed, world } from "./harness.mjs";
import { fakeOpenAIChat } from "./fake-openai-chat.mjs";

if (!CMDLOG || !installed()) {
  console.error("set CMDLOG_BIN and install the pinned agents (npm install --prefix tests/agents-real --no-save)");
  process.exit(2);
}
delete process.env.QWEN_SERVER_TOKEN;
const ROUNDS = Number(process.argv[2] ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** An ACP client over a child's stdio that answers permission requests "allow". */
async function acpSession(argv, w, env) {
  const child = spawn(argv[0], argv.slice(1), { cwd: w.ws, env: { ...w.env, ...env }, stdio: ["pipe", "pipe", "ignore"] });
  const waiters = new Map();
  let buffered = "";
  let next = 1;
  const write = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    let i;
    while ((i = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      if (!line.trim()) continue;
      const m = JSON.parse(line);
      if (m.method === undefined && waiters.has(m.id)) {
        waiters.get(m.id)(m);
        waiters.delete(m.id);
      } else if (m.method !== undefined && m.id !== undefined) {
        write({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "not offered" } });
      }
    }
  });
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = next++;
      waiters.set(id, resolve);
      write({ jsonrpc: "2.0", id, method, params });
    });
  await request("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
  const { result } = await request("session/new", { cwd: w.ws, mcpServers: [] });
  return {
    prompt: (text) => request("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text }] }),
    close: () => {
      child.stdin.end();
      setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
    },
  };
}

/** A daemon (`qwen serve` or `cmdlog serve --agent`) and one SDK session on it. */
async function daemonSession(argv, w, env, base) {
  const child = spawn(argv[0], argv.slice(1), { cwd: w.ws, env: { ...w.env, ...env }, stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {
      // not yet
    }
    if (i > 600) throw new Error(`${argv.join(" ")}: no /health`);
    await sleep(100);
  }
  const dc = new DaemonClient({ baseUrl: base, fetchTimeoutMs: 120_000 });
  const caps = await dc.capabilities();
  const session = await DaemonSessionClient.createOrAttach(dc, { workspaceCwd: caps.workspaceCwd, sessionScope: "thread" });
  return {
    prompt: (text) => session.prompt({ prompt: [{ type: "text", text }] }),
    close: () => child.kill("SIGTERM"),
  };
}

function qwenWorld(name) {
  const w = world(name);
  w.put(
    "home/.qwen/settings.json",
    JSON.stringify({ $version: 4, privacy: { usageStatisticsEnabled: false }, general: { enableAutoUpdate: false }, telemetry: { enabled: false } }),
  );
  return w;
}

const fake = await fakeOpenAIChat();
const env = { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" };
const qwen = [NODE, AGENTS.qwen, "--acp"];
const ways = {};
{
  const w = qwenWorld("lat-direct");
  ways.direct = await acpSession(qwen, w, env);
}
{
  const w = qwenWorld("lat-acp");
  ways["cmdlog acp"] = await acpSession([CMDLOG, "acp", "--", ...qwen], w, env);
}
{
  const w = qwenWorld("lat-qwen-serve");
  const port = await freePort();
  ways["qwen serve"] = await daemonSession(
    [NODE, AGENTS.qwen, "serve", "--port", String(port), "--hostname", "127.0.0.1", "--workspace", w.ws, "--no-web"],
    w,
    env,
    `http://127.0.0.1:${port}`,
  );
}
{
  const w = qwenWorld("lat-cmdlog-serve");
  const port = await freePort();
  ways["cmdlog serve --agent"] = await daemonSession(
    [CMDLOG, "serve", "--addr", `127.0.0.1:${port}`, "--agent", qwen.join(" ")],
    w,
    env,
    `http://127.0.0.1:${port}`,
  );
}

// One warm-up prompt each, not counted: the agents load lazily.
for (const way of Object.values(ways)) await way.prompt("warm up");
const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, way] of Object.entries(ways)) {
    const t = performance.now();
    await way.prompt(`round ${round} for ${name}`);
    times[name].push(performance.now() - t);
  }
}
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const direct = q(times.direct, 0.5);
console.log(`| way | median | p95 | median / direct |`);
console.log(`|---|---|---|---|`);
for (const [name, xs] of Object.entries(times)) {
  console.log(`| ${name} | ${q(xs, 0.5).toFixed(1)} ms | ${q(xs, 0.95).toFixed(1)} ms | ${(q(xs, 0.5) / direct).toFixed(3)} |`);
}
console.log(`(${ROUNDS} prompts each, interleaved; Qwen Code 0.24.4 on the OpenAI Chat fake)`);
for (const way of Object.values(ways)) way.close();
await fake.close();
process.exit(0);
