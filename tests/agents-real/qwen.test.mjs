// Qwen Code 0.24.4 (`@qwen-code/qwen-code`, cli-entry.js on Node 22), run
// headless (`-p`) against the fake OpenAI Chat Completions API of
// fake-openai-chat.mjs, with cmdlog's hooks installed in the workspace and its
// transcripts imported.
//
// How the CLI is made to run here (each verified against 0.24.4):
// - `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL` alone select the
//   `openai` auth in -p mode; `--session-id` pins the session id, so each run's
//   events can be found by it;
// - the user's settings turn off usage statistics, auto update, telemetry and
//   the managed auto-memory extractor (a second, background model request after
//   every turn); they carry `"$version": 4`, since Qwen writes that key into any
//   settings file that lacks it;
// - `--yolo` for the shell call: in the default `auto` approval mode, -p does not
//   offer `run_shell_command` to the model at all;
// - the permission run stays in `auto` mode with `--allowed-tools
//   "run_shell_command(echo hi)"`: the shell is then offered, and a command that
//   the rule does not allow goes to Qwen's auto-mode classifier (a non-streaming
//   request of its own), which the fake tells to block it. Qwen fires
//   `PermissionDenied` for that, its only permission hook headless:
//   `PermissionRequest` is fired only where a dialog could be shown.
//
// What Qwen does headless, which the checks follow:
// - a custom command's expansion reaches the model as the last text part of the
//   last user message; `UserPromptExpansion` gives the run (name, arguments,
//   expansion), `UserPromptSubmit` both `prompt` (the expansion) and
//   `submitted_prompt` (the line typed);
// - an empty `UserPromptSubmit` (`prompt: ""`) follows every tool result;
// - `PreToolUse`/`PostToolUse` carry a hook-made `tool_use_id` (`toolu_…`) and
//   the model's own id as `tool_call_id`, which is also the id the transcript and
//   `PermissionDenied` use;
// - `SessionEnd` is never fired in -p mode;
// - the transcript (`~/.qwen/projects/<cwd with non-alphanumerics as ->/chats/
//   <session>.jsonl`) of a -p run holds no `slash_command` record: the
//   expansion is the user record, so an import cannot show the run.
//
// One set of agent runs is shared by the checks (`scenario()`), and one set of
// timed runs (`overhead()`), which is also where a settings file cmdlog created
// meets the agent.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { AGENTS, CMDLOG, cmdlog, events, installed, kindOf, runAgent, world, ownEvent } from "./harness.mjs";
import { fakeOpenAIChat, lastUserText, textOf } from "./fake-openai-chat.mjs";

const SKIP = !CMDLOG ? "CMDLOG_BIN is not set" : !installed() ? "the suite's packages are not installed (npm install --prefix tests/agents-real --no-save)" : false;

const USER_SETTINGS = {
  $version: 4,
  privacy: { usageStatisticsEnabled: false },
  general: { enableAutoUpdate: false },
  telemetry: { enabled: false },
  memory: { enableManagedAutoMemory: false },
};

// The project's custom commands (`.qwen/commands/`). Qwen's one placeholder is
// `{{args}}` (the arguments, trimmed, inner whitespace kept); `$ARGUMENTS`,
// `$1`… are text to it; a template without `{{args}}` gets the trimmed line
// appended after a blank line when arguments were given; a Markdown body is
// trimmed, a TOML prompt kept as written (its final newline too).
const COMMANDS = {
  ".qwen/commands/review.md": "---\ndescription: Review a change\nargument-hint: <ref>\n---\nReview change $ARGUMENTS carefully.\n",
  ".qwen/commands/withargs.md": "---\ndescription: Check with args\n---\n\nCheck {{args}} and also $ARGUMENTS.\n",
  ".qwen/commands/pos.md": "Compare $1 with $2, then $ARGUMENTS[0].\n",
  ".qwen/commands/greet.toml": 'description = "Greet"\nprompt = """\nHello {{args}}!\n"""\n',
  ".qwen/commands/tnl.toml": 'prompt = """\nTOML body without a placeholder.\n"""\n',
};
const SLASH = [
  "/review main", // $ARGUMENTS stays as written, the line is appended
  "/withargs   a   b  ", // {{args}} with inner spaces; $ARGUMENTS as written
  "/pos one two", // positional placeholders are text; the line is appended
  "/greet", // a missing argument: {{args}} empty; the TOML final newline kept
  "/tnl x  y", // no placeholder, arguments given: after the TOML final newline
];

const PLAIN = "hello from the plain run";
const TOOL_CMD = "echo hi";
// Not read-only, so Qwen's classifier is asked; the fake blocks it (DENYME).
const DENIED_CMD = "git commit --allow-empty -m DENYME";

// The workspace's settings in the scenario: a link to a file of the user's
// inside the workspace, with a comment of theirs.
const LINKED_SETTINGS = '{\n  // the team\'s Qwen settings\n  "ui": { "hideTips": true },\n  "$version": 4\n}\n';
// A user's own project settings for the file-level checks: a comment, tabs, a
// hook of their own, no final newline, mode 0640.
const OWN_SETTINGS =
  '{\n\t// mine\n\t"$version": 4,\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{ "hooks": [ { "type": "command", "command": "true" } ] }\n\t\t]\n\t}\n}';

/** What each hook cmdlog installs for Qwen becomes (docs/agents.md), and which scenario run fires it. */
const HOOK_EVENTS = {
  SessionStart: { runs: "all", is: (e) => e.type === "agent/event" && e.data?.event === "SessionStart" },
  UserPromptSubmit: { runs: "all", is: (e) => e.type === "session/prompt" },
  UserPromptExpansion: { runs: "slash", is: (e) => e.type === "command/run" },
  PreToolUse: { runs: ["tool"], is: (e) => kindOf(e) === "session/update:tool_call" },
  PostToolUse: { runs: ["tool"], is: (e) => kindOf(e) === "session/update:tool_call_update" },
  PostToolBatch: { runs: ["tool"], is: (e) => kindOf(e) === "session/update:tool_call_update" },
  PermissionDenied: { runs: ["permission"], is: (e) => e.type === "permission/resolved" },
  Stop: { runs: "all", is: (e) => kindOf(e) === "session/update:turn_complete" },
  Notification: { runs: "all", is: (e) => e.type === "agent/event" && e.data?.event === "Notification" },
  // Not fired by these runs: a tool that fails (PostToolUseFailure), a model
  // error (StopFailure); never fired in -p mode: SessionEnd, PermissionRequest.
  PostToolUseFailure: null,
  StopFailure: null,
  SessionEnd: null,
  PermissionRequest: null,
  // A subagent's start and stop: none in these runs (the interactive suite,
  // interactive-qwen.test.mjs, runs one).
  SubagentStart: null,
  SubagentStop: null,
};

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function qwenWorld(name) {
  const w = world(name);
  w.put("home/.qwen/settings.json", JSON.stringify(USER_SETTINGS, null, 2) + "\n");
  cleanups.push(() => w.cleanup());
  return w;
}

/** One headless Qwen run with a pinned session id; the model requests it made. */
async function qwen(w, fake, args) {
  const sessionId = crypto.randomUUID();
  const from = fake.requests.length;
  const r = await runAgent(w, AGENTS.qwen, [...args, "--session-id", sessionId], {
    env: { ...fake.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" },
    timeoutMs: 90_000,
  });
  const requests = fake.requests.slice(from);
  if (r.code !== 0) throw new Error(`qwen ${args.join(" ")} exited ${r.code} (${r.signal}):\n${r.stdout}\n${r.stderr}`);
  const turns = requests.filter((q) => q.method === "POST" && q.url.includes("/chat/completions") && !isClassifierReq(q));
  return { ...r, args, sessionId, requests, turns };
}

const isClassifierReq = (q) => (q.body?.tools ?? []).some((t) => t.function?.name === "respond_in_schema");

/** JSON with comments (a settings file cmdlog edited keeps the user's). */
function parseJsonc(text) {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      i = text.indexOf("*/", i + 2) + 1;
    } else out += c;
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

/** The hook events whose handlers are cmdlog's, in a settings text. */
function cmdlogHookEvents(text) {
  const hooks = parseJsonc(text).hooks ?? {};
  return Object.keys(hooks).filter((ev) =>
    (hooks[ev] ?? []).some((g) => (g.hooks ?? []).some((h) => /cmdlog/.test(h.command ?? "") && / hook qwen\s*$/.test(h.command))),
  );
}

/** Stderr lines that are about Qwen's settings or hooks. */
function settingsComplaints(stderr) {
  return stderr
    .split("\n")
    .filter(Boolean)
    // Qwen's own noise: the vendored rg is not executable in the tarball; a
    // blocked tool call is reported as a warning about the tool.
    .filter((l) => !/^Ripgrep not available:/.test(l) && !/^Warning: Tool "[^"]+" was not run:/.test(l))
    .filter((l) => /hook|setting|\.qwen|cmdlog|json/i.test(l));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const show = (v) => JSON.stringify(v);
const ofSession = (log, sid) => log.filter((e) => e.session === sid);
const kinds = (evs) => evs.map(kindOf);
const chunkText = (evs) =>
  evs
    .filter((e) => kindOf(e) === "session/update:agent_message_chunk")
    .map((e) => e.data.content?.text ?? "")
    .join("");

/** Whether a value holds `s` in one of its strings. */
function holdsText(v, s) {
  if (typeof v === "string") return v.includes(s);
  if (Array.isArray(v)) return v.some((x) => holdsText(x, s));
  if (v && typeof v === "object") return Object.values(v).some((x) => holdsText(x, s));
  return false;
}

/** Qwen's transcripts under a home: file → records. */
function transcripts(home) {
  const root = path.join(home, ".qwen/projects");
  const out = {};
  if (!fs.existsSync(root)) return out;
  for (const project of fs.readdirSync(root)) {
    const chats = path.join(root, project, "chats");
    if (!fs.existsSync(chats)) continue;
    for (const f of fs.readdirSync(chats).filter((f) => f.endsWith(".jsonl"))) {
      const lines = fs.readFileSync(path.join(chats, f), "utf8").split("\n").filter((l) => l.trim());
      out[path.join(chats, f)] = lines.map((l) => JSON.parse(l));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// The shared runs.

let scenarioRun;
/** The scenario: every kind of run, in one workspace with cmdlog's hooks. */
function scenario() {
  scenarioRun ??= (async () => {
    const fake = await fakeOpenAIChat();
    cleanups.push(() => fake.close());
    const w = qwenWorld("qwen");
    for (const [rel, text] of Object.entries(COMMANDS)) w.put(`ws/${rel}`, text);
    const target = w.put("ws/config/qwen-settings.json", LINKED_SETTINGS);
    const link = path.join(w.ws, ".qwen/settings.json");
    fs.symlinkSync("../config/qwen-settings.json", link);
    const linkBefore = fs.readlinkSync(link);

    cmdlog(w, ["hooks", "install", "qwen"]);
    const installedText = fs.readFileSync(target, "utf8");
    const runs = {};
    runs.plain = await qwen(w, fake, ["-p", PLAIN]);
    runs.tool = await qwen(w, fake, ["--yolo", "-p", `please TOOL:${TOOL_CMD}`]);
    runs.permission = await qwen(w, fake, ["--allowed-tools", "run_shell_command(echo hi)", "-p", `please TOOL:${DENIED_CMD}`]);
    runs.slash = [];
    for (const line of SLASH) runs.slash.push({ line, ...(await qwen(w, fake, ["-p", line])) });
    // The hook log as the runs left it (later checks append `cmdlog run`s).
    const log = events(w);
    const uninstall = cmdlog(w, ["hooks", "uninstall", "qwen"], { expect: null });
    return {
      w,
      fake,
      runs,
      all: [runs.plain, runs.tool, runs.permission, ...runs.slash],
      log,
      installedText,
      installedEvents: cmdlogHookEvents(installedText),
      linked: {
        target,
        link,
        linkBefore,
        uninstall,
        isLink: fs.lstatSync(link).isSymbolicLink(),
        linkAfter: fs.lstatSync(link).isSymbolicLink() ? fs.readlinkSync(link) : null,
        textAfter: fs.readFileSync(target, "utf8"),
      },
    };
  })();
  return scenarioRun;
}

let overheadRun;
/**
 * The same plain headless run, timed in a workspace without any Qwen settings:
 * three alternating pairs, without hooks first, then `hooks install` — run —
 * `hooks uninstall`. The first uninstall is also the check that a settings file
 * cmdlog created goes away, with its folder, after the agent has run.
 */
function overhead() {
  overheadRun ??= (async () => {
    const fake = await fakeOpenAIChat();
    cleanups.push(() => fake.close());
    const w = qwenWorld("qwen-overhead");
    const qwenDir = path.join(w.ws, ".qwen");
    const times = { with: [], without: [] };
    const afterFirst = {};
    const stderrs = [];
    for (let i = 0; i < 3; i++) {
      const before = fs.existsSync(qwenDir);
      times.without.push((await qwen(w, fake, ["-p", "hello overhead"])).ms);
      if (i === 0) afterFirst.qwenMadeDir = !before && fs.existsSync(qwenDir);
      cmdlog(w, ["hooks", "install", "qwen"]);
      const r = await qwen(w, fake, ["-p", "hello overhead"]);
      times.with.push(r.ms);
      stderrs.push(r.stderr);
      cmdlog(w, ["hooks", "uninstall", "qwen"]);
      if (i === 0) {
        const file = path.join(qwenDir, "settings.json");
        afterFirst.dirLeft = fs.existsSync(qwenDir);
        afterFirst.fileLeft = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
      }
    }
    return { times, afterFirst, stderrs };
  })();
  return overheadRun;
}

// ---------------------------------------------------------------------------
// 1. hooks install / uninstall

test("qwen: hooks install is accepted by Qwen Code, uninstall gives the settings back", { skip: SKIP }, async (t) => {
  await t.test("a project settings file the user had: byte for byte, mode kept", () => {
    const w = qwenWorld("qwen-own");
    const file = w.put("ws/.qwen/settings.json", OWN_SETTINGS);
    fs.chmodSync(file, 0o640);
    cmdlog(w, ["hooks", "install", "qwen"]);
    const installedText = fs.readFileSync(file, "utf8");
    assert.ok(installedText.includes("// mine"), `install dropped the user's comment:\n${installedText}`);
    assert.deepEqual(
      parseJsonc(installedText).hooks.Stop.filter((g) => g.hooks.some((h) => h.command === "true")).length,
      1,
      `install lost the user's own Stop hook:\n${installedText}`,
    );
    cmdlog(w, ["hooks", "uninstall", "qwen"]);
    assert.equal(fs.readFileSync(file, "utf8"), OWN_SETTINGS, "uninstall did not give the user's file back byte for byte");
    assert.equal(fs.statSync(file).mode & 0o777, 0o640, "uninstall changed the file's mode");
  });

  await t.test("no project settings before: file and folder gone", () => {
    const w = qwenWorld("qwen-none");
    cmdlog(w, ["hooks", "install", "qwen"]);
    assert.ok(fs.existsSync(path.join(w.ws, ".qwen/settings.json")), "install wrote no .qwen/settings.json");
    cmdlog(w, ["hooks", "uninstall", "qwen"]);
    assert.equal(fs.existsSync(path.join(w.ws, ".qwen")), false, `uninstall left ${path.join(w.ws, ".qwen")} behind`);
  });

  await t.test("the settings file is a link to a file inside the workspace", () => {
    const w = qwenWorld("qwen-link");
    const target = w.put("ws/config/qwen-settings.json", LINKED_SETTINGS);
    const link = path.join(w.ws, ".qwen/settings.json");
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync("../config/qwen-settings.json", link);
    cmdlog(w, ["hooks", "install", "qwen"]);
    assert.ok(fs.lstatSync(link).isSymbolicLink(), "install replaced the link with a file");
    assert.ok(cmdlogHookEvents(fs.readFileSync(target, "utf8")).length > 0, "install did not put cmdlog's hooks in the linked file");
    cmdlog(w, ["hooks", "uninstall", "qwen"]);
    assert.ok(fs.lstatSync(link).isSymbolicLink(), "uninstall replaced the link with a file");
    assert.equal(fs.readlinkSync(link), "../config/qwen-settings.json", "uninstall changed where the link points");
    assert.equal(fs.readFileSync(target, "utf8"), LINKED_SETTINGS, "uninstall did not give the linked file back byte for byte");
  });

  const s = await scenario();

  await t.test("Qwen says nothing about the settings or the hooks on stderr", async () => {
    for (const r of s.all) {
      assert.deepEqual(settingsComplaints(r.stderr), [], `qwen ${r.args.join(" ")} complained on stderr:\n${r.stderr}`);
    }
    // And through a settings file cmdlog created.
    for (const stderr of (await overhead()).stderrs) {
      assert.deepEqual(settingsComplaints(stderr), [], `qwen -p (settings made by hooks install) complained on stderr:\n${stderr}`);
    }
  });

  await t.test("every installed hook that the runs trigger fires", () => {
    assert.ok(s.installedEvents.length > 0, `no cmdlog hook in the installed settings:\n${s.installedText}`);
    const unknown = s.installedEvents.filter((ev) => !(ev in HOOK_EVENTS));
    assert.deepEqual(unknown, [], `installed hooks this suite does not know what to expect of: ${unknown}`);
    const missing = [];
    for (const ev of s.installedEvents) {
      const want = HOOK_EVENTS[ev];
      if (!want) continue;
      const runs = want.runs === "all" ? s.all : want.runs === "slash" ? s.runs.slash : want.runs.map((k) => s.runs[k]);
      for (const r of runs) {
        const evs = ofSession(s.log, r.sessionId);
        if (!evs.some(want.is)) missing.push(`${ev} in ${r.args.join(" ")} (session ${r.sessionId}: ${kinds(evs).join(", ")})`);
      }
    }
    assert.deepEqual(missing, [], `installed hooks whose events are not in the log:\n${missing.join("\n")}`);
  });

  await t.test("after the agent ran through it: the linked file back byte for byte, the link kept", () => {
    const l = s.linked;
    assert.equal(l.uninstall.status, 0, `hooks uninstall exited ${l.uninstall.status}:\n${l.uninstall.stderr}`);
    assert.ok(l.isLink, "uninstall replaced the link with a file");
    assert.equal(l.linkAfter, l.linkBefore, "uninstall changed where the link points");
    assert.equal(l.textAfter, LINKED_SETTINGS, "the linked file is not as the user had it");
  });

  await t.test("after the agent ran: no settings file and no .qwen folder where there was none", async () => {
    const o = (await overhead()).afterFirst;
    assert.equal(o.qwenMadeDir, false, "Qwen itself made .qwen in the workspace: this check cannot tell");
    // Qwen 0.24.4 writes `"$version": 4` into every settings file it loads that
    // lacks the key; a file cmdlog created without it is then no longer as the
    // install left it.
    assert.equal(
      o.fileLeft,
      null,
      `uninstall left .qwen/settings.json behind after a Qwen run (Qwen adds "$version": 4 to a settings file without it): ${show(o.fileLeft)}`,
    );
    assert.equal(o.dirLeft, false, "uninstall left the .qwen folder behind after a Qwen run");
  });
});

// ---------------------------------------------------------------------------
// 2. the scenarios, as the hooks recorded them

test("qwen: the hook log holds each headless run as Qwen ran it", { skip: SKIP }, async (t) => {
  const s = await scenario();
  const { log } = s;

  await t.test("sessions are Qwen's own ids, each created once", () => {
    const ids = new Set(s.all.map((r) => r.sessionId));
    const elsewhere = log.filter((e) => !ownEvent(e) && !ids.has(e.session));
    assert.deepEqual(elsewhere.map((e) => `${e.seq} ${kindOf(e)} ${e.session}`), [], "events outside the agent's sessions");
    for (const r of s.all) {
      const created = ofSession(log, r.sessionId).filter((e) => e.type === "session/created");
      assert.equal(created.length, 1, `session/created for ${r.sessionId} (${r.args.join(" ")}): ${created.length}`);
    }
  });

  await t.test("a plain prompt: the prompt, the reply, one turn end", () => {
    const r = s.runs.plain;
    const evs = ofSession(log, r.sessionId);
    const prompts = evs.filter((e) => e.type === "session/prompt");
    assert.deepEqual(prompts.map((e) => e.data.text), [PLAIN], `prompts (kinds: ${kinds(evs)})`);
    assert.equal(chunkText(evs), r.turns.at(-1).answer.text, "the reply recorded vs the model's");
    const ends = evs.filter((e) => kindOf(e) === "session/update:turn_complete");
    assert.equal(ends.length, 1, `turn ends: ${kinds(evs)}`);
    assert.ok(prompts[0].seq < ends[0].seq, "the turn ends before its prompt");
  });

  // The shell call: the model's call and what the tool gave back to it.
  const shell = () => {
    const r = s.runs.tool;
    const call = r.turns[0].answer.call;
    assert.ok(call, "the fake model asked for no tool call");
    const toolMsg = r.turns[1]?.body.messages.at(-1);
    assert.equal(toolMsg?.role, "tool", "Qwen sent no tool result back");
    const evs = ofSession(log, r.sessionId);
    return {
      r,
      call,
      output: textOf(toolMsg.content),
      evs,
      calls: evs.filter((e) => kindOf(e) === "session/update:tool_call"),
      updates: evs.filter((e) => kindOf(e) === "session/update:tool_call_update"),
    };
  };

  await t.test("a shell call: its prompt once (the empty UserPromptSubmit after the tool result is no prompt)", () => {
    const { evs } = shell();
    const prompts = evs.filter((e) => e.type === "session/prompt");
    assert.deepEqual(prompts.map((e) => e.data.text), [`please TOOL:${TOOL_CMD}`], `prompts recorded (kinds: ${kinds(evs)})`);
  });

  await t.test("a shell call: one tool_call with its input, its update with the output", () => {
    const { evs, calls, updates, output } = shell();
    assert.equal(calls.length, 1, `tool_call events: ${kinds(evs)}`);
    assert.equal(calls[0].data.rawInput?.command, TOOL_CMD, `the call's input: ${show(calls[0].data.rawInput)}`);
    assert.ok(updates.length >= 1, `no tool_call_update: ${kinds(evs)}`);
    assert.equal(updates.at(-1).data.status, "completed", `the call's last status: ${show(updates.at(-1).data)}`);
    assert.ok(
      holdsText(updates.at(-1).data.rawOutput, output),
      `the update does not hold what the tool gave the model (${show(output)}): ${show(updates.at(-1).data.rawOutput)}`,
    );
  });

  await t.test("a shell call: the tool_call and its updates under one id", () => {
    const { calls, updates } = shell();
    const ids = [...calls, ...updates].map((e) => e.data.toolCallId);
    assert.equal(new Set(ids).size, 1, `tool call ids of the call and its update (PreToolUse, PostToolUse): ${show(ids)}`);
  });

  await t.test("a shell call: that id is the model's (Qwen's tool_call_id, as in its transcript and PermissionDenied)", () => {
    const { calls, updates, call } = shell();
    const ids = [...new Set([...calls, ...updates].map((e) => e.data.toolCallId))];
    assert.deepEqual(ids, [call.id], `the model called ${call.id}; the hook log names ${show(ids)} (Qwen's tool_use_id is its own toolu_… for Pre/PostToolUse only)`);
  });

  await t.test("a shell call: the reply and one turn end, after the call", () => {
    const { r, evs, updates } = shell();
    assert.equal(chunkText(evs), r.turns.at(-1).answer.text, "the reply recorded vs the model's");
    const ends = evs.filter((e) => kindOf(e) === "session/update:turn_complete");
    assert.equal(ends.length, 1, `turn ends: ${kinds(evs)}`);
    assert.ok(updates.length && updates.at(-1).seq < ends[0].seq, `order: ${kinds(evs)}`);
  });

  // The call Qwen's auto-mode classifier blocked.
  const blocked = () => {
    const r = s.runs.permission;
    const toolMsg = r.turns[1]?.body.messages.at(-1);
    assert.match(textOf(toolMsg?.content), /^Blocked by auto mode policy/, "the scenario: Qwen did not block the call");
    return { r, call: r.turns[0].answer.call, evs: ofSession(log, r.sessionId) };
  };

  await t.test("a call the auto-mode classifier blocked: requested, then rejected, naming the call", () => {
    const { evs, call } = blocked();
    const requested = evs.filter((e) => e.type === "permission/requested");
    const resolved = evs.filter((e) => e.type === "permission/resolved");
    assert.equal(requested.length, 1, `permission/requested: ${kinds(evs)}`);
    assert.equal(resolved.length, 1, `permission/resolved: ${kinds(evs)}`);
    const req = requested[0].data;
    assert.equal(req.tool_call?.rawInput?.command, DENIED_CMD, `the request's tool call: ${show(req.tool_call)}`);
    assert.equal(req.tool_call?.toolCallId, call.id, `the request names the model's call id ${call.id}: ${show(req.tool_call)}`);
    const res = resolved[0].data;
    assert.equal(res.request_id, req.request_id, "the resolution names another request");
    assert.ok(requested[0].seq < resolved[0].seq, "resolved before requested");
    const reject = (req.options ?? []).filter((o) => /^reject/.test(o.kind)).map((o) => o.optionId);
    assert.equal(res.decision?.outcome, "selected", `decision: ${show(res.decision)}`);
    assert.ok(reject.includes(res.decision?.optionId), `decision ${show(res.decision)} is not one of the reject options ${show(req.options)}`);
    const done = evs.filter((e) => kindOf(e) === "session/update:tool_call_update" && e.data.status === "completed");
    assert.deepEqual(done, [], "a blocked call recorded as completed");
  });

  await t.test("a call the auto-mode classifier blocked: its prompt once, the reply, one turn end", () => {
    const { r, evs } = blocked();
    assert.deepEqual(evs.filter((e) => e.type === "session/prompt").map((e) => e.data.text), [`please TOOL:${DENIED_CMD}`], `prompts recorded (kinds: ${kinds(evs)})`);
    assert.equal(chunkText(evs), r.turns.at(-1).answer.text, "the reply recorded vs the model's");
    assert.equal(evs.filter((e) => kindOf(e) === "session/update:turn_complete").length, 1, `turn ends: ${kinds(evs)}`);
  });

  for (const [i, line] of SLASH.entries()) {
    const slash = () => {
      const r = s.runs.slash[i];
      const evs = ofSession(log, r.sessionId);
      const runs = evs.filter((e) => e.type === "command/run");
      assert.equal(runs.length, 1, `command/run events: ${kinds(evs)}`);
      // What Qwen sent the model: the last text part of the last user message.
      return { r, evs, run: runs[0], sent: lastUserText(r.turns[0].body) };
    };

    await t.test(`custom command ${show(line)}: the run and Qwen's expansion`, () => {
      const { evs, run, sent } = slash();
      const name = line.slice(1).split(/\s+/)[0];
      const args = line.slice(1 + name.length).trim();
      assert.equal(run.data.name, name, `the run's name: ${show(run.data)}`);
      assert.equal(run.data.source, "agent", `the run's source: ${show(run.data)}`);
      assert.equal((run.data.raw_input ?? "").trim(), args, `the run's arguments: ${show(run.data)}`);
      const dones = evs.filter((e) => e.type === "command/done");
      assert.equal(dones.length, 1, `command/done events: ${kinds(evs)}`);
      const done = dones[0].data;
      assert.equal(done.run, run.seq, "the done names another run");
      assert.equal(done.outcome?.kind, "success", show(done.outcome));
      assert.equal(done.outcome?.prompt, sent, "the run's expansion vs what Qwen sent the model");
      assert.equal(
        done.agent_check?.identical,
        true,
        `agreement check: cmdlog's expansion ${show(done.agent_check?.cmdlog_prompt)} vs Qwen's ${show(sent)} (${show(done.agent_check)})`,
      );
    });

    await t.test(`custom command ${show(line)}: the prompt it became, once, from the run`, () => {
      const { evs, run, sent } = slash();
      const prompts = evs.filter((e) => e.type === "session/prompt");
      assert.deepEqual(prompts.map((e) => e.data.text), [sent], "the prompt (Qwen's UserPromptSubmit `prompt`) is the expansion, once");
      assert.equal(
        prompts[0].data.from_run,
        run.seq,
        `the prompt is the run's expansion (Qwen's UserPromptSubmit carries it as prompt, the line typed as submitted_prompt): from_run should be ${run.seq}: ${show(prompts[0].data)}`,
      );
      assert.equal(chunkText(evs), slash().r.turns.at(-1).answer.text, "the reply recorded vs the model's");
      assert.equal(evs.filter((e) => kindOf(e) === "session/update:turn_complete").length, 1, `turn ends: ${kinds(evs)}`);
    });
  }

  await t.test("no empty prompt", () => {
    const empty = log.filter((e) => e.type === "session/prompt" && !e.data.text);
    assert.deepEqual(
      empty.map((e) => `${e.seq} ${e.session}`),
      [],
      "empty session/prompt events (Qwen's UserPromptSubmit with prompt \"\" after a tool result)",
    );
  });

  await t.test("nothing doubled", () => {
    const seen = new Map();
    const doubled = [];
    for (const e of log) {
      if (ownEvent(e)) continue;
      const key = `${e.session} ${e.type} ${JSON.stringify(e.data)}`;
      if (seen.has(key)) doubled.push(`seq ${seen.get(key)} and ${e.seq}: ${kindOf(e)} ${JSON.stringify(e.data).slice(0, 160)}`);
      else seen.set(key, e.seq);
    }
    assert.deepEqual(doubled, [], "events recorded twice");
    const completed = new Map();
    for (const e of log) {
      if (kindOf(e) === "session/update:tool_call_update" && e.data.status === "completed") {
        completed.set(e.data.toolCallId, [...(completed.get(e.data.toolCallId) ?? []), e.seq]);
      }
    }
    const twice = [...completed].filter(([, seqs]) => seqs.length > 1);
    assert.deepEqual(twice, [], "tool calls completed more than once (id, seqs)");
  });

  await t.test("the session's end", (tt) => {
    tt.skip("Qwen Code 0.24.4 fires SessionEnd only in interactive sessions, never with -p");
  });
});

// ---------------------------------------------------------------------------
// 3. hook overhead

test("qwen: hook overhead (median of 3 alternating pairs)", { skip: SKIP }, async () => {
  const { times } = await overhead();
  const w = Math.round(median(times.with));
  const wo = Math.round(median(times.without));
  console.log(`HOOK-OVERHEAD qwen with=${w} without=${wo} delta=${w - wo}`);
});

// ---------------------------------------------------------------------------
// 4. cmdlog run expands as Qwen did

test("qwen: cmdlog run prints what Qwen sent the model for each custom command", { skip: SKIP }, async (t) => {
  const s = await scenario();
  for (const r of s.runs.slash) {
    await t.test(show(r.line), () => {
      // Qwen sends a user turn as text parts (its <system-reminder> parts, then
      // what was submitted); for a slash command the last text part of the last
      // user message of the first request is the expansion.
      const sent = lastUserText(r.turns[0].body);
      const out = cmdlog(s.w, ["run", r.line], { expect: null });
      assert.equal(out.status, 0, `cmdlog run ${show(r.line)} exited ${out.status}: ${out.stderr}`);
      // `cmdlog run` prints the expansion and one line end after it, so an
      // expansion's own final newline shows as an empty last line.
      assert.equal(out.stdout, sent, `cmdlog run ${show(r.line)} printed ${show(out.stdout)}; Qwen sent ${show(sent)}`);
      const json = cmdlog(s.w, ["run", "--json", r.line], { expect: null });
      assert.equal(JSON.parse(json.stdout).outcome?.prompt, sent, `cmdlog run --json ${show(r.line)}: the outcome's prompt vs what Qwen sent`);
    });
  }
});

// ---------------------------------------------------------------------------
// 5. import --from qwen

test("qwen: import --from qwen gives what the hooks gave, with Qwen's times, once", { skip: SKIP }, async (t) => {
  const s = await scenario();
  const { w } = s;
  const other = path.join(w.root, "imported.redb");
  const first = cmdlog(w, ["import", "--from", "qwen", "--log", other, "--json"]);
  const sum1 = JSON.parse(first.stdout);
  const imported = events(w, other);
  const second = cmdlog(w, ["import", "--from", "qwen", "--log", other, "--json"]);
  const sum2 = JSON.parse(second.stdout);
  const again = events(w, other);
  const files = transcripts(w.home);
  const sids = s.all.map((r) => r.sessionId);

  await t.test("the same sessions", () => {
    const got = [...new Set(imported.filter((e) => e.session).map((e) => e.session))].sort();
    assert.deepEqual(got, [...sids].sort(), "sessions imported vs the runs' (hooks)");
  });

  /** What a session holds that hooks and transcripts both report. */
  const digest = (evs) => {
    const calls = new Map();
    for (const e of evs) {
      const tc = kindOf(e) === "session/update:tool_call" ? e.data : e.type === "permission/requested" ? e.data.tool_call : null;
      if (tc?.toolCallId && !calls.has(tc.toolCallId)) calls.set(tc.toolCallId, { id: tc.toolCallId, input: tc.rawInput });
    }
    const last = new Map();
    for (const e of evs) if (kindOf(e) === "session/update:tool_call_update" && e.data.status) last.set(e.data.toolCallId, e.data.status);
    return {
      prompts: evs.filter((e) => e.type === "session/prompt" && e.data.text).map((e) => e.data.text),
      replies: chunkText(evs),
      toolCalls: [...calls.values()],
      completedCalls: [...last].filter(([, st]) => st === "completed").map(([id]) => id),
      turnEnds: evs.filter((e) => kindOf(e) === "session/update:turn_complete").length,
    };
  };
  for (const r of s.all) {
    await t.test(`session of ${show(r.args.join(" "))}: prompts, replies, tool calls, turn ends`, () => {
      const fromHooks = digest(ofSession(s.log, r.sessionId));
      const fromImport = digest(ofSession(imported, r.sessionId));
      assert.deepEqual(fromImport, fromHooks, `import (actual) vs hooks (expected), session ${r.sessionId}`);
      assert.ok(fromImport.turnEnds >= 1, "the import has no turn end");
    });
  }

  await t.test("command runs", (tt) => {
    tt.skip("a -p transcript holds no slash_command record: the expansion is its user record (compared as the prompt above)");
  });

  await t.test("every event carries Qwen's own time for its transcript record", () => {
    const at = new Map();
    for (const records of Object.values(files)) for (const rec of records) at.set(`${rec.sessionId}:${rec.uuid}`, Date.parse(rec.timestamp));
    const wrong = [];
    for (const e of imported) {
      if (ownEvent(e)) continue;
      const o = e.observed ?? {};
      const key = String(o.key ?? "").split("/")[0];
      if (o.source !== "qwen transcript" || typeof o.at !== "number" || at.get(key) !== o.at) {
        wrong.push(`${e.seq} ${kindOf(e)} observed ${show(o)}; the record's time ${at.get(key)}`);
      }
    }
    assert.deepEqual(wrong, [], "imported events without the time of their transcript record");
  });

  await t.test("a second import adds nothing", () => {
    assert.equal(again.length, imported.length, `events before ${imported.length}, after ${again.length}`);
    assert.equal(sum2.events, 0, `second import: ${second.stdout}`);
    assert.deepEqual(sum2.sessions, [], `second import: ${second.stdout}`);
  });

  await t.test("the summaries add up", () => {
    const lines = Object.values(files).reduce((n, recs) => n + recs.length, 0);
    const appended = imported.filter((e) => !ownEvent(e));
    const items = new Set(appended.map((e) => e.observed?.key).filter(Boolean));
    const sessions = [...new Set(appended.map((e) => e.session).filter(Boolean))].sort();
    assert.equal(sum1.files, Object.keys(files).length, `files: ${first.stdout}`);
    assert.equal(sum1.lines, lines, `lines (the transcripts hold ${lines}): ${first.stdout}`);
    assert.equal(sum1.events, appended.length, `events (the log holds ${appended.length} new): ${first.stdout}`);
    assert.deepEqual([...sum1.sessions].sort(), sessions, `sessions: ${first.stdout}`);
    assert.deepEqual([sum1.malformed, sum1.unreadable], [[], []], first.stdout);
    assert.equal(sum1.skipped, 0, `skipped on a fresh log: ${first.stdout}`);
    assert.equal(sum2.files, sum1.files, `second import, files: ${second.stdout}`);
    // Every chat was checkpointed by the first import: none is parsed again.
    assert.deepEqual([sum2.unchanged, sum2.lines, sum2.skipped], [sum1.files, 0, 0], `second import: ${second.stdout}`);
    assert.ok(items.size > 0, "the first import's items have keys");
  });
});
