// The OpenAI Responses API as Codex calls it (`POST {base_url}/responses`,
// `stream: true`), answered from harness.plan(): a text reply, or one call of
// Codex's shell tool `exec_command` with `{"cmd": "<command>"}`.
//
// The stream is Server-Sent Events, `event: <type>` + `data: <json>` per frame.
// Codex needs `response.output_item.done` (the finished item) and
// `response.completed` with a `response.id` — without `response.completed` it
// reconnects and finally fails the turn. `response.created`,
// `response.output_item.added` and the text deltas are what a real server sends
// before them, so they are sent too (Codex only uses them for live display).
import { modelServer, plan } from "./harness.mjs";

/** The text of a Responses `message` input item (`input_text` / `output_text` parts). */
export function messageText(item) {
  if (!item || !Array.isArray(item.content)) return typeof item?.content === "string" ? item.content : "";
  return item.content.map((c) => (typeof c?.text === "string" ? c.text : "")).join("");
}

/** The `message` items with role `user` of a request body, in order. */
export function userMessages(body) {
  const input = Array.isArray(body?.input) ? body.input : [];
  return input.filter((i) => i?.type === "message" && i.role === "user");
}

/**
 * The text the user typed for this turn: Codex sends it as the last `user`
 * message of `input` (`{"type":"message","role":"user","content":[{"type":
 * "input_text","text":…}]}`); the user messages before it are Codex's own
 * context (`<environment_context>`, earlier turns).
 */
export function lastUserText(body) {
  const users = userMessages(body);
  return users.length ? messageText(users[users.length - 1]) : "";
}

/** The output of a tool call result item: a plain string in Codex 0.171, else its parts. */
function outputText(item) {
  const out = item?.output;
  if (typeof out === "string") return out;
  if (Array.isArray(out)) return out.map((p) => p?.text ?? "").join("");
  return JSON.stringify(out ?? "");
}

function usage(input, output) {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function frame(data) {
  return { event: data.type, data };
}

/** A finished assistant message, streamed as created → added → delta → done → completed. */
export function textStream(id, text) {
  const itemId = `msg_${id}`;
  const done = {
    type: "message",
    role: "assistant",
    id: itemId,
    status: "completed",
    content: [{ type: "output_text", text, annotations: [] }],
  };
  return [
    frame({ type: "response.created", response: { id } }),
    frame({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...done, status: "in_progress", content: [] },
    }),
    frame({
      type: "response.output_text.delta",
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      delta: text,
    }),
    frame({ type: "response.output_item.done", output_index: 0, item: done }),
    frame({ type: "response.completed", response: { id, usage: usage(100, text.length) } }),
  ];
}

/** One call of `exec_command` (`arguments` is a JSON string, as the API sends it). */
export function execCommandStream(id, cmd) {
  const item = {
    type: "function_call",
    id: `fc_${id}`,
    call_id: `call_${id}`,
    name: "exec_command",
    arguments: JSON.stringify({ cmd }),
    status: "completed",
  };
  return [
    frame({ type: "response.created", response: { id } }),
    frame({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...item, arguments: "", status: "in_progress" },
    }),
    frame({ type: "response.output_item.done", output_index: 0, item }),
    frame({ type: "response.completed", response: { id, usage: usage(200, 20) } }),
  ];
}

/**
 * One call of any function tool (`arguments` as a JSON string); `namespace`
 * names the tool's namespace when Codex offered it inside one (Codex 0.171
 * offers its sub-agent tools as the namespace `multi_agent_v1`).
 */
export function functionCallStream(id, name, args, { namespace } = {}) {
  const item = {
    type: "function_call",
    id: `fc_${id}`,
    call_id: `call_${id}`,
    name,
    ...(namespace ? { namespace } : {}),
    arguments: JSON.stringify(args),
    status: "completed",
  };
  return [
    frame({ type: "response.created", response: { id } }),
    frame({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...item, arguments: "", status: "in_progress" },
    }),
    frame({ type: "response.output_item.done", output_index: 0, item }),
    frame({ type: "response.completed", response: { id, usage: usage(200, 20) } }),
  ];
}

/** Where a tool of that name is offered in a request: `{namespace?}`, or null. */
export function offeredTool(body, name) {
  for (const t of body?.tools ?? []) {
    if (t?.name === name && t.type !== "namespace") return {};
    if (t?.type === "namespace" && (t.tools ?? []).some((x) => x?.name === name)) return { namespace: t.name };
  }
  return null;
}

/**
 * Markers of the interactive scenario (tests/agents-real/interactive-codex.test.mjs),
 * read before harness.plan(): `ESCALATE:<cmd>` asks for `exec_command` with
 * `sandbox_permissions: "require_escalated"` and a `justification` (so that
 * Codex asks the user, whatever the sandbox), `SPAWN:<task>` for
 * `spawn_agent {message: <task>}`. Null when the text carries neither.
 */
export const JUSTIFICATION = "The test needs this command to run outside the sandbox";
function interactiveStep(text) {
  let m = /ESCALATE:(.+)$/m.exec(text ?? "");
  if (m) return { tool: "exec_command", args: { cmd: m[1].trim(), sandbox_permissions: "require_escalated", justification: JUSTIFICATION } };
  m = /SPAWN:(.+)$/m.exec(text ?? "");
  if (m) return { tool: "spawn_agent", args: { message: m[1].trim() } };
  return null;
}

/** The Codex session a request belongs to (its `session-id` header, else the body's cache key). */
export function sessionOf(request) {
  return request.headers?.["session-id"] ?? request.body?.prompt_cache_key;
}

/**
 * Starts the fake Responses server on loopback. `url` is the `base_url` to give
 * Codex (it ends in `/v1`); `requests` holds every request Codex made, bodies
 * parsed; `responses()` only the `POST …/responses` ones; `answers` what was
 * answered, in order: `{session, id, text}` or `{session, id, tool, callId}`.
 */
export async function fakeResponses() {
  let n = 0;
  const answers = [];
  const server = await modelServer((request) => {
    const { method, url, body } = request;
    if (method !== "POST" || !/\/responses$/.test(url.split("?")[0])) return null;
    const id = `resp_${++n}`;
    const session = sessionOf(request);
    const input = Array.isArray(body?.input) ? body.input : [];
    const last = input[input.length - 1];
    const isToolResult = /(^|_)call_output$/.test(last?.type ?? "");
    const special = isToolResult ? null : interactiveStep(lastUserText(body));
    if (special) {
      const where = offeredTool(body, special.tool);
      if (!where) {
        const offered = (body?.tools ?? []).map((t) => t?.name ?? t?.type);
        const text = `no ${special.tool} tool offered; tools: ${offered.join(",")}`;
        answers.push({ session, id, text });
        return { sse: textStream(id, text) };
      }
      answers.push({ session, id, tool: special.args.cmd ?? special.tool, name: special.tool, args: special.args, callId: `call_${id}` });
      return { sse: functionCallStream(id, special.tool, special.args, where) };
    }
    const step = plan(lastUserText(body), isToolResult, isToolResult ? outputText(last) : "");
    if (step.tool !== undefined) {
      const offered = (body?.tools ?? []).map((t) => t?.name ?? t?.type);
      if (!offered.includes("exec_command")) {
        // Say so in the reply, so that a test failing on it names the cause.
        const text = `no exec_command tool offered; tools: ${offered.join(",")}`;
        answers.push({ session, id, text });
        return { sse: textStream(id, text) };
      }
      answers.push({ session, id, tool: step.tool, callId: `call_${id}` });
      return { sse: execCommandStream(id, step.tool) };
    }
    answers.push({ session, id, text: step.text });
    return { sse: textStream(id, step.text) };
  });
  return {
    ...server,
    answers,
    url: `${server.url}/v1`,
    responses: () => server.requests.filter((r) => r.method === "POST" && /\/responses/.test(r.url)),
  };
}
