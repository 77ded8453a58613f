// A fake model behind the OpenAI Chat Completions API, as Qwen Code 0.24.4
// calls it (OPENAI_BASE_URL): `POST /v1/chat/completions` answered as a stream of
// server-sent events (`data: {"choices":[{"delta":…}]}` … `data: [DONE]`) when
// the request asks for `stream: true`, and as one JSON completion when it does
// not (Qwen's auto-mode permission classifier asks that way); `GET /v1/models`
// lists one model. What it answers comes from the harness's `plan`: a reply that
// quotes the prompt, or one `run_shell_command` call for `TOOL:<cmd>`.
//
// The classifier (a request whose only tool is `respond_in_schema`) is told to
// block the pending call when the conversation holds `deny` (DENYME), and to
// allow it otherwise.
import { modelServer, plan } from "./harness.mjs";

export const MODEL = "fake-model";
export const API_KEY = "sk-fake-loopback";

/** The text of a Chat Completions message content: a string or an array of parts. */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("");
  return "";
}

/**
 * The last text part of the last user message of a request body. Qwen Code sends
 * a user turn as an array of text parts: its `<system-reminder>` context parts
 * first, then what the user submitted — for a slash command, the command's
 * expansion — as the last part.
 */
export function lastUserText(body) {
  const user = [...(body?.messages ?? [])].reverse().find((m) => m.role === "user");
  const c = user?.content;
  if (Array.isArray(c)) {
    const texts = c.filter((p) => typeof p === "string" || p?.type === "text");
    const last = texts[texts.length - 1];
    return typeof last === "string" ? last : last?.text ?? "";
  }
  return textOf(c);
}

/** Whether a request is the auto-mode classifier's (its one tool is `respond_in_schema`). */
export function isClassifier(body) {
  return (body?.tools ?? []).some((t) => t.function?.name === "respond_in_schema");
}

/** The tool names a request offers the model. */
export function toolNames(body) {
  return (body?.tools ?? []).map((t) => t.function?.name);
}

/**
 * Starts the fake model. Resolves with the server (`url`, `requests`, `close`),
 * the agent's environment for it (`env`), and `turns()`: the agent's own model
 * requests (chat completions that are not the classifier's), in order. Each
 * chat request gets `answer`: `{text}` or `{call: {id, name, args}}`.
 */
export async function fakeOpenAIChat({ deny = "DENYME", models = [MODEL] } = {}) {
  let n = 0;
  const server = await modelServer((req) => {
    const url = req.url.split("?")[0];
    if (req.method === "GET" && url.endsWith("/models")) {
      return { json: { object: "list", data: models.map((id) => ({ id, object: "model", created: 0, owned_by: "cmdlog" })) } };
    }
    if (req.method !== "POST" || !url.endsWith("/chat/completions")) return null;
    n += 1;
    const body = req.body ?? {};
    const id = `chatcmpl-fake-${n}`;
    let answer; // { text } | { call: { name, args } }
    if (isClassifier(body)) {
      const props = body.tools.find((t) => t.function?.name === "respond_in_schema").function.parameters?.properties ?? {};
      const block = JSON.stringify(body.messages ?? []).includes(deny);
      const args = {};
      if ("thinking" in props) args.thinking = "fake classifier";
      if ("shouldBlock" in props) args.shouldBlock = block;
      if ("reason" in props) args.reason = block ? `the conversation holds ${deny}` : "allowed";
      answer = { call: { name: "respond_in_schema", args } };
    } else {
      const msgs = body.messages ?? [];
      const last = msgs[msgs.length - 1] ?? {};
      const p = plan(lastUserText(body), last.role === "tool", textOf(last.content));
      // `AGENT:<task>` asks for one call of Qwen's subagent tool (`agent`),
      // run in the foreground so its result comes back as the call's result.
      const sub = last.role === "tool" ? null : /AGENT:(.+)$/m.exec(lastUserText(body));
      if (sub && toolNames(body).includes("agent")) {
        answer = {
          call: {
            name: "agent",
            args: { description: "fake sub task", prompt: sub[1].trim(), subagent_type: "general-purpose", run_in_background: false },
          },
        };
      } else answer = p.tool
        ? { call: { name: "run_shell_command", args: { command: p.tool, is_background: false, description: "run it" } } }
        : { text: p.text };
    }
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? MODEL;
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    const callId = `call_fake_${n}`;
    if (answer.call) answer.call.id = callId;
    // Kept on the recorded request, for the tests: what the model answered.
    req.answer = answer;
    if (body.stream) {
      const chunk = (delta, finish_reason = null) => ({
        data: { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason }] },
      });
      const sse = [];
      if (answer.call) {
        sse.push(
          chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: callId, type: "function", function: { name: answer.call.name, arguments: "" } }],
          }),
        );
        sse.push(chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(answer.call.args) } }] }));
        sse.push(chunk({}, "tool_calls"));
      } else {
        sse.push(chunk({ role: "assistant", content: "" }));
        // A few deltas, as a model streams them.
        for (const piece of answer.text.split(/(?<= )/)) sse.push(chunk({ content: piece }));
        sse.push(chunk({}, "stop"));
      }
      sse.push({ data: { id, object: "chat.completion.chunk", created, model, choices: [], usage } });
      sse.push({ data: "[DONE]" });
      return { sse };
    }
    const message = answer.call
      ? {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: callId, type: "function", function: { name: answer.call.name, arguments: JSON.stringify(answer.call.args) } },
          ],
        }
      : { role: "assistant", content: answer.text };
    return {
      json: {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [{ index: 0, message, finish_reason: answer.call ? "tool_calls" : "stop" }],
        usage,
      },
    };
  });
  return {
    ...server,
    env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: API_KEY, OPENAI_MODEL: MODEL },
    turns: () =>
      server.requests.filter((r) => r.method === "POST" && r.url.includes("/chat/completions") && !isClassifier(r.body)),
  };
}
