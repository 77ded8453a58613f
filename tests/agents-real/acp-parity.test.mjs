// ACP parity: the real Qwen Code (`qwen --acp`) and Gemini CLI
// (`gemini --experimental-acp`), each driven by the same scripted ACP client
// twice — talking to the agent directly, and through `cmdlog acp --` — against
// our model servers on loopback. What the editor sees must be the same message
// for message; the differences cmdlog makes on purpose are the only ones allowed
// (docs/cli.md, `acp`): `loadSession: true` and `sessionCapabilities.resume` in
// the `initialize` answer, and the
// command list holding cmdlog's command files after the agent's own entries
// (those unchanged, `_meta` included). The log of the proxied run must verify
// and hold the conversation. Also the time a prompt takes each way (printed as
// ACP-LATENCY lines for docs/performance.md).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { after, test } from "node:test";
import assert from "node:assert/strict";

import { AGENTS, CMDLOG, NODE, cmdlog, events, installed, world } from "./harness.mjs";
import { fakeGemini } from "./fake-gemini.mjs";
import { fakeOpenAIChat } from "./fake-openai-chat.mjs";

const SKIP = !CMDLOG
  ? "CMDLOG_BIN is not set"
  : !installed()
    ? "the pinned agents are not installed (npm install --prefix tests/agents-real --no-save)"
    : false;

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * One ACP conversation: `initialize`, `session/new`, then each prompt in turn,
 * answering the agent's permission requests with its first "allow" option.
 * Resolves with every message the client read, in order, and the answers.
 */
async function converse(w, argv, env, prompts) {
  const child = spawn(argv[0], argv.slice(1), {
    cwd: w.ws,
    env: { ...w.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const messages = [];
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
      const m = JSON.parse(line); // only JSON-RPC may reach the editor
      messages.push(m);
      if (m.method === undefined && waiters.has(m.id)) {
        waiters.get(m.id)(m);
        waiters.delete(m.id);
      } else if (m.method !== undefined && m.id !== undefined) {
        if (m.method === "session/request_permission") {
          const options = m.params?.options ?? [];
          const allow = options.find((o) => String(o.kind).startsWith("allow")) ?? options[0];
          write({ jsonrpc: "2.0", id: m.id, result: { outcome: { outcome: "selected", optionId: allow?.optionId } } });
        } else {
          write({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: `not offered: ${m.method}` } });
        }
      }
    }
  });
  const exited = once(child, "exit");
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => reject(new Error(`no answer to ${method} in 90 s:\n${stderr}`)), 90_000);
      waiters.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      exited.then(() => {
        if (waiters.has(id)) {
          clearTimeout(timer);
          waiters.delete(id);
          resolve({ exited: true });
        }
      });
      write({ jsonrpc: "2.0", id, method, params });
    });
  const init = await request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const created = await request("session/new", { cwd: w.ws, mcpServers: [] });
  const sid = created.result?.sessionId;
  const answers = [];
  for (const text of prompts) {
    const started = performance.now();
    const answer = await request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text }] });
    answers.push({ answer, ms: performance.now() - started });
    if (answer.exited) break;
  }
  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const [code, signal] = await exited;
  clearTimeout(timer);
  return { init, created, sid, answers, messages, code, signal, stderr };
}

/** What the editor saw, as a comparable sequence (ids and session ids left out). */
function shape(messages) {
  const out = [];
  for (const m of messages) {
    if (m.method === "session/update") {
      const u = m.params.update;
      const kind = u.sessionUpdate;
      if (kind === "available_commands_update") continue; // compared on its own
      const text = u.content?.text;
      const last = out.at(-1);
      if ((kind === "agent_message_chunk" || kind === "agent_thought_chunk") && last?.kind === kind) {
        last.text += text ?? "";
      } else if (kind === "tool_call" || kind === "tool_call_update") {
        out.push({ kind, status: u.status ?? null, title: u.title ?? null });
      } else {
        out.push({ kind, text: text ?? null });
      }
    } else if (m.method !== undefined) {
      out.push({ kind: m.id === undefined ? `notify ${m.method}` : `ask ${m.method}` });
    } else if (m.result?.stopReason !== undefined) {
      out.push({ kind: "answer", stopReason: m.result.stopReason });
    } else if (m.error) {
      out.push({ kind: "error", code: m.error.code });
    }
  }
  return out;
}

/** A JSON value as text with every object's keys sorted: equal values, equal text. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * A message as it was before cmdlog kept its large values as blobs
 * (docs/events.md, `acp/message`): each marker replaced by its blob's value.
 */
function fromBlobs(w, value) {
  if (Array.isArray(value)) return value.map((v) => fromBlobs(w, v));
  if (!value || typeof value !== "object") return value;
  if (value.cmdlog === "value stored as a blob") return JSON.parse(cmdlog(w, ["blob", value.blob]).stdout);
  if (value.cmdlog === "event stored as blobs") {
    const event = JSON.parse(value.blobs.map((h) => cmdlog(w, ["blob", h]).stdout).join(""));
    return fromBlobs(w, event.data?.message ?? event.message);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromBlobs(w, v)]));
}

/** The last command list the editor saw. */
function lastCommands(messages) {
  return messages.filter((m) => m.params?.update?.sessionUpdate === "available_commands_update").at(-1)?.params.update;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const AGENT_RUNS = {
  qwen: {
    argv: () => [NODE, AGENTS.qwen, "--acp"],
    async setup(w) {
      w.put(
        "home/.qwen/settings.json",
        JSON.stringify({ $version: 4, privacy: { usageStatisticsEnabled: false }, general: { enableAutoUpdate: false }, telemetry: { enabled: false } }),
      );
      const fake = await fakeOpenAIChat();
      cleanups.push(() => fake.close());
      return { env: { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" } };
    },
  },
  gemini: {
    argv: () => [NODE, AGENTS.gemini, "--experimental-acp"],
    async setup(w) {
      w.put(
        "home/.gemini/settings.json",
        JSON.stringify({
          general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          ide: { enabled: false },
          security: { auth: { selectedType: "gemini-api-key" } },
        }),
      );
      const fake = await fakeGemini();
      cleanups.push(() => fake.close());
      return { env: { GEMINI_API_KEY: "fake-key-for-loopback", GOOGLE_GEMINI_BASE_URL: fake.url, GEMINI_CLI_TRUST_WORKSPACE: "true" } };
    },
  },
};

const PROMPTS = ["hello parity", "and a second prompt"];

for (const [name, agent] of Object.entries(AGENT_RUNS)) {
  test(`${name}: through cmdlog acp the editor sees what it sees directly`, { skip: SKIP }, async (t) => {
    const w = world(`acp-${name}`);
    cleanups.push(() => w.cleanup());
    const { env } = await agent.setup(w);
    const argv = agent.argv();
    const direct = await converse(w, argv, env, PROMPTS);
    const proxied = await converse(w, [CMDLOG, "acp", "--", ...argv], env, PROMPTS);
    for (const run of [direct, proxied]) {
      assert.ok(run.sid, `a session: ${JSON.stringify(run.created)}\n${run.stderr}`);
      assert.equal(run.answers.length, PROMPTS.length, run.stderr);
    }

    await t.test("every message the same, in the same order", () => {
      assert.deepEqual(shape(proxied.messages), shape(direct.messages));
    });
    await t.test("initialize: the agent's answer, loadSession and resume on (cmdlog reopens any session it recorded)", () => {
      const a = structuredClone(direct.init.result);
      const b = structuredClone(proxied.init.result);
      assert.equal(b.agentCapabilities.loadSession, true);
      assert.deepEqual(b.agentCapabilities.sessionCapabilities.resume, a.agentCapabilities.sessionCapabilities?.resume ?? {});
      for (const x of [a, b]) {
        delete x.agentCapabilities.loadSession;
        delete x.agentCapabilities.sessionCapabilities?.resume;
        if (x.agentCapabilities.sessionCapabilities && Object.keys(x.agentCapabilities.sessionCapabilities).length === 0) {
          delete x.agentCapabilities.sessionCapabilities;
        }
      }
      assert.deepEqual(b, a);
    });
    await t.test("the agent's commands reach the editor as it sent them, _meta included", (tt) => {
      const a = lastCommands(direct.messages);
      const b = lastCommands(proxied.messages);
      if (!a) {
        assert.ok(true, "the agent sends no command list");
        return;
      }
      assert.ok(b, "a list through cmdlog");
      // Compared as values: JSON objects have no key order (cmdlog writes keys
      // sorted, agents in their own order).
      const entries = new Set(a.availableCommands.map((c) => canonical(c)));
      const fromAgent = proxied.messages.some((m) =>
        m.params?.update?.availableCommands?.some((c) => entries.has(canonical(c))),
      );
      if (!fromAgent) {
        // Qwen Code sends its list when its skills have loaded, which can be
        // after a short run's last answer on a loaded machine (seen in CI).
        // Whether the agent sent it through cmdlog at all is in the log: a
        // list the agent sent that the editor did not get is cmdlog's fault.
        // (A large message keeps its large values as blobs: looked for as text.)
        const sent = events(w).some(
          (e) =>
            e.type === "acp/message" &&
            e.data.direction === "from_agent" &&
            JSON.stringify(e.data).includes("available_commands_update") &&
            JSON.stringify(e.data).includes(proxied.sid),
        );
        assert.ok(!sent, "the agent sent its command list through cmdlog, and the editor never got it");
        console.log(`ACP-PARITY-GAP ${name}: the agent sent no command list before the proxied run ended (the log holds none)`);
        return tt.skip("the agent sent no command list before the proxied run ended (ACP-PARITY-GAP)");
      }
      // Qwen Code sends a session's list more than once, as its skills load;
      // what a list holds (its `_meta` above all: each skill's
      // `modelInvocable` and details) depends on when it was built, so the
      // direct run's lists are not the proxied run's (seen in CI). What cmdlog
      // answers for is that the agent's own list reaches the editor unchanged:
      // the agent's last list as it came into cmdlog (read back from the log,
      // its large values from their blobs) against the editor's last list.
      const sent = events(w)
        .filter((e) => e.type === "acp/message" && e.data.direction === "from_agent")
        .map((e) => fromBlobs(w, e.data.message))
        .filter((m) => m.params?.sessionId === proxied.sid && m.params?.update?.sessionUpdate === "available_commands_update")
        .map((m) => m.params.update);
      const lists = (xs) => xs.map((u) => `list of ${u.availableCommands.length}${u._meta ? " with _meta" : ""}`).join(", ");
      const editor = proxied.messages
        .filter((m) => m.params?.update?.sessionUpdate === "available_commands_update")
        .map((m) => m.params.update);
      assert.ok(sent.length > 0, `the log holds the agent's lists; the editor saw ${lists(editor)}`);
      const agent = sent.at(-1);
      assert.deepEqual(
        canonical(b._meta ?? null),
        canonical(agent._meta ?? null),
        `the agent's _meta through cmdlog; the agent sent ${lists(sent)}; the editor saw ${lists(editor)}`,
      );
      assert.deepEqual(
        b.availableCommands.slice(0, agent.availableCommands.length).map(canonical),
        agent.availableCommands.map(canonical),
        "the agent's commands come first, each as the agent sent it",
      );
      // And the direct run's built-in commands are all there (its skills
      // depend on the moment the agent built its list).
      const names = new Set(b.availableCommands.map((c) => c.name));
      const skills = new Set(a._meta?.availableSkills ?? []);
      const missing = a.availableCommands.map((c) => c.name).filter((n) => !names.has(n) && !skills.has(n));
      assert.deepEqual(missing, [], "commands of the direct run missing through cmdlog");
    });
    await t.test("the log verifies and holds the conversation", () => {
      cmdlog(w, ["verify"]);
      const log = events(w).filter((e) => e.session === proxied.sid);
      const prompts = log.filter((e) => e.type === "session/prompt").map((e) => e.data.text);
      assert.deepEqual(prompts, PROMPTS);
      const replies = log
        .filter((e) => e.type === "session/update" && e.data.sessionUpdate === "agent_message_chunk")
        .map((e) => e.data.content?.text ?? "")
        .join("");
      const directReplies = direct.messages
        .filter((m) => m.params?.update?.sessionUpdate === "agent_message_chunk")
        .map((m) => m.params.update.content?.text ?? "")
        .join("");
      assert.equal(replies, directReplies);
      assert.ok(log.some((e) => e.type === "session/ended"), "the session ended with the connection");
    });
    await t.test("latency of a prompt, direct and through cmdlog acp", () => {
      const d = median(direct.answers.map((a) => a.ms));
      const p = median(proxied.answers.map((a) => a.ms));
      console.log(`ACP-LATENCY ${name} direct=${d.toFixed(1)}ms acp=${p.toFixed(1)}ms`);
      assert.ok(Number.isFinite(d) && Number.isFinite(p));
    });
  });

}
