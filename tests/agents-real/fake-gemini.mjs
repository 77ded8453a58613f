// The Gemini API as Gemini CLI 0.61 calls it (the `@google/genai` SDK, API
// version v1beta, the key in `x-goog-api-key`), answered on loopback by the
// suite's model server:
//
//   POST /v1beta/models/<model>:streamGenerateContent?alt=sse   the turn itself:
//        `data: {candidates:[{content:{role:"model",parts}, finishReason}], usageMetadata}`
//   POST /v1beta/models/<model>:generateContent                the CLI's own side
//        calls (the model router's classifier asks for JSON with a schema)
//   POST /v1beta/models/<model>:countTokens                    token estimates
//   POST /v1beta/models/<model>:embedContent | :batchEmbedContents
//   GET  /v1beta/models                                        model listing
//
// What the model says comes from the harness's `plan`: `TOOL:<cmd>` in the last
// user text asks for one `run_shell_command` call, a tool result gets a reply
// quoting it, anything else a reply quoting the prompt.
import { modelServer, plan } from "./harness.mjs";

/** The `Content` list of a request body (`contents`). */
function contentsOf(body) {
  return Array.isArray(body?.contents) ? body.contents : [];
}

/**
 * The text of the last user text part of a request: where the CLI puts what the
 * user typed (or a slash command's expansion). The first user `Content` of a
 * session also carries the `<session_context>` preamble as an earlier part.
 */
export function lastUserText(body) {
  const contents = contentsOf(body);
  for (let i = contents.length - 1; i >= 0; i--) {
    const c = contents[i];
    if (c.role !== "user") continue;
    const texts = (c.parts ?? []).filter((p) => typeof p.text === "string" && !p.thought);
    if (texts.length) return texts[texts.length - 1].text;
    return null; // a user turn holding only function responses
  }
  return null;
}

/** The function response the last `Content` carries, if it is a tool result. */
function lastFunctionResponse(body) {
  const contents = contentsOf(body);
  const last = contents[contents.length - 1];
  const part = (last?.parts ?? []).find((p) => p.functionResponse);
  return part?.functionResponse ?? null;
}

/** A value satisfying a JSON schema (Gemini's `responseJsonSchema`/`responseSchema`). */
function fromSchema(schema, key) {
  if (!schema || typeof schema !== "object") return "fake";
  const type = String(schema.type ?? "").toLowerCase();
  if (Array.isArray(schema.enum) && schema.enum.length) {
    if (key === "next_speaker" && schema.enum.includes("user")) return "user";
    return schema.enum[0];
  }
  if (type === "object" || schema.properties) {
    const out = {};
    for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = fromSchema(v, k);
    return out;
  }
  if (type === "array") return [];
  if (type === "boolean") return false;
  // The router's `complexity_score` must be at least 1 (a 0 is a ZodError).
  if (type === "number" || type === "integer") return typeof schema.minimum === "number" ? schema.minimum : 1;
  if (key === "next_speaker") return "user";
  return "fake";
}

const USAGE = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };

function response(parts, finishReason = "STOP") {
  const candidate = { content: { role: "model", parts }, index: 0 };
  if (finishReason) candidate.finishReason = finishReason;
  return { candidates: [candidate], usageMetadata: USAGE, modelVersion: "fake-gemini" };
}

/** The function declarations a request offers the model, by name. */
export function declaredTools(body) {
  const out = {};
  for (const t of Array.isArray(body?.tools) ? body.tools : []) {
    for (const d of t.functionDeclarations ?? []) out[d.name] = d;
  }
  return out;
}

/**
 * Whether a request is a subagent's (Gemini's local agents, run by the
 * `invoke_agent` tool): they are offered `complete_task`, the main
 * conversation never is.
 */
export function isSubagentRequest(body) {
  return "complete_task" in declaredTools(body);
}

/** The model's parts for a conversation, by the harness's plan. */
function answerParts(body) {
  const gc = body?.generationConfig ?? body?.config ?? {};
  const schema = gc.responseJsonSchema ?? gc.responseSchema;
  if (gc.responseMimeType === "application/json" && schema) {
    return [{ text: JSON.stringify(fromSchema(schema)) }];
  }
  // A subagent's turn: finish at once, with `complete_task` and arguments its
  // schema accepts (the interactive suite's subagent step).
  const tools = declaredTools(body);
  if (tools.complete_task) {
    const d = tools.complete_task;
    const args = fromSchema(d.parametersJsonSchema ?? d.parameters ?? { type: "object" });
    return [{ functionCall: { name: "complete_task", args } }];
  }
  const fr = lastFunctionResponse(body);
  const output = fr ? (fr.response?.output ?? fr.response?.error ?? JSON.stringify(fr.response)) : "";
  const p = plan(lastUserText(body), Boolean(fr), output);
  if (p.tool) return [{ functionCall: { name: "run_shell_command", args: { command: p.tool } } }];
  // `AGENT:<name> <prompt>` (interactive suite): one `invoke_agent` call, when
  // the request offers that tool.
  const agent = /AGENT:(\S+)\s+(.+)$/m.exec(p.text ? (lastUserText(body) ?? "") : "");
  if (agent && tools.invoke_agent) {
    return [{ functionCall: { name: "invoke_agent", args: { agent_name: agent[1], prompt: agent[2].trim() } } }];
  }
  return [{ text: p.text }];
}

/**
 * Starts the fake Gemini API. `requests` holds every request; `turns()` the
 * streamed turn requests (the ones the conversation goes through).
 */
export async function fakeGemini() {
  const server = await modelServer((req) => {
    const url = req.url ?? "";
    if (req.method === "GET" && /\/models(\?|$)/.test(url)) return { json: { models: [] } };
    if (req.method !== "POST") return null;
    if (url.includes(":countTokens")) return { json: { totalTokens: 42 } };
    if (url.includes(":embedContent") || url.includes(":batchEmbedContents")) {
      return { json: { embedding: { values: [0, 0, 0] }, embeddings: [{ values: [0, 0, 0] }] } };
    }
    if (url.includes(":streamGenerateContent")) {
      const parts = answerParts(req.body);
      // Text comes in two chunks, as a real stream does; the last one carries
      // the finish reason. A function call comes whole.
      const only = parts.length === 1 && typeof parts[0].text === "string" && parts[0].text.length > 1;
      if (only) {
        const t = parts[0].text;
        const cut = Math.ceil(t.length / 2);
        return {
          sse: [
            { data: response([{ text: t.slice(0, cut) }], null) },
            { data: response([{ text: t.slice(cut) }]) },
          ],
        };
      }
      return { sse: [{ data: response(parts) }] };
    }
    if (url.includes(":generateContent")) return { json: response(answerParts(req.body)) };
    return null;
  });
  return {
    ...server,
    turns: () => server.requests.filter((r) => (r.url ?? "").includes(":streamGenerateContent")),
  };
}
