// Gemini CLI 0.61.0 (`@google/gemini-cli`, bundle/gemini.js on Node 22), run
// headless (`-p`) against the fake Gemini API of fake-gemini.mjs, with cmdlog's
// hooks installed in the workspace and its transcripts imported.
//
// How the CLI is made to run here (each verified against 0.61):
// - `GOOGLE_GEMINI_BASE_URL` + `GEMINI_API_KEY` point it at the fake; in -p mode
//   that needs `security.auth.selectedType: "gemini-api-key"` in the user's
//   settings (the base URL alone selects the `gateway` auth, which -p refuses
//   with exit 41);
// - `GEMINI_CLI_TRUST_WORKSPACE=true`: -p refuses an untrusted folder (exit 55),
//   and Gemini runs no hook at all, from any scope, in an untrusted folder;
// - `--yolo` for the tool call: in the default approval mode -p does not even
//   offer `run_shell_command` to the model;
// - `-m` pins the model, which skips the router's classifier call;
// - update checks, usage statistics, telemetry and the IDE link are off.
//
// One set of agent runs is shared by every check (see `scenario()`): three plain
// prompts timed against the same prompt in a workspace without hooks, one shell
// call, four custom commands, then one run in a workspace whose settings file
// cmdlog created and one through a settings file that is a link.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { AGENTS, cmdlog, events, kindOf, runAgent, world, ownEvent } from "./harness.mjs";
import { fakeGemini, lastUserText } from "./fake-gemini.mjs";

const MODEL = "gemini-2.5-flash";
const PLAIN = "Say hello to the suite";
const TOOL = "TOOL:echo hi";

// The project's custom commands (`.gemini/commands/**/*.toml`) and the lines
// typed. Gemini has no positional placeholders (`{{args}}` is the only one), so
// the bodies cover: `{{args}}` (whitespace runs collapse to one space), a
// missing argument (`{{args}}` left empty), no placeholder with arguments (the
// trimmed line as typed is appended after a blank line, and the template's own
// final newline is kept), and a namespaced command (`git/commit.toml`).
const COMMANDS = {
  ".gemini/commands/review.toml": 'description = "Review with args"\nprompt = """Please review: {{args}}\nEnd of review prompt."""\n',
  ".gemini/commands/noargs.toml": 'prompt = """\nSummarize the project.\n"""\n',
  ".gemini/commands/git/commit.toml": 'prompt = "Write a commit message for {{args}}.\\n"\n',
};
const SLASH_LINES = ['/review   a.ts   "b c"  d', "/review", "/noargs  x   y", "/git:commit fix   the bug"];

// The user's own project settings in the main workspace: a comment, tabs, no
// final newline and mode 0640, all of which uninstall must give back.
const USER_PROJECT_SETTINGS = '{\n\t// this repository\'s Gemini settings\n\t"ui": {\n\t\t"hideTips": true\n\t}\n}';
const LINKED_SETTINGS = '{\n  "ui": { "hideBanner": true }\n}\n';

/** What each hook cmdlog installs for Gemini becomes (docs/agents.md). */
const HOOK_EVENTS = {
  SessionStart: (e) => e.type === "agent/event" && e.data?.event === "SessionStart",
  BeforeAgent: (e) => e.type === "session/prompt",
  AfterAgent: (e) => kindOf(e) === "session/update:turn_complete",
  BeforeTool: (e) => kindOf(e) === "session/update:tool_call",
  AfterTool: (e) => kindOf(e) === "session/update:tool_call_update",
  SessionEnd: (e) => e.type === "session/ended",
  // Sent only when a confirmation dialog asks (ToolPermission), which -p never
  // shows: default approval does not offer tools that need one, --yolo asks
  // nothing. No headless run can trigger it.
  Notification: null,
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The user settings that point Gemini at the fake and turn its traffic off. */
function geminiWorld(name, server) {
  const w = world(name);
  w.put(
    "home/.gemini/settings.json",
    JSON.stringify(
      {
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        ide: { enabled: false },
        security: { auth: { selectedType: "gemini-api-key" } },
      },
      null,
      2,
    ),
  );
  w.agentEnv = {
    GEMINI_API_KEY: "fake-key-for-loopback",
    GOOGLE_GEMINI_BASE_URL: server.url,
    GEMINI_CLI_TRUST_WORKSPACE: "true",
  };
  w.server = server;
  return w;
}

/** One headless run; `sent` is the text of the first turn's last user part. */
async function gemini(w, prompt, { yolo = false } = {}) {
  const first = w.server.turns().length;
  const args = ["-p", prompt, "-o", "json", "-m", MODEL];
  if (yolo) args.push("--yolo");
  const r = await runAgent(w, AGENTS.gemini, args, { env: w.agentEnv, timeoutMs: 90_000 });
  let out = {};
  try {
    out = JSON.parse(r.stdout);
  } catch {
    // reported by the checks below (no session id)
  }
  const turns = w.server.turns().slice(first);
  return {
    prompt,
    ...r,
    session: out.session_id,
    response: out.response,
    turns,
    // The prompt as the model got it: the request body's `contents`, its last
    // `Content` (role "user"), its last text part. (The first turn also carries
    // the `<session_context>` preamble, as an earlier part of that Content.)
    sent: turns[0] ? lastUserText(turns[0].body) : undefined,
  };
}

function describeRun(r) {
  return `gemini -p ${JSON.stringify(r.prompt)}: exit ${r.code}${r.signal ? ` (${r.signal})` : ""}\nstdout: ${r.stdout.slice(0, 400)}\nstderr: ${r.stderr.slice(0, 1200)}`;
}

/** Settings text without `//` comments (Gemini's settings are JSON with comments). */
function parseJsonc(text) {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === "\\") out += text[++i] ?? "";
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else out += c;
  }
  return JSON.parse(out);
}

/** The hook events whose entries run `cmdlog hook gemini` in a settings file. */
function installedEvents(file) {
  const settings = parseJsonc(fs.readFileSync(file, "utf8"));
  return Object.entries(settings.hooks ?? {})
    .filter(([, groups]) => groups.some((g) => (g.hooks ?? []).some((h) => /\bhook gemini\b/.test(h.command ?? ""))))
    .map(([name]) => name);
}

// What Gemini prints on stderr in every -p run, whatever the settings.
const BENIGN = [
  /^Warning: 256-color support not detected/,
  /^Ripgrep is not available/,
  /^YOLO mode is enabled\. All tool calls will be automatically approved\.$/,
  // The startup profiler, now and then, on a loaded machine.
  /^\[STARTUP\] /,
];
// Gemini's one-time notice the first time a workspace's project-level hooks are
// seen (then recorded in ~/.gemini/trusted_hooks.json): shown for any project
// hook, it is a security notice, not a complaint about the settings.
const TRUST_NOTICE = /WARNING: The following project-level hooks have been detected in this workspace:\n((?: {2}- .*\n)+)\nThese hooks will be executed\. If you did not configure these hooks or do not trust this project,\nplease review the project settings \(\.gemini\/settings\.json\) and remove them\.\n?/;

/** Stderr lines that complain about settings or hooks, and the trust notice's hook names. */
function stderrComplaints(stderr) {
  const notice = TRUST_NOTICE.exec(stderr);
  const names = notice ? notice[1].trim().split("\n").map((l) => l.replace(/^\s*- /, "")) : null;
  const rest = stderr.replace(TRUST_NOTICE, "");
  const complaints = rest
    .split("\n")
    .filter((l) => l.trim() && !BENIGN.some((b) => b.test(l)))
    .filter((l) => /hook|setting|invalid|deprecat|error|fail|warn/i.test(l));
  return { names, complaints };
}

/** Events of `session`, in order. */
const ofSession = (evs, session) => evs.filter((e) => e.session === session);
const texts = (evs, kind) =>
  evs.filter((e) => kindOf(e) === `session/update:${kind}`).map((e) => e.data.content?.text ?? "");

/**
 * The texts a session sent the model as the user's turns: its prompts, and the
 * expansion of a command run that no prompt repeats (a run settled with its
 * expansion is the prompt the agent sent).
 */
function sentTexts(evs) {
  const prompts = evs.filter((e) => e.type === "session/prompt").map((e) => e.data.text);
  const expansions = evs
    .filter((e) => e.type === "command/done" && typeof e.data.outcome?.prompt === "string")
    .map((e) => e.data.outcome.prompt)
    .filter((p) => !prompts.includes(p));
  return [...prompts, ...expansions].sort();
}

/** Tool calls as (tool, input, status of its update). */
function toolCalls(evs) {
  const updates = evs.filter((e) => kindOf(e) === "session/update:tool_call_update");
  return evs
    .filter((e) => kindOf(e) === "session/update:tool_call")
    .map((e) => {
      const u = updates.find((x) => x.data.toolCallId === e.data.toolCallId);
      return { tool: e.data.title, input: e.data.rawInput, status: u?.data.status ?? "(no update)" };
    });
}

/** Events of one session that repeat another's type and data. */
function doubled(evs) {
  const seen = new Map();
  const twice = [];
  for (const e of evs) {
    const key = `${kindOf(e)} ${JSON.stringify(e.data)}`;
    if (seen.has(key)) twice.push(`seq ${seen.get(key)} and ${e.seq}: ${key.slice(0, 200)}`);
    else seen.set(key, e.seq);
  }
  return twice;
}

const summary = (evs) => evs.map((e) => `${e.seq} ${kindOf(e)}`).join(", ");

let built;
// What the scenario made so far, for the cleanup even when it failed half-way.
const made = { worlds: [], servers: [] };
/** Every agent run the checks share, made once. */
function scenario() {
  built ??= (async () => {
    const s = made;
    const server = async () => {
      const srv = await fakeGemini();
      s.servers.push(srv);
      return srv;
    };
    // A: the main workspace — the user's own project settings and commands, hooks installed.
    const A = geminiWorld("gemini-main", await server());
    s.worlds.push(A);
    const settingsA = A.put("ws/.gemini/settings.json", USER_PROJECT_SETTINGS);
    fs.chmodSync(settingsA, 0o640);
    for (const [rel, text] of Object.entries(COMMANDS)) A.put(`ws/${rel}`, text);
    s.A = A;
    s.settingsA = settingsA;
    s.install = cmdlog(A, ["hooks", "install", "gemini"]);
    s.installedA = installedEvents(settingsA);
    // B: the same prompt without hooks (the overhead's baseline); no project settings.
    const B = geminiWorld("gemini-bare", await server());
    s.worlds.push(B);
    s.B = B;

    // Three alternating pairs of the same plain prompt, with and without hooks.
    s.plain = [];
    s.bare = [];
    for (let i = 0; i < 3; i++) {
      const pair = i % 2 === 0 ? [A, B] : [B, A];
      for (const w of pair) (w === A ? s.plain : s.bare).push(await gemini(w, PLAIN));
    }
    s.bareLogExists = fs.existsSync(path.join(B.ws, ".cmdlog"));
    s.tool = await gemini(A, TOOL, { yolo: true });
    s.slash = [];
    for (const line of SLASH_LINES) s.slash.push(await gemini(A, line));
    s.runsA = [...s.plain, s.tool, ...s.slash];
    s.hookEvents = events(A);

    // B again: hooks installed where there was no settings file, one run, then
    // uninstalled. C: the settings file is a link to a file inside the workspace.
    const C = geminiWorld("gemini-link", await server());
    s.worlds.push(C);
    s.C = C;
    C.put("ws/config/gemini-settings.json", LINKED_SETTINGS);
    fs.mkdirSync(path.join(C.ws, ".gemini"));
    fs.symlinkSync("../config/gemini-settings.json", path.join(C.ws, ".gemini/settings.json"));
    s.installB = cmdlog(B, ["hooks", "install", "gemini"]);
    s.installedB = installedEvents(path.join(B.ws, ".gemini/settings.json"));
    s.installC = cmdlog(C, ["hooks", "install", "gemini"]);
    s.linkAfterInstall = {
      isLink: fs.lstatSync(path.join(C.ws, ".gemini/settings.json")).isSymbolicLink(),
      target: fs.readlinkSync(path.join(C.ws, ".gemini/settings.json")),
      installed: installedEvents(path.join(C.ws, "config/gemini-settings.json")),
    };
    [s.hookedB, s.hookedC] = await Promise.all([gemini(B, "hello from a new settings file"), gemini(C, "hello through a link")]);
    s.eventsB = events(B);
    s.eventsC = events(C);
    return s;
  })();
  return built;
}

after(async () => {
  await built?.catch(() => null);
  for (const srv of made.servers) await srv.close();
  if (!process.env.KEEP_WORLDS) for (const w of made.worlds) w.cleanup();
  else console.log(`worlds kept: ${made.worlds.map((w) => w.root).join(" ")}`);
});

test("gemini: every headless run answers (the fake model and the settings work)", async () => {
  const s = await scenario();
  for (const r of [...s.runsA, ...s.bare, s.hookedB, s.hookedC]) {
    assert.equal(r.code, 0, describeRun(r));
    assert.ok(r.session, `no session_id in -o json output\n${describeRun(r)}`);
    assert.ok(r.turns.length > 0, `the fake model got no streamGenerateContent call\n${describeRun(r)}`);
  }
  assert.equal(String(s.tool.response).includes("tool said:"), true, `the shell call's result did not reach the model\n${describeRun(s.tool)}`);
  assert.equal(s.bareLogExists, false, "the workspace without hooks got a .cmdlog: the baseline was not without hooks");
});

test("gemini: hooks install is accepted — no complaint on stderr, and every installed hook the runs trigger fires", async () => {
  const s = await scenario();
  // What was installed: at least the events docs/agents.md lists for Gemini.
  for (const name of ["SessionStart", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "SessionEnd"]) {
    assert.ok(s.installedA.includes(name), `hooks install did not hook ${name}; installed: ${s.installedA.join(", ")}`);
  }
  // Gemini reads the settings without a word about them. Its one-time notice on
  // project hooks names cmdlog's single hook name, on the first run only.
  const hooked = [...s.runsA, s.hookedB, s.hookedC];
  for (const r of hooked) {
    const { complaints } = stderrComplaints(r.stderr);
    assert.deepEqual(complaints, [], `stderr of ${JSON.stringify(r.prompt)} complains about settings or hooks:\n${r.stderr}`);
  }
  const notices = s.runsA.map((r) => stderrComplaints(r.stderr).names);
  assert.deepEqual(notices[0], ["cmdlog"], `the first run's project-hook notice should list only "cmdlog": ${JSON.stringify(notices[0])}`);
  assert.deepEqual(notices.slice(1).filter(Boolean), [], "Gemini showed the project-hook notice again after the first run");

  // Each installed hook fires where the scenario triggers it: the session hooks
  // and the turn hooks in every run, the tool hooks in the shell-call run.
  const unknown = s.installedA.filter((n) => !(n in HOOK_EVENTS));
  assert.deepEqual(unknown, [], `installed hook events the suite does not know how to trigger: ${unknown}`);
  const expected = (r) =>
    s.installedA.filter((n) => HOOK_EVENTS[n] && (r === s.tool || !["BeforeTool", "AfterTool"].includes(n)));
  for (const r of s.runsA) {
    const evs = ofSession(s.hookEvents, r.session);
    const missing = expected(r).filter((n) => !evs.some(HOOK_EVENTS[n]));
    assert.deepEqual(missing, [], `run ${JSON.stringify(r.prompt)} (session ${r.session}): no event for hook(s) ${missing.join(", ")}; the log has: ${summary(evs)}`);
  }
  // A settings file cmdlog created (B), and one reached through a link (C).
  for (const [w, r, evs] of [[s.B, s.hookedB, s.eventsB], [s.C, s.hookedC, s.eventsC]]) {
    const mine = ofSession(evs, r.session);
    const missing = expected(r).filter((n) => !mine.some(HOOK_EVENTS[n]));
    assert.deepEqual(missing, [], `${path.basename(w.root)}: no event for hook(s) ${missing.join(", ")}; the log has: ${summary(mine)}`);
  }
});

test("gemini: hooks uninstall gives the user's own settings back byte for byte, after real runs", async () => {
  const s = await scenario();
  cmdlog(s.A, ["hooks", "uninstall", "gemini"]);
  const now = fs.readFileSync(s.settingsA, "utf8");
  assert.equal(now, USER_PROJECT_SETTINGS, "the user's .gemini/settings.json is not as it was before install");
  assert.equal(fs.statSync(s.settingsA).mode & 0o777, 0o640, "the settings file's mode changed");
});

test("gemini: hooks uninstall where there was no settings file removes the file and the folder it made", async () => {
  const s = await scenario();
  assert.ok(s.installedB.includes("BeforeAgent"), `install in a workspace without .gemini hooked: ${s.installedB}`);
  cmdlog(s.B, ["hooks", "uninstall", "gemini"]);
  assert.equal(fs.existsSync(path.join(s.B.ws, ".gemini/settings.json")), false, ".gemini/settings.json is still there");
  const left = fs.existsSync(path.join(s.B.ws, ".gemini")) ? fs.readdirSync(path.join(s.B.ws, ".gemini"), { recursive: true }) : null;
  assert.equal(left, null, `the .gemini folder install made is still there, holding: ${JSON.stringify(left)}`);
});

test("gemini: hooks install and uninstall through a settings file that links inside the workspace", async () => {
  const s = await scenario();
  const link = path.join(s.C.ws, ".gemini/settings.json");
  assert.deepEqual(
    { isLink: s.linkAfterInstall.isLink, target: s.linkAfterInstall.target },
    { isLink: true, target: "../config/gemini-settings.json" },
    "install replaced the link instead of editing the file it points to",
  );
  assert.ok(s.linkAfterInstall.installed.includes("BeforeAgent"), `the linked file got no hooks: ${s.linkAfterInstall.installed}`);
  cmdlog(s.C, ["hooks", "uninstall", "gemini"]);
  assert.equal(fs.lstatSync(link).isSymbolicLink(), true, "uninstall replaced the link with a file");
  assert.equal(fs.readlinkSync(link), "../config/gemini-settings.json", "the link points elsewhere after uninstall");
  assert.equal(fs.readFileSync(path.join(s.C.ws, "config/gemini-settings.json"), "utf8"), LINKED_SETTINGS, "the linked settings file is not as it was");
});

test("gemini hooks: each run is the agent's own session", async () => {
  const s = await scenario();
  const sessions = new Set(s.hookEvents.filter((e) => e.agent === "gemini" && e.session).map((e) => e.session));
  assert.deepEqual([...sessions].sort(), s.runsA.map((r) => r.session).sort(), "the hook log's gemini sessions are not the session ids Gemini reported (-o json session_id)");
  for (const r of s.runsA) {
    const evs = ofSession(s.hookEvents, r.session);
    assert.equal(evs.filter((e) => e.type === "session/created").length, 1, `session ${r.session}: session/created count; events: ${summary(evs)}`);
  }
});

test("gemini hooks: a plain prompt — the prompt, one turn end, the session end", async () => {
  const s = await scenario();
  for (const r of s.plain) {
    const evs = ofSession(s.hookEvents, r.session);
    assert.deepEqual(sentTexts(evs), [PLAIN], `session ${r.session}: prompts recorded`);
    assert.equal(evs.filter((e) => kindOf(e) === "session/update:turn_complete").length, 1, `session ${r.session}: turn ends; events: ${summary(evs)}`);
    const ended = evs.filter((e) => e.type === "session/ended");
    assert.deepEqual(ended.map((e) => e.data.reason), ["exit"], `session ${r.session}: SessionEnd should be one session/ended (reason exit); events: ${summary(evs)}`);
  }
});

test("gemini hooks: a shell call — its input and its output", async () => {
  const s = await scenario();
  const evs = ofSession(s.hookEvents, s.tool.session);
  assert.deepEqual(sentTexts(evs), [TOOL], "prompts recorded");
  assert.deepEqual(toolCalls(evs), [{ tool: "run_shell_command", input: { command: "echo hi" }, status: "completed" }], `tool calls; events: ${summary(evs)}`);
  const update = evs.find((e) => kindOf(e) === "session/update:tool_call_update");
  assert.match(JSON.stringify(update?.data.rawOutput ?? null), /Output: hi/, "the tool call's output is not recorded");
  assert.equal(evs.filter((e) => kindOf(e) === "session/update:turn_complete").length, 1, `turn ends (one prompt, one turn); events: ${summary(evs)}`);
  assert.deepEqual(evs.filter((e) => e.type === "session/ended").map((e) => e.data.reason), ["exit"], "session end");
});

test("gemini hooks: custom slash commands — the expansion Gemini sent is the prompt", async () => {
  const s = await scenario();
  for (const r of s.slash) {
    const evs = ofSession(s.hookEvents, r.session);
    // BeforeAgent carries the expansion; no hook payload names the command.
    assert.deepEqual(sentTexts(evs), [r.sent], `${r.prompt}: the prompt recorded is not the text the model got`);
    assert.equal(evs.filter((e) => kindOf(e) === "session/update:turn_complete").length, 1, `${r.prompt}: turn ends; events: ${summary(evs)}`);
    assert.deepEqual(evs.filter((e) => e.type === "session/ended").map((e) => e.data.reason), ["exit"], `${r.prompt}: session end`);
  }
});

test("gemini hooks: the reply recorded is the reply Gemini gave", async () => {
  const s = await scenario();
  // The reply as Gemini records it in its chat (trimmed: geminiChat keeps
  // `responseText.trim()`); -o json prints it as streamed.
  const wrong = s.runsA
    .map((r) => ({ prompt: r.prompt, recorded: texts(ofSession(s.hookEvents, r.session), "agent_message_chunk").join(""), gave: r.response }))
    .filter((x) => x.recorded.trim() !== String(x.gave).trim());
  assert.deepEqual(
    wrong,
    [],
    "hook log replies (recorded) vs Gemini's replies (gave, its -o json response). Gemini 0.61's AfterAgent " +
      "prompt_response is not the reply when the reply streams in more than one chunk: geminiChat appends the later " +
      "chunks' text to the first chunk's part in place, then Turn.getResponseText() joins every chunk with \" \" " +
      "(the reply, a space, the later chunks again). The reply is the last gemini record of the chat at transcript_path",
  );
});

test("gemini hooks: a permission request", (t) => {
  t.skip(
    "Gemini 0.61 asks for no permission headless: in -p mode the default approval mode does not offer tools " +
      "that need confirmation to the model (run_shell_command is 'not found', no BeforeTool), --yolo approves " +
      "everything, and the ToolPermission Notification is only sent from the interactive dialog",
  );
});

test("gemini hooks: nothing is recorded twice", async () => {
  const s = await scenario();
  for (const r of s.runsA) {
    const twice = doubled(ofSession(s.hookEvents, r.session));
    assert.deepEqual(twice, [], `session ${r.session} (${JSON.stringify(r.prompt)}) has events recorded twice`);
  }
});

test("gemini: hook overhead (same -p run with and without cmdlog's hooks)", async () => {
  const s = await scenario();
  const withMs = median(s.plain.map((r) => r.ms));
  const withoutMs = median(s.bare.map((r) => r.ms));
  console.log(`HOOK-OVERHEAD gemini with=${Math.round(withMs)} without=${Math.round(withoutMs)} delta=${Math.round(withMs - withoutMs)}`);
  for (const r of [...s.plain, ...s.bare]) assert.equal(r.code, 0, describeRun(r));
});

test("gemini: cmdlog run prints exactly what Gemini sent for each custom command", async (t) => {
  const s = await scenario();
  for (const r of s.slash) {
    await t.test(r.prompt, () => {
      assert.equal(typeof r.sent, "string", `no request body recorded for ${r.prompt}`);
      const out = cmdlog(s.A, ["run", r.prompt], { expect: null });
      assert.equal(out.status, 0, `cmdlog run ${JSON.stringify(r.prompt)} exited ${out.status}: ${out.stderr}`);
      // `cmdlog run` prints the expansion and ends it with one line terminator
      // (writeln); the expansion's own final newline, when it has one, stays.
      assert.equal(out.stdout, r.sent, `cmdlog run ${JSON.stringify(r.prompt)} (left) vs Gemini's request body (right)`);
    });
  }
});

let importing;
/** Imports the main workspace's chats twice into a log of their own. */
function imports() {
  importing ??= scenario().then((s) => {
    const A = s.A;
    const log = path.join(A.root, "imported.redb");
    const first = JSON.parse(cmdlog(A, ["import", "--from", "gemini", "--log", log, "--json"]).stdout);
    const imported = events(A, log);
    const second = JSON.parse(cmdlog(A, ["import", "--from", "gemini", "--log", log, "--json"]).stdout);
    const again = events(A, log);
    // The chat files Gemini wrote (HOME is the world's: ~/.gemini/tmp/<project>/chats/).
    const chats = path.join(A.home, ".gemini/tmp");
    const files = fs
      .readdirSync(chats, { recursive: true })
      .filter((f) => /chats\/session-[^/]*\.jsonl$/.test(f))
      .map((f) => path.join(chats, f));
    return { first, imported, second, again, files };
  });
  return importing;
}

/** The records of a session's chat file (`session-<time>-<first 8 of its id>.jsonl`). */
function chatRecords(files, session) {
  const file = files.find((f) => f.endsWith(`-${session.slice(0, 8)}.jsonl`));
  return file ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
}

test("gemini import: the same sessions, prompts, replies, tool calls and turn ends as the hooks, at the agent's times", async () => {
  const s = await scenario();
  const { imported, files } = await imports();
  const mine = new Set(s.runsA.map((r) => r.session));

  // Sessions: the agent's ids, the same as the hooks'.
  const sessions = new Set(imported.filter((e) => e.session).map((e) => e.session));
  assert.deepEqual([...sessions].sort(), [...mine].sort(), "imported sessions vs the sessions Gemini ran (and the hooks recorded)");

  for (const r of s.runsA) {
    const hooked = ofSession(s.hookEvents, r.session);
    const got = ofSession(imported, r.session);
    const where = `session ${r.session} (${JSON.stringify(r.prompt)})`;
    // Prompts: the same texts the hooks recorded, which are what the model got;
    // the <session_context> preamble is Gemini's, not a prompt.
    assert.deepEqual(sentTexts(got), sentTexts(hooked), `${where}: prompts imported (left) vs from the hooks (right)`);
    assert.deepEqual(sentTexts(got), [r.sent], `${where}: prompts imported vs the text the model got`);
    // Replies: the reply Gemini gave (trimmed, as its chat records it).
    assert.equal(texts(got, "agent_message_chunk").join("").trim(), String(r.response).trim(), `${where}: imported reply vs Gemini's reply`);
    // Tool calls: the same tools and inputs, settled the same way.
    assert.deepEqual(toolCalls(got), toolCalls(hooked), `${where}: tool calls imported (left) vs from the hooks (right)`);
    // Turn ends.
    const ends = (evs) => evs.filter((e) => kindOf(e) === "session/update:turn_complete").length;
    assert.equal(ends(got), ends(hooked), `${where}: turn ends imported vs from the hooks; imported: ${summary(got)}`);
    // The agent's own times: every event has one, and the prompt's is the
    // time of the chat's user record.
    const untimed = got.filter((e) => typeof e.observed?.at !== "number");
    assert.deepEqual(untimed.map((e) => `${e.seq} ${kindOf(e)}`), [], `${where}: imported events without observed.at`);
    const user = chatRecords(files, r.session).find(
      (m) => m.type === "user" && Array.isArray(m.content) && m.content.some((p) => p.text === r.sent),
    );
    const opening = got.find((e) => e.type === "session/prompt" || e.type === "command/run");
    assert.equal(opening?.observed?.at, user ? Date.parse(user.timestamp) : "(no user record)", `${where}: the prompt's observed.at vs the chat's user record time`);
    assert.deepEqual(doubled(got), [], `${where}: imported events recorded twice`);
  }
});

test("gemini import: each custom command is a run settled with the expansion Gemini sent", async () => {
  const s = await scenario();
  const { imported } = await imports();
  for (const r of s.slash) {
    const got = ofSession(imported, r.session);
    const runs = got.filter((e) => e.type === "command/run");
    // The name, and the arguments as typed (the text after the name).
    const [, name, rest] = /^\/(\S+)(.*)$/s.exec(r.prompt);
    assert.deepEqual(
      runs.map((e) => ({ name: e.data.name, raw_input: e.data.raw_input })),
      [{ name, raw_input: rest }],
      `${r.prompt}: imported command runs; events: ${summary(got)}`,
    );
    const done = got.find((e) => e.type === "command/done" && e.data.run === runs[0]?.seq);
    assert.equal(done?.data.outcome?.prompt, r.sent, `${r.prompt}: the run's done (left) vs the expansion Gemini sent (right)`);
  }
});

test("gemini import: a second import adds nothing, and the counters add up", async () => {
  const s = await scenario();
  const { first, imported, second, again, files } = await imports();
  const mine = s.runsA.map((r) => r.session).sort();
  // Files and lines are the chat files'; events what the log gained (all but
  // the new log's identity); sessions the ones started.
  const lines = files.reduce(
    (n, f) => n + fs.readFileSync(f, "utf8").split("\n").filter((l, i, a) => i < a.length - 1 || l).length,
    0,
  );
  assert.equal(first.files, files.length, `summary.files vs the chat files (${files.length})`);
  assert.equal(first.lines, lines, `summary.lines vs the lines of the chat files (${lines})`);
  assert.equal(first.events, imported.filter((e) => !ownEvent(e)).length, "summary.events vs the events the log gained");
  assert.deepEqual([...first.sessions].sort(), mine, "summary.sessions vs the sessions started");
  assert.deepEqual([first.malformed, first.unreadable, first.skipped], [[], [], 0], "malformed, unreadable, skipped on a first import");

  assert.equal(again.length, imported.length, `a second import added events: ${summary(again.slice(imported.length))}`);
  assert.equal(second.events, 0, "the second import's summary.events");
  assert.deepEqual(second.sessions, [], "the second import's summary.sessions");
  assert.equal(second.files, first.files, "the second import read other files");
  // Every chat file was checkpointed by the first import: none is parsed again.
  assert.deepEqual([second.unchanged, second.lines, second.skipped], [first.files, 0, 0], "the second import's unchanged, lines, skipped");
});
