#!/usr/bin/env node
// Scripted ACP agent used by the cmdlog Node harness (stdio, ACP 2.x agent API).
//
// The prompt text decides what happens:
//   "crash"      -> exit(3) at once
//   "slow"       -> "working" chunks every 50 ms until session/cancel (or 20 s)
//   "permission" -> tool_call + session/request_permission, then allowed/denied
//   "tool"       -> tool_call pending -> in_progress -> completed, then "done"
//   otherwise    -> thought "thinking", then message chunks "echo: " and the text
//
// With AGENT_LOG set, every request/notification received on stdin is appended
// to that file as one JSON line {method, params}.
import * as acp from "@agentclientprotocol/sdk";
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const { methods, RequestError } = acp;
const LOG = process.env.AGENT_LOG;

const MODELS = [
  { value: "test-small", name: "Small" },
  { value: "test-large", name: "Large" },
];

const COMMANDS = [
  { name: "agent-review", description: "The agent's own review command", input: { hint: "<file>" } },
];

/** sessionId -> { model, cancelled, toolSeq } */
const sessions = new Map();
let sessionSeq = 0;

function configOptions(state) {
  return [
    {
      id: "model",
      name: "Model",
      category: "model",
      type: "select",
      currentValue: state.model,
      options: MODELS.map((m) => ({ ...m })),
    },
  ];
}

function sessionOf(sessionId) {
  const state = sessions.get(sessionId);
  if (!state) throw RequestError.sessionNotFound(sessionId);
  return state;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ type: "text", text: t });

// Copy stdin through unchanged, logging each complete inbound JSON-RPC message.
function logTap() {
  const decoder = new TextDecoder();
  let buf = "";
  const logLine = (line) => {
    line = line.trim();
    if (!line) return;
    try {
      const msg = JSON.parse(line);
      if (msg && typeof msg.method === "string") {
        appendFileSync(LOG, JSON.stringify({ method: msg.method, params: msg.params }) + "\n");
      }
    } catch {
      appendFileSync(LOG, JSON.stringify({ method: null, unparsed: line }) + "\n");
    }
  };
  return new TransformStream({
    transform(chunk, controller) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) !== -1) {
        logLine(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
      controller.enqueue(chunk);
    },
    flush() {
      logLine(buf + decoder.decode());
    },
  });
}

async function runPrompt({ params, client }) {
  const { sessionId } = params;
  const state = sessionOf(sessionId);
  state.cancelled = false;
  const prompt = params.prompt
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("");
  const update = (u) => client.notify(methods.client.session.update, { sessionId, update: u });
  const say = (t) => update({ sessionUpdate: "agent_message_chunk", content: text(t) });

  if (prompt.includes("crash")) {
    process.exit(3);
  }

  if (prompt.includes("slow")) {
    const deadline = Date.now() + 20_000;
    while (!state.cancelled && Date.now() < deadline) {
      await say("working");
      await sleep(50);
    }
    return { stopReason: state.cancelled ? "cancelled" : "end_turn" };
  }

  if (prompt.includes("permission")) {
    const toolCall = { toolCallId: "call-1", title: "Edit notes.txt", kind: "edit", status: "pending" };
    await update({ sessionUpdate: "tool_call", ...toolCall });
    const res = await client.request(methods.client.session.requestPermission, {
      sessionId,
      toolCall,
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    });
    const outcome = res.outcome;
    if (outcome.outcome === "cancelled" || state.cancelled) {
      return { stopReason: "cancelled" };
    }
    if (outcome.optionId === "allow") {
      await update({ sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed" });
      await say("allowed");
    } else {
      await update({ sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "failed" });
      await say("denied");
    }
    return { stopReason: "end_turn" };
  }

  if (prompt.includes("tool")) {
    const toolCallId = `read-${++state.toolSeq}`;
    await update({ sessionUpdate: "tool_call", toolCallId, title: "Read notes.txt", kind: "read", status: "pending" });
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "completed",
      content: [{ type: "content", content: text("file contents") }],
    });
    await say("done");
    return { stopReason: "end_turn" };
  }

  await update({ sessionUpdate: "agent_thought_chunk", content: text("thinking") });
  await say("echo: ");
  await say(prompt);
  return { stopReason: "end_turn" };
}

const app = acp
  .agent({ name: "cmdlog-test-agent" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities: { image: false, audio: false, embeddedContext: false },
    },
    authMethods: [],
    agentInfo: { name: "cmdlog-test-agent", version: "1.0.0" },
  }))
  .onRequest(methods.agent.session.new, ({ client }) => {
    const sessionId = `agent-s-${++sessionSeq}`;
    const state = { model: "test-small", cancelled: false, toolSeq: 0 };
    sessions.set(sessionId, state);
    // Advertise the agent's own commands once the session/new answer is out.
    setTimeout(() => {
      client
        .notify(methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "available_commands_update", availableCommands: COMMANDS },
        })
        .catch(() => {});
    }, 0);
    return { sessionId, configOptions: configOptions(state) };
  })
  .onRequest(methods.agent.session.setConfigOption, ({ params }) => {
    const state = sessionOf(params.sessionId);
    if (params.configId !== "model") {
      throw RequestError.invalidParams({ configId: params.configId }, "unknown config option");
    }
    if (!MODELS.some((m) => m.value === params.value)) {
      throw RequestError.invalidParams({ value: params.value }, "unknown model");
    }
    state.model = params.value;
    return { configOptions: configOptions(state) };
  })
  .onRequest(methods.agent.session.prompt, runPrompt)
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    const state = sessions.get(params.sessionId);
    if (state) state.cancelled = true;
  });

let input = Readable.toWeb(process.stdin);
if (LOG) input = input.pipeThrough(logTap());
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), input));
conn.closed.then(
  () => process.exit(0),
  () => process.exit(0),
);
