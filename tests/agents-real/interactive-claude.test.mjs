// Claude Code 2.1.332 in its real interactive terminal UI (no -p), run under
// tmux (tui.mjs) against our fake Anthropic API on loopback, with cmdlog's
// hooks installed in the workspace and a recorder hook on every hook event in
// the user's settings. The scenario is driven as a person would drive it:
// first-run screens, a plain prompt, a custom slash command with arguments, a
// Bash call approved in the permission dialog, Bash calls denied in it (three
// ways), `/model`, `/clear`, a subagent that itself asks for a permission, and
// `/exit`. Every wait is on the screen (or on a hook payload arriving), never on
// a clock alone.
//
// Two parts:
// 1. "the screen flow": that each step happened, and what Claude Code sent its
//    hooks for it (what the agent does; these pass with any cmdlog).
// 2. "cmdlog's record" (clearly marked below): what the log should say about
//    that session, after the hooks and after `import --from claude-code` into
//    the same log. These state what cmdlog should do; some may fail today.
//
// Artifacts (recorded payloads, transcripts, model requests, a screen capture
// per step, every key sent in keys.log, the log as JSON before and after the
// import, `cmdlog verify`) are written to `<world>/artifacts`. The world is
// removed at the end (kept when the scenario itself fails, or with
// CMDLOG_KEEP_WORLD=1); set CMDLOG_ARTIFACTS=<dir> to have the artifacts
// copied there.
//
// Run: CMDLOG_BIN=target/debug/cmdlog node --test interactive-claude.test.mjs
// (about 15-25 s).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { AGENTS, CMDLOG, cmdlog, events, installed, kindOf, world } from "./harness.mjs";
import { claudeEnv, fakeAnthropic } from "./fake-anthropic.mjs";
import { haveTmux, startTui } from "./tui.mjs";
import { addedKinds, freshDiffers, statedTwice } from "./interactive-checks.mjs";

const AGENT = "claude-code";
const SKIP = !CMDLOG
  ? "CMDLOG_BIN is not set"
  : !installed()
    ? "the pinned agents are not installed (npm install --prefix tests/agents-real --no-save)"
    : !haveTmux()
      ? "tmux is not installed (apt-get install tmux)"
      : false;
if (SKIP) {
  console.log(`\n${"!".repeat(78)}\n!!! SKIPPED interactive-claude.test.mjs: ${SKIP}\n${"!".repeat(78)}\n`);
}

/** Every hook event 2.1.332 knows (from its own list in the binary). */
const ALL_EVENTS = [
  "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
  "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
  "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "PermissionRequest", "PermissionDenied",
  "Setup", "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
  "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded",
  "MessageDisplay", "PreSkillShellCommand",
];

const SLASH_LINE = '/x foo "bar baz"';
const SLASH_FILE = "---\ndescription: a custom command\n---\nCustom x says: [$ARGUMENTS]\n";
const APPROVED = "touch approved.txt";
const DENIED_FEEDBACK = "touch denied-feedback.txt";
const FEEDBACK = "please do not touch files";
const DENIED_NO = "touch denied-no.txt";
const DENIED_ESC = "touch denied-esc.txt";
const SUB_CMD = "touch sub-approved.txt";

/** The subagent tool: the one whose input schema has `subagent_type` (named `Agent` in 2.1.332). */
const agentTool = (tools) => tools.find((t) => t?.input_schema?.properties?.subagent_type);

/**
 * What the fake model says beyond plan(): `AGENT:<prompt>` asks for a
 * subagent with that prompt; a prompt typed after a turn that a denial
 * interrupted (its request carries the denied call's tool_result and the new
 * text in one user message) is answered as a prompt, not as a tool result.
 */
function script({ userText, results, tools, id }) {
  const text = String(userText ?? "")
    .replace(/\[Request interrupted by user[^\]]*\]/g, "")
    .trim();
  const m = /(AGENT|TOOL):(.+)$/m.exec(text);
  if (m?.[1] === "AGENT") {
    const t = agentTool(tools);
    if (!t) return [{ type: "text", text: "no subagent tool offered" }];
    return [{ type: "tool_use", id: id(), name: t.name, input: { description: "Run a sub task", prompt: m[2].trim(), subagent_type: "general-purpose" } }];
  }
  if (!results.length || !text) return undefined; // plan() as usual
  if (m) return [{ type: "tool_use", id: id(), name: "Bash", input: { command: m[2].trim(), description: "Run the requested command" } }];
  // After /model the same user message also holds the command's markup; the prompt is its last line.
  return [{ type: "text", text: `reply to: ${text.split("\n").filter((l) => l.trim()).at(-1).slice(-60)}` }];
}

// ---------------------------------------------------------------------------
// Driving

function useRelease(w, bin) {
  const dir = path.join(w.root, "bin");
  fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(bin, path.join(dir, "claude"));
  w.env.PATH = `${dir}:${w.env.PATH}`;
}

function installRecorder(w) {
  const dir = path.join(w.root, "recorded");
  fs.mkdirSync(dir, { recursive: true });
  const hooks = {};
  for (const e of ALL_EVENTS) {
    hooks[e] = [{ hooks: [{ type: "command", command: `cat > '${dir}'/$(date +%s%N)-$$-${e}.json`, timeout: 10 }] }];
  }
  w.put("home/.claude/settings.json", JSON.stringify({ hooks }, null, 2) + "\n");
  return dir;
}

/** All payloads recorded so far, in the order they came. */
function payloads(dir) {
  return fs
    .readdirSync(dir)
    .sort()
    .map((f) => {
      const text = fs.readFileSync(path.join(dir, f), "utf8");
      try {
        return { file: f, ...JSON.parse(text) };
      } catch {
        return { file: f, hook_event_name: f.split("-").at(-1).replace(/\.json$/, ""), unparsed: text };
      }
    });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run() {
  const started = Date.now();
  const w = world("claude-tui");
  const api = await fakeAnthropic({ script });
  const art = path.join(w.root, "artifacts");
  fs.mkdirSync(path.join(art, "screens"), { recursive: true });
  let tui;
  const s = { w, api, art, steps: [], started };
  try {
    useRelease(w, AGENTS.claude);
    Object.assign(w.env, claudeEnv(api.url));
    delete w.env.TERM; // tui.mjs sets xterm-256color
    // The first-run screen "Detected a custom API key in your environment"
    // comes after a connectivity check of api.anthropic.com itself (not
    // ANTHROPIC_BASE_URL), which fails offline and exits ("Unable to connect
    // to Anthropic services"). Answering that question Yes writes the key's
    // last 20 characters here; we write the same answer ahead.
    w.put("home/.claude.json", JSON.stringify({ customApiKeyResponses: { approved: [w.env.ANTHROPIC_API_KEY.trim().slice(-20)], rejected: [] } }, null, 2) + "\n");
    w.put("ws/.claude/commands/x.md", SLASH_FILE);
    cmdlog(w, ["hooks", "install", AGENT]);
    const rec = installRecorder(w);
    s.rec = rec;
    tui = startTui(w, path.join(w.root, "bin", "claude"), [], { name: "claude", width: 160, height: 50 });
    s.tui = tui;

    const visible = () => tui.screen({ history: 0 });
    /** The selected line of the menu on screen (the last line with the ❯ cursor). */
    const selected = () => visible().split("\n").filter((l) => l.includes("❯")).at(-1) ?? "";
    // Every key sent, with the time and the menu line selected then (artifacts/keys.log).
    const keyLog = path.join(art, "keys.log");
    const press = (...keys) => {
      fs.appendFileSync(keyLog, `${Date.now() - started} press ${keys.join(" ")} | ${selected().trim()}\n`);
      tui.press(...keys);
    };
    let shot = 0;
    const capture = (label) => {
      const file = path.join(art, "screens", `${String(++shot).padStart(2, "0")}-${label}.txt`);
      fs.writeFileSync(file, tui.screen({ history: 2000 }));
    };
    /** Waits until a payload after index `from` satisfies `pred`. */
    const waitPayload = async (from, pred, what, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const got = payloads(rec).slice(from).find(pred);
        if (got) return got;
        if (Date.now() > deadline) {
          throw new Error(`waited ${timeoutMs} ms for the payload: ${what}; since then: ${payloads(rec).slice(from).map((p) => p.hook_event_name).join(", ")}\nscreen:\n${tui.screen({ history: 60 })}`);
        }
        await sleep(100);
      }
    };
    /** Types a line into the prompt, waits to see it there, presses Enter. */
    const submit = async (line) => {
      tui.type(line);
      await tui.waitFor((sc) => sc.split("\n").some((l) => /^❯\s/.test(l) && l.includes(line)), `the typed line ${JSON.stringify(line)} in the prompt`, { history: 0, timeoutMs: 10_000 });
      press("Enter");
    };
    /** One step: its payloads are those that arrive while it runs. */
    const step = async (label, body) => {
      const from = payloads(rec).length;
      const firstReq = api.requests.length;
      const t0 = Date.now();
      const out = (await body(from)) ?? {};
      capture(label);
      const mine = payloads(rec).slice(from);
      s.steps.push({ label, from, to: from + mine.length, payloads: mine, requests: api.requests.slice(firstReq), ms: Date.now() - t0, ...out });
    };
    const dialog = /Do you want to proceed\?/;
    /**
     * Presses `key` until the screen satisfies `cond`: a dialog that has just
     * appeared ignores keys for a moment (an Enter typed ahead must not
     * answer it), so one press may be lost.
     */
    const pressUntil = async (key, cond, what) => {
      const test = typeof cond === "function" ? cond : (x) => cond.test(x);
      for (let i = 0; i < 10; i++) {
        press(key);
        try {
          return await tui.waitFor(test, what, { history: 0, timeoutMs: 3_000 });
        } catch {
          // pressed too early: again
        }
      }
      return tui.waitFor(test, what, { history: 0, timeoutMs: 1_000 });
    };
    const gone = (re) => (x) => !re.test(x);
    /**
     * Moves the menu's cursor down until the selected line matches `re`.
     * Each press waits for the cursor to move (a press the dialog swallowed
     * is made again; a slow render is not taken for a lost press).
     */
    const select = async (re, what) => {
      for (let i = 0; i < 12; i++) {
        const cur = selected();
        if (re.test(cur)) {
          // An Enter right after the cursor moved (~50 ms) was once taken with
          // the old choice ("No, exit" on the trust dialog): let the menu settle.
          await sleep(300);
          if (re.test(selected())) return;
          continue;
        }
        press("Down");
        await tui.waitFor(() => selected() !== cur, `the cursor to move (${what})`, { history: 0, timeoutMs: 3_000 }).catch(() => {});
      }
      throw new Error(`could not select ${what}; the screen:\n${visible()}`);
    };

    // --- first run: whatever screens come, until the prompt's footer shows a mode
    const seen = [];
    await step("first-run", async () => {
      const ready = /(auto mode|manual mode|accept edits|plan mode) on/;
      const screens = [
        { name: "theme", re: /Choose the text style/ },
        { name: "security notes", re: /Security notes:/ },
        { name: "api key", re: /Detected a custom API key|Do you want to use this API key/, pick: /❯\s*(\d\. )?Yes/ },
        { name: "terminal setup", re: /Terminal setup|Use Claude Code's terminal setup/ },
        { name: "folder trust", re: /Yes, I trust this folder/, pick: /❯\s*(\d\. )?Yes, I trust this folder/ },
        { name: "offline", re: /Unable to connect to Anthropic services/, fatal: true },
      ];
      /** The screen shown last (lowest on the screen) among those that match, if not yet passed. */
      const current = (x) =>
        screens
          .filter((k) => !seen.includes(k.name) && k.re.test(x))
          .sort((p, q) => x.search(q.re) - x.search(p.re))[0];
      for (let n = 0; n < 12; n++) {
        const sc = await tui.waitFor((x) => ready.test(x) || current(x), "a first-run screen or the prompt", { history: 0, timeoutMs: 60_000 });
        const k = current(sc);
        if (!k) break; // the prompt
        seen.push(k.name);
        capture(`first-run-${k.name.replaceAll(" ", "-")}`);
        if (k.fatal) throw new Error(`first run stopped:\n${sc}`);
        if (k.pick) await select(k.pick, `${k.name}: ${k.pick}`);
        // Passed when it is gone, or when what comes next is already drawn below it.
        await pressUntil("Enter", (x) => !k.re.test(x) || ready.test(x) || Boolean(current(x)), `the ${k.name} screen passed`);
      }
      // 2.1.332 starts in auto mode (a classifier, no dialog); shift+tab to manual (= "default").
      const mode = () => /(auto mode|manual mode|accept edits|plan mode) on/.exec(visible())?.[1];
      const initialMode = mode();
      for (let i = 0; i < 5 && mode() !== "manual mode"; i++) {
        const was = mode();
        press("BTab");
        await tui.waitFor(() => mode() !== was, "the mode to change on shift+tab", { timeoutMs: 5_000 });
      }
      assert.equal(mode(), "manual mode", `the permission mode after shift+tab:\n${visible()}`);
      await waitPayload(0, (p) => p.hook_event_name === "SessionStart", "SessionStart");
      return { firstRun: seen, initialMode };
    });

    await step("plain", async (from) => {
      await submit("hello plain");
      await tui.waitFor(/reply to: hello plain/, "the reply");
      await waitPayload(from, (p) => p.hook_event_name === "Stop", "Stop");
    });

    await step("slash", async (from) => {
      await submit(SLASH_LINE);
      await tui.waitFor(/Custom x says/, "the command's reply");
      await waitPayload(from, (p) => p.hook_event_name === "Stop", "Stop");
    });

    await step("approve", async (from) => {
      await submit(`TOOL:${APPROVED}`);
      const sc = await tui.waitFor(dialog, "the permission dialog", { history: 0 });
      capture("approve-dialog");
      await select(/❯\s*1\. Yes/, "1. Yes selected");
      await pressUntil("Enter", gone(dialog), "the dialog answered (Yes)");
      await tui.waitFor(/tool said: \(Bash completed/, "the reply after the call");
      await waitPayload(from, (p) => p.hook_event_name === "Stop", "Stop");
      return { dialog: sc };
    });

    await step("deny-feedback", async (from) => {
      await submit(`TOOL:${DENIED_FEEDBACK}`);
      await tui.waitFor(dialog, "the permission dialog", { history: 0 });
      await select(/❯\s*4\. No/, "4. No selected");
      // "Tab to amend": No, and tell Claude what to do differently
      await pressUntil("Tab", /❯\s*4\. No, /, "the amend field");
      capture("deny-feedback-dialog");
      tui.type(FEEDBACK);
      await tui.waitFor((x) => x.includes(FEEDBACK), "the feedback typed", { history: 0, timeoutMs: 10_000 });
      await pressUntil("Enter", gone(dialog), "the dialog answered (No, with feedback)");
      await waitPayload(from, (p) => p.hook_event_name === "Stop", "Stop");
      await tui.waitFor(/Not run · rejected/, "the rejected call");
    });

    await step("deny-no", async (from) => {
      await submit(`TOOL:${DENIED_NO}`);
      const sc = await tui.waitFor(dialog, "the permission dialog", { history: 0 });
      await select(/❯\s*4\. No/, "4. No selected");
      capture("deny-no-dialog");
      await pressUntil("Enter", gone(dialog), "the dialog answered (No)");
      await tui.waitFor(/Interrupted · What should Claude do instead\?/, "the interrupted turn", { history: 0 });
      await waitPayload(from, (p) => p.hook_event_name === "PermissionRequest", "PermissionRequest");
      return { dialog: sc };
    });

    await step("deny-esc", async (from) => {
      await submit(`TOOL:${DENIED_ESC}`);
      await tui.waitFor(dialog, "the permission dialog", { history: 0 });
      await waitPayload(from, (p) => p.hook_event_name === "PermissionRequest", "PermissionRequest");
      await pressUntil("Escape", gone(dialog), "the dialog cancelled (Esc)");
      await tui.waitFor((x) => !dialog.test(x) && /Interrupted · What should Claude do instead\?/.test(x), "the interrupted turn", { history: 0 });
    });

    await step("model", async (from) => {
      await submit("/model");
      await tui.waitFor(/Select model/, "the model picker", { history: 0 });
      capture("model-picker");
      await select(/❯\s*\d\. Sonnet/, "Sonnet selected");
      const sc = await pressUntil("Enter", /Switch model\?|Set model to/, "the switch");
      if (/Switch model\?/.test(sc)) {
        capture("model-confirm");
        await select(/❯\s*1\. Yes/, "Yes, switch");
        await pressUntil("Enter", gone(/Switch model\?/), "the switch confirmed");
      }
      await tui.waitFor(/Set model to Sonnet/, "the model set");
      await waitPayload(from, (p) => p.hook_event_name === "PostModelSwitch", "PostModelSwitch");
      const reqs = api.requests.length;
      await submit("hello after model");
      await tui.waitFor(/reply to: hello after model/, "the reply");
      await waitPayload(from, (p) => p.hook_event_name === "Stop", "Stop");
      return { afterSwitch: api.calls().filter((r) => api.requests.indexOf(r) >= reqs) };
    });

    await step("clear", async (from) => {
      await submit("/clear");
      await waitPayload(from, (p) => p.hook_event_name === "SessionStart" && p.source === "clear", "SessionStart source clear");
    });

    await step("subagent", async (from) => {
      await submit(`AGENT:TOOL:${SUB_CMD}`);
      const sc = await tui.waitFor((x) => dialog.test(x) && /from the .*agent/.test(x), "the subagent's permission dialog", { history: 0 });
      capture("subagent-dialog");
      await select(/❯\s*1\. Yes/, "1. Yes selected");
      await pressUntil("Enter", gone(dialog), "the dialog answered (Yes)");
      await waitPayload(from, (p) => p.hook_event_name === "SubagentStop", "SubagentStop");
      await tui.waitFor(/Agent "Run a sub task" finished/, "the agent finished");
      // The agent runs in the background; its result comes back as a new
      // turn (a <task-notification> prompt), which ends with its own Stop.
      const isNote = (p) => p.hook_event_name === "UserPromptSubmit" && /<task-notification>/.test(p.prompt ?? "");
      await waitPayload(from, isNote, "the task-notification prompt");
      const at = payloads(rec).slice(from).findIndex(isNote);
      await waitPayload(from + at, (p) => p.hook_event_name === "Stop", "Stop after the notification");
      return { dialog: sc };
    });

    await step("exit", async (from) => {
      await submit("/exit");
      await tui.waitExit("claude to exit", { timeoutMs: 30_000 });
      await waitPayload(from, (p) => p.hook_event_name === "SessionEnd", "SessionEnd");
    });

    s.all = payloads(rec);
    s.hooksLog = events(w);
    const imp = cmdlog(w, ["import", "--from", AGENT, "--json"]);
    s.importSummary = JSON.parse(imp.stdout);
    s.afterImport = events(w);
    // The same files into a log of their own.
    const fresh = path.join(w.root, "fresh.redb");
    cmdlog(w, ["import", "--from", AGENT, "--log", fresh]);
    s.fresh = events(w, fresh);
    s.verify = cmdlog(w, ["verify"], { expect: null });
    s.ms = Date.now() - started;
    saveArtifacts(s);
    return s;
  } catch (e) {
    try {
      if (tui) fs.writeFileSync(path.join(art, "screens", "failed.txt"), tui.screen({ history: 2000 }));
      saveArtifacts(s);
    } catch {
      // best effort
    }
    console.log(`interactive-claude: failed; the world is kept at ${w.root}`);
    tui?.kill();
    await api.close();
    throw e;
  }
}

function saveArtifacts(s) {
  const { w, art, api } = s;
  const put = (name, v) => fs.writeFileSync(path.join(art, name), typeof v === "string" ? v : JSON.stringify(v, null, 1));
  if (s.rec) fs.cpSync(s.rec, path.join(art, "recorded"), { recursive: true });
  const projects = path.join(w.home, ".claude/projects");
  if (fs.existsSync(projects)) fs.cpSync(projects, path.join(art, "transcripts"), { recursive: true });
  put("requests.json", api.requests.map((r) => ({ method: r.method, url: r.url, headers: r.headers, body: r.body, reply: r.reply })));
  put("steps.json", s.steps.map((x) => ({ label: x.label, ms: x.ms, events: x.payloads.map((p) => p.hook_event_name), firstRun: x.firstRun, initialMode: x.initialMode })));
  if (s.hooksLog) put("log-hooks.json", s.hooksLog);
  if (s.importSummary) put("import.json", s.importSummary);
  if (s.afterImport) put("log-after-import.json", s.afterImport);
  if (s.fresh) put("log-fresh-import.json", s.fresh);
  if (s.verify) put("verify.txt", `exit ${s.verify.status}\n${s.verify.stdout}\n${s.verify.stderr}`);
  if (process.env.CMDLOG_ARTIFACTS) {
    fs.mkdirSync(process.env.CMDLOG_ARTIFACTS, { recursive: true });
    fs.cpSync(art, process.env.CMDLOG_ARTIFACTS, { recursive: true });
  }
}

// ---------------------------------------------------------------------------
// Reading

const stepOf = (s, label) => s.steps.find((x) => x.label === label);
const names = (ps) => ps.map((p) => p.hook_event_name);
/** The step's payloads without the ones the TUI sends for display. */
const core = (ps) => ps.filter((p) => !["MessageDisplay", "Notification"].includes(p.hook_event_name));
const toolId = (st) => st.requests.flatMap((r) => r.reply ?? []).find((b) => b.type === "tool_use")?.id;
const show = (evs) => evs.map((e) => `${e.seq} ${(e.session ?? "").slice(0, 8)} ${kindOf(e)} ${JSON.stringify(e.data).slice(0, 140)}`).join("\n") || "(none)";
const isSubagentRequest = (r) => JSON.stringify(r.body?.system ?? "").includes("cc_is_subagent=true");

describe("Claude Code 2.1.332 interactive (tmux)", { skip: SKIP }, () => {
  /** @type {any} */
  let s;
  before(async () => {
    s = await run();
    console.log(`interactive-claude: the scenario took ${Math.round(s.ms / 1000)} s; artifacts in ${s.art}${process.env.CMDLOG_ARTIFACTS ? ` and ${process.env.CMDLOG_ARTIFACTS}` : ""}`);
  }, { timeout: 420_000 });
  after(async () => {
    s?.tui?.kill();
    await s?.api.close();
    if (s && !process.env.CMDLOG_KEEP_WORLD) s.w.cleanup();
    else if (s) console.log(`interactive-claude: the world is kept at ${s.w.root}`);
  });

  // -------------------------------------------------------------------------
  // 1. The screen flow and what Claude Code sent its hooks (the agent's side)

  describe("the screen flow (what the agent did)", () => {
    test("first run: theme, security notes, folder trust; then auto mode, shift+tab to manual", () => {
      const fr = stepOf(s, "first-run");
      assert.deepEqual(fr.firstRun, ["theme", "security notes", "folder trust"], "the first-run screens, in order");
      assert.equal(fr.initialMode, "auto mode", "the mode 2.1.332 starts in");
      assert.deepEqual(names(fr.payloads), ["SessionStart"], "hooks before the first prompt");
      assert.equal(fr.payloads[0].source, "startup");
    });

    test("a plain prompt: UserPromptSubmit, Stop (same prompt_id)", () => {
      const st = stepOf(s, "plain");
      assert.deepEqual(names(core(st.payloads)), ["UserPromptSubmit", "Stop"]);
      const [u, stop] = core(st.payloads);
      assert.equal(u.prompt, "hello plain");
      assert.ok(u.prompt_id, "UserPromptSubmit carries prompt_id");
      assert.equal(stop.prompt_id, u.prompt_id, "Stop's prompt_id");
      assert.equal(stop.last_assistant_message, "reply to: hello plain");
    });

    test("a custom slash command: UserPromptSubmit (the line as typed) then UserPromptExpansion, Stop", () => {
      const st = stepOf(s, "slash");
      assert.deepEqual(names(core(st.payloads)), ["UserPromptSubmit", "UserPromptExpansion", "Stop"]);
      const [u, x] = core(st.payloads);
      assert.equal(u.prompt, SLASH_LINE);
      assert.equal(x.command_name, "x");
      assert.equal(x.command_args, 'foo "bar baz"');
      assert.equal(x.prompt_id, u.prompt_id);
    });

    test("approved in the dialog: PreToolUse, PermissionRequest, PostToolUse, PostToolBatch, Stop; nothing says who decided", () => {
      const st = stepOf(s, "approve");
      assert.match(st.dialog, /1\. Yes[\s\S]*2\. Yes, and always allow[\s\S]*3\. Yes, and switch to auto mode[\s\S]*4\. No[\s\S]*Esc to cancel · Tab to amend/, "the dialog's options");
      assert.deepEqual(names(core(st.payloads)), ["UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolBatch", "Stop"]);
      const id = toolId(st);
      const pre = st.payloads.find((p) => p.hook_event_name === "PreToolUse");
      const req = st.payloads.find((p) => p.hook_event_name === "PermissionRequest");
      const post = st.payloads.find((p) => p.hook_event_name === "PostToolUse");
      assert.equal(pre.tool_use_id, id);
      assert.equal(post.tool_use_id, id);
      assert.equal(req.tool_use_id, undefined, "PermissionRequest has no tool_use_id");
      assert.equal(pre.permission_mode, "default");
      for (const p of [req, post]) {
        const extra = Object.keys(p).filter((k) => /decision|decided|approv|allow|resolution|reason/i.test(k));
        assert.deepEqual(extra, [], `${p.hook_event_name} has no decision field`);
      }
      assert.ok(fs.existsSync(path.join(s.w.ws, "approved.txt")), "the approved command ran");
    });

    test("denied with 'No, and tell Claude what to do differently' (Tab): PostToolBatch with the feedback, Stop; no PostToolUseFailure, no PermissionDenied", () => {
      const st = stepOf(s, "deny-feedback");
      assert.deepEqual(names(core(st.payloads)), ["UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolBatch", "Stop"]);
      const batch = st.payloads.find((p) => p.hook_event_name === "PostToolBatch");
      assert.equal(batch.tool_calls[0].tool_use_id, toolId(st));
      assert.match(String(batch.tool_calls[0].tool_response), new RegExp(FEEDBACK));
      assert.ok(!fs.existsSync(path.join(s.w.ws, "denied-feedback.txt")));
    });

    test("denied with 'No' (and with Esc): the turn is interrupted; after PermissionRequest no hook fires at all (no PostToolBatch, no Stop)", () => {
      for (const label of ["deny-no", "deny-esc"]) {
        const st = stepOf(s, label);
        assert.deepEqual(names(core(st.payloads)), ["UserPromptSubmit", "PreToolUse", "PermissionRequest"], label);
        const id = toolId(st);
        const later = s.all.filter((p) => p.tool_use_id === id || (p.tool_calls ?? []).some((c) => c.tool_use_id === id));
        assert.deepEqual(names(later), ["PreToolUse"], `${label}: every payload naming ${id}`);
      }
      assert.ok(!fs.existsSync(path.join(s.w.ws, "denied-no.txt")));
      assert.ok(!fs.existsSync(path.join(s.w.ws, "denied-esc.txt")));
    });

    test("/model: PreModelSwitch and PostModelSwitch (from_model, to_model); the next request carries to_model", () => {
      const st = stepOf(s, "model");
      const sw = st.payloads.filter((p) => /ModelSwitch$/.test(p.hook_event_name));
      assert.deepEqual(names(sw), ["PreModelSwitch", "PostModelSwitch"]);
      const post = sw[1];
      assert.equal(post.source, "picker");
      assert.notEqual(post.from_model, post.to_model);
      const models = st.afterSwitch.map((r) => r.body.model);
      assert.ok(models.length > 0 && models.every((m) => m === post.to_model), `models of the requests after the switch: ${models.join(", ")} vs ${post.to_model}`);
      const before = s.api.calls().find((r) => !isSubagentRequest(r)).body.model;
      assert.equal(before, post.from_model, "the model before the switch");
    });

    test("/clear: SessionEnd reason clear (old id), SessionStart source clear (new id)", () => {
      const st = stepOf(s, "clear");
      assert.deepEqual(names(core(st.payloads)), ["SessionEnd", "SessionStart"]);
      const [end, start] = st.payloads;
      assert.equal(end.reason, "clear");
      assert.equal(start.source, "clear");
      assert.notEqual(start.session_id, end.session_id, "a new session id");
    });

    test("subagent: Agent call, SubagentStart, the subagent's own PreToolUse/PermissionRequest/PostToolUse (agent_id, agent_type), SubagentStop with its transcript", () => {
      const st = stepOf(s, "subagent");
      const ev = names(core(st.payloads));
      for (const e of ["PreToolUse", "SubagentStart", "PermissionRequest", "PostToolUse", "SubagentStop", "Stop"]) assert.ok(ev.includes(e), `${e} in ${ev.join(", ")}`);
      const start = st.payloads.find((p) => p.hook_event_name === "SubagentStart");
      const stop = st.payloads.find((p) => p.hook_event_name === "SubagentStop");
      assert.ok(start.agent_id && start.agent_type, "SubagentStart has agent_id and agent_type");
      assert.equal(stop.agent_id, start.agent_id);
      const req = st.payloads.find((p) => p.hook_event_name === "PermissionRequest");
      assert.equal(req.agent_id, start.agent_id, "the subagent's PermissionRequest has its agent_id");
      assert.match(st.dialog, /from the general-purpose agent/);
      const file = stop.agent_transcript_path;
      assert.ok(file && fs.existsSync(file), `agent_transcript_path ${file}`);
      assert.equal(path.basename(file), `agent-${start.agent_id}.jsonl`);
      assert.equal(path.basename(path.dirname(file)), "subagents");
      assert.equal(path.basename(path.dirname(path.dirname(file))), start.session_id);
      assert.ok(st.requests.some(isSubagentRequest), "the subagent's requests say cc_is_subagent=true");
      assert.ok(fs.existsSync(path.join(s.w.ws, "sub-approved.txt")));
    });

    test("/exit: SessionEnd reason prompt_input_exit", () => {
      const st = stepOf(s, "exit");
      const end = st.payloads.filter((p) => p.hook_event_name === "SessionEnd");
      assert.deepEqual(end.map((p) => p.reason), ["prompt_input_exit"]);
    });
  });

  // -------------------------------------------------------------------------
  // 2. cmdlog's record of that session  ===== CHECKS OF CMDLOG (may fail today) =====
  //
  // What docs/agents.md promises, and the issue asks for: each fact once; every
  // call settled; every permission request answered; the model switch and the
  // session ends recorded; an import of the same transcripts into the same log
  // adds no fact; the log verifies clean.

  describe("cmdlog's record (hooks, then import into the same log)", () => {
    const sessions = () => [...new Set(s.all.map((p) => p.session_id))];
    const inSession = (evs, id) => evs.filter((e) => e.session === id);
    const upd = (evs, kind) => evs.filter((e) => kindOf(e) === `session/update:${kind}`);

    for (const which of ["hooksLog", "afterImport"]) {
      const when = which === "hooksLog" ? "after the hooks" : "after the import";

      test(`${when}: each prompt is recorded once (session/prompt per UserPromptSubmit)`, () => {
        const problems = [];
        // A subagent's `<task-notification>` is Claude Code's own turn, not a
        // prompt anyone typed: kept as the agent's notice.
        for (const p of s.all.filter((x) => x.hook_event_name === "UserPromptSubmit" && !x.prompt.startsWith("<task-notification>"))) {
          const got = inSession(s[which], p.session_id).filter((e) => e.type === "session/prompt" && e.data.text === p.prompt);
          if (got.length !== 1) problems.push(`${JSON.stringify(p.prompt.slice(0, 40))}: ${got.length}`);
        }
        assert.deepEqual(problems, []);
      });

      test(`${when}: each reply and each turn end once (one agent_message_chunk + turn_complete per Stop)`, () => {
        const problems = [];
        for (const id of sessions()) {
          const stops = s.all.filter((p) => p.session_id === id && p.hook_event_name === "Stop");
          const evs = inSession(s[which], id);
          const ends = upd(evs, "turn_complete");
          if (ends.length !== stops.length) problems.push(`${id}: ${ends.length} turn_complete for ${stops.length} Stop\n${show(ends)}`);
          const texts = upd(evs, "agent_message_chunk").map((e) => e.data.content?.text).sort();
          const want = stops.map((p) => p.last_assistant_message).sort();
          if (JSON.stringify(texts) !== JSON.stringify(want)) problems.push(`${id}: replies ${JSON.stringify(texts)} vs Stop ${JSON.stringify(want)}`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });

      test(`${when}: each tool call once, and settled by a tool_call_update completed or failed`, () => {
        const calls = upd(s[which], "tool_call");
        const problems = [];
        const ids = new Map();
        for (const c of calls) ids.set(c.data.toolCallId, (ids.get(c.data.toolCallId) ?? 0) + 1);
        for (const [id, n] of ids) if (n !== 1) problems.push(`${id}: ${n} tool_call events`);
        for (const id of ids.keys()) {
          const settled = upd(s[which], "tool_call_update").filter((e) => e.data.toolCallId === id && ["completed", "failed"].includes(e.data.status));
          if (!settled.length) problems.push(`${id}: pending (no tool_call_update completed/failed)`);
        }
        // Every call the agent announced is in the log.
        for (const p of s.all.filter((x) => x.hook_event_name === "PreToolUse")) {
          if (!ids.has(p.tool_use_id)) problems.push(`${p.tool_use_id} (${p.tool_name}): no tool_call`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });

      test(`${when}: the denied calls are settled failed, the approved ones completed`, () => {
        const want = { approve: "completed", "deny-feedback": "failed", "deny-no": "failed", "deny-esc": "failed" };
        const problems = [];
        for (const [label, status] of Object.entries(want)) {
          const id = toolId(stepOf(s, label));
          const last = upd(s[which], "tool_call_update").filter((e) => e.data.toolCallId === id).at(-1);
          if (last?.data.status !== status) problems.push(`${label} ${id}: ${last?.data.status ?? "no update"} (want ${status})`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });

      test(`${when}: every permission/requested has a permission/resolved (approved → allow, denied → reject)`, () => {
        const reqs = s[which].filter((e) => e.type === "permission/requested");
        const asked = s.all.filter((p) => p.hook_event_name === "PermissionRequest").length;
        const problems = [];
        if (reqs.length !== asked) problems.push(`${reqs.length} permission/requested for ${asked} PermissionRequest payloads`);
        const want = { approve: "allow", "deny-feedback": "reject", "deny-no": "reject", "deny-esc": "reject", subagent: "allow" };
        for (const r of reqs) {
          const res = s[which].filter((e) => e.type === "permission/resolved" && e.data.request_id === r.data.request_id);
          if (res.length !== 1) {
            problems.push(`${r.data.request_id}: ${res.length} permission/resolved`);
            continue;
          }
          const option = (r.data.options ?? []).find((o) => o.optionId === res[0].data.decision?.optionId);
          const label = Object.keys(want).find((l) => toolId(stepOf(s, l)) === r.data.tool_call?.toolCallId || (l === "subagent" && stepOf(s, l).payloads.some((p) => p.tool_use_id === r.data.tool_call?.toolCallId)));
          if (label && !String(option?.kind).startsWith(want[label])) problems.push(`${label} ${r.data.request_id}: resolved ${option?.kind} (want ${want[label]}*)`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });

      test(`${when}: the model switch is a session/model_switched event`, () => {
        const post = s.all.find((p) => p.hook_event_name === "PostModelSwitch");
        const sw = inSession(s[which], post.session_id).filter((e) => e.type === "session/model_switched");
        assert.equal(sw.length, 1, `session/model_switched:\n${show(sw)}`);
        assert.equal(JSON.stringify(sw[0].data).includes(post.to_model), true, `names ${post.to_model}: ${JSON.stringify(sw[0].data)}`);
      });

      test(`${when}: exactly one session/ended per session, with the agent's reason`, () => {
        const problems = [];
        for (const id of sessions()) {
          const want = s.all.filter((p) => p.session_id === id && p.hook_event_name === "SessionEnd").map((p) => p.reason);
          const got = inSession(s[which], id).filter((e) => e.type === "session/ended").map((e) => e.data.reason);
          if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${id}: session/ended ${JSON.stringify(got)} vs SessionEnd ${JSON.stringify(want)}`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });
    }

    test("the import into the same log states nothing again; it adds only what no hook reports", () => {
      assert.deepEqual(statedTwice(s.hooksLog, s.afterImport), []);
      // Built-in commands (/model, /clear: no hook names them), the prompt the
      // subagent was given (it has no UserPromptSubmit), Claude Code's notices.
      assert.deepEqual(addedKinds(s.hooksLog, s.afterImport), {
        "agent/event": 3,
        "command/run": 2,
        "command/done": 2,
        "session/prompt": 1,
      });
    });

    test("the transcripts imported into a fresh log give the same sessions: prompts, parents, ends", () => {
      assert.deepEqual(freshDiffers(s.hooksLog, s.fresh), []);
    });

    test("cmdlog verify: exit 0, and no conflict between what the hooks and the transcripts said", () => {
      assert.equal(s.verify.status, 0, s.verify.stdout + s.verify.stderr);
      const conflicts = (s.verify.stdout + s.verify.stderr).split("\n").filter((l) => /conflict/i.test(l));
      assert.deepEqual(conflicts, []);
    });
  });
});
