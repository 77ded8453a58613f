// Claude Code, the real CLI (both pinned releases: 2.1.332 and 2.1.197), run
// headless (`claude -p`) against our fake Anthropic API on loopback, with
// cmdlog's hooks installed in the workspace's `.claude/settings.json`.
//
// Each release gets one world in which every scenario runs once (a plain
// prompt, a Bash call, four typed slash commands, a Bash call that needs a
// permission in the default mode); the checks below all read that one set of
// runs. Beside cmdlog's hooks, the world's *user* settings
// (`~/.claude/settings.json`) hold a recorder hook on every event, which keeps
// each payload Claude Code sent: that is what the agent did, and what cmdlog's
// log is compared with.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { AGENTS, CMDLOG, cmdlog, events, installed, kindOf, runAgent, world, ownEvent } from "./harness.mjs";
import { claudeEnv, commandBlocks, fakeAnthropic } from "./fake-anthropic.mjs";

const RELEASES = [
  { key: "claude", version: "2.1.332", bin: AGENTS.claude },
  { key: "claude197", version: "2.1.197", bin: AGENTS.claude197 },
];

const AGENT = "claude-code"; // cmdlog's name for Claude Code
const SKIP = !CMDLOG ? "CMDLOG_BIN is not set" : !installed() ? "the pinned agents are not installed (npm install --prefix tests/agents-real --no-save)" : false;

/** Every hook event the recorder listens to (both releases know them all). */
const RECORDED = [
  "SessionStart", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PostToolUse",
  "PostToolUseFailure", "PostToolBatch", "PermissionRequest", "PermissionDenied", "Stop",
  "StopFailure", "SessionEnd",
];

/** The user's own project settings, there before cmdlog's install (no trailing newline on purpose). */
const USER_SETTINGS = '{\n  "env": {\n    "SUITE_MARK": "kept"\n  },\n  "permissions": {\n    "deny": ["Bash(rm -rf /:*)"]\n  }\n}';

/**
 * The command files (`.claude/commands/*.md`) and the lines typed. Each body
 * ends in a newline (the first in two), which Claude Code sends as it is.
 */
const COMMANDS = {
  "all.md": "---\ndescription: every argument as typed\n---\nAll: [$ARGUMENTS]\nend of all\n\n",
  "pos.md": "P: zero=[$0] one=[$1] two=[$2] p150=[$150] a1=[$ARGUMENTS[1]]\n",
  "numonly.md": "Only numbered: $1 and $2\n",
  "noph.md": "No placeholders here.\n",
};
const SLASH = [
  { label: "slash-args", line: '/all x "y z"', name: "all", args: 'x "y z"', what: "$ARGUMENTS after frontmatter, two trailing newlines" },
  { label: "slash-pos", line: "/pos a b", name: "pos", args: "a b", what: "positional $0 $1 $ARGUMENTS[1], missing $2 and $150" },
  { label: "slash-missing", line: "/numonly a", name: "numonly", args: "a", what: "only positional placeholders, the one used ($1) missing" },
  { label: "slash-noph", line: "/noph a b", name: "noph", args: "a b", what: "no placeholder, arguments given" },
];
const PERM_CMD = "touch made-by-tool.txt";

// ---------------------------------------------------------------------------
// Running the scenarios

/** A `bin/claude` in the world that is the release under test, first on PATH. */
function useRelease(w, bin) {
  const dir = path.join(w.root, "bin");
  fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(bin, path.join(dir, "claude"));
  // Both the agent and cmdlog see this `claude` (cmdlog may ask it for its
  // version to choose the release's expansion rules).
  w.env.PATH = `${dir}:${w.env.PATH}`;
}

/** Puts a recorder hook on every event in the user's settings of the world. */
function installRecorder(w) {
  const dir = path.join(w.root, "recorded");
  fs.mkdirSync(dir, { recursive: true });
  const hooks = {};
  for (const e of RECORDED) {
    hooks[e] = [{ hooks: [{ type: "command", command: `cat > '${dir}'/$(date +%s%N)-$$-${e}.json`, timeout: 10 }] }];
  }
  w.put("home/.claude/settings.json", JSON.stringify({ hooks }, null, 2) + "\n");
  return dir;
}

/** The payloads the recorder kept, in the order they came, from the files not in `seen`. */
function newPayloads(dir, seen) {
  const out = [];
  for (const f of fs.readdirSync(dir).sort()) {
    if (seen.has(f)) continue;
    seen.add(f);
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    try {
      out.push(JSON.parse(text));
    } catch {
      out.push({ hook_event_name: f.split("-").at(-1).replace(/\.json$/, ""), unparsed: text });
    }
  }
  return out;
}

/** The events cmdlog's install put into the project settings. */
function installedEvents(w) {
  const settings = JSON.parse(w.read("ws/.claude/settings.json"));
  return new Set(
    Object.entries(settings.hooks ?? {})
      .filter(([, groups]) =>
        groups.some((g) => (g.hooks ?? []).some((h) => String(h.command).includes(`hook ${AGENT}`))),
      )
      .map(([e]) => e),
  );
}

/** Runs every scenario with one release; returns what the checks read. */
async function scenarios(release) {
  const w = world(`claude-${release.key}`);
  const api = await fakeAnthropic();
  try {
    useRelease(w, release.bin);
    Object.assign(w.env, claudeEnv(api.url));
    for (const [file, body] of Object.entries(COMMANDS)) w.put(`ws/.claude/commands/${file}`, body);
    const settingsPath = w.put("ws/.claude/settings.json", USER_SETTINGS);
    const userMode = fs.statSync(settingsPath).mode;
    const install = cmdlog(w, ["hooks", "install", AGENT]);
    const hooked = installedEvents(w);
    const recDir = installRecorder(w);
    const seen = new Set();
    const plan = [
      { label: "plain", prompt: "hello plain" },
      // As root, skipping permissions needs IS_SANDBOX=1.
      { label: "tool", prompt: "TOOL:echo hi", args: ["--dangerously-skip-permissions"], env: { IS_SANDBOX: "1" } },
      ...SLASH.map((s) => ({ ...s, prompt: s.line })),
      // Needs approval (it creates a file); headless, nobody can give it.
      { label: "perm", prompt: `TOOL:${PERM_CMD}`, args: ["--permission-mode", "default"] },
    ];
    const runs = [];
    for (const p of plan) {
      const first = api.requests.length;
      const startedAt = Date.now();
      const res = await runAgent(w, path.join(w.root, "bin", "claude"), ["-p", p.prompt, ...(p.args ?? [])], {
        env: p.env ?? {},
        timeoutMs: 90_000,
      });
      const requests = api.requests.slice(first);
      const payloads = newPayloads(recDir, seen);
      runs.push({
        ...p,
        startedAt,
        res,
        requests,
        calls: requests.filter((r) => r.reply),
        payloads,
        session: payloads.find((x) => x.session_id)?.session_id,
      });
    }
    return { release, w, api, install, hooked, settingsPath, userMode, runs, log: events(w) };
  } catch (e) {
    await api.close();
    w.cleanup();
    throw e;
  }
}

// ---------------------------------------------------------------------------
// Reading the log

const byRun = (s, label) => s.runs.find((r) => r.label === label);
const ofSession = (evs, session) => evs.filter((e) => e.session === session);
const updates = (evs, kind) => evs.filter((e) => kindOf(e) === `session/update:${kind}`);
const show = (evs) => evs.map((e) => `${e.seq} ${kindOf(e)} ${JSON.stringify(e.data).slice(0, 160)}`).join("\n") || "(none)";

/** JSON with sorted keys, for comparing events' content. */
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

/** The text the fake model answered last in a run. */
const lastReply = (run) => run.calls.at(-1)?.reply?.find((b) => b.type === "text")?.text;
/** The id of the Bash call the fake asked for in a run. */
const toolUseId = (run) => run.calls.flatMap((c) => c.reply).find((b) => b.type === "tool_use")?.id;

/**
 * What docs/agents.md says one Claude Code payload becomes, as a check on the
 * session's events: null when it is there, else what is missing.
 */
function missingFor(p, evs) {
  const need = (what, ok) => (ok ? null : what);
  const calls = (id) => evs.filter((e) => e.type === "session/update" && e.data.toolCallId === id);
  switch (p.hook_event_name) {
    case "UserPromptSubmit":
      return need(`session/prompt ${JSON.stringify(p.prompt)}`, evs.some((e) => e.type === "session/prompt" && e.data.text === p.prompt));
    case "UserPromptExpansion":
      return need(`command/run /${p.command_name}`, evs.some((e) => e.type === "command/run" && e.data.name === p.command_name));
    case "PreToolUse":
      return need(`tool_call ${p.tool_use_id}`, calls(p.tool_use_id).some((e) => e.data.sessionUpdate === "tool_call"));
    case "PostToolUse":
      return need(`tool_call_update ${p.tool_use_id} completed`, calls(p.tool_use_id).some((e) => e.data.sessionUpdate === "tool_call_update" && e.data.status === "completed"));
    case "PostToolUseFailure":
      return need(`tool_call_update ${p.tool_use_id} failed`, calls(p.tool_use_id).some((e) => e.data.sessionUpdate === "tool_call_update" && e.data.status === "failed"));
    case "PostToolBatch": {
      const lacking = (p.tool_calls ?? []).filter(
        (c) => !calls(c.tool_use_id).some((e) => e.data.sessionUpdate === "tool_call_update" && ["completed", "failed"].includes(e.data.status)),
      );
      return lacking.length ? `a settled tool_call_update for ${lacking.map((c) => c.tool_use_id).join(", ")}` : null;
    }
    case "PermissionRequest":
      return need(
        `permission/requested for ${JSON.stringify(p.tool_input)}`,
        evs.some((e) => e.type === "permission/requested" && canon(e.data.tool_call?.rawInput) === canon(p.tool_input)),
      );
    case "PermissionDenied":
      return need("permission/requested + permission/resolved", evs.some((e) => e.type === "permission/resolved"));
    case "Stop":
      return need("session/update turn_complete", updates(evs, "turn_complete").length > 0);
    case "StopFailure":
      return need("session/update turn_error", updates(evs, "turn_error").length > 0);
    case "SessionEnd":
      return need(`session/ended reason ${p.reason}`, evs.some((e) => e.type === "session/ended" && e.data.reason === p.reason));
    default:
      return need(`agent/event ${p.hook_event_name}`, evs.some((e) => e.type === "agent/event" && e.data.event === p.hook_event_name));
  }
}

/** What a session's record says, in the terms hooks and import should agree on. */
function digest(evs) {
  const statuses = {};
  for (const e of updates(evs, "tool_call_update")) statuses[e.data.toolCallId] = e.data.status;
  const done = new Map(evs.filter((e) => e.type === "command/done").map((e) => [e.data.run, e]));
  return {
    prompts: evs.filter((e) => e.type === "session/prompt").map((e) => e.data.text).sort(),
    replies: updates(evs, "agent_message_chunk").map((e) => e.data.content?.text).sort(),
    toolCalls: updates(evs, "tool_call").map((e) => `${e.data.toolCallId} ${e.data.title} ${canon(e.data.rawInput)}`).sort(),
    toolStatus: statuses,
    turnEnds: updates(evs, "turn_complete").length,
    commandRuns: evs
      .filter((e) => e.type === "command/run")
      .map((e) => `/${e.data.name}${e.data.raw_input ?? ""} → ${done.get(e.seq)?.data.outcome?.kind ?? "unsettled"}`)
      .sort(),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// ---------------------------------------------------------------------------
// The checks, per release

for (const release of RELEASES) {
  describe(`Claude Code ${release.version} headless`, { skip: SKIP }, () => {
    /** @type {Awaited<ReturnType<typeof scenarios>>} */
    let s;
    before(async () => {
      s = await scenarios(release);
    }, { timeout: 240_000 });
    after(async () => {
      await s?.api.close();
      s?.w.cleanup();
    });

    test("the runs themselves went as planned (the agent's side)", () => {
      for (const r of s.runs) {
        assert.equal(r.res.code, 0, `${r.label}: claude exited ${r.res.code} (${r.res.signal ?? ""})\n${r.res.stderr}`);
        assert.ok(r.session, `${r.label}: no hook payload carried a session_id`);
        assert.ok(r.calls.length > 0, `${r.label}: the fake model got no call`);
      }
      // 2.1.332 asks the hooks (PermissionRequest); 2.1.197 denies outright.
      // Either way nothing is made, and what reports the denial is PostToolBatch
      // alone: no PostToolUse, PostToolUseFailure or PermissionDenied.
      assert.ok(!fs.existsSync(path.join(s.w.ws, "made-by-tool.txt")), "the tool needing approval ran headless");
      const perm = byRun(s, "perm");
      const fired = perm.payloads.map((p) => p.hook_event_name);
      for (const e of ["PreToolUse", "PostToolBatch"]) assert.ok(fired.includes(e), `perm run fired ${e}: ${fired.join(", ")}`);
      for (const e of ["PostToolUse", "PostToolUseFailure"]) assert.ok(!fired.includes(e), `perm run fired ${e}: ${fired.join(", ")}`);
      const batch = perm.payloads.find((p) => p.hook_event_name === "PostToolBatch");
      assert.equal(batch.tool_calls?.[0]?.tool_use_id, toolUseId(perm), "PostToolBatch names the denied call");
      assert.equal(typeof batch.tool_calls[0].tool_response, "string", "its tool_response is the denial text");
    });

    test("hooks install is accepted: no warning about settings or hooks, and every installed hook the runs triggered reached the log", () => {
      const problems = [];
      for (const r of s.runs) {
        const warn = r.res.stderr.split("\n").filter((l) => /setting|hook/i.test(l));
        if (warn.length) problems.push(`${r.label}: stderr warns: ${warn.join(" | ")}`);
        const evs = ofSession(s.log, r.session);
        for (const p of r.payloads.filter((x) => s.hooked.has(x.hook_event_name))) {
          const miss = missingFor(p, evs);
          if (miss) problems.push(`${r.label}: ${p.hook_event_name} fired but the log lacks ${miss}`);
        }
      }
      assert.deepEqual(problems, [], `installed: ${[...s.hooked].join(", ")}\n${problems.join("\n")}`);
    });

    test("the log's sessions are the agent's own session ids", () => {
      const expected = s.runs.map((r) => r.session).sort();
      const found = [...new Set(s.log.filter((e) => e.session).map((e) => e.session))].sort();
      assert.deepEqual(found, expected, "sessions in the log vs session_id of the agent's payloads");
      for (const r of s.runs) {
        const created = ofSession(s.log, r.session).filter((e) => e.type === "session/created");
        assert.equal(created.length, 1, `${r.label}: session/created for ${r.session}:\n${show(created)}`);
        // -p is headless: Claude Code tells its hooks CLAUDE_CODE_ENTRYPOINT=sdk-cli.
        assert.equal(created[0].data.mode, "non_interactive", `${r.label}: the session's mode`);
        for (const run of ofSession(s.log, r.session).filter((e) => e.type === "command/run")) {
          assert.equal(run.data.mode, "non_interactive", `${r.label}: /${run.data.name}'s mode`);
        }
      }
    });

    test("each prompt is recorded once, as typed", () => {
      for (const r of s.runs) {
        const prompts = ofSession(s.log, r.session).filter((e) => e.type === "session/prompt").map((e) => e.data.text);
        assert.deepEqual(prompts, [r.prompt], `${r.label}: session/prompt texts`);
      }
    });

    test("a Bash call: its input and its output", () => {
      const r = byRun(s, "tool");
      const id = toolUseId(r);
      const evs = ofSession(s.log, r.session).filter((e) => e.type === "session/update" && e.data.toolCallId === id);
      const call = evs.filter((e) => e.data.sessionUpdate === "tool_call");
      assert.equal(call.length, 1, `tool_call ${id}:\n${show(evs)}`);
      assert.equal(call[0].data.rawInput?.command, "echo hi", "the call's input");
      const settled = evs.filter((e) => e.data.sessionUpdate === "tool_call_update");
      assert.ok(settled.length > 0, `no tool_call_update for ${id}:\n${show(evs)}`);
      const last = settled.at(-1).data;
      assert.equal(last.status, "completed", `final status of ${id}:\n${show(settled)}`);
      const out = last.rawOutput;
      assert.ok(out === "hi" || out?.stdout === "hi", `the call's output is "hi": ${JSON.stringify(out)}`);
    });

    test("a typed slash command is a run with its name and arguments, settled", () => {
      for (const c of SLASH) {
        const r = byRun(s, c.label);
        const evs = ofSession(s.log, r.session);
        const run = evs.filter((e) => e.type === "command/run");
        assert.equal(run.length, 1, `${c.line}: command/run events:\n${show(run)}`);
        assert.equal(run[0].data.name, c.name, `${c.line}: name`);
        assert.equal(run[0].data.raw_input, ` ${c.args}`, `${c.line}: the text after the name, as typed`);
        assert.equal(run[0].data.source, "agent", `${c.line}: source`);
        const done = evs.filter((e) => e.type === "command/done" && e.data.run === run[0].seq);
        assert.equal(done.length, 1, `${c.line}: command/done of run ${run[0].seq}:\n${show(done)}`);
        assert.equal(done[0].data.outcome.kind, "success", `${c.line}: outcome`);
      }
    });

    describe("a Bash call needing approval in the default permission mode (denied headless)", () => {
      test("the call is recorded and settled as failed, not left pending", () => {
        const r = byRun(s, "perm");
        const id = toolUseId(r);
        const evs = ofSession(s.log, r.session).filter((e) => e.type === "session/update" && e.data.toolCallId === id);
        const call = evs.filter((e) => e.data.sessionUpdate === "tool_call");
        assert.equal(call.length, 1, `tool_call ${id}:\n${show(evs)}`);
        assert.equal(call[0].data.rawInput?.command, PERM_CMD);
        const fired = r.payloads.map((p) => p.hook_event_name).join(", ");
        const settled = evs.filter((e) => e.data.sessionUpdate === "tool_call_update");
        // Claude Code sends no PostToolUse/PostToolUseFailure/PermissionDenied
        // for it: only PostToolBatch, whose tool_response is the denial text.
        assert.ok(
          settled.length > 0,
          `${id} is never settled in the log (hooks the agent fired: ${fired}; cmdlog installed: ${[...s.hooked].join(", ")})`,
        );
        assert.equal(settled.at(-1).data.status, "failed", `final status of ${id}:\n${show(settled)}`);
      });

      test("the permission request is recorded for that call", (t) => {
        const r = byRun(s, "perm");
        const asked = r.payloads.find((p) => p.hook_event_name === "PermissionRequest" || p.hook_event_name === "PermissionDenied");
        if (!asked) {
          return t.skip(
            `${release.version} fires no PermissionRequest or PermissionDenied hook headless (it fired: ${r.payloads.map((p) => p.hook_event_name).join(", ")}); no hook reports a request`,
          );
        }
        const id = toolUseId(r);
        const req = ofSession(s.log, r.session).filter((e) => e.type === "permission/requested");
        assert.equal(req.length, 1, `permission/requested:\n${show(req)}`);
        assert.equal(canon(req[0].data.tool_call?.rawInput), canon(asked.tool_input), "the request's tool input");
        // The payload has no tool_use_id; the request is for the call PreToolUse announced.
        assert.equal(req[0].data.tool_call?.toolCallId, id, "the request names the tool call it is for");
      });

      test("the decision (denied) is recorded", (t) => {
        const r = byRun(s, "perm");
        const asked = r.payloads.find((p) => p.hook_event_name === "PermissionRequest" || p.hook_event_name === "PermissionDenied");
        if (!asked) {
          return t.skip(`${release.version} reports no permission request to a hook headless; the denial shows only as the failed call`);
        }
        const evs = ofSession(s.log, r.session);
        const req = evs.find((e) => e.type === "permission/requested");
        const res = evs.filter((e) => e.type === "permission/resolved");
        assert.equal(
          res.length,
          1,
          `permission/resolved (hooks fired: ${r.payloads.map((p) => p.hook_event_name).join(", ")}; the denial is in PostToolBatch's tool_response):\n${show(evs.filter((e) => e.type.startsWith("permission/")))}`,
        );
        assert.equal(res[0].data.request_id, req?.data.request_id, "resolves the recorded request");
        const option = (req?.data.options ?? []).find((o) => o.optionId === res[0].data.decision?.optionId);
        assert.match(String(option?.kind), /^reject/, `the decision is a rejection: ${JSON.stringify(res[0].data.decision)}`);
      });
    });

    test("each turn end is recorded once, with the agent's last message", () => {
      for (const r of s.runs) {
        const evs = ofSession(s.log, r.session);
        const stops = r.payloads.filter((p) => p.hook_event_name === "Stop");
        assert.equal(updates(evs, "turn_complete").length, stops.length, `${r.label}: turn_complete vs Stop payloads:\n${show(evs)}`);
        const texts = updates(evs, "agent_message_chunk").map((e) => e.data.content?.text);
        assert.deepEqual(texts, [lastReply(r)], `${r.label}: agent_message_chunk vs the fake model's last reply`);
      }
    });

    test('the session end is recorded: session/ended reason "other" (headless)', () => {
      for (const r of s.runs) {
        const end = r.payloads.filter((p) => p.hook_event_name === "SessionEnd");
        assert.deepEqual(end.map((p) => p.reason), ["other"], `${r.label}: the agent's SessionEnd payloads`);
        const ended = ofSession(s.log, r.session).filter((e) => e.type === "session/ended");
        assert.deepEqual(ended.map((e) => e.data.reason), ["other"], `${r.label}: session/ended:\n${show(ended)}`);
      }
    });

    test("nothing is recorded twice: one delivery per payload, no repeated event within one", () => {
      const problems = [];
      for (const r of s.runs) {
        const evs = ofSession(s.log, r.session).filter((e) => e.observed?.source === `${AGENT} hook`);
        const deliveries = new Map();
        for (const e of evs) {
          const k = e.observed.key ?? `seq ${e.seq}`;
          if (!deliveries.has(k)) deliveries.set(k, []);
          deliveries.get(k).push(e);
        }
        const sent = r.payloads.filter((p) => s.hooked.has(p.hook_event_name));
        if (deliveries.size !== sent.length) {
          problems.push(`${r.label}: ${sent.length} payloads went to cmdlog's hook (${sent.map((p) => p.hook_event_name).join(", ")}), the log has ${deliveries.size} deliveries`);
        }
        for (const [k, list] of deliveries) {
          const seen = new Set();
          for (const e of list.filter((e) => e.type !== "session/created")) {
            const c = `${e.type} ${canon(e.data)}`;
            if (seen.has(c)) problems.push(`${r.label}: delivery ${k} holds twice: ${c.slice(0, 200)}`);
            seen.add(c);
          }
        }
      }
      assert.deepEqual(problems, [], problems.join("\n"));
    });

    // Where the expansion is: the request body's user message that holds the
    // text block `<command-message>NAME</command-message>\n<command-name>/NAME
    // </command-name>\n<command-args>ARGS</command-args>\n`; the text block
    // right after it is the expanded command file, exactly as the model gets it
    // (commandBlocks in fake-anthropic.mjs). Each release is compared with its
    // own requests.
    describe("cmdlog run prints exactly what Claude Code sent the model", () => {
      test(`the agent's own expansions (precondition: ${release.version}'s rules)`, () => {
        const exp = (label) => commandBlocks(byRun(s, label).calls[0].body, SLASH.find((c) => c.label === label).name)?.expansion;
        assert.equal(exp("slash-args"), 'All: [x "y z"]\nend of all\n\n');
        assert.equal(exp("slash-noph"), "No placeholders here.\n\n\nARGUMENTS: a b");
        if (release.version === "2.1.197") {
          // Missing $2, $150 become empty text; a missing $1 counts as substituted.
          assert.equal(exp("slash-pos"), "P: zero=[a] one=[b] two=[] p150=[] a1=[b]\n");
          assert.equal(exp("slash-missing"), "Only numbered:  and \n");
        } else {
          // Missing ones stay as written; nothing substituted → ARGUMENTS appended.
          assert.equal(exp("slash-pos"), "P: zero=[a] one=[b] two=[$2] p150=[$150] a1=[b]\n");
          assert.equal(exp("slash-missing"), "Only numbered: $1 and $2\n\n\nARGUMENTS: a");
        }
      });

      for (const c of SLASH) {
        test(`${c.line} (${c.what})`, () => {
          const r = byRun(s, c.label);
          const sent = commandBlocks(r.calls[0].body, c.name);
          assert.ok(sent?.expansion !== undefined, `no command block for /${c.name} in the request body`);
          // Into a log of its own, so the hooks' log stays as the agent left it.
          const out = cmdlog(s.w, ["run", "--log", path.join(s.w.root, "run.redb"), c.line], { expect: null });
          assert.equal(out.status, 0, `cmdlog run ${c.line} exited ${out.status}: ${out.stderr}`);
          assert.equal(out.stdout, sent.expansion, `cmdlog run ${JSON.stringify(c.line)} stdout (actual) vs the body Claude Code ${release.version} sent (expected)`);
        });
      }
    });

    describe("import --from claude-code (HOME = the world's home, into another log)", () => {
      let imp; // {first, second, imported, again}
      before(() => {
        const log = path.join(s.w.root, "import.redb");
        const first = JSON.parse(cmdlog(s.w, ["import", "--from", AGENT, "--log", log, "--json"]).stdout);
        const imported = events(s.w, log);
        const second = JSON.parse(cmdlog(s.w, ["import", "--from", AGENT, "--log", log, "--json"]).stdout);
        const again = events(s.w, log);
        imp = { first, second, imported, again };
      });

      test("the same sessions: the agent's ids", () => {
        const sessions = s.runs.map((r) => r.session).sort();
        assert.deepEqual([...imp.first.sessions].sort(), sessions, "sessions the import started vs the agent's");
        const inLog = [...new Set(imp.imported.filter((e) => e.session).map((e) => e.session))].sort();
        assert.deepEqual(inLog, sessions, "sessions in the imported log vs the agent's");
      });

      // Hooks (expected) against import (actual), one aspect at a time, every run.
      for (const [aspect, keys] of [
        ["prompts", ["prompts"]],
        ["replies and turn ends", ["replies", "turnEnds"]],
        ["tool calls, their input and final status", ["toolCalls", "toolStatus"]],
        ["command runs", ["commandRuns"]],
      ]) {
        test(`the same ${aspect} as the hooks recorded`, () => {
          const problems = [];
          for (const r of s.runs) {
            const a = digest(ofSession(imp.imported, r.session));
            const h = digest(ofSession(s.log, r.session));
            for (const k of keys) {
              if (canon(a[k]) !== canon(h[k])) {
                problems.push(`${r.label} ${k}: import ${JSON.stringify(a[k])} vs hooks ${JSON.stringify(h[k])}`);
              }
            }
          }
          assert.deepEqual(problems, [], problems.join("\n"));
        });
      }

      test("each imported command run carries the expansion Claude Code sent the model", () => {
        const problems = [];
        for (const c of SLASH) {
          const r = byRun(s, c.label);
          const evs = ofSession(imp.imported, r.session);
          const run = evs.find((e) => e.type === "command/run" && e.data.name === c.name);
          const done = evs.find((e) => e.type === "command/done" && e.data.run === run?.seq);
          const sent = commandBlocks(r.calls[0].body, c.name)?.expansion;
          const got = done?.data.outcome?.prompt;
          if (got !== sent) problems.push(`${c.line}: imported ${JSON.stringify(got)} vs sent ${JSON.stringify(sent)}`);
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      });

      test("imported sessions, prompts, replies, tool calls, turn ends and runs carry the agent's own time (observed.at)", () => {
        const from = Math.min(...s.runs.map((r) => r.startedAt));
        const to = Math.max(...s.runs.map((r) => r.startedAt + r.res.ms));
        // Not agent/event: Claude Code's bookkeeping lines (atis-latch,
        // last-prompt, cost-state, …) have no timestamp of their own.
        const conversation = /^(session\/|command\/)/;
        const off = imp.imported.filter(
          (e) =>
            e.session &&
            conversation.test(e.type) &&
            (typeof e.observed?.at !== "number" || e.observed.at < from - 1000 || e.observed.at > to + 1000),
        );
        assert.deepEqual(off.map((e) => `${e.seq} ${kindOf(e)} observed.at=${e.observed?.at}`), [], `events without a time inside the runs (${from}..${to})`);
      });

      test("a second import adds nothing", () => {
        assert.equal(imp.again.length, imp.imported.length, `a second import appended ${imp.again.length - imp.imported.length} events`);
        assert.equal(imp.second.events, 0, `the second import says it appended ${imp.second.events}`);
        assert.deepEqual(imp.second.sessions, [], "sessions the second import started");
      });

      test("the --json counters add up", () => {
        const { first, second, imported } = imp;
        const projects = path.join(s.w.home, ".claude/projects");
        const files = fs.readdirSync(projects, { recursive: true }).filter((f) => f.endsWith(".jsonl"));
        const lines = files.reduce((n, f) => n + fs.readFileSync(path.join(projects, f), "utf8").split("\n").filter(Boolean).length, 0);
        const appended = imported.filter((e) => !ownEvent(e)).length;
        const created = imported.filter((e) => e.type === "session/created").length;
        const summary = JSON.stringify({ first, second });
        assert.equal(first.files, files.length, `files read vs transcripts on disk: ${summary}`);
        assert.equal(first.lines, lines, `lines read vs lines on disk: ${summary}`);
        assert.equal(first.events, appended, `events reported vs events in the log: ${summary}`);
        assert.equal(first.sessions.length, created, `sessions reported vs session/created in the log: ${summary}`);
        assert.equal(first.skipped, 0, `a fresh log skips nothing: ${summary}`);
        assert.deepEqual([first.malformed, first.unreadable], [[], []], summary);
        // Every file is checkpointed by the first import: the second reads none.
        assert.deepEqual(
          [second.files, second.unchanged, second.lines, second.skipped],
          [first.files, first.files, 0, 0],
          `the second import finds every file unchanged and parses no line: ${summary}`,
        );
      });
    });

    test("hooks uninstall gives the user's settings file back byte for byte (after the runs)", () => {
      cmdlog(s.w, ["hooks", "uninstall", AGENT]);
      assert.equal(fs.readFileSync(s.settingsPath, "utf8"), USER_SETTINGS, "the settings file after uninstall vs before install");
      assert.equal(fs.statSync(s.settingsPath).mode, s.userMode, "its mode");
    });

    // Printed, not asserted: the figures belong in docs/performance.md. The
    // same world (its home already set up by the runs above, the recorder
    // taken out), cmdlog's hooks installed for one run of each pair and not
    // for the other.
    test("hook overhead: the same headless run with and without cmdlog's hooks (3 alternating pairs, medians)", { timeout: 120_000 }, async () => {
      fs.rmSync(path.join(s.w.home, ".claude/settings.json"));
      cmdlog(s.w, ["hooks", "uninstall", AGENT], { expect: null }); // already out after the test above
      assert.ok(!installedEvents(s.w).size, "no cmdlog hook left for the runs without");
      const once = async () => {
        const r = await runAgent(s.w, path.join(s.w.root, "bin", "claude"), ["-p", "hello timing"], { timeoutMs: 90_000 });
        assert.equal(r.code, 0, r.stderr);
        return r.ms;
      };
      const withMs = [];
      const withoutMs = [];
      const before = events(s.w).length;
      for (let i = 0; i < 3; i++) {
        withoutMs.push(await once());
        cmdlog(s.w, ["hooks", "install", AGENT]);
        withMs.push(await once());
        cmdlog(s.w, ["hooks", "uninstall", AGENT]);
      }
      const a = median(withMs);
      const b = median(withoutMs);
      console.log(`HOOK-OVERHEAD ${release.key} with=${Math.round(a)} without=${Math.round(b)} delta=${Math.round(a - b)}`);
      const ended = events(s.w).slice(before).filter((e) => e.type === "session/ended").length;
      assert.equal(ended, 3, "the hooks ran in the 3 runs with them (and only those)");
      assert.equal(fs.readFileSync(s.settingsPath, "utf8"), USER_SETTINGS, "the settings file after three install/uninstall rounds");
    });
  });
}

// ---------------------------------------------------------------------------
// Install and uninstall without a file, and through a link

describe("hooks install/uninstall: no file, and a link", { skip: SKIP }, () => {
  test("no settings file before: uninstall removes the file and the folder made for it", () => {
    const w = world("claude-nofile");
    try {
      cmdlog(w, ["hooks", "install", AGENT]);
      assert.ok(fs.existsSync(path.join(w.ws, ".claude/settings.json")), "install wrote .claude/settings.json");
      cmdlog(w, ["hooks", "uninstall", AGENT]);
      assert.ok(!fs.existsSync(path.join(w.ws, ".claude/settings.json")), "the file is gone");
      assert.ok(!fs.existsSync(path.join(w.ws, ".claude")), "the .claude folder made for it is gone");
    } finally {
      w.cleanup();
    }
  });

  test("the settings file is a link to a file in the workspace: the agent runs the hooks; uninstall restores the linked file byte for byte", async () => {
    const w = world("claude-link");
    const api = await fakeAnthropic();
    try {
      useRelease(w, AGENTS.claude);
      Object.assign(w.env, claudeEnv(api.url));
      const target = w.put("ws/config/claude-settings.json", USER_SETTINGS + "\n");
      fs.mkdirSync(path.join(w.ws, ".claude"));
      const link = path.join(w.ws, ".claude/settings.json");
      fs.symlinkSync("../config/claude-settings.json", link);
      cmdlog(w, ["hooks", "install", AGENT]);
      const res = await runAgent(w, path.join(w.root, "bin", "claude"), ["-p", "hello through a link"], { timeoutMs: 90_000 });
      assert.equal(res.code, 0, res.stderr);
      assert.deepEqual(res.stderr.split("\n").filter((l) => /setting|hook/i.test(l)), [], "stderr warnings");
      const kinds = events(w).map(kindOf);
      for (const k of ["session/prompt", "session/update:turn_complete", "session/ended"]) {
        assert.ok(kinds.includes(k), `${k} in the log through the linked settings: ${kinds.join(", ")}`);
      }
      cmdlog(w, ["hooks", "uninstall", AGENT]);
      assert.ok(fs.lstatSync(link).isSymbolicLink(), "the link is still a link");
      assert.equal(fs.readlinkSync(link), "../config/claude-settings.json", "pointing where it did");
      assert.equal(fs.readFileSync(target, "utf8"), USER_SETTINGS + "\n", "the linked file after uninstall vs before install");
    } finally {
      await api.close();
      w.cleanup();
    }
  });
});
