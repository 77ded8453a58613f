// A fake Anthropic Messages API for running the real Claude Code headless on
// loopback (ANTHROPIC_BASE_URL). Built on the harness's modelServer, which
// keeps every request; what the model says comes from the harness's plan().
//
// Routes Claude Code uses:
// - POST /v1/messages (it adds `?beta=true`): a streamed answer when the body
//   asks for `stream: true` (message_start; content_block_start, one
//   content_block_delta and content_block_stop per block; message_delta with
//   the stop reason; message_stop), else the whole message as JSON. The
//   answer is one text block, or one `tool_use` of the Bash tool.
// - POST /v1/messages/count_tokens: a token count.
// - HEAD / (2.1.197 probes the base URL once per run): 200.
// Anything else is a 404, and stays in `requests` for a test to look at.
import { modelServer, plan } from "./harness.mjs";

/** A message's content as a list of blocks (a string is one text block). */
export function blocksOf(content) {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter((b) => b && typeof b === "object") : [];
}

/** The text of a tool_result block: its string, or its text blocks joined. */
function resultText(block) {
  return blocksOf(block.content)
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

/** The path of a request, without its query. */
export const pathOf = (req) => req.url.split("?")[0];

/** Whether a recorded request is a model call (not count_tokens, not a probe). */
export const isMessages = (req) => req.method === "POST" && pathOf(req) === "/v1/messages";

/**
 * Starts the fake API. Returns the model server (`url`, `requests`, `close`)
 * and `calls()`, the recorded model calls (each request has `reply`: the
 * blocks the fake answered with).
 *
 * `script` (optional; the headless suite passes none): a function of
 * `{req, body, userText, results, tools, id}` asked first for every model
 * call; it returns the blocks to answer with (`text` and `tool_use` blocks;
 * the stop reason is `tool_use` when one is there), or nothing for the plan()
 * answer above. `id()` makes a fresh `toolu_fake…` id.
 */
export async function fakeAnthropic({ script } = {}) {
  let counter = 0;
  const next = () => String(++counter).padStart(4, "0");

  const route = (req) => {
    const p = pathOf(req);
    if (req.method === "HEAD" && p === "/") return "";
    if (req.method === "POST" && p === "/v1/messages/count_tokens") {
      return { json: { input_tokens: 42 } };
    }
    if (req.method !== "POST" || p !== "/v1/messages") return null;
    const body = req.body && typeof req.body === "object" ? req.body : {};
    // Claude Code may put role "system" messages after the user's; the turn
    // is decided by the last user/assistant message.
    const convo = (body.messages ?? []).filter((m) => m && m.role !== "system");
    const last = convo.at(-1);
    const lastBlocks = last ? blocksOf(last.content) : [];
    const results = lastBlocks.filter((b) => b.type === "tool_result");
    // What the user said: the text blocks without Claude Code's reminders.
    const userText = lastBlocks
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join("\n")
      .replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, "")
      .trim();
    const scripted = script?.({ req, body, userText, results, tools: body.tools ?? [], id: () => `toolu_fake${next()}` });
    let blocks = Array.isArray(scripted) && scripted.length ? scripted : undefined;
    if (!blocks) {
      let step = plan(userText, results.length > 0, results.map(resultText).join("\n"));
      const hasBash = (body.tools ?? []).some((t) => t && t.name === "Bash");
      if (step.tool && !hasBash) step = { text: `no Bash tool offered for: ${step.tool}` };
      blocks = step.tool
        ? [{ type: "tool_use", id: `toolu_fake${next()}`, name: "Bash", input: { command: step.tool, description: "Run the requested command" } }]
        : [{ type: "text", text: step.text.trim() }];
    }
    req.reply = blocks;
    const id = `msg_fake${next()}`;
    const model = body.model ?? "claude-fake";
    const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
    const usage = { input_tokens: 12, output_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (!body.stream) {
      return { json: { id, type: "message", role: "assistant", model, content: blocks, stop_reason: stop, stop_sequence: null, usage } };
    }
    const sse = [];
    const ev = (event, data) => sse.push({ event, data: { type: event, ...data } });
    ev("message_start", {
      message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    blocks.forEach((b, index) => {
      if (b.type === "tool_use") {
        ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
        ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } });
      } else {
        ev("content_block_start", { index, content_block: { type: "text", text: "" } });
        ev("content_block_delta", { index, delta: { type: "text_delta", text: b.text } });
      }
      ev("content_block_stop", { index });
    });
    ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    ev("message_stop", {});
    return { sse };
  };

  const server = await modelServer(route);
  return { ...server, calls: () => server.requests.filter(isMessages) };
}

/** The environment that points Claude Code at the fake (and keeps it off the network). */
export function claudeEnv(url) {
  return {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "sk-ant-api03-fake-key-for-loopback-only",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
    TERM: "dumb",
  };
}

/**
 * Where a typed slash command is in a request body: Claude Code sends it as
 * one user message holding (after its `<system-reminder>` blocks) a text block
 * of markup — `<command-message>NAME</command-message>\n<command-name>/NAME
 * </command-name>[\n<command-args>ARGS</command-args>]\n` — followed by a text
 * block that is the expanded command file. Returns `{markup, expansion}` (the
 * two blocks' texts) from the first message that has the markup for `name`.
 */
export function commandBlocks(body, name) {
  for (const m of body?.messages ?? []) {
    if (m.role !== "user") continue;
    const blocks = blocksOf(m.content);
    const i = blocks.findIndex(
      (b) => b.type === "text" && b.text.includes(`<command-name>/${name}</command-name>`),
    );
    if (i < 0) continue;
    const after = blocks[i + 1];
    return { markup: blocks[i].text, expansion: after?.type === "text" ? after.text : undefined };
  }
  return undefined;
}
