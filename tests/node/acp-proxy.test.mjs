// cmdlog's ACP proxy (`cmdlog acp -- AGENT...`) driven by the ACP 2.x client
// SDK over the proxy's stdio, with agent.mjs behind it. Every JSON-RPC
// message in both directions is checked against the ACP schema. Afterwards
// `cmdlog audit` / `cmdlog log` must show what happened.
//
// Needs CMDLOG_BIN. Steps run in order; after a failure the rest are skipped.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import fs from "node:fs";
import {
  AGENT,
  cmdlogBin,
  connectAcpClient,
  makeWorkspace,
  messageText,
  promptText,
  readAgentLog,
  run,
  spawnChild,
  updatesFor,
  withTimeout,
} from "./helpers.mjs";

const { methods } = acp;
const T = 15_000;
const GREET_EXPANSION = "Say hello to world from the command file.";

describe("cmdlog acp proxy with @agentclientprotocol/sdk 2.4.0", () => {
  let bin;
  let wsp;
  let proc;
  let h;
  let sessionId;
  let failed = false;

  const env = () => ({ ...process.env, HOME: wsp.home, AGENT_LOG: wsp.agentLog });

  const step = (name, fn) =>
    test(name, async (t) => {
      if (failed) return t.skip("an earlier step failed");
      try {
        await fn(t);
      } catch (err) {
        failed = true;
        const stderr = proc?.state.stderr ?? "";
        err.message += `\n--- workspace: ${wsp?.root}\n--- cmdlog acp stderr (tail) ---\n${stderr.slice(-6_000)}`;
        throw err;
      }
    });

  before(() => {
    bin = cmdlogBin();
    wsp = makeWorkspace("cmdlog-acp-test-");
    proc = spawnChild(bin, ["acp", "--", process.execPath, AGENT], { cwd: wsp.ws, env: env() });
    h = connectAcpClient(proc.child);
  });

  after(() => {
    if (proc && proc.state.exit === null) proc.child.kill("SIGKILL");
    if (!failed && wsp && !process.env.KEEP_TMP) fs.rmSync(wsp.root, { recursive: true, force: true });
  });

  async function prompt(text) {
    const from = h.updates.items.length;
    const result = await h.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }, T);
    return { result, updates: updatesFor(h.updates, sessionId, from) };
  }

  step("initialize", async () => {
    const res = await h.request(
      methods.agent.initialize,
      {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "cmdlog-node-test", version: "0.0.0" },
      },
      T,
    );
    assert.equal(res.protocolVersion, acp.PROTOCOL_VERSION);
    assert.ok(res.agentInfo, "agentInfo present");
    assert.equal(typeof res.agentInfo.name, "string");
  });

  step("session/new: commands from the agent and from cmdlog", async () => {
    const res = await h.request(methods.agent.session.new, { cwd: wsp.ws, mcpServers: [] }, T);
    sessionId = res.sessionId;
    assert.ok(typeof sessionId === "string" && sessionId.length > 0);
    const names = (n) => n.update.availableCommands.map((c) => c.name);
    const n = await h.updates.waitFor(
      (u) =>
        u.sessionId === sessionId &&
        u.update.sessionUpdate === "available_commands_update" &&
        names(u).includes("agent-review") &&
        names(u).includes("greet"),
      T,
      "available_commands_update with agent-review and greet",
    );
    assert.ok(names(n).length >= 2);
  });

  step("prompt: echo", async () => {
    const { result, updates } = await prompt("hello");
    assert.deepEqual(result, { stopReason: "end_turn" });
    const chunks = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text);
    assert.deepEqual(chunks, ["echo: ", "hello"]);
  });

  step("prompt: /greet world reaches the agent expanded", async () => {
    const { result, updates } = await prompt("/greet world");
    assert.equal(result.stopReason, "end_turn");
    const received = readAgentLog(wsp.agentLog)
      .filter((l) => l.method === "session/prompt")
      .map((l) => promptText(l.params).trim());
    assert.ok(received.includes(GREET_EXPANSION), `agent got: ${JSON.stringify(received)}`);
    assert.ok(!received.includes("/greet world"), "the raw command must not reach the agent");
    assert.equal(messageText(updates).replace(/^echo: /, "").trim(), GREET_EXPANSION);
  });

  step("prompt: permission allowed by the client", async () => {
    const before = h.permissions.items.length;
    h.permissionPolicy = () => ({ outcome: { outcome: "selected", optionId: "allow" } });
    const { result, updates } = await prompt("permission please");
    assert.equal(result.stopReason, "end_turn");
    assert.equal(h.permissions.items.length, before + 1, "one session/request_permission reached the client");
    assert.equal(h.permissions.items[before].toolCall.toolCallId, "call-1");
    assert.equal(updates.find((u) => u.sessionUpdate === "tool_call_update")?.status, "completed");
    assert.equal(messageText(updates), "allowed");
  });

  step("prompt: slow + session/cancel", async () => {
    const from = h.updates.items.length;
    const pending = h.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "slow please" }] }, T);
    pending.catch(() => {});
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

  step("every message matched the ACP schema; EOF on stdin exits 0", async () => {
    h.validator.check();
    assert.deepEqual(h.validator.inFlight(), { "client→agent": [], "agent→client": [] });
    h.close();
    const exit = await withTimeout(proc.state.exited, T, "cmdlog acp exit after stdin closed");
    assert.equal(exit.code, 0, `exit: ${JSON.stringify(exit)}`);
  });

  step("cmdlog audit and cmdlog log show the session", async () => {
    const opts = { cwd: wsp.ws, env: env() };
    const audit = await run(bin, ["audit"], opts);
    assert.equal(audit.code, 0, audit.stderr);
    assert.ok(audit.stdout.includes("/greet world"), `audit output:\n${audit.stdout}`);
    const log = await run(bin, ["log"], opts);
    assert.equal(log.code, 0, log.stderr);
    assert.ok(log.stdout.includes("session/prompt"), `log output:\n${log.stdout}`);
    assert.ok(log.stdout.includes("permission/requested"), `log output:\n${log.stdout}`);
  });
});
