// Codex CLI 0.171.0 (`@openai/codex`, bin/codex.js → the native binary), run
// headless (`codex exec`) against our Responses API server on loopback, with
// cmdlog's hooks installed in the project (`.codex/hooks.json`) and its
// transcripts (`$CODEX_HOME/sessions/…/rollout-*.jsonl`) imported.
//
// What Codex 0.171 does that shapes these tests (observed on this release):
// - A custom provider with `wire_api = "responses"` and `env_key` needs no login;
//   Codex then only calls `POST {base_url}/responses`.
// - Two gates stand before a project's hooks. The project must be trusted
//   (`--trust` records that in the user's config.toml; without it exec warns
//   "Untrusted project-local configuration is disabled"), and each hook must be
//   trusted (Codex's /hooks screen stores a hash per hook). Untrusted hooks are
//   skipped without a word; `--dangerously-bypass-hook-trust` runs them for one
//   invocation, which is what the scenario runs here use.
// - `codex exec` always runs with `approval: never`, so no PermissionRequest
//   fires headless.
// - Custom prompts (`/prompts:name`) were removed from Codex (0.117): the line is
//   sent to the model as typed.
// - The shell tool is `exec_command {"cmd"}`; its hooks report it as `Bash`
//   `{"command"}`, and PostToolUse's `tool_response` is the output alone, with
//   no exit code.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { AGENTS, CMDLOG, cmdlog, events, installed, kindOf, runAgent, world, ownEvent } from "./harness.mjs";
import { fakeResponses, lastUserText, sessionOf } from "./fake-openai-responses.mjs";

const SKIP = !(installed() && CMDLOG) && "needs the pinned agents (npm install --prefix tests/agents-real --no-save) and CMDLOG_BIN";

// `exec` without the git-repository check and without Codex's sandbox (which
// needs user namespaces for its bubblewrap; the commands run here are echoes).
const HEADLESS = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"];
// …and with the project and its hooks trusted for this invocation.
const TRUSTED = [...HEADLESS, "--trust", "--dangerously-bypass-hook-trust"];

/** The prompts of the shared scenario, one `codex exec` (one session) each. */
const PROMPTS = {
  plain: "say hello for the log",
  tool: "TOOL:echo hi",
  // Exits 3; it prints a line first so that the hook's copy of the output
  // (all PostToolUse carries) has something to check.
  failing: "TOOL:sh -c 'echo out3; exit 3'",
  prompts: "/prompts:greet alice bob",
};
// A custom prompt as Codex up to 0.116 read them ($CODEX_HOME/prompts/*.md).
const GREET = "---\ndescription: Greet two people\nargument-hint: A B\n---\nGreet $1 and then $2. All: $ARGUMENTS\n";

/** Every hook event Codex 0.171 knows (its hook schemas and /hooks labels). */
const CODEX_EVENTS = [
  "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
  "PostToolUse", "Stop", "PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Interrupt",
];

let server;
const worlds = [];

before(async () => {
  if (!SKIP) server = await fakeResponses();
});

after(async () => {
  if (!process.env.CMDLOG_REAL_KEEP) for (const w of worlds) w.cleanup();
  await server?.close();
});

/** A world whose Codex talks to our server: `$CODEX_HOME` = `home/.codex`. */
function codexWorld(name) {
  const w = world(name);
  worlds.push(w);
  w.codexHome = path.join(w.home, ".codex");
  w.put(
    "home/.codex/config.toml",
    [
      'model = "fake-model"',
      'model_provider = "fake"',
      "",
      "[model_providers.fake]",
      'name = "fake"',
      `base_url = "${server.url}"`,
      'wire_api = "responses"',
      'env_key = "FAKE_API_KEY"',
      "",
    ].join("\n"),
  );
  w.agentEnv = { CODEX_HOME: w.codexHome, FAKE_API_KEY: "loopback-only" };
  return w;
}

/** `codex exec … <prompt>`; resolves with its output, time, and the session id it printed. */
async function codex(w, flags, prompt) {
  const startedAt = Date.now();
  const r = await runAgent(w, AGENTS.codex, [...flags, prompt], { env: w.agentEnv, timeoutMs: 90_000 });
  r.startedAt = startedAt;
  r.endedAt = Date.now();
  r.session = /^session id: (\S+)$/m.exec(r.stderr)?.[1];
  if (r.code !== 0 || !r.session) {
    throw new Error(`codex ${[...flags, prompt].join(" ")} exited ${r.code} (${r.signal ?? "no signal"}):\n${r.stdout}\n${r.stderr}`);
  }
  return r;
}

/**
 * What Codex's stderr says against the hooks or their settings: its warnings
 * that name a hook or hooks.json (but not the one `--dangerously-bypass-hook-trust`
 * always prints, our own flag), and any hook that did not end "Completed"
 * (`hook: Stop Failed`).
 */
function hookComplaints(stderr) {
  return stderr.split("\n").filter((l) => {
    if (/dangerously-bypass-hook-trust/.test(l)) return false;
    if (/^hook: /.test(l)) return !/^hook: \w+( Completed)?$/.test(l);
    return /warn|error|fail|invalid|ignor|skip|clamp/i.test(l) && /hook/i.test(l);
  });
}

const ofSession = (log, id) => log.filter((e) => e.session === id);
const ofKind = (evs, kind) => evs.filter((e) => kindOf(e) === kind);
/** The command of a shell call's input: hooks give `{command}`, the transcript `{cmd}`. */
const commandOf = (input) => input?.command ?? input?.cmd;
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v ?? ""));
const show = (evs) => evs.map((e) => `${e.seq} ${kindOf(e)} ${JSON.stringify(e.data).slice(0, 160)}`).join("\n");

/** What a user reads back of a session: prompts, replies, tool calls, turn ends, runs. */
function digest(evs) {
  return {
    prompts: evs.filter((e) => e.type === "session/prompt").map((e) => e.data.text),
    replies: ofKind(evs, "session/update:agent_message_chunk").map((e) => e.data.content?.text),
    toolCalls: ofKind(evs, "session/update:tool_call").map((e) => ({
      id: e.data.toolCallId,
      command: commandOf(e.data.rawInput),
    })),
    toolResults: ofKind(evs, "session/update:tool_call_update").map((e) => e.data.toolCallId),
    turnEnds: ofKind(evs, "session/update:turn_complete").map((e) => e.data.stopReason),
    runs: evs.filter((e) => e.type === "command/run").map((e) => `${e.data.name}${e.data.raw_input ?? ""}`),
  };
}

// ---------------------------------------------------------------------------
// The shared scenario: hooks installed in a fresh workspace (no .codex before),
// then one headless session per prompt. Several checks read it.

let shared;
function scenario() {
  return (shared ??= (async () => {
    const w = codexWorld("codex");
    w.put("home/.codex/prompts/greet.md", GREET);
    const install = cmdlog(w, ["hooks", "install", "codex"]);
    const hooksFile = path.join(w.ws, ".codex/hooks.json");
    const installedHooks = JSON.parse(fs.readFileSync(hooksFile, "utf8")).hooks ?? {};
    const runs = {};
    for (const [name, prompt] of Object.entries(PROMPTS)) runs[name] = await codex(w, TRUSTED, prompt);
    const log = events(w);
    return { w, install, installedHooks, runs, log };
  })());
}

/** The scenario's transcripts imported into a log of their own (once). */
let importedOnce;
function imported() {
  return (importedOnce ??= (async () => {
    const s = await scenario();
    const file = path.join(s.w.root, "import.redb");
    const count = () => (fs.existsSync(file) ? events(s.w, file).filter((e) => !ownEvent(e)).length : 0);
    const before = count();
    const out = cmdlog(s.w, ["import", "--from", "codex", "--log", file, "--json"], { env: s.w.agentEnv });
    const summary = JSON.parse(out.stdout);
    const log = events(s.w, file);
    return { ...s, file, count, before, summary, importLog: log };
  })());
}

/** Each hook event's mark in the log, and which sessions of the scenario should have it. */
const MARKS = {
  SessionStart: ["agent/event SessionStart", (evs) => evs.some((e) => e.type === "agent/event" && e.data?.event === "SessionStart")],
  UserPromptSubmit: ["session/prompt", (evs) => evs.some((e) => e.type === "session/prompt")],
  PreToolUse: ["session/update:tool_call", (evs) => ofKind(evs, "session/update:tool_call").length > 0],
  PostToolUse: ["session/update:tool_call_update", (evs) => ofKind(evs, "session/update:tool_call_update").length > 0],
  Stop: ["session/update:turn_complete", (evs) => ofKind(evs, "session/update:turn_complete").length > 0],
  SessionEnd: ["session/ended", (evs) => evs.some((e) => e.type === "session/ended")],
};
const TOOL_RUNS = new Set(["tool", "failing"]);
const triggers = (event, run) => (event === "PreToolUse" || event === "PostToolUse" ? TOOL_RUNS.has(run) : true);

// ---------------------------------------------------------------------------
// 1. hooks install / uninstall

test("hooks install codex: Codex accepts the settings and every installed hook the runs trigger fires", { skip: SKIP }, async () => {
  const { installedHooks, runs, log } = await scenario();
  const names = Object.keys(installedHooks);
  assert.ok(names.length > 0, "hooks install codex wrote no hook events into .codex/hooks.json");
  const unknown = names.filter((n) => !CODEX_EVENTS.includes(n));
  assert.deepEqual(unknown, [], `installed hook events Codex 0.171 does not have: ${unknown.join(", ")}`);

  const complaints = Object.entries(runs).flatMap(([name, r]) => hookComplaints(r.stderr).map((l) => `${name}: ${l}`));
  assert.deepEqual(complaints, [], `Codex's stderr complains about the hooks or their settings:\n${complaints.join("\n")}`);

  // PermissionRequest cannot fire under exec (approval is forced to never);
  // Interrupt, Pre/PostCompact and Subagent* have no cause in these runs.
  const missing = [];
  for (const name of names.filter((n) => MARKS[n])) {
    const [mark, has] = MARKS[name];
    for (const [run, r] of Object.entries(runs)) {
      if (triggers(name, run) && !has(ofSession(log, r.session))) missing.push(`${name} → ${mark} missing in session ${r.session} (${run})`);
    }
  }
  assert.deepEqual(missing, [], `installed hooks that fired no event:\n${missing.join("\n")}\nlog:\n${show(log)}`);
});

test("hooks uninstall codex restores a hooks.json the user had, byte for byte, and the user's hook keeps running beside cmdlog's", { skip: SKIP }, async () => {
  const w = codexWorld("codex-userfile");
  const mark = path.join(w.root, "user-hook.txt");
  const userCommand = `sh -c 'cat >/dev/null; echo fired >> ${mark}'`;
  // Tabs, a matcher group, and no newline at the end: the user's own style.
  const original =
    `{\n\t"hooks": {\n\t\t"SessionStart": [\n\t\t\t{ "hooks": [ { "type": "command", "command": ${JSON.stringify(userCommand)}, "timeout": 5 } ] }\n\t\t],\n` +
    `\t\t"PreToolUse": [\n\t\t\t{ "matcher": "^Bash$", "hooks": [ { "type": "command", "command": "true" } ] }\n\t\t]\n\t}\n}`;
  const file = w.put("ws/.codex/hooks.json", original);
  fs.chmodSync(file, 0o640);

  cmdlog(w, ["hooks", "install", "codex"]);
  const merged = fs.readFileSync(file, "utf8");
  assert.ok(merged.includes(userCommand), `install dropped the user's SessionStart hook:\n${merged}`);

  const r = await codex(w, TRUSTED, "with the user's hooks too");
  assert.deepEqual(hookComplaints(r.stderr), [], `Codex complains about the merged hooks.json:\n${r.stderr}`);
  assert.ok(fs.existsSync(mark) && fs.readFileSync(mark, "utf8").includes("fired"), "the user's own SessionStart hook did not run after install");
  const prompts = ofSession(events(w), r.session).filter((e) => e.type === "session/prompt").map((e) => e.data.text);
  assert.deepEqual(prompts, ["with the user's hooks too"], "cmdlog's UserPromptSubmit hook did not record the prompt beside the user's hooks");

  cmdlog(w, ["hooks", "uninstall", "codex"]);
  const after = fs.readFileSync(file, "utf8");
  assert.equal(after, original, "uninstall did not give back the user's hooks.json byte for byte");
  assert.equal((fs.statSync(file).mode & 0o777).toString(8), "640", "uninstall did not give back the file's mode");
});

test("hooks uninstall codex restores a hooks.json that is a symlink to a file inside the workspace", { skip: SKIP }, () => {
  const w = codexWorld("codex-symlink");
  const original = '{\n  "hooks": {\n    "Stop": [ { "hooks": [ { "type": "command", "command": "true" } ] } ]\n  }\n}\n';
  const target = w.put("ws/config/codex-hooks.json", original);
  fs.mkdirSync(path.join(w.ws, ".codex"), { recursive: true });
  const link = path.join(w.ws, ".codex/hooks.json");
  fs.symlinkSync("../config/codex-hooks.json", link);

  cmdlog(w, ["hooks", "install", "codex"]);
  assert.ok(fs.readFileSync(link, "utf8").includes("hook codex"), "after install, .codex/hooks.json (what Codex reads) has no cmdlog hook");
  cmdlog(w, ["hooks", "uninstall", "codex"]);

  assert.ok(fs.lstatSync(link).isSymbolicLink(), "after uninstall, .codex/hooks.json is no longer a symlink");
  assert.equal(fs.readlinkSync(link), "../config/codex-hooks.json", "after uninstall, the symlink points elsewhere");
  assert.equal(fs.readFileSync(target, "utf8"), original, "after uninstall, the linked file is not byte for byte what it was");
});

// ---------------------------------------------------------------------------
// 2. What the hook log holds after the headless runs

test("headless sessions: the hook log holds Codex's session ids, prompts, replies, tool calls, turn ends and session ends, nothing doubled", { skip: SKIP }, async (t) => {
  const { runs, log, installedHooks } = await scenario();
  const answered = (id) => server.answers.filter((a) => a.session === id);

  await t.test("each run is one session, under Codex's own session id", () => {
    for (const [name, r] of Object.entries(runs)) {
      const created = ofSession(log, r.session).filter((e) => e.type === "session/created");
      assert.equal(created.length, 1, `${name}: session/created for Codex's session ${r.session}: ${created.length}\nlog sessions: ${[...new Set(log.map((e) => e.session))].join(", ")}`);
      assert.equal(created[0].agent, "codex", `${name}: the session's agent`);
      // codex exec is headless: its rollout's session_meta says source "exec".
      assert.equal(created[0].data?.mode, "non_interactive", `${name}: the session's mode`);
    }
  });

  await t.test("plain prompt: the prompt, the reply and the turn end", () => {
    const r = runs.plain;
    const d = digest(ofSession(log, r.session));
    const replies = answered(r.session).map((a) => a.text);
    assert.deepEqual(d.prompts, [PROMPTS.plain], "prompts recorded");
    assert.deepEqual(d.replies, replies, "replies recorded vs what the model answered");
    assert.deepEqual(d.turnEnds, ["end_turn"], "turn ends recorded");
  });

  await t.test("tool call: `echo hi` with its input, its output and Codex's call id", () => {
    const r = runs.tool;
    const evs = ofSession(log, r.session);
    const call = answered(r.session).find((a) => a.tool);
    assert.ok(call, "the model never asked for the tool call (see the fake server's answers)");
    const calls = ofKind(evs, "session/update:tool_call");
    assert.deepEqual(
      calls.map((e) => [e.data.toolCallId, commandOf(e.data.rawInput)]),
      [[call.callId, "echo hi"]],
      `tool_call events (id, command) vs the call the model made\n${show(evs)}`,
    );
    const results = ofKind(evs, "session/update:tool_call_update");
    assert.deepEqual(results.map((e) => [e.data.toolCallId, e.data.status]), [[call.callId, "completed"]], "tool_call_update events (id, status)");
    assert.match(text(results[0].data.rawOutput), /\bhi\b/, "the tool's output (rawOutput) is not kept");
    const d = digest(evs);
    assert.deepEqual(d.prompts, [PROMPTS.tool], "prompts recorded");
    assert.deepEqual(d.turnEnds, ["end_turn"], "turn ends recorded");
    assert.deepEqual(d.replies, answered(r.session).filter((a) => a.text).map((a) => a.text), "replies recorded");
  });

  await t.test("`/prompts:greet alice bob` is recorded as the prompt Codex sent, not as a command run", () => {
    const evs = ofSession(log, runs.prompts.session);
    assert.deepEqual(digest(evs).prompts, [PROMPTS.prompts], "prompts recorded");
    assert.deepEqual(evs.filter((e) => e.type.startsWith("command/")).map(kindOf), [], "Codex 0.171 ran no command (it sent the line as typed), yet the log has command events");
  });

  await t.test("custom slash command from the agent's command folder", (t) => {
    t.skip("Codex 0.171 has no custom commands: /prompts:<name> was removed in 0.117 and exec sends the line as typed (checked in the test above and in check 4)");
  });

  await t.test("permission request", (t) => {
    t.skip("codex exec forces approval `never` (approval_policy overrides are ignored, `untrusted` is refused), so PermissionRequest never fires headless");
  });

  await t.test("the session end Codex sends (SessionEnd, reason other) is recorded", () => {
    const missing = [];
    for (const [name, r] of Object.entries(runs)) {
      const ended = ofSession(log, r.session).filter((e) => e.type === "session/ended");
      if (ended.length !== 1 || ended[0].data?.reason !== "other") {
        missing.push(`${name} (${r.session}): ${ended.length} session/ended ${JSON.stringify(ended.map((e) => e.data))}`);
      }
    }
    assert.deepEqual(
      missing,
      [],
      `sessions without exactly one session/ended {reason: "other"} — Codex sends SessionEnd headless; cmdlog installed: ${Object.keys(installedHooks).join(", ")}\n${missing.join("\n")}`,
    );
  });

  await t.test("nothing doubled: no two events of one session with the same type and content", () => {
    const doubled = [];
    for (const [name, r] of Object.entries(runs)) {
      const seen = new Map();
      for (const e of ofSession(log, r.session)) {
        const key = `${kindOf(e)} ${JSON.stringify(e.data)}`;
        if (seen.has(key)) doubled.push(`${name}: seq ${seen.get(key)} and ${e.seq}: ${key.slice(0, 200)}`);
        else seen.set(key, e.seq);
      }
    }
    assert.deepEqual(doubled, [], `doubled events:\n${doubled.join("\n")}`);
  });
});

test("a command exiting non-zero: the import records a failed tool call, the hook keeps its output", { skip: SKIP }, async () => {
  const { runs, log, importLog } = await imported();
  const r = runs.failing;
  const call = server.answers.find((a) => a.session === r.session && a.tool);
  assert.ok(call, "the model never asked for `sh -c 'echo out3; exit 3'`");

  const importedResults = ofKind(ofSession(importLog, r.session), "session/update:tool_call_update").filter((e) => e.data.toolCallId === call.callId);
  assert.deepEqual(
    importedResults.map((e) => e.data.status),
    ["failed"],
    `import: the tool_call_update of ${call.callId} (exit code 3 in the rollout) should be failed\n${show(importedResults)}`,
  );

  // PostToolUse carries only the output (`tool_response` is a string, no exit
  // code), so the hook cannot tell a failure: only the output is checked.
  const hookResults = ofKind(ofSession(log, r.session), "session/update:tool_call_update").filter((e) => e.data.toolCallId === call.callId);
  assert.equal(hookResults.length, 1, `hook: tool_call_update events for ${call.callId}\n${show(ofSession(log, r.session))}`);
  assert.match(text(hookResults[0].data.rawOutput), /out3/, "hook: the failing command's output is not kept");
});

// ---------------------------------------------------------------------------
// 3. Hook overhead

test("hook overhead: the same headless run with and without cmdlog's hooks", { skip: SKIP }, async () => {
  const withHooks = codexWorld("codex-overhead-with");
  const without = codexWorld("codex-overhead-without");
  cmdlog(withHooks, ["hooks", "install", "codex"]);
  // One run each first: a fresh CODEX_HOME creates its databases.
  await codex(withHooks, TRUSTED, PROMPTS.tool);
  await codex(without, TRUSTED, PROMPTS.tool);
  const times = { with: [], without: [] };
  for (let i = 0; i < 3; i++) {
    times.with.push((await codex(withHooks, TRUSTED, PROMPTS.tool)).ms);
    times.without.push((await codex(without, TRUSTED, PROMPTS.tool)).ms);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const [a, b] = [median(times.with), median(times.without)];
  console.log(`HOOK-OVERHEAD codex with=${Math.round(a)} without=${Math.round(b)} delta=${Math.round(a - b)}`);
  // Only that the measurement measured what it says: the hooks ran in one world and not the other.
  assert.ok(events(withHooks).some((e) => e.type === "session/prompt"), "the hooks did not run in the world that has them");
  assert.ok(!fs.existsSync(path.join(without.ws, ".cmdlog/log.redb")), "something was logged in the world without hooks");
});

// ---------------------------------------------------------------------------
// 4. cmdlog run prints what the agent sent for a slash command

test("cmdlog run \"<line>\" prints exactly what Codex sent the model for that slash command", { skip: SKIP }, async (t) => {
  const { w, runs } = await scenario();
  // The typed line is the last `user` message of the session's first request:
  // body.input[…] = {"type":"message","role":"user","content":[{"type":"input_text","text":…}]}
  // (the user messages before it are Codex's <environment_context>).
  const first = server.responses().find((req) => sessionOf(req) === runs.prompts.session);
  assert.ok(first, "no request of the /prompts:greet session reached the server");
  const sent = lastUserText(first.body);
  if (sent === PROMPTS.prompts) {
    t.skip(`Codex 0.171 expands no slash command headless: it sent ${JSON.stringify(sent)} as typed (custom prompts were removed in 0.117), so there is no expansion of the agent's to compare cmdlog run with`);
    return;
  }
  // Codex expanded it after all: cmdlog must print the same text.
  const out = cmdlog(w, ["run", PROMPTS.prompts], { expect: null });
  assert.equal(out.stdout, sent, `cmdlog run ${JSON.stringify(PROMPTS.prompts)} (left) vs what Codex sent (right)`);
});

// ---------------------------------------------------------------------------
// 5. Import of the transcripts

test("import --from codex gives what the hooks gave, with Codex's own times; again adds nothing; its counters add up", { skip: SKIP }, async (t) => {
  const { w, runs, log, importLog, summary, before, count, file } = await imported();
  const runIds = Object.values(runs).map((r) => r.session);
  const fresh = importLog.filter((e) => !ownEvent(e));

  await t.test("the same sessions", () => {
    const got = [...new Set(fresh.map((e) => e.session))].sort();
    assert.deepEqual(got, [...runIds].sort(), "sessions in the import vs Codex's sessions (which the hooks recorded)");
  });

  await t.test("the same prompts, replies, tool calls, turn ends and runs as the hooks", () => {
    for (const [name, r] of Object.entries(runs)) {
      const hook = digest(ofSession(log, r.session));
      const imp = digest(ofSession(importLog, r.session));
      assert.deepEqual(imp, hook, `${name} (${r.session}): import (left) vs hooks (right)`);
    }
  });

  await t.test("tool outputs: the import keeps what the hook kept", () => {
    for (const name of TOOL_RUNS) {
      const id = runs[name].session;
      const hook = ofKind(ofSession(log, id), "session/update:tool_call_update");
      const imp = ofKind(ofSession(importLog, id), "session/update:tool_call_update");
      for (const h of hook) {
        const i = imp.find((e) => e.data.toolCallId === h.data.toolCallId);
        assert.ok(i, `${name}: the import has no tool_call_update for ${h.data.toolCallId}`);
        assert.ok(text(i.data.rawOutput).includes(text(h.data.rawOutput)), `${name}: imported output ${JSON.stringify(i.data.rawOutput)} does not hold the hook's ${JSON.stringify(h.data.rawOutput)}`);
      }
    }
  });

  await t.test("every imported event has Codex's own time (observed.at, within its run)", () => {
    const bad = [];
    for (const r of Object.values(runs)) {
      for (const e of ofSession(importLog, r.session)) {
        const at = e.observed?.at;
        if (e.observed?.source !== "codex transcript" || typeof at !== "number" || at < r.startedAt - 1000 || at > r.endedAt + 1000) {
          bad.push(`${e.seq} ${kindOf(e)} observed=${JSON.stringify(e.observed)} (run ${r.startedAt}..${r.endedAt})`);
        }
      }
    }
    assert.deepEqual(bad, [], `imported events without the agent's time:\n${bad.join("\n")}`);
  });

  let second;
  await t.test("a second import adds nothing", () => {
    const n1 = count();
    second = JSON.parse(cmdlog(w, ["import", "--from", "codex", "--log", file, "--json"], { env: w.agentEnv }).stdout);
    const n2 = count();
    assert.equal(n2, n1, `events in the import log: ${n1} before the second import, ${n2} after`);
    assert.equal(second.events, 0, "the second import's summary says it appended events");
    assert.deepEqual(second.sessions, [], "the second import's summary says it started sessions");
  });

  await t.test("the --json summary's counters add up", () => {
    const rollouts = [];
    const walk = (dir) => {
      for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, ent.name);
        if (ent.isDirectory()) walk(p);
        else if (/^rollout-.*\.jsonl$/.test(ent.name)) rollouts.push(p);
      }
    };
    walk(path.join(w.codexHome, "sessions"));
    const lines = rollouts.reduce((n, p) => n + fs.readFileSync(p, "utf8").split("\n").filter((l, i, a) => i < a.length - 1 || l !== "").length, 0);
    assert.equal(summary.files, rollouts.length, `files: summary vs rollout files under $CODEX_HOME/sessions`);
    assert.equal(summary.lines, lines, "lines: summary vs the rollouts' lines");
    assert.deepEqual(summary.malformed, [], "malformed lines named in a Codex-written rollout");
    assert.equal(summary.events, fresh.length - before, "events: summary vs events the import log gained (log/identity and checkpoints aside)");
    const created = fresh.filter((e) => e.type === "session/created").map((e) => e.session).sort();
    assert.deepEqual([...summary.sessions].sort(), created, "sessions: summary vs the session/created events it appended");
    // Every item the first import appended (its events but the session/created
    // it added) is an item a later import of the changed rollouts finds there.
    if (second) {
      // Every rollout was checkpointed: the second import parses none.
      assert.deepEqual([second.unchanged, second.lines, second.skipped], [summary.files, 0, 0], `the second import: ${JSON.stringify(second)}`);
      // A rollout that changed is read again, and its items found by key: each
      // file gains a blank line (its hash changes, not its items).
      for (const f of rollouts) fs.appendFileSync(f, "\n");
      const third = JSON.parse(cmdlog(w, ["import", "--from", "codex", "--log", file, "--json"], { env: w.agentEnv }).stdout);
      assert.equal(third.events, 0, `a changed rollout's items imported again: ${JSON.stringify(third)}`);
      assert.equal(third.lines, summary.lines + rollouts.length, "the third import read a different number of lines");
      assert.equal(third.skipped, summary.skipped + summary.events - summary.sessions.length, `third import's skipped (${third.skipped}) vs items the first appended (${summary.events} events − ${summary.sessions.length} session/created) + its skipped (${summary.skipped})`);
    }
  });
});

// ---------------------------------------------------------------------------
// The trust gate, and telling the user when payloads stop arriving

test("untrusted: no payload arrives, and `cmdlog hooks status` says when one last arrived", { skip: SKIP }, async (t) => {
  const w = codexWorld("codex-trust");
  cmdlog(w, ["hooks", "install", "codex"]);
  const logFile = path.join(w.ws, ".cmdlog/log.redb");
  const sessionEvents = () => (fs.existsSync(logFile) ? events(w).filter((e) => e.session) : []);
  const codexLine = (out) => out.split("\n").find((l) => /codex/i.test(l));
  const TIME = /\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}|\bago\b/;
  const status = () => {
    const out = cmdlog(w, ["hooks", "status"], { expect: null });
    const unknown = /unrecognized subcommand|unknown/i.test(out.stderr) ? "cmdlog has no `hooks status` verb yet — " : "";
    assert.equal(out.status, 0, `${unknown}cmdlog hooks status exited ${out.status}: ${out.stderr.trim()}`);
    return out.stdout;
  };

  await t.test("project not trusted: Codex ignores .codex/, no payload arrives", async () => {
    const r = await codex(w, HEADLESS, "project not trusted");
    assert.deepEqual(sessionEvents().map(kindOf), [], `a payload arrived although the project is not trusted\n${r.stderr}`);
  });

  await t.test("project trusted (--trust), hooks not: Codex skips them silently, no payload arrives", async () => {
    const r = await codex(w, [...HEADLESS, "--trust"], "hooks not trusted");
    assert.deepEqual(sessionEvents().map(kindOf), [], `a payload arrived although the hooks are not trusted\n${r.stderr}`);
  });

  await t.test("hooks status, before any payload: none has arrived from codex", () => {
    const out = status();
    const line = codexLine(out);
    assert.ok(line, `cmdlog hooks status names no codex entry:\n${out}`);
    assert.ok(!TIME.test(line) && /never|no payload|none|not yet|no .*arrived/i.test(line), `hooks status should say no codex payload has arrived yet; it says: ${line}`);
  });

  await t.test("hooks trusted for one run (--dangerously-bypass-hook-trust): payloads arrive", async () => {
    const r = await codex(w, TRUSTED, "hooks trusted for this run");
    assert.ok(sessionEvents().some((e) => e.session === r.session), `no payload arrived with --trust --dangerously-bypass-hook-trust\n${r.stderr}`);
  });

  await t.test("hooks status, after: when the last codex payload arrived", () => {
    const out = status();
    const line = codexLine(out);
    assert.ok(line && TIME.test(line), `hooks status should say when the last codex payload arrived; it says: ${line ?? out}`);
  });
});

// ---------------------------------------------------------------------------
// Last: uninstall from the scenario's workspace, where there was no .codex at all.

test("hooks uninstall codex, where there was no hooks.json: file and folder gone (after real runs)", { skip: SKIP }, async () => {
  const { w } = await scenario();
  cmdlog(w, ["hooks", "uninstall", "codex"]);
  const dir = path.join(w.ws, ".codex");
  assert.ok(!fs.existsSync(path.join(dir, "hooks.json")), "uninstall left .codex/hooks.json");
  assert.ok(!fs.existsSync(dir), `uninstall left the .codex folder it made: ${fs.existsSync(dir) ? fs.readdirSync(dir).join(", ") : ""}`);
});
