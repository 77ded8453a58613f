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
import fs from "node:fs";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { DaemonClient, DaemonSessionClient } from "@qwen-code/sdk/daemon";

import { AGENTS, CMDLOG, NODE, cmdlog, freePort, installed, qwenSettings, startDaemonProcess, world } from "./harness.mjs";
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

/** The argv of the daemon under test, listening on `port`. */
const DAEMONS = {
  real: (w, port) => [NODE, AGENTS.qwen, "serve", "--port", String(port), "--hostname", "127.0.0.1", "--workspace", w.ws, "--no-web"],
  cmdlog: (w, port) => [CMDLOG, "serve", "--addr", `127.0.0.1:${port}`, "--agent", `${NODE} ${AGENTS.qwen} --acp`],
};

/** Starts a daemon and waits for `GET /health`. */
async function startDaemon(which, w, env, port) {
  port ??= await freePort();
  const argv = DAEMONS[which](w, port);
  return startDaemonProcess({ name: which, w, argv, env, port, cleanups });
}

/** A world of its own with Qwen Code's settings and our model, and daemon `which` on it. */
async function qwenBehind(which, name) {
  const w = world(`${name}-${which}`);
  cleanups.push(() => w.cleanup());
  qwenSettings(w);
  const fake = await fakeOpenAIChat();
  cleanups.push(() => fake.close());
  const daemon = await startDaemon(which, w, { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" });
  return { w, fake, daemon };
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
  // The stream ends once the close is through: wait for that event (a loaded
  // machine may take longer than any fixed time), failing only past T.
  const closed = await Promise.race([stream.done.then(() => true), sleep(T).then(() => false)]);
  assert.ok(closed, `the event stream did not end within ${T} ms of the close: ${stream.frames.map((x) => x.type).join(" ")}`);
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
      if (u.sessionUpdate === "user_message_chunk") item.echo = u._meta?.source ?? null;
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

/** The fields cmdlog's error bodies add to `qwen serve`'s, naming the thing. */
const ERROR_NAMES = ["sessionId", "requestedModelId"];

/** Every id-carrying frame numbered 1, 2, 3… */
function assertGapless(frames, which) {
  const ids = frames.filter((f) => f.id !== undefined).map((f) => f.id);
  assert.ok(ids.length > 0, `${which}: frames with ids`);
  ids.forEach((id, i) => assert.equal(id, i + 1, `${which}: ids gapless from 1: ${ids.join(",")}`));
}

test("qwen serve and cmdlog serve --agent qwen: the same frames for the same script", { skip: SKIP, timeout: 600_000 }, async (t) => {
  const runs = {};
  for (const which of ["real", "cmdlog"]) {
    const { w, fake, daemon } = await qwenBehind(which, "serve");
    try {
      runs[which] = { ...(await script(daemon)), w, daemon };
    } catch (e) {
      e.message += `\n--- ${which} daemon output ---\n${daemon.output()}`;
      throw e;
    }
    await daemon.stop();
  }
  const { real, cmdlog: ours } = runs;
  // Both streams as read, for a look when something differs.
  if (process.env.SERVE_PARITY_OUT) {
    fs.writeFileSync(process.env.SERVE_PARITY_OUT, JSON.stringify({ real, cmdlog: ours }, (k, v) => (k === "w" || k === "daemon" ? undefined : v), 1));
  }

  await t.test("event ids are gapless from 1 on both", () => {
    assertGapless(real.frames, "qwen serve");
    assertGapless(ours.frames, "cmdlog serve");
  });
  await t.test("the frame sequences are the same", () => {
    assert.deepEqual(shape(ours.frames), shape(real.frames));
  });
  await t.test("the agent's command list reaches the client as sent, cmdlog's command files after it", () => {
    const lists = (frames) =>
      frames.map((f) => f.data?.update).filter((u) => u?.sessionUpdate === "available_commands_update");
    const a = lists(real.frames).at(-1);
    const b = lists(ours.frames).at(-1);
    assert.ok(a, "qwen serve forwards the agent's list");
    assert.ok(b, "cmdlog forwards it");
    // Allowed (docs/http.md): cmdlog announces its own list when the session is
    // made, and adds its command files the agent does not shadow after the
    // agent's entries, which are unchanged, `_meta` included.
    assert.deepEqual(b.availableCommands.slice(0, a.availableCommands.length), a.availableCommands);
    assert.deepEqual(b._meta, a._meta);
  });
  await t.test("the HTTP answers are the same", () => {
    assert.deepEqual(Object.keys(ours.answers), Object.keys(real.answers));
    for (const [step, a] of Object.entries(real.answers)) {
      const b = ours.answers[step];
      assert.equal(b.status, a.status, `${step}: status (${JSON.stringify(b)} vs ${JSON.stringify(a)})`);
      const fields = (x) => (x && typeof x === "object" ? Object.keys(x).sort() : typeof x);
      if (a.ok !== undefined) assert.deepEqual(fields(b.ok), fields(a.ok), `${step}: answer fields`);
      if (a.status !== undefined) {
        // Allowed (docs/http.md): cmdlog's error bodies also name the session
        // and what was asked for.
        const ours = Object.fromEntries(Object.entries(b.body ?? {}).filter(([k]) => !ERROR_NAMES.includes(k)));
        assert.deepEqual(fields(ours), fields(a.body), `${step}: error body fields (${JSON.stringify(b.body)} vs ${JSON.stringify(a.body)})`);
      }
    }
  });
});

/** Progress, for a run that hangs. */
const note = (what) => process.env.SERVE_PARITY_OUT && console.error(`# ${new Date().toISOString()} ${what}`);

/** Every process below `pid` (from /proc), deepest last. */
function descendants(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone
    }
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(entry));
  }
  const out = [];
  const walk = (p) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/**
 * Starts a turn that waits on a permission vote; resolves once it waits, with
 * the turn's promise in an object (returned bare, it would be awaited).
 */
async function turnWaitingForAVote(session, stream, text) {
  const before = stream.frames.filter((f) => f.type === "permission_request").length;
  const turn = session.prompt(textPrompt(text));
  turn.catch(() => {});
  await stream.waitFor(
    (f) => f.type === "permission_request" && stream.frames.filter((g) => g.type === "permission_request").length > before,
    "permission_request",
  );
  return { turn };
}

/** What a stream showed from its frame with id `from` on, as comparable items. */
function endShape(frames, from) {
  return frames
    .filter((f) => f.id !== undefined && f.id >= from)
    .map((f) => ({ type: f.type, fields: Object.keys(f.data ?? {}).sort().join(","), code: f.data?.code ?? null, prompt: f.promptId ? "P" : null }))
    .filter((x) => x.type !== "session_update");
}

test("the agent killed mid-turn: the same end on both daemons; the daemon killed: cmdlog ends the turn after a restart", { skip: SKIP, timeout: 600_000 }, async (t) => {
  const ends = {};
  for (const which of ["real", "cmdlog"]) {
    const { w, fake, daemon } = await qwenBehind(which, "kill");
    const dc = new DaemonClient({ baseUrl: daemon.base, fetchTimeoutMs: T });
    const caps = await dc.capabilities();
    const session = await DaemonSessionClient.createOrAttach(dc, { workspaceCwd: caps.workspaceCwd, sessionScope: "thread" });
    const stream = follow(session);
    await session.prompt(textPrompt("hello before the kill"));
    note(`${which}: first turn done`);
    const { turn } = await turnWaitingForAVote(session, stream, "TOOL:touch killed-file");
    note(`${which}: waiting for a vote`);
    // From the question the turn waits on (the agent's late command list may
    // come after it).
    const from = stream.frames.filter((f) => f.type === "permission_request").at(-1).id;
    // SIGKILL every process under the daemon: its agent (Qwen Code relaunches
    // itself, so a launcher and the CLI), not the daemon.
    const agents = descendants(daemon.child.pid);
    note(`${which}: killing ${agents.join(" ")}`);
    assert.ok(agents.length > 0, `${which}: an agent process under the daemon`);
    const killedAt = performance.now();
    for (const pid of agents) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    await stream.waitFor((f) => f.type === "session_died", `${which}: session_died`, 30_000);
    const died = performance.now() - killedAt;
    console.log(`SERVE-KILL ${which} agent SIGKILL -> session_died in ${died.toFixed(0)} ms`);
    ends[which] = { shape: endShape(stream.frames, from), turn: await outcome(turn) };
    if (process.env.SERVE_PARITY_OUT) {
      fs.writeFileSync(`${process.env.SERVE_PARITY_OUT}.kill-${which}.json`, JSON.stringify(stream.frames.filter((f) => f.id >= from), null, 1));
    }
    await daemon.stop();
    if (which === "cmdlog") ends.world = { w, fake };
  }

  await t.test("the turn and the session end as qwen serve ends them", () => {
    // Allowed (docs/http.md): `qwen serve` first says the prompt was cancelled
    // (`prompt_cancelled`, reason `forward_failed`: its request to the agent
    // failed with the channel), which no one did; cmdlog says the turn failed,
    // and why: `turn_error` with the code `channel_closed`.
    const real = ends.real.shape.filter((x) => x.type !== "prompt_cancelled");
    const ours = ends.cmdlog.shape.map((x) =>
      x.type === "turn_error" && x.code === "channel_closed"
        ? { ...x, code: null, fields: x.fields.split(",").filter((f) => f !== "code").join(",") }
        : x,
    );
    assert.deepEqual(ours, real);
    assert.ok(ends.real.shape.some((x) => x.type === "prompt_cancelled"), "what is taken out is there to take out");
  });

  await t.test("cmdlog: the daemon killed mid-turn; after a restart the client sees the turn end, and the log verifies", async () => {
    const { w, fake } = ends.world;
    const env = { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" };
    const daemon = await startDaemon("cmdlog", w, env);
    let dc = new DaemonClient({ baseUrl: daemon.base, fetchTimeoutMs: T });
    const caps = await dc.capabilities();
    const session = await DaemonSessionClient.createOrAttach(dc, { workspaceCwd: caps.workspaceCwd, sessionScope: "thread" });
    const stream = follow(session);
    await session.prompt(textPrompt("hello before the daemon dies"));
    const { turn } = await turnWaitingForAVote(session, stream, "TOOL:touch orphaned-file");
    const seen = stream.frames.filter((f) => f.id !== undefined).at(-1).id;
    const promptId = stream.frames.filter((f) => f.type === "permission_request").at(-1).promptId;
    daemon.child.kill("SIGKILL");
    await daemon.exit;
    await outcome(turn);
    // Its agent goes with it (stdin closed); the same port, the same log.
    const again = await startDaemon("cmdlog", w, env, daemon.port);
    dc = new DaemonClient({ baseUrl: again.base, fetchTimeoutMs: T });
    const resumed = new DaemonSessionClient({
      client: dc,
      session: { sessionId: session.sessionId, workspaceCwd: caps.workspaceCwd, attached: true },
    });
    const after = [];
    const ac = new AbortController();
    const reading = (async () => {
      try {
        for await (const f of resumed.events({ lastEventId: seen, signal: ac.signal })) {
          after.push(f);
          if (f.type === "turn_error") break;
        }
      } catch {
        // aborted
      }
    })();
    // Wait for the turn_error itself (the loop stops at it), not a clock.
    await Promise.race([reading, sleep(T)]);
    ac.abort();
    const end = after.find((f) => f.type === "turn_error");
    assert.ok(end, `a turn_error after the restart: ${after.map((f) => f.type).join(" ")}`);
    assert.equal(end.data.code, "daemon_lost");
    assert.equal(end.data.promptId, promptId);
    // The ids go on where they stopped: what was recorded after the last frame
    // the client saw (the session's command list can race the kill) comes
    // first, each id once, then the turn's end.
    const ids = after.filter((f) => f.id !== undefined).map((f) => f.id);
    assert.deepEqual(ids, ids.map((_, i) => seen + 1 + i), "the ids go on where they stopped");
    assert.equal(ids.at(-1), end.id);
    await again.stop();
    cmdlog(w, ["verify"]);
  });
});
