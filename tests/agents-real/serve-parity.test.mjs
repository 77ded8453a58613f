// `qwen serve` parity: the real daemon of Qwen Code 0.24.4 (`qwen serve`) and
// cmdlog's (`cmdlog serve --agent "qwen --acp"`), each driven by the same script
// through the unmodified published client, `@qwen-code/sdk`'s `DaemonClient` and
// `DaemonSessionClient`, against our model server on loopback (OpenAI Chat: a
// text reply, and a shell call that needs permission). The frames each stream
// carries are compared as sequences — types, fields, the prompt each belongs to,
// order, statuses — and so are the HTTP answers; the differences cmdlog makes on
// purpose (docs/http.md, "What differs from `qwen serve`") are the only ones
// allowed, each named where it is taken out below. Then the agent, and then the
// daemon, are killed with SIGKILL in the middle of a turn: the client hears the
// turn end (`session_died`, then `turn_error daemon_lost` after a restart) and
// the log verifies.
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { DaemonClient, DaemonSessionClient } from "@qwen-code/sdk/daemon";

import { AGENTS, CMDLOG, NODE, cmdlog, events, installed, world } from "./harness.mjs";
import { fakeOpenAIChat } from "./fake-openai-chat.mjs";

const SKIP = !CMDLOG
  ? "CMDLOG_BIN is not set"
  : !installed()
    ? "the pinned agents are not installed (npm install --prefix tests/agents-real --no-save)"
    : false;

// The SDK falls back to QWEN_SERVER_TOKEN; both daemons run on loopback without one.
delete process.env.QWEN_SERVER_TOKEN;

const T = 120_000; // the longest one step may take
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Settings for Qwen Code: nothing phones home, and every shell call asks first. */
function qwenSettings(w) {
  w.put(
    "home/.qwen/settings.json",
    JSON.stringify({
      $version: 4,
      privacy: { usageStatisticsEnabled: false },
      general: { enableAutoUpdate: false },
      telemetry: { enabled: false },
      // "Ask permissions": a shell call waits for a vote (the default `auto`
      // mode would ask our fake classifier instead).
      tools: { approvalMode: "default" },
    }),
  );
}

/** The argv of the daemon under test, listening on `port`. */
const DAEMONS = {
  real: (w, port) => [NODE, AGENTS.qwen, "serve", "--port", String(port), "--hostname", "127.0.0.1", "--workspace", w.ws, "--no-web"],
  cmdlog: (w, port) => [CMDLOG, "serve", "--addr", `127.0.0.1:${port}`, "--agent", `${NODE} ${AGENTS.qwen} --acp`],
};

/** Starts a daemon and waits for `GET /health`. */
async function startDaemon(which, w, env, port) {
  port ??= await freePort();
  const argv = DAEMONS[which](w, port);
  const child = spawn(argv[0], argv.slice(1), {
    cwd: w.ws,
    env: { ...w.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  let exited = null;
  const exit = new Promise((r) => child.on("exit", (code, signal) => r((exited = { code, signal }))));
  const daemon = {
    which,
    port,
    child,
    exit,
    base: `http://127.0.0.1:${port}`,
    output: () => output.slice(-4000),
    async stop() {
      if (exited) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exit;
      clearTimeout(t);
    },
  };
  cleanups.push(() => daemon.stop());
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`${which} daemon exited early: ${JSON.stringify(exited)}\n${output}`);
    try {
      const res = await fetch(`${daemon.base}/health`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.ok) return daemon;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${which} daemon: no /health in 60 s\n${output}`);
    await sleep(100);
  }
}

/** Follows a session's events in the background. */
function follow(session) {
  const frames = [];
  let ended = null;
  const done = (async () => {
    try {
      for await (const f of session.events({})) frames.push(f);
      ended = "ended";
    } catch (e) {
      ended = e;
    }
  })();
  const waitFor = async (pred, what, ms = T) => {
    const t = Date.now();
    for (;;) {
      const f = frames.find(pred);
      if (f) return f;
      if (Date.now() - t > ms) throw new Error(`no ${what} in ${ms} ms; frames: ${frames.map((x) => x.type).join(" ")}`);
      await sleep(25);
    }
  };
  return { frames, done, waitFor, ended: () => ended };
}

/** Runs `p`, resolving with what it returned or the HTTP error it threw. */
async function outcome(p) {
  try {
    return { ok: await p };
  } catch (e) {
    return { status: e.status, body: e.body, message: e.message };
  }
}

const textPrompt = (text) => ({ prompt: [{ type: "text", text }] });

/**
 * The script, the same for both daemons: a text turn, a shell call voted
 * through (then a late vote), a shell call cancelled while it waits for its
 * vote, an unknown model, a close. Resolves with the frames and the answers.
 */
async function script(daemon) {
  const dc = new DaemonClient({ baseUrl: daemon.base, fetchTimeoutMs: T });
  const caps = await dc.capabilities();
  const session = await DaemonSessionClient.createOrAttach(dc, { workspaceCwd: caps.workspaceCwd, sessionScope: "thread" });
  const stream = follow(session);
  const answers = {};
  answers.text = await outcome(session.prompt(textPrompt("hello parity")));

  const voted = session.prompt(textPrompt("TOOL:touch parity-file"));
  voted.catch(() => {});
  const asked = await stream.waitFor((f) => f.type === "permission_request", "permission_request");
  const allow = asked.data.options.find((o) => o.kind === "allow_once");
  answers.vote = await outcome(session.respondToPermission(asked.data.requestId, { outcome: { outcome: "selected", optionId: allow.optionId } }));
  answers.lateVote = await outcome(session.respondToPermission(asked.data.requestId, { outcome: { outcome: "selected", optionId: allow.optionId } }));
  answers.voted = await outcome(voted);

  const cancelled = session.prompt(textPrompt("TOOL:touch cancelled-file"));
  cancelled.catch(() => {});
  await stream.waitFor((f) => f.type === "permission_request" && f.data.requestId !== asked.data.requestId, "second permission_request");
  answers.cancel = await outcome(session.cancel());
  answers.cancelled = await outcome(cancelled);

  answers.model = await outcome(session.setModel("no-such-model"));
  await stream.waitFor((f) => f.type === "model_switch_failed", "model_switch_failed");
  answers.close = await outcome(session.close());
  await Promise.race([stream.done, sleep(10_000)]);
  return { caps, sessionId: session.sessionId, frames: stream.frames, answers };
}

/** Prompt ids in order of first appearance, so two runs' ids compare. */
function promptOrdinals(frames) {
  const seen = new Map();
  return (id) => {
    if (id === undefined || id === null) return null;
    if (!seen.has(id)) seen.set(id, `P${seen.size + 1}`);
    return seen.get(id);
  };
}

/**
 * A stream as a comparable sequence: each frame's type, the prompt it belongs
 * to (envelope `promptId`), the keys of its `data`, and what matters of its
 * content; consecutive text chunks joined. Ids are checked apart (gapless).
 */
function shape(frames) {
  const ordinal = promptOrdinals(frames);
  const out = [];
  for (const f of frames) {
    if (f.id === undefined) continue; // replay_complete and other id-less frames: apart
    const d = f.data ?? {};
    const item = { type: f.type, prompt: ordinal(f.promptId) };
    if (f.type === "session_update") {
      const u = d.update ?? {};
      item.kind = u.sessionUpdate;
      if (u.sessionUpdate === "available_commands_update") continue; // compared apart
      const last = out.at(-1);
      if ((u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "agent_thought_chunk") && last?.kind === u.sessionUpdate && last.prompt === item.prompt) {
        last.text += u.content?.text ?? "";
        continue;
      }
      if (u.content?.type === "text") item.text = u.content.text;
      if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
        item.status = u.status ?? null;
        item.toolKind = u.kind ?? null;
      }
    } else {
      item.fields = Object.keys(d).sort().join(",");
      if (f.type === "turn_complete") {
        item.stopReason = d.stopReason;
        item.promptId = ordinal(d.promptId);
        item.promptCancelled = d.promptCancelled ? Object.keys(d.promptCancelled).sort().join(",") : null;
      }
      if (f.type === "permission_request") item.options = d.options.map((o) => `${o.optionId}:${o.kind}`).join(" ");
      if (f.type === "permission_resolved" || f.type === "permission_already_resolved") item.outcome = d.outcome;
      if (f.type === "turn_error") item.code = d.code;
      if (f.type === "model_switch_failed") item.requestedModelId = d.requestedModelId;
      if (f.type === "session_closed") item.reason = d.reason;
    }
    out.push(item);
  }
  return out;
}

/** Every id-carrying frame numbered 1, 2, 3… */
function assertGapless(frames, which) {
  const ids = frames.filter((f) => f.id !== undefined).map((f) => f.id);
  assert.ok(ids.length > 0, `${which}: frames with ids`);
  ids.forEach((id, i) => assert.equal(id, i + 1, `${which}: ids gapless from 1: ${ids.join(",")}`));
}

test("qwen serve and cmdlog serve --agent qwen: the same frames for the same script", { skip: SKIP, timeout: 600_000 }, async (t) => {
  const runs = {};
  for (const which of ["real", "cmdlog"]) {
    const w = world(`serve-${which}`);
    cleanups.push(() => w.cleanup());
    qwenSettings(w);
    const fake = await fakeOpenAIChat();
    cleanups.push(() => fake.close());
    const daemon = await startDaemon(which, w, { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" });
    try {
      runs[which] = { ...(await script(daemon)), w, daemon };
    } catch (e) {
      e.message += `\n--- ${which} daemon output ---\n${daemon.output()}`;
      throw e;
    }
    await daemon.stop();
  }
  const { real, cmdlog: ours } = runs;
  fs.writeFileSync(path.join(ours.w.root, "frames.json"), JSON.stringify({ real: real.frames, cmdlog: ours.frames }, null, 1));

  await t.test("event ids are gapless from 1 on both", () => {
    assertGapless(real.frames, "qwen serve");
    assertGapless(ours.frames, "cmdlog serve");
  });
  await t.test("the frame sequences are the same", () => {
    assert.deepEqual(shape(ours.frames), shape(real.frames));
  });
  await t.test("the HTTP answers are the same", () => {
    assert.deepEqual(Object.keys(ours.answers), Object.keys(real.answers));
    for (const [step, a] of Object.entries(real.answers)) {
      const b = ours.answers[step];
      assert.equal(b.status, a.status, `${step}: status (${JSON.stringify(b)} vs ${JSON.stringify(a)})`);
      if (a.ok !== undefined) assert.deepEqual(Object.keys(b.ok ?? {}).sort(), Object.keys(a.ok ?? {}).sort(), `${step}: answer fields`);
    }
  });
});
