// Self-test of agent.mjs, driven directly by the ACP 2.x client SDK (no
// cmdlog in between). Every JSON-RPC message in both directions is checked
// against the ACP schema.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import {
  AGENT,
  connectAcpClient,
  makeWorkspace,
  messageText,
  promptText,
  readAgentLog,
  spawnChild,
  updatesFor,
  withTimeout,
} from "./helpers.mjs";
import { validateDef } from "./acp-validate.mjs";

const { methods } = acp;
const T = 10_000;

describe("agent.mjs (scripted ACP agent)", () => {
  let wsp;
  let proc;
  let h;
  let sessionId;

  const startAgent = (env = {}) =>
    spawnChild(process.execPath, [AGENT], { cwd: wsp.ws, env: { ...process.env, ...env } });

  before(() => {
    wsp = makeWorkspace("cmdlog-agent-test-");
    proc = startAgent({ AGENT_LOG: wsp.agentLog });
    h = connectAcpClient(proc.child);
  });

  after(async () => {
    if (proc.state.exit === null) proc.child.kill("SIGKILL");
  });

  // Prompts the session and returns {result, updates} for this turn.
  async function prompt(text, ms = T) {
    const from = h.updates.items.length;
    const result = await h.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }, ms);
    return { result, updates: updatesFor(h.updates, sessionId, from) };
  }

  test("initialize", async () => {
    const res = await h.request(methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "cmdlog-node-test", version: "0.0.0" },
    });
    assert.equal(res.protocolVersion, acp.PROTOCOL_VERSION);
    assert.deepEqual(res.agentInfo, { name: "cmdlog-test-agent", version: "1.0.0" });
    assert.equal(res.agentCapabilities.loadSession, false);
  });

  test("session/new advertises config options and commands", async () => {
    const res = await h.request(methods.agent.session.new, { cwd: wsp.ws, mcpServers: [] });
    sessionId = res.sessionId;
    assert.match(sessionId, /^agent-s-\d+$/);
    assert.equal(res.configOptions.length, 1);
    assert.equal(res.configOptions[0].id, "model");
    assert.equal(res.configOptions[0].currentValue, "test-small");
    const n = await h.updates.waitFor(
      (u) => u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update",
      T,
      "available_commands_update",
    );
    const cmds = n.update.availableCommands;
    assert.deepEqual(
      cmds.map((c) => c.name),
      ["agent-review"],
    );
    cmds.forEach((c) => validateDef("AvailableCommand", c));
    assert.deepEqual(cmds[0].input, { hint: "<file>" });
  });

  test("prompt: echo", async () => {
    const { result, updates } = await prompt("hello there");
    assert.deepEqual(result, { stopReason: "end_turn" });
    assert.equal(messageText(updates, "agent_thought_chunk"), "thinking");
    const chunks = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text);
    assert.deepEqual(chunks, ["echo: ", "hello there"]);
  });

  test("prompt: tool call lifecycle", async () => {
    const { result, updates } = await prompt("use a tool please");
    assert.equal(result.stopReason, "end_turn");
    const calls = updates.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
    assert.deepEqual(
      calls.map((u) => [u.sessionUpdate, u.status]),
      [
        ["tool_call", "pending"],
        ["tool_call_update", "in_progress"],
        ["tool_call_update", "completed"],
      ],
    );
    assert.equal(calls[0].kind, "read");
    assert.ok(calls.every((u) => u.toolCallId === calls[0].toolCallId));
    assert.deepEqual(calls[2].content, [{ type: "content", content: { type: "text", text: "file contents" } }]);
    assert.equal(messageText(updates), "done");
  });

  for (const [optionId, status, word] of [
    ["allow", "completed", "allowed"],
    ["reject", "failed", "denied"],
  ]) {
    test(`prompt: permission ${optionId}`, async () => {
      const before = h.permissions.items.length;
      h.permissionPolicy = () => ({ outcome: { outcome: "selected", optionId } });
      const { result, updates } = await prompt("permission please");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(h.permissions.items.length, before + 1);
      const req = h.permissions.items[before];
      validateDef("RequestPermissionRequest", req);
      assert.deepEqual(req.toolCall, { toolCallId: "call-1", title: "Edit notes.txt", kind: "edit", status: "pending" });
      assert.deepEqual(
        req.options.map((o) => [o.optionId, o.kind]),
        [
          ["allow", "allow_once"],
          ["reject", "reject_once"],
        ],
      );
      assert.deepEqual(updates[0], { sessionUpdate: "tool_call", ...req.toolCall });
      const upd = updates.find((u) => u.sessionUpdate === "tool_call_update");
      assert.equal(upd.status, status);
      assert.equal(messageText(updates), word);
    });
  }

  test("prompt: permission answered cancelled ends the turn cancelled", async () => {
    h.permissionPolicy = () => ({ outcome: { outcome: "cancelled" } });
    const { result } = await prompt("permission again");
    assert.equal(result.stopReason, "cancelled");
  });

  test("prompt: slow + session/cancel", async () => {
    const from = h.updates.items.length;
    const pending = h.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "be slow" }] });
    await h.updates.waitFor(
      (u) => u.sessionId === sessionId && u.update.content?.text === "working",
      T,
      "first working chunk",
      from,
    );
    await h.notify(methods.agent.session.cancel, { sessionId });
    const result = await pending;
    assert.equal(result.stopReason, "cancelled");
  });

  test("session/set_config_option switches the model", async () => {
    const res = await h.request(methods.agent.session.setConfigOption, {
      sessionId,
      configId: "model",
      value: "test-large",
    });
    assert.equal(res.configOptions[0].currentValue, "test-large");
    await assert.rejects(
      h.request(methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "nope" }),
      (err) => err.code === -32602,
    );
    await assert.rejects(
      h.request(methods.agent.session.setConfigOption, { sessionId, configId: "colour", value: "red" }),
      (err) => err.code === -32602,
    );
  });

  test("unimplemented method answers method-not-found", async () => {
    await assert.rejects(h.request("session/list", {}), (err) => err.code === -32601);
  });

  test("AGENT_LOG records what the agent received", () => {
    const log = readAgentLog(wsp.agentLog);
    const methodsSeen = new Set(log.map((l) => l.method));
    for (const m of ["initialize", "session/new", "session/prompt", "session/cancel", "session/set_config_option"]) {
      assert.ok(methodsSeen.has(m), `agent log lacks ${m}`);
    }
    const texts = log.filter((l) => l.method === "session/prompt").map((l) => promptText(l.params));
    assert.ok(texts.includes("hello there"));
  });

  test("every message matched the ACP schema; closing stdin exits 0", async () => {
    h.validator.check();
    assert.deepEqual(h.validator.inFlight(), { "client→agent": [], "agent→client": [] });
    assert.ok(h.validator.counts.notifications > 10);
    h.close();
    const exit = await withTimeout(proc.state.exited, T, "agent exit after stdin closed");
    assert.equal(exit.code, 0, proc.state.stderr);
  });

  test("prompt: crash exits with status 3", async () => {
    const p = startAgent();
    const c = connectAcpClient(p.child);
    try {
      await c.request(methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION });
      const { sessionId: sid } = await c.request(methods.agent.session.new, { cwd: wsp.ws, mcpServers: [] });
      const turn = c.conn.agent.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "crash now" }] });
      const exit = await withTimeout(p.state.exited, T, "agent exit on crash");
      assert.equal(exit.code, 3);
      await withTimeout(
        assert.rejects(turn),
        T,
        "prompt rejects after the agent died",
      );
      c.validator.check();
    } finally {
      if (p.state.exit === null) p.child.kill("SIGKILL");
    }
  });
});
