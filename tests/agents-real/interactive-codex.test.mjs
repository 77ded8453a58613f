// Codex CLI 0.171.0 in its real terminal UI (no `exec`), run under tmux
// against our Responses API server on loopback, with cmdlog's hooks installed
// in the project and a recorder hook beside them that keeps every payload Codex
// sends, driven as a user would drive it: the first-run screens, a prompt, a
// skill with arguments, a shell call approved and one rejected in the approval
// dialog, a sub-agent, `/model`, `/new`, `/quit`. Then the log the hooks wrote
// is read, the rollouts are imported into the same log, and `cmdlog verify` runs.
//
// What Codex 0.171's TUI does that shapes this scenario (observed; notes in
// /tmp/tui-codex/FINDINGS.md when the exploration ran):
// - First run: "Trust this folder?" (1. Trust and continue), then "Hooks need
//   review" (1. Review hooks / 2. Trust all and continue / 3. Continue without
//   trusting). Trust is stored in $CODEX_HOME/config.toml (`[projects."…"]
//   trust_level`, `[hooks.state."…:event:i:j"] trusted_hash`).
// - The TUI talks to a background app-server ("Local background server",
//   `codex app-server --listen unix:// --managed-daemon`, copied under
//   $CODEX_HOME/packages): hooks run there. `/quit` only detaches ("Disconnected
//   from this task. Any running work continues."); SessionEnd (reason "other")
//   fires when the server unloads the thread, `thread_unload_delay_secs` after
//   the last client left (60 s by default), and also for the chat `/new` left.
// - The default permissions are "Workspace (Ask for approval)": approval
//   `on-request`, sandbox `workspace-write`, `approvals_reviewer = "user"` (no
//   auto-review). A call asking `sandbox_permissions: "require_escalated"` opens
//   the dialog: 1. Yes, proceed (y) / 2. Yes, and don't ask again for commands
//   that start with `…` (p) / 3. No, and tell Codex what to do differently (esc).
//   3 (esc, and `n`) cancels: the call is aborted and the turn interrupted.
// - Custom prompts are gone: `/prompts:greet alice bob` is refused on screen
//   ("Unrecognized command") and reaches neither the model nor a hook. Skills
//   (`$greet alice bob`, $CODEX_HOME/skills/greet/SKILL.md) are the nearest thing.
// - `/model` to a catalogued GPT model switches the session to code mode (the
//   tools move into an `additional_tools` input item, shell calls go through a
//   JavaScript `exec` tool), so the shell and sub-agent steps come before it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { AGENTS, CMDLOG, NODE, cmdlog, events, installed, kindOf, world, ownEvent } from "./harness.mjs";
import { fakeResponses, lastUserText, sessionOf, JUSTIFICATION } from "./fake-openai-responses.mjs";
import { haveTmux, startTui } from "./tui.mjs";
import { addedKinds, freshDiffers, statedTwice } from "./interactive-checks.mjs";

const SKIP =
  !installed() ? "needs the pinned agents (npm install --prefix tests/agents-real --no-save)"
  : !CMDLOG ? "needs CMDLOG_BIN (the cmdlog binary to test)"
  : !haveTmux() ? "needs tmux (Debian's package) to run Codex's terminal UI"
  : false;
if (SKIP) {
  console.log(`\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n!!! SKIPPED interactive-codex.test.mjs: ${SKIP}\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n`);
}

/** Where to copy the raw artifacts (payloads, rollouts, screens, log), when set. */
const ARTIFACTS = process.env.CMDLOG_TUI_ARTIFACTS;

/** Every hook event Codex 0.171 knows; the recorder hook is installed for each. */
const CODEX_EVENTS = [
  "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
  "PostToolUse", "Stop", "PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Interrupt",
];

const PROMPTS = {
  plain: "say hello for the log",
  skill: "alice bob", // typed after the `$greet` the skill popup inserts
  customPrompt: "/prompts:greet alice bob",
  approved: "please run ESCALATE:touch approved.txt",
  rejected: "please run ESCALATE:touch rejected.txt",
  subagent: "delegate SPAWN:say hi from the sub-agent", // SUBTASK below
  afterModel: "after the model switch",
  newChat: "first prompt of the new chat",
};
const SUBTASK = "say hi from the sub-agent";
const SWITCH_TO = { label: "GPT-6.1-Sol", slug: "gpt-6.1-sol" };
const SKILL = "---\nname: greet\ndescription: Greet the two people named in the arguments\n---\nGreet the first person named, then the second.\n";
// Seconds the background server keeps a thread loaded after its last client
// left; SessionEnd fires when it unloads it (the default is 60).
const UNLOAD_DELAY = 5;

let server;
let w;
let tui;
const started = Date.now();

after(async () => {
  try {
    tui?.kill();
  } catch {}
  if (w) stopDaemon(w);
  await server?.close();
  if (w && !process.env.CMDLOG_REAL_KEEP) w.cleanup();
});

/** Stops the world's background app-server and whatever Codex left running under its CODEX_HOME (by pid). */
function stopDaemon(w) {
  spawnSync(NODE, [AGENTS.codex, "app-server", "daemon", "stop"], { cwd: w.ws, env: { ...w.env, ...w.agentEnv }, encoding: "utf8", timeout: 30_000 });
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmd.includes(w.codexHome + "/")) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {}
    }
  }
}

// ---------------------------------------------------------------------------
// The world and its recorder

function setUp() {
  w = world("codex-tui");
  w.codexHome = path.join(w.home, ".codex");
  w.agentEnv = { CODEX_HOME: w.codexHome, FAKE_API_KEY: "loopback-only" };
  w.put(
    "home/.codex/config.toml",
    [
      'model = "fake-model"',
      'model_provider = "fake"',
      // Typed text followed at once by Enter is otherwise taken for a paste
      // (the Enter becomes a newline in the composer).
      "disable_paste_burst = true",
      "check_for_update_on_startup = false",
      `thread_unload_delay_secs = ${UNLOAD_DELAY}`,
      "",
      "[model_providers.fake]",
      'name = "fake"',
      `base_url = "${server.url}"`,
      'wire_api = "responses"',
      'env_key = "FAKE_API_KEY"',
      "",
    ].join("\n"),
  );
  w.put("home/.codex/prompts/greet.md", "---\ndescription: Greet two people\nargument-hint: A B\n---\nGreet $1 and then $2. All: $ARGUMENTS\n");
  w.put("home/.codex/skills/greet/SKILL.md", SKILL);
  w.payloads = path.join(w.root, "payloads");
  w.screens = path.join(w.root, "screens");
  fs.mkdirSync(w.payloads);
  fs.mkdirSync(w.screens);
  const recorder = w.put(
    "recorder.sh",
    `#!/bin/sh\nf=$(mktemp ${w.payloads}/$(date +%s%N)-XXXXXX)\ncat > "$f"\nmv "$f" "$f.json"\n`,
  );
  fs.chmodSync(recorder, 0o755);
  w.install = cmdlog(w, ["hooks", "install", "codex"]);
  const file = path.join(w.ws, ".codex/hooks.json");
  const hooks = JSON.parse(fs.readFileSync(file, "utf8"));
  for (const e of CODEX_EVENTS) {
    // Codex clamps SessionEnd and Interrupt hooks to 3 s (and warns above it).
    const timeout = e === "SessionEnd" || e === "Interrupt" ? 3 : 10;
    (hooks.hooks[e] ??= []).push({ hooks: [{ type: "command", command: recorder, timeout }] });
  }
  fs.writeFileSync(file, JSON.stringify(hooks, null, 2) + "\n");
  w.hookCount = Object.values(hooks.hooks).reduce((n, groups) => n + groups.reduce((m, g) => m + g.hooks.length, 0), 0);
}

/** The payloads recorded so far, in the order they arrived. */
function payloads() {
  return fs
    .readdirSync(w.payloads)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => ({ file: f, ...JSON.parse(fs.readFileSync(path.join(w.payloads, f), "utf8")) }));
}

async function waitPayload(pred, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = payloads().filter(pred);
    if (found.length) return found;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for the hook payload: ${what}\npayloads:\n${payloads().map((p) => `${p.hook_event_name} ${p.session_id}`).join("\n")}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** Waits for the hook payload `event` of the turn whose UserPromptSubmit carried `prompt`. */
async function waitTurn(prompt, event, timeoutMs = 30_000) {
  const [submit] = await waitPayload((p) => p.hook_event_name === "UserPromptSubmit" && p.prompt === prompt, `UserPromptSubmit ${JSON.stringify(prompt)}`, timeoutMs);
  return waitPayload((p) => p.hook_event_name === event && p.turn_id === submit.turn_id, `${event} of the turn of ${JSON.stringify(prompt)}`, timeoutMs);
}

let shot = 0;
function capture(step) {
  fs.writeFileSync(path.join(w.screens, `${String(++shot).padStart(2, "0")}-${step}.txt`), tui.screen({ history: 400 }));
}

/** The composer line (`› …`) right above the status line: what is typed and not sent. */
const composerHas = (text) => (s) => s.split("\n").some((l) => l.startsWith("› ") && l.includes(text));

/** Types a line, waits until the composer shows it, then sends it. */
async function send(text, what) {
  tui.type(text);
  await tui.waitFor(composerHas(text), `the composer to show ${JSON.stringify(text)} (${what})`, { timeoutMs: 10_000 });
  tui.press("Enter");
}

/**
 * Sends a prompt and waits for its `UserPromptSubmit`. Right after `/new` or
 * `/model` the TUI may still be setting up and take the line without sending
 * it (it stays in the composer): as a user would, Enter is pressed again.
 */
async function sendPrompt(text, what) {
  const submitted = () => payloads().filter((p) => p.hook_event_name === "UserPromptSubmit" && p.prompt === text).length;
  const before = submitted();
  await send(text, what);
  for (let attempt = 1; ; attempt++) {
    try {
      return await waitPayload(() => submitted() > before, `UserPromptSubmit ${JSON.stringify(text)} (${what})`, 15_000);
    } catch (e) {
      if (attempt === 3) throw e;
      tui.press("Enter");
    }
  }
}

/**
 * Sends a slash command and waits for `ready`. The `Stop` hook runs before the
 * TUI takes its turn for finished, so a command sent right after it may be
 * refused ("'/new' is disabled while a task is in progress"): as a user would,
 * it is sent again once the turn is over.
 */
async function sendCommand(text, what, ready, { timeoutMs = 60_000 } = {}) {
  const busy = new RegExp(`'${text.replace(/[/]/g, "\\/")}' is disabled while a task is in progress`, "g");
  const refusals = (s) => (s.match(busy) ?? []).length;
  for (let attempt = 1; ; attempt++) {
    const before = refusals(tui.screen({ history: 400 }));
    await send(text, what);
    const screen = await tui.waitFor((s) => ready.test(s) || refusals(s) > before, `${what}: ${ready}`, { timeoutMs, history: 400 });
    if (ready.test(screen)) return screen;
    if (attempt === 5) throw new Error(`${text} refused ${attempt} times: a task stayed in progress\n${screen}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Counts matches of `re` on the whole screen and its history. */
const count = (re) => (s) => (s.match(new RegExp(re.source, "g")) ?? []).length;

// ---------------------------------------------------------------------------
// The scenario

let scenarioOnce;
function scenario() {
  return (scenarioOnce ??= run().catch((e) => {
    if (ARTIFACTS && w) {
      try {
        fs.writeFileSync(path.join(w.screens, "zz-failure.txt"), `${e.stack}\n\n${tui?.screen({ history: 400 }) ?? ""}`);
        keep({ partial: true });
      } catch {}
    }
    throw e;
  }));
}

async function run() {
  {
    server = await fakeResponses();
    setUp();
    const flow = {};
    tui = startTui(w, AGENTS.codex, [], { env: w.agentEnv, width: 160, height: 50, name: "codex" });

    // First-run screens.
    await tui.waitFor(/Trust this folder\?/, "the folder trust question", { timeoutMs: 60_000 });
    capture("trust-folder");
    flow.trustFolder = true;
    tui.press("Enter"); // 1. Trust and continue
    await tui.waitFor(/Hooks need review/, "the hooks review question");
    const review = tui.screen();
    flow.hooksReview = /(\d+) hooks are new or changed/.exec(review)?.[1];
    capture("hooks-need-review");
    tui.press("2"); // 2. Trust all and continue (selects it)
    await tui.waitFor(/› 2\. Trust all and continue/, "Trust all selected");
    tui.press("Enter");
    await tui.waitFor(/Ask Codex to do anything/, "the composer after trusting the hooks");
    capture("composer");

    // 1. A plain prompt.
    await send(PROMPTS.plain, "plain prompt");
    await tui.waitFor(/reply to: say hello for the log/, "the reply to the plain prompt");
    await waitTurn(PROMPTS.plain, "Stop");
    capture("plain");
    flow.session = payloads().find((p) => p.hook_event_name === "SessionStart")?.session_id;

    // 2. A custom prompt (refused: removed from Codex), then a skill with arguments.
    await send(PROMPTS.customPrompt, "custom prompt");
    await tui.waitFor(/Unrecognized command '\/prompts:greet'/, "Codex refusing /prompts:greet");
    flow.customPromptRefused = true;
    capture("custom-prompt-refused");
    // The refused line stays in the composer: clear it.
    tui.press("End");
    for (let i = 0; i < PROMPTS.customPrompt.length + 2; i++) tui.press("BSpace");
    await tui.waitFor(/Ask Codex to do anything/, "an empty composer");
    tui.type("$gree");
    await tui.waitFor(/greet\s+\[Skill\]/, "the skill popup offering greet");
    tui.press("Enter");
    await tui.waitFor(composerHas("$greet"), "the skill inserted in the composer");
    await send(PROMPTS.skill, "skill arguments");
    await waitTurn(`$greet ${PROMPTS.skill}`, "Stop");
    capture("skill");

    // 3. A shell call approved in the dialog.
    await send(PROMPTS.approved, "approved call");
    await tui.waitFor(/Would you like to run the following command\?/, "the approval dialog (approved call)");
    const dialog = tui.screen();
    flow.dialog = {
      reason: new RegExp(`Reason: ${JUSTIFICATION}`).test(dialog),
      options: dialog.split("\n").filter((l) => /^\s*›?\s*\d\. /.test(l)).map((l) => l.replace(/^\s*›?\s*/, "").trim()),
    };
    capture("approval-dialog");
    tui.press("y");
    await tui.waitFor(/You approved codex to run touch approved\.txt/, "the approval acknowledged");
    await waitTurn(PROMPTS.approved, "Stop");
    flow.approvedRan = fs.existsSync(path.join(w.ws, "approved.txt"));
    capture("approved");

    // 4. A shell call rejected in the dialog (esc: "No, and tell Codex what to do differently").
    await send(PROMPTS.rejected, "rejected call");
    await tui.waitFor(/Would you like to run the following command\?[\s\S]*touch rejected\.txt/, "the approval dialog (rejected call)");
    capture("rejection-dialog");
    tui.press("Escape");
    await tui.waitFor(/You canceled the request to run touch rejected\.txt/, "the rejection acknowledged");
    await tui.waitFor(/Conversation interrupted/, "the turn interrupted");
    await waitTurn(PROMPTS.rejected, "Interrupt");
    flow.rejectedRan = fs.existsSync(path.join(w.ws, "rejected.txt"));
    capture("rejected");

    // 7 (before /model: the switched model is in code mode). A sub-agent.
    const before = server.responses().length;
    await send(PROMPTS.subagent, "sub-agent");
    await tui.waitFor(() => server.answers.some((a) => a.name === "spawn_agent"), "the model asking for spawn_agent", { timeoutMs: 30_000 });
    // The sub-agent's requests carry the parent's session id (`session-id`
    // header, `session_id` in x-codex-turn-metadata) and its own `thread_id`.
    await tui.waitFor(
      () => server.responses().slice(before).some((r) => lastUserText(r.body) === SUBTASK),
      "the sub-agent's own request",
      { timeoutMs: 60_000 },
    );
    await waitPayload((p) => p.hook_event_name === "SubagentStop", "SubagentStop", 60_000);
    await waitTurn(PROMPTS.subagent, "Stop", 60_000);
    await tui.waitFor(/Ask Codex to do anything/, "the composer after the sub-agent turn");
    capture("subagent");
    const meta = (r) => JSON.parse(r.headers["x-codex-turn-metadata"] ?? "{}");
    const sub = server.responses().slice(before).filter((r) => lastUserText(r.body) === SUBTASK);
    flow.subagentRequests = sub.map((r) => ({ session: sessionOf(r), thread: meta(r).thread_id, agent: meta(r).agent_name, model: r.body.model }));
    flow.subagentThreads = [...new Set(flow.subagentRequests.map((r) => r.thread))];

    // 5. /model.
    await sendCommand("/model", "/model", /Select Model and Effort/);
    capture("model-picker");
    const pick = new RegExp(`(\\d+)\\. ${SWITCH_TO.label.replace(/[.]/g, "\\.")}\\b`).exec(tui.screen())?.[1];
    assert.ok(pick, `the model picker does not list ${SWITCH_TO.label}`);
    tui.press(pick);
    await tui.waitFor(/Select Reasoning Level for/, "the reasoning level picker");
    capture("reasoning-picker");
    tui.press("Enter"); // "enter default" (saved as the default), "s session" for this session only
    await tui.waitFor(new RegExp(`Model changed to ${SWITCH_TO.slug}`), "the model switch acknowledged");
    await sendPrompt(PROMPTS.afterModel, "prompt after /model");
    await tui.waitFor(/reply to: after the model switch/, "the reply after /model");
    await waitTurn(PROMPTS.afterModel, "Stop");
    capture("after-model");
    flow.modelAfterSwitch = server.responses().filter((r) => lastUserText(r.body) === PROMPTS.afterModel).map((r) => r.body.model);

    // 6. /new.
    await sendCommand("/new", "/new", /Where should the new conversation run\?/);
    capture("new-where");
    tui.press("Enter"); // 1. Use current Git worktree
    await tui.waitFor((s) => /Ask Codex to do anything/.test(s) && !/after the model switch/.test(s), "a fresh chat after /new");
    await sendPrompt(PROMPTS.newChat, "prompt in the new chat");
    await tui.waitFor(/reply to: first prompt of the new chat/, "the reply in the new chat");
    const newStop = await waitTurn(PROMPTS.newChat, "Stop");
    flow.newSession = newStop[0].session_id;
    capture("new-chat");

    // 8. /quit.
    await send("/quit", "/quit");
    await tui.waitExit("Codex to exit after /quit", { timeoutMs: 30_000 });
    capture("quit");
    flow.quitScreen = /Disconnected from this task/.test(tui.screen());

    // The sessions end when the background server unloads them.
    const sessions = [flow.session, flow.newSession];
    await waitPayload(() => sessions.every((s) => payloads().some((p) => p.hook_event_name === "SessionEnd" && p.session_id === s)), "SessionEnd of both chats", (UNLOAD_DELAY + 60) * 1000).catch((e) => {
      flow.sessionEndMissing = String(e.message).split("\n")[0];
    });
    stopDaemon(w);

    const log = events(w);
    const rollouts = [];
    const walk = (dir) => {
      if (!fs.existsSync(dir)) return;
      for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, ent.name);
        if (ent.isDirectory()) walk(p);
        else if (/^rollout-.*\.jsonl$/.test(ent.name)) rollouts.push(p);
      }
    };
    walk(path.join(w.codexHome, "sessions"));
    const importOut = cmdlog(w, ["import", "--from", "codex", "--json"], { env: w.agentEnv, expect: null });
    const afterImport = events(w);
    const freshLog = path.join(w.root, "fresh.redb");
    cmdlog(w, ["import", "--from", "codex", "--log", freshLog], { env: w.agentEnv });
    const fresh = events(w, freshLog);
    const verify = cmdlog(w, ["verify"], { expect: null });
    const result = { flow, log, rollouts, importOut, afterImport, fresh, verify, payloads: payloads(), ms: Date.now() - started };
    if (ARTIFACTS) keep(result);
    return result;
  }
}

/** Copies the raw artifacts to $CMDLOG_TUI_ARTIFACTS. */
function keep(r) {
  const dir = path.join(ARTIFACTS, "run");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "rollouts"), { recursive: true });
  fs.cpSync(w.payloads, path.join(dir, "payloads"), { recursive: true });
  fs.cpSync(w.screens, path.join(dir, "screens"), { recursive: true });
  for (const f of r.rollouts ?? []) fs.copyFileSync(f, path.join(dir, "rollouts", path.basename(f)));
  fs.writeFileSync(path.join(dir, "requests.json"), JSON.stringify(server.requests, null, 1));
  fs.writeFileSync(path.join(dir, "answers.json"), JSON.stringify(server.answers, null, 1));
  if (r.partial) return;
  fs.writeFileSync(path.join(dir, "requests.json"), JSON.stringify(server.requests, null, 1));
  fs.writeFileSync(path.join(dir, "answers.json"), JSON.stringify(server.answers, null, 1));
  fs.writeFileSync(path.join(dir, "log-hooks.jsonl"), r.log.map((e) => JSON.stringify(e)).join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "log-after-import.jsonl"), r.afterImport.map((e) => JSON.stringify(e)).join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "import.json"), r.importOut.stdout + r.importOut.stderr);
  fs.writeFileSync(path.join(dir, "verify.txt"), `exit ${r.verify.status}\n${r.verify.stdout}\n${r.verify.stderr}`);
  fs.writeFileSync(path.join(dir, "flow.json"), JSON.stringify(r.flow, null, 1));
  fs.writeFileSync(path.join(dir, "hooks.json"), fs.readFileSync(path.join(w.ws, ".codex/hooks.json")));
  fs.writeFileSync(path.join(dir, "config.toml"), fs.readFileSync(path.join(w.codexHome, "config.toml")));
}

// ---------------------------------------------------------------------------
// The screen flow and the payloads

test("Codex's TUI: first-run screens, prompt, skill, approval, rejection, sub-agent, /model, /new, /quit", { skip: SKIP, timeout: 600_000 }, async () => {
  const { flow, payloads: ps, ms } = await scenario();
  console.log(`INTERACTIVE-CODEX scenario took ${Math.round(ms / 1000)} s`);
  assert.equal(flow.hooksReview, String(w.hookCount), "the hooks review names every installed hook as new");
  assert.ok(flow.customPromptRefused, "/prompts:greet was not refused");
  assert.ok(flow.dialog.reason, "the approval dialog does not show the call's justification as its Reason");
  assert.deepEqual(flow.dialog.options.map((o) => o.replace(/`[^`]*`/, "`…`")), [
    "1. Yes, proceed (y)",
    "2. Yes, and don't ask again for commands that start with `…` (p)",
    "3. No, and tell Codex what to do differently (esc)",
  ]);
  assert.ok(flow.approvedRan, "the approved command did not run");
  assert.ok(!flow.rejectedRan, "the rejected command ran");
  assert.deepEqual(flow.modelAfterSwitch, [SWITCH_TO.slug], "the model the request after /model carries");
  assert.ok(flow.subagentThreads.length >= 1, "no request of a sub-agent reached the server");
  assert.notEqual(flow.newSession, flow.session, "/new did not start a new session");
  assert.ok(flow.quitScreen, "/quit did not say it disconnected");
  assert.equal(flow.sessionEndMissing, undefined, flow.sessionEndMissing);

  // The hook payloads: what each step fired.
  const names = (pred) => ps.filter(pred).map((p) => p.hook_event_name);
  const ofTurn = (prompt) => {
    const t = ps.find((p) => p.hook_event_name === "UserPromptSubmit" && p.prompt === prompt)?.turn_id;
    assert.ok(t, `no UserPromptSubmit for ${JSON.stringify(prompt)}`);
    return names((p) => p.turn_id === t);
  };
  assert.deepEqual(ofTurn(PROMPTS.plain), ["UserPromptSubmit", "Stop"]);
  assert.ok(!ps.some((p) => /prompts:greet/.test(p.prompt ?? "")), "a hook saw the refused /prompts:greet");
  assert.deepEqual(ofTurn(PROMPTS.approved), ["UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop"]);
  assert.deepEqual(ofTurn(PROMPTS.rejected), ["UserPromptSubmit", "PreToolUse", "PermissionRequest", "Interrupt"]);
  const perm = ps.find((p) => p.hook_event_name === "PermissionRequest" && /approved/.test(p.tool_input?.command));
  assert.equal(perm.tool_input.description, JUSTIFICATION, "PermissionRequest's tool_input.description is the call's justification");
  assert.equal(perm.tool_use_id, undefined, "PermissionRequest carries a tool_use_id now");
});

// ---------------------------------------------------------------------------
// ===== cmdlog log checks (the issue): these may fail until cmdlog handles =====
// ===== what Codex's TUI sends; each names what it found.                 =====

const ofSession = (log, id) => log.filter((e) => e.session === id);
const ofKind = (evs, kind) => evs.filter((e) => kindOf(e) === kind);
const show = (evs) => evs.map((e) => `${e.seq} ${e.session?.slice(-8) ?? "-"} ${kindOf(e)} ${JSON.stringify(e.data).slice(0, 160)}`).join("\n");

test("log: each fact once (prompts, replies, tool calls, results, turn ends)", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log, flow } = await scenario();
  const doubled = [];
  for (const s of new Set(log.filter((e) => e.session).map((e) => e.session))) {
    const evs = ofSession(log, s);
    const seen = new Map();
    for (const e of evs) {
      let key = null;
      if (e.type === "session/prompt") key = `prompt ${e.data.prompt_id ?? e.data.text}`;
      else if (kindOf(e) === "session/update:agent_message_chunk") key = `reply ${e.data.content?.text}`;
      else if (kindOf(e) === "session/update:tool_call") key = `call ${e.data.toolCallId}`;
      else if (kindOf(e) === "session/update:turn_complete") key = `turn end ${e.data.promptId ?? e.seq}`;
      if (!key) continue;
      if (seen.has(key)) doubled.push(`${s}: seq ${seen.get(key)} and ${e.seq}: ${key}`);
      else seen.set(key, e.seq);
    }
  }
  assert.deepEqual(doubled, [], `facts recorded twice:\n${doubled.join("\n")}`);
  const prompts = ofSession(log, flow.session).filter((e) => e.type === "session/prompt").map((e) => e.data.text);
  assert.deepEqual(prompts, [PROMPTS.plain, `$greet ${PROMPTS.skill}`, PROMPTS.approved, PROMPTS.rejected, PROMPTS.subagent, PROMPTS.afterModel], "the first chat's prompts");
});

test("log: every tool call settled, every permission request resolved", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log } = await scenario();
  const unsettled = [];
  for (const call of ofKind(log, "session/update:tool_call")) {
    const done = ofKind(ofSession(log, call.session), "session/update:tool_call_update").some(
      (u) => u.data.toolCallId === call.data.toolCallId && ["completed", "failed"].includes(u.data.status),
    );
    if (!done) unsettled.push(`${call.seq} ${call.data.toolCallId} ${JSON.stringify(call.data.rawInput)}`);
  }
  assert.deepEqual(unsettled, [], `tool calls left pending:\n${unsettled.join("\n")}\n${show(log)}`);
  const open = log
    .filter((e) => e.type === "permission/requested")
    .filter((r) => !log.some((e) => e.type === "permission/resolved" && e.session === r.session && e.data.request_id === r.data.request_id && e.seq > r.seq))
    .map((r) => `${r.seq} ${r.data.request_id} ${JSON.stringify(r.data.tool_call).slice(0, 120)}`);
  assert.deepEqual(open, [], `permission requests never resolved:\n${open.join("\n")}`);
  const rejected = ofKind(log, "session/update:tool_call").find((e) => /rejected\.txt/.test(JSON.stringify(e.data.rawInput)));
  assert.ok(rejected, "the rejected call is not in the log");
  const upd = ofKind(log, "session/update:tool_call_update").filter((u) => u.data.toolCallId === rejected.data.toolCallId);
  assert.deepEqual(upd.map((u) => u.data.status), ["failed"], "the rejected call's settling");
});

test("log: /model is a session/model_switched", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log, flow } = await scenario();
  const switched = ofSession(log, flow.session).filter((e) => e.type === "session/model_switched");
  assert.deepEqual(switched.map((e) => e.data.model), [SWITCH_TO.slug], `session/model_switched events of ${flow.session}`);
});

test("log: exactly one session/ended per session", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log } = await scenario();
  const bad = [];
  for (const s of new Set(log.filter((e) => e.session).map((e) => e.session))) {
    const n = ofSession(log, s).filter((e) => e.type === "session/ended").length;
    if (n !== 1) bad.push(`${s}: ${n}`);
  }
  assert.deepEqual(bad, [], `sessions without exactly one session/ended:\n${bad.join("\n")}`);
});

test("log: import --from codex into the same log states nothing again; it adds only what no hook reports", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log, afterImport, importOut } = await scenario();
  assert.equal(importOut.status, 0, `import exited ${importOut.status}: ${importOut.stderr}`);
  assert.deepEqual(statedTwice(log, afterImport), []);
  const added = addedKinds(log, afterImport, { severalReplies: true });
  assert.deepEqual(added, {}, `the import added:\n${show(afterImport.filter((e) => e.seq > Math.max(...log.map((x) => x.seq)) && e.type !== "agent/observed" && !ownEvent(e) && !(e.type === "agent/event" && e.data?.bookkeeping)))}`);
});

test("log: import --from codex into a fresh log gives the same sessions: prompts, parents (no rollout says a session ended)", { skip: SKIP, timeout: 600_000 }, async () => {
  const { log, fresh } = await scenario();
  assert.deepEqual(freshDiffers(log, fresh, { ends: false }), []);
});

test("log: cmdlog verify exits 0", { skip: SKIP, timeout: 600_000 }, async () => {
  const { verify } = await scenario();
  assert.equal(verify.status, 0, `cmdlog verify exited ${verify.status}:\n${verify.stdout}\n${verify.stderr}`);
});
