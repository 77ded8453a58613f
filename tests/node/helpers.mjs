// Shared helpers for the cmdlog Node harness: timeouts, event collectors,
// child processes and an ACP 2.x client wired to a child's stdio with a
// validating tap in both directions.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import path from "node:path";
import fs from "node:fs";
import os from "node:os";
import { A2C, C2A, JsonRpcValidator, tapReadable, tapWritable } from "./acp-validate.mjs";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const AGENT = path.join(HERE, "agent.mjs");

/** Rejects with a clear message when `promise` does not settle within `ms`. */
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An append-only list with `waitFor(predicate)`: resolves with the first item
 * (already present or arriving later) that matches. `end()` marks the source
 * finished so waiters fail fast instead of timing out.
 */
export class Collector {
  constructor(name) {
    this.name = name;
    this.items = [];
    this.ended = false;
    this.endError = undefined;
    this.waiters = new Set();
  }
  push(item) {
    this.items.push(item);
    for (const w of [...this.waiters]) w.check();
  }
  end(error) {
    this.ended = true;
    this.endError = error;
    for (const w of [...this.waiters]) w.check();
  }
  /** Resolves with the first matching item at index >= `from`. */
  waitFor(predicate, ms, what, from = 0) {
    let waiter;
    const p = new Promise((resolve, reject) => {
      waiter = {
        check: () => {
          for (let i = from; i < this.items.length; i++) {
            if (predicate(this.items[i])) {
              this.waiters.delete(waiter);
              return resolve(this.items[i]);
            }
          }
          if (this.ended) {
            this.waiters.delete(waiter);
            reject(new Error(`${this.name} ended before: ${what}${this.endError ? ` (${this.endError.message})` : ""}`));
          }
        },
      };
      this.waiters.add(waiter);
      waiter.check();
    });
    return withTimeout(p, ms, `${this.name}: ${what}`).finally(() => this.waiters.delete(waiter));
  }
  /** Resolves once the source has ended. */
  waitEnd(ms, what = "end") {
    return withTimeout(
      new Promise((resolve) => {
        const w = { check: () => this.ended && (this.waiters.delete(w), resolve(this.items)) };
        this.waiters.add(w);
        w.check();
      }),
      ms,
      `${this.name}: ${what}`,
    );
  }
}

/** Temp dirs `home` and `ws`, with cmdlog's `greet` command in ws. */
export function makeWorkspace(prefix) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  fs.mkdirSync(home);
  fs.mkdirSync(path.join(ws, ".cmdlog", "commands"), { recursive: true });
  fs.writeFileSync(path.join(ws, ".cmdlog", "commands", "greet.md"), "Say hello to $1 from the command file.");
  return { root, home, ws, agentLog: path.join(ws, "agent.log") };
}

/** Parsed lines of an AGENT_LOG file (empty when it does not exist yet). */
export function readAgentLog(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** The text of a prompt request's text blocks, joined. */
export const promptText = (params) =>
  (params?.prompt ?? [])
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("");

/** $CMDLOG_BIN or a failed assertion explaining how to set it. */
export function cmdlogBin() {
  const bin = process.env.CMDLOG_BIN;
  if (!bin) {
    throw new Error("CMDLOG_BIN is not set: point it at a built cmdlog binary (e.g. CMDLOG_BIN=$PWD/target/debug/cmdlog)");
  }
  if (!fs.existsSync(bin)) throw new Error(`CMDLOG_BIN=${bin} does not exist`);
  return path.resolve(bin);
}

/** Spawns a child with piped stdio, keeping its stderr text and exit status. */
export function spawnChild(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], ...opts });
  const state = { stderr: "", exit: null };
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    state.stderr += d;
  });
  state.exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      state.exit = { code, signal };
      resolve(state.exit);
    });
    child.on("error", (err) => {
      state.exit = { code: null, signal: null, error: err };
      resolve(state.exit);
    });
  });
  child.stdin.on("error", () => {}); // EPIPE after the child died is expected in crash tests
  return { child, state };
}

/** Runs a command to completion, returning {code, stdout, stderr}. */
export async function run(cmd, args, opts = {}, ms = 20_000) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const [code] = await withTimeout(once(child, "exit"), ms, `${cmd} ${args.join(" ")}`);
  return { code, stdout, stderr };
}

/**
 * ACP 2.x client on a child process's stdio. Every message in both directions
 * goes through a JsonRpcValidator. Session updates land in `updates`
 * (a Collector of SessionNotification params); permission requests are
 * answered by `permissionPolicy(params)` and recorded in `permissions`.
 */
export function connectAcpClient(child, { name = "cmdlog-node-test" } = {}) {
  const validator = new JsonRpcValidator();
  const updates = new Collector("session/update stream");
  const permissions = new Collector("permission requests");
  const h = {
    validator,
    updates,
    permissions,
    permissionPolicy: () => ({ outcome: { outcome: "cancelled" } }),
  };
  const input = tapReadable(Readable.toWeb(child.stdout), validator, A2C);
  const output = tapWritable(Writable.toWeb(child.stdin), validator, C2A);
  const conn = acp
    .client({ name })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      permissions.push(params);
      return await h.permissionPolicy(params);
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .connect(acp.ndJsonStream(output, input));
  conn.closed.then(
    () => {
      updates.end();
      permissions.end();
    },
    (err) => {
      updates.end(err);
      permissions.end(err);
    },
  );
  h.conn = conn;
  h.agent = conn.agent;
  h.request = (method, params, ms = 10_000) => withTimeout(conn.agent.request(method, params), ms, method);
  h.notify = (method, params) => conn.agent.notify(method, params);
  /** Closes the connection and the child's stdin (EOF tells it to exit). */
  h.close = () => {
    conn.close();
    child.stdin.end();
  };
  return h;
}

/** The `session/update` payloads for one session from index `from` on. */
export function updatesFor(collector, sessionId, from = 0) {
  return collector.items.slice(from).filter((n) => n.sessionId === sessionId).map((n) => n.update);
}

/** Concatenated text of agent_message_chunk updates. */
export function messageText(updates, kind = "agent_message_chunk") {
  return updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
}
