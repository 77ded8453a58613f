// Checks that the validators in acp-validate.mjs reject what they should, so
// a green protocol test means something.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { A2C, C2A, JsonRpcValidator, validateDef, validateQwenFrame } from "./acp-validate.mjs";

const chunk = (text) => ({
  sessionId: "s1",
  update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
});

describe("validateDef", () => {
  test("accepts valid values and rejects invalid ones", () => {
    validateDef("SessionNotification", chunk("hi"));
    assert.throws(() => validateDef("SessionNotification", { sessionId: "s1", update: { sessionUpdate: "bogus" } }));
    assert.throws(() => validateDef("ContentBlock", { type: "text" }));
    validateDef("RequestPermissionOutcome", { outcome: "selected", optionId: "a" });
    validateDef("RequestPermissionOutcome", { outcome: "cancelled" });
    assert.throws(() => validateDef("RequestPermissionOutcome", { outcome: "selected" }));
    assert.throws(() => validateDef("PermissionOption", { optionId: "a", name: "A", kind: "maybe" }));
    assert.throws(() => validateDef("ToolCallUpdate", { title: "no id" }));
    validateDef("AvailableCommand", { name: "x", description: "d", input: { hint: "h" } });
    assert.throws(() => validateDef("AvailableCommand", { name: "x" }));
    assert.throws(() => validateDef("NoSuchDef", {}), /no \$def/);
  });
});

describe("JsonRpcValidator", () => {
  test("a clean exchange passes", () => {
    const v = new JsonRpcValidator();
    v.feed(C2A, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } });
    v.feed(A2C, { jsonrpc: "2.0", id: 0, result: { protocolVersion: 1 } });
    v.feed(C2A, { jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "s1", prompt: [] } });
    v.feed(A2C, { jsonrpc: "2.0", method: "session/update", params: chunk("x") });
    // The agent's own request ids are a separate id space.
    v.feed(A2C, {
      jsonrpc: "2.0",
      id: 1,
      method: "session/request_permission",
      params: { sessionId: "s1", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
    });
    v.feed(C2A, { jsonrpc: "2.0", id: 1, result: { outcome: { outcome: "selected", optionId: "a" } } });
    v.feed(C2A, { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s1" } });
    v.feed(A2C, { jsonrpc: "2.0", id: 1, result: { stopReason: "cancelled" } });
    v.feed(C2A, { jsonrpc: "2.0", id: 2, method: "session/list", params: {} });
    v.feed(A2C, { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found" } });
    v.check();
    assert.deepEqual(v.inFlight(), { [C2A]: [], [A2C]: [] });
  });

  test("records envelope, params, result and direction problems", () => {
    const cases = [
      [C2A, { id: 1, method: "initialize", params: { protocolVersion: 1 } }, /jsonrpc/],
      [A2C, { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s1", update: { sessionUpdate: "nope" } } }, /bad params/],
      [C2A, { jsonrpc: "2.0", method: "session/update", params: chunk("x") }, /direction/],
      [A2C, { jsonrpc: "2.0", id: 9, result: {} }, /unknown request id/],
      [A2C, { jsonrpc: "2.0", id: 9, result: {}, error: { code: 1, message: "x" } }, /exactly one/],
      [C2A, { jsonrpc: "2.0" }, /neither method nor id/],
      [C2A, [{ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } }], /not a JSON object/],
    ];
    for (const [dir, msg, re] of cases) {
      const v = new JsonRpcValidator();
      v.feed(dir, msg);
      assert.throws(() => v.check(), re, JSON.stringify(msg));
    }
    const v = new JsonRpcValidator();
    v.feed(C2A, { jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "s1", prompt: [] } });
    v.feed(A2C, { jsonrpc: "2.0", id: 1, result: { stopReason: "finished" } });
    assert.throws(() => v.check(), /bad session\/prompt result/);
    const u = new JsonRpcValidator();
    u.feed(C2A, { jsonrpc: "2.0", method: "_vendor/ping", params: {} });
    assert.throws(() => u.check(), /unknown method/);
    u.check({ allowUnknownMethods: true });
    const l = new JsonRpcValidator();
    l.feedLine(A2C, "{not json");
    assert.throws(() => l.check(), /not JSON/);
  });
});

describe("validateQwenFrame", () => {
  test("known types are checked, unknown types are flagged", () => {
    assert.equal(validateQwenFrame({ id: 1, v: 1, type: "session_update", data: chunk("x") }).unknown, false);
    assert.equal(validateQwenFrame({ v: 1, type: "replay_complete", data: { replayedCount: 0 } }).unknown, false);
    assert.equal(validateQwenFrame({ id: 2, v: 1, type: "mystery", data: {} }).unknown, true);
    const ok = [
      { id: 3, v: 1, type: "turn_complete", data: { sessionId: "s", stopReason: "end_turn", promptId: "p" } },
      { id: 4, v: 1, type: "model_switched", data: { sessionId: "s", modelId: "m" } },
      { id: 5, v: 1, type: "session_closed", data: { sessionId: "s", reason: "client_close" } },
      { id: 6, v: 1, type: "permission_resolved", data: { requestId: "r", outcome: { outcome: "cancelled" } } },
      {
        id: 7,
        v: 1,
        type: "permission_request",
        data: { requestId: "r", sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "reject_once" }] },
      },
      { id: 8, v: 1, type: "prompt_cancelled", data: { sessionId: "s" } },
      { id: 9, v: 1, type: "turn_error", data: { sessionId: "s", message: "agent exited", promptId: "p" } },
    ];
    ok.forEach((f) => validateQwenFrame(f));
    const bad = [
      { id: 0, v: 1, type: "session_update", data: chunk("x") },
      { id: 1, v: 2, type: "session_update", data: chunk("x") },
      { id: 1, v: 1, type: "session_update", data: { sessionId: "s", update: { sessionUpdate: "bogus" } } },
      { id: 1, v: 1, type: "turn_complete", data: { sessionId: "s", stopReason: "done", promptId: "p" } },
      { id: 1, v: 1, type: "turn_complete", data: { sessionId: "s", stopReason: "end_turn" } },
      { id: 1, v: 1, type: "replay_complete", data: { replayedCount: 1 } },
      { id: 1, v: 1, type: "session_died", data: { sessionId: "s", reason: "" } },
      { id: 1, v: 1, type: "turn_error", data: { sessionId: "s", message: "", promptId: "p" } },
      { id: 1, v: 1, type: "permission_resolved", data: { requestId: "r", outcome: { outcome: "selected" } } },
      { id: 1, v: 1, type: "permission_request", data: { requestId: "r", sessionId: "s", toolCall: {}, options: [] } },
    ];
    for (const f of bad) assert.throws(() => validateQwenFrame(f), /bad daemon frame/, JSON.stringify(f));
  });
});
