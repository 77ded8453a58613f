// Validation helpers built on the ACP v1 JSON schema shipped in
// @agentclientprotocol/sdk, checked with Ajv (draft 2020-12).
//
// Never validate against the schema root: its anyOf has catch-all extension
// branches that accept broken params. Everything here dispatches to a named
// $def instead (by method, via each $def's x-method / x-side annotations).
import Ajv2020 from "ajv/dist/2020.js";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
export const schema = require("@agentclientprotocol/sdk/schema/v1/schema.json");

// strict:false tolerates the x-* annotation keywords; validateFormats:false
// skips the non-standard formats (int32, uint64, ...).
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");

const validators = new Map();
function validatorFor(name) {
  let v = validators.get(name);
  if (!v) {
    if (!schema.$defs[name]) throw new Error(`no $def named ${name} in the ACP schema`);
    v = ajv.getSchema(`acp#/$defs/${name}`);
    validators.set(name, v);
  }
  return v;
}

/** Returns null when `value` is a valid `name`, else a readable error string. */
export function checkDef(name, value) {
  const v = validatorFor(name);
  if (v(value)) return null;
  return `${name}: ${ajv.errorsText(v.errors, { dataVar: name })}; value=${short(value)}`;
}

/** Throws unless `value` validates against `$defs/<name>`. */
export function validateDef(name, value) {
  const err = checkDef(name, value);
  if (err) throw new Error(`ACP schema violation: ${err}`);
  return value;
}

function short(value) {
  const s = JSON.stringify(value);
  return s && s.length > 400 ? s.slice(0, 400) + "..." : s;
}

export const STOP_REASONS = schema.$defs.StopReason.oneOf.map((b) => b.const);

// ---------------------------------------------------------------------------
// Method table: method -> { side, request?, response?, notification? }
// x-side tells who handles the method: "agent" (sent client→agent),
// "client" (sent agent→client) or "protocol" (either way).
// ---------------------------------------------------------------------------
export const METHODS = (() => {
  const table = new Map();
  for (const [name, def] of Object.entries(schema.$defs)) {
    const method = def["x-method"];
    if (!method) continue;
    const entry = table.get(method) ?? { side: def["x-side"] };
    if (name.endsWith("Request")) entry.request = name;
    else if (name.endsWith("Response")) entry.response = name;
    else if (name.endsWith("Notification")) entry.notification = name;
    else throw new Error(`unexpected x-method def ${name}`);
    table.set(method, entry);
  }
  return table;
})();

export const C2A = "client→agent";
export const A2C = "agent→client";
const SENDER_SIDE = { [C2A]: "agent", [A2C]: "client" }; // x-side expected for requests sent in that direction

/**
 * Validates a JSON-RPC conversation seen from a stdio tap. Feed it every
 * message with the direction it travelled; it collects problems in `errors`
 * (a tap must not throw into the stream) and `check()` throws if any exist.
 */
export class JsonRpcValidator {
  constructor() {
    this.errors = [];
    this.unknownMethods = [];
    this.counts = { requests: 0, notifications: 0, responses: 0, errors: 0 };
    /** per requesting direction: JSON(id) -> method */
    this.pending = { [C2A]: new Map(), [A2C]: new Map() };
    /** every message seen, in order: {dir, msg} */
    this.log = [];
  }

  fail(dir, msg, what) {
    this.errors.push(`${dir}: ${what} in ${short(msg)}`);
  }

  /** Feed one raw NDJSON line. */
  feedLine(dir, line) {
    line = line.trim();
    if (!line) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      this.errors.push(`${dir}: not JSON: ${line.slice(0, 200)}`);
      return;
    }
    this.feed(dir, msg);
  }

  /** Feed one parsed JSON-RPC message. */
  feed(dir, msg) {
    if (dir !== C2A && dir !== A2C) throw new Error(`bad direction ${dir}`);
    this.log.push({ dir, msg });
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      return this.fail(dir, msg, "message is not a JSON object (batches are not used in ACP)");
    }
    if (msg.jsonrpc !== "2.0") this.fail(dir, msg, 'jsonrpc is not "2.0"');
    const hasId = "id" in msg;
    const hasMethod = "method" in msg;
    const hasResult = "result" in msg;
    const hasError = "error" in msg;
    if (hasId) {
      const idErr = checkDef("RequestId", msg.id);
      if (idErr) this.fail(dir, msg, `bad id (${idErr})`);
    }

    if (hasMethod) {
      if (typeof msg.method !== "string") return this.fail(dir, msg, "method is not a string");
      if (hasResult || hasError) this.fail(dir, msg, "method together with result/error");
      if (hasId) {
        if (msg.id === null) this.fail(dir, msg, "request id is null");
        this.counts.requests++;
        this.onRequest(dir, msg);
      } else {
        this.counts.notifications++;
        this.onNotification(dir, msg);
      }
      return;
    }

    if (!hasId) return this.fail(dir, msg, "neither method nor id");
    if (hasResult === hasError) return this.fail(dir, msg, "response needs exactly one of result/error");
    this.counts.responses++;
    this.onResponse(dir, msg);
  }

  onRequest(dir, msg) {
    const entry = METHODS.get(msg.method);
    const key = JSON.stringify(msg.id);
    if (this.pending[dir].has(key)) this.fail(dir, msg, `duplicate in-flight request id ${key}`);
    this.pending[dir].set(key, msg.method);
    if (!entry || !entry.request) {
      this.unknownMethods.push(`${dir} request ${msg.method}`);
      return;
    }
    if (entry.side !== SENDER_SIDE[dir]) this.fail(dir, msg, `${msg.method} is not sent in this direction`);
    const err = checkDef(entry.request, msg.params);
    if (err) this.fail(dir, msg, `bad params (${err})`);
  }

  onNotification(dir, msg) {
    const entry = METHODS.get(msg.method);
    if (!entry || !entry.notification) {
      this.unknownMethods.push(`${dir} notification ${msg.method}`);
      return;
    }
    if (entry.side !== "protocol" && entry.side !== SENDER_SIDE[dir]) {
      this.fail(dir, msg, `${msg.method} is not sent in this direction`);
    }
    const err = checkDef(entry.notification, msg.params);
    if (err) this.fail(dir, msg, `bad params (${err})`);
  }

  onResponse(dir, msg) {
    // A response travels opposite to its request.
    const reqDir = dir === C2A ? A2C : C2A;
    const key = JSON.stringify(msg.id);
    const method = this.pending[reqDir].get(key);
    if (method === undefined) return this.fail(dir, msg, `response to unknown request id ${key}`);
    this.pending[reqDir].delete(key);
    if ("error" in msg) {
      this.counts.errors++;
      const err = checkDef("Error", msg.error);
      if (err) this.fail(dir, msg, `bad error object (${err})`);
      return;
    }
    const entry = METHODS.get(method);
    if (!entry || !entry.response) return; // unknown method: already recorded
    const err = checkDef(entry.response, msg.result);
    if (err) this.fail(dir, msg, `bad ${method} result (${err})`);
  }

  /** Throws when any problem was recorded. */
  check({ allowUnknownMethods = false } = {}) {
    const problems = [...this.errors];
    if (!allowUnknownMethods) problems.push(...this.unknownMethods.map((m) => `unknown method: ${m}`));
    if (problems.length) {
      throw new Error(`JSON-RPC validation failed (${problems.length}):\n  ${problems.join("\n  ")}`);
    }
  }

  /** Requests still waiting for a response, per direction. */
  inFlight() {
    return { [C2A]: [...this.pending[C2A].values()], [A2C]: [...this.pending[A2C].values()] };
  }
}

// ---------------------------------------------------------------------------
// NDJSON taps for web streams: pass bytes through untouched and feed each
// complete line to a callback.
// ---------------------------------------------------------------------------
export function lineTap(onLine) {
  const decoder = new TextDecoder();
  let buf = "";
  return new TransformStream({
    transform(chunk, controller) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) !== -1) {
        onLine(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
      controller.enqueue(chunk);
    },
    flush() {
      buf += decoder.decode();
      if (buf.trim()) onLine(buf);
    },
  });
}

/** Readable side: bytes read from the peer, validated as direction `dir`. */
export function tapReadable(readable, validator, dir) {
  return readable.pipeThrough(lineTap((line) => validator.feedLine(dir, line)));
}

/** Writable side: bytes we send to the peer, validated as direction `dir`. */
export function tapWritable(writable, validator, dir) {
  const tap = lineTap((line) => validator.feedLine(dir, line));
  tap.readable.pipeTo(writable).catch(() => {});
  return tap.writable;
}

// ---------------------------------------------------------------------------
// qwen-serve daemon SSE envelopes.
// ---------------------------------------------------------------------------
const nonEmpty = (s) => typeof s === "string" && s.length > 0;
const isPlainObject = (o) => o !== null && typeof o === "object" && !Array.isArray(o);

/**
 * Validates one daemon SSE envelope `{id?, v, type, data, ...}`. Throws on a
 * bad frame of a known type; returns `{unknown: true}` for a type this
 * harness does not know (the test asserts there are none).
 */
export function validateQwenFrame(frame) {
  const bad = (what) => {
    throw new Error(`bad daemon frame (${what}): ${short(frame)}`);
  };
  if (!isPlainObject(frame)) bad("not an object");
  if (frame.v !== 1) bad("v !== 1");
  if (typeof frame.type !== "string") bad("type is not a string");
  if ("id" in frame && frame.id !== undefined && !(Number.isSafeInteger(frame.id) && frame.id >= 1)) {
    bad("id is not a safe integer >= 1");
  }
  const hasId = frame.id !== undefined;
  const d = frame.data;
  const needData = () => {
    if (!isPlainObject(d)) bad("data is not an object");
  };
  const needId = () => {
    if (!hasId) bad(`${frame.type} must carry an id`);
  };
  const acp = (name, value, where) => {
    const err = checkDef(name, value);
    if (err) bad(`${where}: ${err}`);
  };

  switch (frame.type) {
    case "session_update":
      needId();
      needData();
      acp("SessionNotification", d, "data");
      break;
    case "permission_request":
      needId();
      needData();
      if (!nonEmpty(d.requestId)) bad("requestId");
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      acp("ToolCallUpdate", d.toolCall, "data.toolCall");
      if (!Array.isArray(d.options) || d.options.length === 0) bad("options");
      d.options.forEach((o, i) => acp("PermissionOption", o, `data.options[${i}]`));
      break;
    case "permission_resolved":
      needId();
      needData();
      if (!nonEmpty(d.requestId)) bad("requestId");
      acp("RequestPermissionOutcome", d.outcome, "data.outcome");
      break;
    case "permission_already_resolved": // a late vote, told the answer that stands
      needId();
      needData();
      if (!nonEmpty(d.requestId)) bad("requestId");
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      acp("RequestPermissionOutcome", d.outcome, "data.outcome");
      break;
    case "turn_complete":
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      if (!STOP_REASONS.includes(d.stopReason)) bad("stopReason");
      if (!nonEmpty(d.promptId)) bad("promptId");
      break;
    case "turn_error": // not in the brief's list, but part of the protocol: a turn that failed
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      if (!nonEmpty(d.message)) bad("message");
      if (!nonEmpty(d.promptId)) bad("promptId");
      break;
    case "model_switched":
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      if (!nonEmpty(d.modelId)) bad("modelId");
      break;
    case "session_closed":
    case "session_died":
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      if (!nonEmpty(d.reason)) bad("reason");
      break;
    case "replay_complete":
      if (hasId) bad("replay_complete must not carry an id");
      needData();
      if (typeof d.replayedCount !== "number") bad("replayedCount");
      break;
    case "prompt_cancelled":
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      break;
    case "model_switch_failed": // as the SDK's guard wants it
      needId();
      needData();
      if (!nonEmpty(d.sessionId)) bad("sessionId");
      if (!nonEmpty(d.requestedModelId)) bad("requestedModelId");
      if (typeof d.error !== "string") bad("error");
      break;
    case "followup_suggestion":
      needId();
      needData();
      for (const k of ["sessionId", "suggestion", "promptId"]) if (!nonEmpty(d[k])) bad(k);
      break;
    default:
      return { unknown: true, type: frame.type };
  }
  return { unknown: false, type: frame.type };
}
