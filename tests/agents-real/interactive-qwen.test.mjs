// Qwen Code 0.24.4 in its real terminal UI (no -p), run under tmux against the
// fake OpenAI Chat Completions API of fake-openai-chat.mjs, with cmdlog's hooks
// installed in the workspace and a recorder hook of ours (in the user's
// settings) keeping every payload of every hook event Qwen has. Driven as a
// user drives it; every wait is on the screen (or on a payload the hooks wrote),
// never on a clock alone.
//
// What the pinned CLI does interactively (seen with 0.24.4, FINDINGS in the
// session that wrote this file):
// - without OPENAI_* in the environment the first screen is "Connect a
//   Provider"; "Custom Provider" walks 7 steps (protocol OpenAI-compatible,
//   API Chat Completions, Base URL, API Key, Model IDs — comma-separated, so
//   two models for /model —, Advanced Config, Review: "Enter to save") and
//   ends with "Successfully configured Custom Provider". No folder-trust and
//   no TOML-migration dialog shows (folder trust is off by default);
// - Qwen's default approval mode is `auto` (a classifier); the user settings
//   here set `tools.approvalMode: "default"` ("Ask permissions") so a shell
//   call asks. A read-only command (`echo`) is still approved without asking,
//   so the calls here are `touch`;
// - the dialog: "Allow execution of: 'touch'?" with "1. Yes, allow once",
//   "2. Always allow run 'touch *' commands in this project", "3. … for this
//   user", "4. No, suggest changes (esc)";
// - `PermissionRequest` fires before `PreToolUse` and carries neither
//   `tool_use_id` nor `tool_call_id`; approval gives PreToolUse/PostToolUse
//   (with `tool_call_id` = the model's id), denial gives only `PostToolBatch`
//   (`status: "cancelled"`) — no PreToolUse, no PermissionDenied, no Stop;
// - `/model` opens "Select Model"; choosing prints "Using model: <id>"; no hook
//   fires for it, the transcript has `slash_command` records;
// - `/clear` fires SessionEnd (`reason: "clear"`) and SessionStart (`source:
//   "clear"`) under a new session id;
// - the subagent tool is `agent`; it asks permission too ("Do you want to
//   proceed?"), then SubagentStart/SubagentStop (`agent_id:
//   "general-purpose-<call id>"`); the subagent's own model requests carry the
//   system prompt "You are a general-purpose subagent…";
// - `/quit` fires SessionEnd (`reason: "prompt_input_exit"`).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { AGENTS, CMDLOG, cmdlog, events, installed, kindOf, world } from "./harness.mjs";
import { fakeOpenAIChat, lastUserText, isClassifier, textOf } from "./fake-openai-chat.mjs";
import { haveTmux, startTui } from "./tui.mjs";
import { addedKinds, freshDiffers, statedTwice } from "./interactive-checks.mjs";

const SKIP = !CMDLOG
  ? "CMDLOG_BIN is not set"
  : !installed()
    ? "the suite's packages are not installed (npm install --prefix tests/agents-real --no-save)"
    : !haveTmux()
      ? "tmux is not installed"
      : false;
if (SKIP) console.log(`\n*** SKIPPED interactive-qwen.test.mjs: ${SKIP} ***\n`);

/** Every hook event Qwen Code 0.24.4 knows (its HookEventName enum). */
const QWEN_EVENTS = [
  "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
  "UserPromptExpansion", "SessionStart", "Stop", "MessageDisplay", "SubagentStart", "SubagentStop", "PreCompact",
  "PostCompact", "SessionEnd", "SessionDelete", "PermissionRequest", "PermissionDenied", "StopFailure",
  "TodoCreated", "TodoCompleted", "InstructionsLoaded",
];

const MODELS = ["fake-model", "fake-model-2"];
const API_KEY = "sk-fake-loopback";
const PLAIN = "hello from the plain prompt";
const SLASH = "/x the moon";
const SLASH_SENT = "Explain the moon briefly.";
const APPROVED = "touch approved-file.txt";
const DENIED = "touch denied-file.txt";
const AFTER_SWITCH = "hello after the switch";
const SUBTASK = "count the files in this folder";

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const show = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The recorder: each payload in `<dir>/<ns>-<event>.json`. */
function recorder(w) {
  const dir = path.join(w.root, "payloads");
  const script = w.put(
    "recorder.sh",
    `#!/bin/sh\nd=${dir}\nmkdir -p "$d"\ncat > "$d/$(date +%s%N)-$1.json"\nexit 0\n`,
  );
  fs.chmodSync(script, 0o755);
  const hooks = {};
  for (const ev of QWEN_EVENTS) hooks[ev] = [{ hooks: [{ name: "recorder", type: "command", command: `${script} ${ev}`, timeout: 10 }] }];
  return {
    hooks,
    /** The payloads so far, in the order the hooks ran. */
    payloads() {
      if (!fs.existsSync(dir)) return [];
      return fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".json"))
        .sort()
        .flatMap((f) => {
          try {
            return [{ file: f, ...JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) }];
          } catch {
            return []; // still being written
          }
        });
    },
  };
}

/** Waits until `cond()` is truthy (a payload the hooks wrote); returns it. */
async function until(cond, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(150);
  }
}

let scenarioRun;
function scenario() {
  scenarioRun ??= (async () => {
    const fake = await fakeOpenAIChat({ models: MODELS });
    cleanups.push(() => fake.close());
    const w = world("qwen-tui");
    cleanups.push(() => w.cleanup());
    const rec = recorder(w);
    w.put(
      "home/.qwen/settings.json",
      JSON.stringify(
        {
          $version: 4,
          privacy: { usageStatisticsEnabled: false },
          general: { enableAutoUpdate: false },
          telemetry: { enabled: false },
          memory: { enableManagedAutoMemory: false },
          // Qwen 0.24.4's default is `auto` (a classifier decides); "Ask
          // permissions" is what makes a shell call ask.
          tools: { approvalMode: "default" },
          hooks: rec.hooks,
        },
        null,
        2,
      ) + "\n",
    );
    w.put("ws/.qwen/commands/x.md", "---\ndescription: Explain a thing\n---\nExplain {{args}} briefly.\n");
    cmdlog(w, ["hooks", "install", "qwen"]);

    // No OPENAI_* in the environment: the first run asks for a provider.
    const tui = startTui(w, AGENTS.qwen, [], { env: {}, width: 160, height: 50, name: "qwen" });
    cleanups.push(() => tui.kill());
    const screens = {};
    const steps = [];
    const started = Date.now();
    const step = (name) => {
      steps.push({ name, at: Date.now() - started, payloads: rec.payloads().length, requests: fake.requests.length });
    };
    /** The permission dialog is gone (the screen no longer waits for the user). */
    const dialogGone = (screen) => !/Waiting for user confirmation/.test(screen);
    const snap = (name) => (screens[name] = tui.screen({ history: 400 }));
    const count = (ev, pred = () => true) => rec.payloads().filter((p) => p.hook_event_name === ev && pred(p)).length;
    /**
     * Presses `keys` until the screen matches `pattern`: a key pressed while
     * Ink re-renders (the first-run wizard, a dialog just opened) can be lost,
     * so it is pressed again when the screen has not moved on after 3 s.
     * (For a dialog, `pattern` is its going away: a second Enter in the input
     * box could send Qwen's prompt suggestion.)
     */
    const pressUntil = async (keys, pattern, what, tries = 5) => {
      for (let i = 1; ; i++) {
        tui.press(...keys);
        try {
          return await tui.waitFor(pattern, what, { timeoutMs: i < tries ? 3_000 : 30_000 });
        } catch (e) {
          if (i >= tries) throw e;
          if ((typeof pattern === "function" ? pattern : (x) => pattern.test(x))(tui.screen())) return;
        }
      }
    };
    /** Types a line, waits until the input box shows it, presses Enter. */
    const submit = async (line) => {
      tui.type(line);
      await tui.waitFor(new RegExp(`> ${esc(line)}`), `the input box to show ${show(line)}`, { timeoutMs: 10_000 });
      await sleep(150); // Ink reads a fast Enter after a paste as part of it
      tui.press("Enter");
    };
    /** Waits for Qwen to be idle again (its idle_prompt Notification after `n` of them). */
    const idleAfter = (n, what) => until(() => count("Notification", (p) => p.notification_type === "idle_prompt") > n, `${what}: Qwen idle again`);
    const idles = () => count("Notification", (p) => p.notification_type === "idle_prompt");

    try {
      // First run: the provider wizard.
      await tui.waitFor(/Connect a Provider/, "the first-run provider screen");
      snap("first-run-provider");
      await sleep(500);
      tui.press("Down", "Down");
      await tui.waitFor(/› Custom Provider/, "Custom Provider selected", { timeoutMs: 10_000 });
      await pressUntil(["Enter"], /Step 1\/7 · Protocol[\s\S]*› OpenAI-compatible/, "step 1/7 Protocol");
      await pressUntil(["Enter"], /Step 2\/7 · API[\s\S]*› Chat Completions/, "step 2/7 API");
      await pressUntil(["Enter"], /Step 3\/7 · Base URL/, "step 3/7 Base URL");
      for (const [n, text, title, next] of [
        [3, `${fake.url}/v1`, "Base URL", /Step 4\/7 · API Key/],
        [4, API_KEY, "API Key", /Step 5\/7 · Model IDs/],
        [5, MODELS.join(", "), "Model IDs", /Step 6\/7 · Advanced Config/],
      ]) {
        await tui.waitFor(new RegExp(`Step ${n}/7 · ${title}`), `step ${n}/7 ${title}`);
        tui.type(text);
        await tui.waitFor(new RegExp(`> ${esc(text)}`), `${title} typed`, { timeoutMs: 10_000 });
        await sleep(150); // Ink reads an Enter right after typed text as part of a paste
        await pressUntil(["Enter"], next, `after step ${n}/7 ${title}`);
      }
      await pressUntil(["Enter"], /Step 7\/7 · Review[\s\S]*Enter to save/, "step 7/7 Review");
      snap("first-run-review");
      await pressUntil(["Enter"], /Successfully configured Custom Provider/, "the provider saved");
      await tui.waitFor(/Ask permissions \(shift \+ tab to cycle\)/, "the approval mode: Ask permissions");
      snap("ready");
      step("ready");

      // (1) a plain prompt.
      let n = idles();
      await submit(PLAIN);
      await tui.waitFor(new RegExp(`reply to: ${esc(PLAIN)}`), "the plain reply");
      await idleAfter(n, "plain");
      snap("plain");
      step("plain");

      // (2) a custom command with arguments.
      n = idles();
      await submit(SLASH);
      await tui.waitFor(new RegExp(`reply to: ${esc(SLASH_SENT)}`), "the custom command's reply");
      await idleAfter(n, "slash");
      snap("slash");
      step("slash");

      // (3) a shell call, approved in the dialog.
      n = idles();
      await submit(`please TOOL:${APPROVED}`);
      await tui.waitFor(/Allow execution of: 'touch'\?[\s\S]*› 1\. Yes, allow once[\s\S]*4\. No, suggest changes \(esc\)/, "the permission dialog (approve)");
      snap("approve-dialog");
      await pressUntil(["Enter"], dialogGone, "the permission dialog answered (approve)", 3);
      await tui.waitFor(new RegExp(`tool said: Command: ${esc(APPROVED)}`), "the approved call's reply");
      await idleAfter(n, "approved call");
      snap("approved");
      step("approved");

      // (4) a shell call, denied in the dialog (option 4).
      n = idles();
      await submit(`please TOOL:${DENIED}`);
      await tui.waitFor(/Allow execution of: 'touch'\?[\s\S]*› 1\. Yes, allow once/, "the permission dialog (deny)");
      await sleep(300);
      tui.press("Down", "Down", "Down");
      await tui.waitFor(/› 4\. No, suggest changes \(esc\)/, "option 4 selected");
      snap("deny-dialog");
      await pressUntil(["Enter"], dialogGone, "the permission dialog answered (deny)", 3);
      await tui.waitFor(new RegExp(`- Shell ${esc(DENIED)}`), "the denied call shown as not run");
      await idleAfter(n, "denied call");
      snap("denied");
      step("denied");

      // (5) /model, to the second model, then a prompt on it.
      await submit("/model");
      await tui.waitFor(/Select Model[\s\S]*› 1\. \[openai\] fake-model[\s\S]*2\. \[openai\] fake-model-2/, "the model dialog");
      snap("model-dialog");
      await sleep(300);
      tui.press("Down");
      await tui.waitFor(/› 2\. \[openai\] fake-model-2/, "fake-model-2 selected", { timeoutMs: 10_000 });
      await pressUntil(["Enter"], /Using model: fake-model-2/, "Qwen saying the model it uses", 3);
      snap("model-switched");
      n = idles();
      await submit(AFTER_SWITCH);
      await tui.waitFor(new RegExp(`reply to: ${esc(AFTER_SWITCH)}`), "the reply after the switch");
      await idleAfter(n, "after switch");
      step("model");

      // (6) /clear: a new session.
      await submit("/clear");
      await until(() => count("SessionStart", (p) => p.source === "clear"), "SessionStart (source clear)");
      await tui.waitFor(/Type your message/, "the input box after /clear");
      snap("clear");
      step("clear");

      // (7) a subagent (Qwen's `agent` tool), approved.
      n = idles();
      await submit(`please AGENT:${SUBTASK}`);
      await tui.waitFor(/Do you want to proceed\?[\s\S]*› 1\. Yes, allow once/, "the agent tool's permission dialog");
      snap("agent-dialog");
      await pressUntil(["Enter"], dialogGone, "the agent tool's dialog answered", 3);
      await tui.waitFor(new RegExp(`tool said: reply to: ${esc(SUBTASK)}`), "the reply after the subagent");
      await idleAfter(n, "subagent");
      snap("agent");
      step("agent");

      // (8) /quit.
      await submit("/quit");
      await tui.waitExit("Qwen to exit after /quit");
      await until(() => count("SessionEnd", (p) => p.reason === "prompt_input_exit"), "SessionEnd (prompt_input_exit)");
      snap("quit");
      step("quit");
    } catch (e) {
      e.message += `\n(payloads so far: ${rec.payloads().map((p) => p.hook_event_name).join(", ")})`;
      throw e;
    } finally {
      if (process.env.QWEN_TUI_KEEP) {
        const keep = process.env.QWEN_TUI_KEEP;
        fs.mkdirSync(keep, { recursive: true });
        for (const [k, v] of Object.entries(screens)) fs.writeFileSync(path.join(keep, `screen-${k}.txt`), v);
        fs.writeFileSync(path.join(keep, "payloads.json"), JSON.stringify(rec.payloads(), null, 1));
        fs.writeFileSync(path.join(keep, "requests.json"), JSON.stringify(fake.requests, null, 1));
        fs.cpSync(path.join(w.home, ".qwen/projects"), path.join(keep, "qwen-projects"), { recursive: true, force: true });
      }
    }

    const payloads = rec.payloads();
    const log = events(w);
    const imp = cmdlog(w, ["import", "--from", "qwen", "--json"], { expect: null });
    const afterImport = events(w);
    const freshLog = path.join(w.root, "fresh.redb");
    cmdlog(w, ["import", "--from", "qwen", "--log", freshLog]);
    const fresh = events(w, freshLog);
    const verify = cmdlog(w, ["verify"], { expect: null });
    if (process.env.QWEN_TUI_KEEP) {
      const keep = process.env.QWEN_TUI_KEEP;
      fs.writeFileSync(path.join(keep, "log-hooks.jsonl"), log.map((e) => JSON.stringify(e)).join("\n") + "\n");
      fs.writeFileSync(path.join(keep, "log-after-import.jsonl"), afterImport.map((e) => JSON.stringify(e)).join("\n") + "\n");
      fs.writeFileSync(path.join(keep, "import.json"), imp.stdout + imp.stderr);
      fs.writeFileSync(path.join(keep, "verify.txt"), `exit ${verify.status}\n${verify.stdout}${verify.stderr}`);
      fs.writeFileSync(path.join(keep, "steps.json"), JSON.stringify(steps, null, 1));
    }
    const turns = fake.requests.filter((q) => q.method === "POST" && q.url.includes("/chat/completions") && !isClassifier(q.body));
    return { w, fake, turns, payloads, screens, steps, log, imp, afterImport, fresh, verify, ms: Date.now() - started };
  })();
  return scenarioRun;
}

const ev = (payloads, name, pred = () => true) => payloads.filter((p) => p.hook_event_name === name && pred(p));
const sessions = (payloads) => [...new Set(payloads.filter((p) => p.session_id).map((p) => p.session_id))];
/** Qwen's own model requests: not the prompt-suggestion ones, not the subagent's. */
const isSuggestion = (q) => /Reply with ONLY the suggestion/.test(lastUserText(q.body));
const isSubagentReq = (q) => /^You are a general-purpose subagent/.test(textOf(q.body?.messages?.[0]?.content));

// ---------------------------------------------------------------------------
// 1. The screen flow and what Qwen's hooks report (facts about Qwen itself).

test("qwen tui: a user's session in the terminal UI, as the hooks saw it", { skip: SKIP, timeout: 600_000 }, async (t) => {
  const s = await scenario();
  console.log(`QWEN-TUI scenario ${s.ms} ms; steps ${show(s.steps.map((x) => [x.name, x.at]))}`);
  const [first, second] = sessions(s.payloads);

  await t.test("two sessions: the first, and the one /clear starts", () => {
    assert.equal(sessions(s.payloads).length, 2, `sessions: ${show(sessions(s.payloads))}`);
    const end = ev(s.payloads, "SessionEnd", (p) => p.session_id === first);
    assert.deepEqual(end.map((p) => p.reason), ["clear"], "the first session's SessionEnd");
    const start2 = ev(s.payloads, "SessionStart", (p) => p.session_id === second);
    assert.deepEqual(start2.map((p) => p.source), ["clear"], "the second session's SessionStart");
    assert.deepEqual(ev(s.payloads, "SessionEnd", (p) => p.session_id === second).map((p) => p.reason), ["prompt_input_exit"]);
  });

  await t.test("the custom command: UserPromptExpansion then UserPromptSubmit, and the model got the expansion", () => {
    const exp = ev(s.payloads, "UserPromptExpansion");
    assert.deepEqual(exp.map((p) => [p.command_name, p.command_args, p.prompt]), [["x", "the moon", SLASH_SENT]]);
    const sub = ev(s.payloads, "UserPromptSubmit", (p) => p.submitted_prompt === SLASH);
    assert.deepEqual(sub.map((p) => p.prompt), [SLASH_SENT]);
    assert.ok(s.turns.some((q) => lastUserText(q.body) === SLASH_SENT), "no model request carried the expansion");
  });

  await t.test("the approved call: PermissionRequest (no ids) before PreToolUse (the model's id)", () => {
    const req = ev(s.payloads, "PermissionRequest", (p) => p.tool_input?.command === APPROVED);
    const pre = ev(s.payloads, "PreToolUse", (p) => p.tool_input?.command === APPROVED);
    const post = ev(s.payloads, "PostToolUse", (p) => p.tool_input?.command === APPROVED);
    assert.equal(req.length, 1, "PermissionRequest");
    assert.equal(pre.length, 1, "PreToolUse");
    assert.equal(post.length, 1, "PostToolUse");
    assert.ok(req[0].file < pre[0].file, "PermissionRequest after PreToolUse");
    assert.equal(req[0].tool_use_id, undefined);
    assert.equal(req[0].tool_call_id, undefined);
    const modelCall = s.turns.find((q) => q.answer?.call?.args?.command === APPROVED).answer.call.id;
    assert.equal(pre[0].tool_call_id, modelCall);
    assert.equal(post[0].tool_call_id, modelCall);
  });

  await t.test("the denied call: PermissionRequest, then only PostToolBatch (cancelled)", () => {
    const req = ev(s.payloads, "PermissionRequest", (p) => p.tool_input?.command === DENIED);
    assert.equal(req.length, 1, "PermissionRequest");
    assert.deepEqual(ev(s.payloads, "PreToolUse", (p) => p.tool_input?.command === DENIED), [], "PreToolUse for a denied call");
    const batch = ev(s.payloads, "PostToolBatch", (p) => p.tool_calls?.some((c) => c.tool_input?.command === DENIED));
    assert.equal(batch.length, 1, "PostToolBatch");
    assert.equal(batch[0].tool_calls[0].status, "cancelled");
  });

  await t.test("/model: the next request carries the new model", () => {
    const after = s.turns.find((q) => lastUserText(q.body) === AFTER_SWITCH);
    assert.equal(after?.body.model, "fake-model-2");
    const before = s.turns.find((q) => lastUserText(q.body) === PLAIN);
    assert.equal(before?.body.model, "fake-model");
  });

  await t.test("the subagent: SubagentStart/Stop named after the parent's call id; its requests have their own system prompt", () => {
    const call = s.turns.find((q) => q.answer?.call?.name === "agent")?.answer.call;
    assert.ok(call, "the fake never called the agent tool");
    const start = ev(s.payloads, "SubagentStart");
    const stop = ev(s.payloads, "SubagentStop");
    assert.deepEqual(start.map((p) => p.agent_id), [`general-purpose-${call.id}`]);
    assert.deepEqual(stop.map((p) => p.agent_id), [`general-purpose-${call.id}`]);
    assert.ok(s.turns.some((q) => isSubagentReq(q) && lastUserText(q.body) === SUBTASK), "no subagent request");
    assert.ok(!s.turns.some((q) => isSuggestion(q) && isSubagentReq(q)));
  });
});

// ---------------------------------------------------------------------------
// 2. ===== cmdlog's log of that session (the checks; may fail until
//    cmdlog handles interactive Qwen) =====

test("qwen tui: cmdlog's log holds the session once, settled", { skip: SKIP, timeout: 600_000 }, async (t) => {
  const s = await scenario();
  const { log } = s;
  const sids = sessions(s.payloads);

  /** Facts recorded twice in `evs`: prompts, calls, runs, replies; and turn ends vs Stop hooks. */
  const twice = (evs) => {
    const doubled = [];
    const seen = new Map();
    for (const e of evs) {
      let key = null;
      const k = kindOf(e);
      if (k === "session/prompt") key = `${e.session} prompt ${e.data.text}`;
      else if (k === "session/update:tool_call") key = `${e.session} call ${e.data.toolCallId}`;
      else if (k === "command/run") key = `${e.session} run ${e.data.name} ${e.data.raw_input ?? ""}`;
      else if (k === "session/update:agent_message_chunk") key = `${e.session} reply ${e.data.content?.text}`;
      if (key && seen.has(key)) doubled.push(`${key} (seq ${seen.get(key)} and ${e.seq})`);
      else if (key) seen.set(key, e.seq);
    }
    for (const sid of sids) {
      const stops = ev(s.payloads, "Stop", (p) => p.session_id === sid).length;
      const ends = evs.filter((e) => e.session === sid && kindOf(e) === "session/update:turn_complete").length;
      if (ends !== stops) doubled.push(`${sid}: ${ends} turn ends for ${stops} Stop hooks`);
    }
    return doubled;
  };

  await t.test("each fact once in the hook log (prompts, replies, turn ends, runs, calls)", () => {
    assert.deepEqual(twice(log), [], "facts recorded twice");
    const empty = log.filter((e) => e.type === "session/prompt" && !e.data.text);
    assert.deepEqual(empty.map((e) => e.seq), [], "empty prompts (Qwen's UserPromptSubmit after a tool result)");
  });

  await t.test("each fact once after import --from qwen into the same log", () => {
    assert.deepEqual(twice(s.afterImport), [], "facts recorded twice (hook + transcript)");
  });

  await t.test("every call settled (completed or failed), under the model's id", () => {
    // Qwen asks before it names the call: the request names it by its tool
    // and input, its answer and the call itself name each other.
    const calls = new Map();
    for (const e of log) {
      if (kindOf(e) === "session/update:tool_call") calls.set(`${e.session} ${e.data.toolCallId}`, e.seq);
      if (e.type === "permission/resolved" && e.data.decision?.toolCallId) calls.set(`${e.session} ${e.data.decision.toolCallId}`, e.seq);
    }
    const settled = new Set(
      log
        .filter((e) => kindOf(e) === "session/update:tool_call_update" && ["completed", "failed"].includes(e.data.status))
        .map((e) => `${e.session} ${e.data.toolCallId}`),
    );
    const pending = [...calls.keys()].filter((k) => !settled.has(k));
    assert.deepEqual(pending, [], "calls never settled");
    const modelIds = new Set(s.turns.filter((q) => q.answer?.call && !isSubagentReq(q)).map((q) => q.answer.call.id));
    const invented = [...calls.keys()].map((k) => k.split(" ")[1]).filter((id) => !modelIds.has(id));
    assert.deepEqual(invented, [], `call ids that are not the model's (${show([...modelIds])})`);
  });

  await t.test("every permission/requested has its permission/resolved, with the user's choice", () => {
    const requested = log.filter((e) => e.type === "permission/requested");
    assert.equal(requested.length, 3, "permission requests (approve, deny, agent)");
    const resolved = new Map(log.filter((e) => e.type === "permission/resolved").map((e) => [e.data.request_id, e]));
    const open = requested.filter((e) => !resolved.has(e.data.request_id)).map((e) => `${e.seq} ${e.data.tool_call?.rawInput?.command ?? e.data.tool_call?.title}`);
    assert.deepEqual(open, [], "permission requests never answered");
    const outcome = (cmd) => {
      const r = requested.find((e) => e.data.tool_call?.rawInput?.command === cmd);
      const d = resolved.get(r?.data.request_id)?.data.decision;
      return (r?.data.options ?? []).find((o) => o.optionId === d?.optionId)?.kind;
    };
    assert.match(String(outcome(APPROVED)), /^allow/, "the approved call's decision");
    assert.match(String(outcome(DENIED)), /^reject/, "the denied call's decision");
  });

  await t.test("a session/model_switched event for /model (no hook reports it: the chat does)", () => {
    const switched = s.afterImport.filter((e) => e.type === "session/model_switched" && e.session === sids[0]);
    assert.equal(switched.length, 1, `session/model_switched in ${sids[0]}: ${switched.length}`);
    assert.ok(JSON.stringify(switched[0].data).includes("fake-model-2"), show(switched[0].data));
  });

  await t.test("exactly one session/ended per session", () => {
    for (const sid of sids) {
      const ended = log.filter((e) => e.session === sid && e.type === "session/ended");
      assert.equal(ended.length, 1, `session/ended in ${sid}`);
    }
  });

  await t.test("import --from qwen into the same log states nothing again; it adds only what no hook reports", () => {
    assert.equal(s.imp.status, 0, `import exited ${s.imp.status}: ${s.imp.stderr}`);
    assert.deepEqual(statedTwice(log, s.afterImport), []);
    // The built-in no hook names (/model) and the switch it made; the task
    // the subagent was given (its own transcript: no hook reports it).
    assert.deepEqual(addedKinds(log, s.afterImport), {
      "command/run": 1,
      "command/done": 1,
      "session/prompt": 1,
      "session/model_switched": 1,
    });
  });

  await t.test("import --from qwen into a fresh log gives the same sessions: prompts, parents (a main session's end is in no file of Qwen Code's; a subagent's is)", () => {
    assert.deepEqual(freshDiffers(log, s.fresh, { ends: false }), []);
  });

  await t.test("cmdlog verify exits 0", () => {
    assert.equal(s.verify.status, 0, `cmdlog verify exited ${s.verify.status}:\n${s.verify.stdout}\n${s.verify.stderr}`);
  });
});
