// Checks the interactive suites share (interactive-*.test.mjs): what an
// import of the agent's own files into the log its hooks wrote may add.
//
// One fact, one event: the import may add what the hooks could not see (a
// built-in command's run, a model switch the agent reports no hook for, the
// prompt a subagent was given, the agent's notices, its bookkeeping), and
// `agent/observed` for each fact the hooks stated first — never a second event
// for a prompt, reply, run, call, settling or model switch the hooks recorded.
import { kindOf } from "./harness.mjs";

/** What identifies a fact an event states, by its content, or null. */
function factKey(e) {
  const k = kindOf(e);
  const s = e.session;
  switch (k) {
    case "session/prompt":
      return `${s} prompt ${e.data.text}`;
    case "session/update:agent_message_chunk":
      return `${s} reply ${e.data.content?.text}`;
    case "session/update:tool_call":
      return `${s} call ${e.data.toolCallId}`;
    case "session/update:tool_call_update":
      return ["completed", "failed"].includes(e.data.status) ? `${s} settled ${e.data.toolCallId}` : null;
    case "command/run":
      return `${s} run /${e.data.name}${e.data.raw_input ?? ""}`;
    case "session/model_switched":
      return `${s} model ${e.data.model}`;
    case "permission/requested":
      return `${s} request ${e.data.request_id}`;
    case "permission/resolved":
      return `${s} answer ${e.data.request_id}`;
    default:
      return null;
  }
}

/**
 * The events an import into the hooks' log added that state again what the
 * hooks recorded (by content, whatever the join keys said), as lines to show;
 * empty when there are none. Also each fact the hooks' log holds twice.
 */
export function statedTwice(hooksLog, afterImport) {
  const before = new Map();
  const problems = [];
  for (const e of hooksLog) {
    const key = factKey(e);
    if (!key) continue;
    if (before.has(key)) problems.push(`hooks: ${key} at seq ${before.get(key)} and ${e.seq}`);
    else before.set(key, e.seq);
  }
  const head = Math.max(0, ...hooksLog.map((e) => e.seq));
  const added = new Map();
  for (const e of afterImport.filter((x) => x.seq > head)) {
    const key = factKey(e);
    if (!key) continue;
    if (before.has(key)) problems.push(`import: ${key} at seq ${e.seq}, stated by the hooks at seq ${before.get(key)}`);
    else if (added.has(key)) problems.push(`import: ${key} at seq ${added.get(key)} and ${e.seq}`);
    else added.set(key, e.seq);
  }
  return problems;
}

/**
 * The kinds of what the import added that is not bookkeeping nor a fold, counted.
 * With `severalReplies`, not a reply of a turn that said more than one (Codex
 * goes on with a turn when a sub-agent's notification comes in after its model
 * answered; its `Stop` hook names only the reply the turn had when it fired),
 * so long as the hooks did not state that text (`statedTwice` says so).
 */
export function addedKinds(hooksLog, afterImport, { severalReplies = false } = {}) {
  const head = Math.max(0, ...hooksLog.map((e) => e.seq));
  const out = {};
  const imported = afterImport.filter((x) => x.seq > head);
  const isReply = (e) => kindOf(e) === "session/update:agent_message_chunk" || (e.type === "agent/observed" && /^reply:/.test(e.data?.fact ?? ""));
  const isPrompt = (e) => e.type === "session/prompt" || (e.type === "agent/observed" && /^prompt:/.test(e.data?.fact ?? ""));
  /** Whether the import's events of `e`'s turn (between prompts) hold another reply. */
  const oneOfSeveral = (e) => {
    const mine = imported.filter((x) => x.session === e.session);
    const at = mine.indexOf(e);
    const turn = [];
    for (let i = at - 1; i >= 0 && !isPrompt(mine[i]); i--) turn.push(mine[i]);
    for (let i = at + 1; i < mine.length && !isPrompt(mine[i]); i++) turn.push(mine[i]);
    return turn.some(isReply);
  };
  for (const e of imported) {
    if (["agent/observed", "import/checkpoint"].includes(e.type)) continue;
    if (severalReplies && kindOf(e) === "session/update:agent_message_chunk" && oneOfSeveral(e)) continue;
    if (e.type === "agent/event" && e.data?.bookkeeping) continue;
    out[kindOf(e)] = (out[kindOf(e)] ?? 0) + 1;
  }
  return out;
}

/**
 * What an import into a fresh log says differently of the sessions the hooks
 * recorded, as lines to show; empty when it gives the same sessions: each
 * one there, with every prompt the hooks saw, under the same parent and
 * call (where the hooks named it; `callIds: false` where the agent's hooks
 * name no call id, so cmdlog derives one the files do not use), and (with
 * `ends`: the agent's files say when a session ended) ended as many times.
 */
export function freshDiffers(hooksLog, fresh, { ends = true, callIds = true } = {}) {
  const problems = [];
  const of = (log, id) => log.filter((e) => e.session === id);
  const ids = [...new Set(hooksLog.filter((e) => e.type === "session/created").map((e) => e.session))];
  for (const id of ids) {
    const mine = of(hooksLog, id);
    const theirs = of(fresh, id);
    if (theirs.length === 0) {
      problems.push(`${id}: not in the fresh import`);
      continue;
    }
    const prompts = new Set(theirs.filter((e) => e.type === "session/prompt").map((e) => e.data.text));
    for (const p of mine.filter((e) => e.type === "session/prompt")) {
      if (!prompts.has(p.data.text)) problems.push(`${id}: the prompt ${JSON.stringify(p.data.text)} is not in the fresh import`);
    }
    const parent = (log) => log.find((e) => e.type === "session/created")?.data.parent ?? null;
    const [a, b] = [parent(mine), parent(theirs)];
    if ((a?.session ?? null) !== (b?.session ?? null)) problems.push(`${id}: parent ${a?.session} vs ${b?.session} in the fresh import`);
    if (callIds && a?.tool_call_id && a.tool_call_id !== b?.tool_call_id) problems.push(`${id}: started by ${a.tool_call_id} vs ${b?.tool_call_id} in the fresh import`);
    if (ends) {
      const n = (log) => log.filter((e) => e.type === "session/ended").length;
      if (n(mine) !== n(theirs)) problems.push(`${id}: session/ended ${n(mine)} times vs ${n(theirs)} in the fresh import`);
    }
  }
  return problems;
}
