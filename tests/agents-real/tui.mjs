// An agent in its real terminal UI: run under tmux (Debian's package) in a
// pseudo-terminal of a fixed size, typed at with `send-keys`, read with
// `capture-pane`. Every wait is on what the screen shows, never on a clock
// alone: `waitFor` polls the screen until a pattern appears and fails with the
// screen as it was when the deadline passed.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { NODE } from "./harness.mjs";

/** Whether tmux is there to run a terminal UI in. */
export function haveTmux() {
  return spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
}

function tmux(socket, args, { expect = 0 } = {}) {
  const out = spawnSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
  if (expect !== null && out.status !== expect) {
    throw new Error(`tmux ${args.join(" ")} exited ${out.status}: ${out.stderr}`);
  }
  return out;
}

function quote(s) {
  return `'${String(s).replaceAll("'", `'\\''`)}'`;
}

/**
 * The environment of a person at a terminal, from a test's: no marks of a CI
 * machine (`CI`, `CONTINUOUS_INTEGRATION`, any `CI_*` — the `is-in-ci` check
 * Gemini CLI's Ink makes would not start its interactive UI at all: its
 * troubleshooting guide says so), and a UTF-8 locale where none is set, as
 * terminals have.
 */
export function personal(env) {
  const out = {};
  for (const [k, v] of Object.entries(env)) {
    if (k === "CI" || k === "CONTINUOUS_INTEGRATION" || k.startsWith("CI_")) continue;
    out[k] = v;
  }
  const locale = out.LC_ALL || out.LC_CTYPE || out.LANG || "";
  if (!/utf-?8/i.test(locale)) {
    delete out.LC_ALL;
    delete out.LC_CTYPE;
    out.LANG = "C.UTF-8";
  }
  return out;
}

/**
 * Starts `bin args` (a script runs on Node 22) in the world's workspace, in a
 * terminal of `width`×`height`, with the world's environment and `env`. The
 * tmux server is the world's own (its socket under the world's root), so
 * nothing of the machine's tmux is touched.
 */
export function startTui(w, bin, args, { env = {}, width = 160, height = 50, name = "agent" } = {}) {
  const socket = path.join(w.root, `tmux-${name}.sock`);
  const [cmd, argv] = bin.endsWith(".js") ? [NODE, [bin, ...args]] : [bin, args];
  const all = { ...personal(w.env), ...env, TERM: "xterm-256color" };
  // The environment goes through a script: tmux's own server would otherwise
  // hand its first client's environment to the pane.
  const script = path.join(w.root, `run-${name}.sh`);
  const lines = ["#!/bin/sh", "set -e"];
  for (const [k, v] of Object.entries(all)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) lines.push(`export ${k}=${quote(v)}`);
  }
  lines.push(`cd ${quote(w.ws)}`);
  lines.push(`exec ${[cmd, ...argv].map(quote).join(" ")}`);
  fs.writeFileSync(script, lines.join("\n") + "\n", { mode: 0o700 });
  const log = path.join(w.root, `screen-${name}.log`);
  spawnSync("tmux", ["-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", String(width), "-y", String(height), script], {
    env: { PATH: process.env.PATH, HOME: w.home, TERM: "xterm-256color" },
    encoding: "utf8",
  });
  // The pane stays after the program exits, so its last screen can be read.
  tmux(socket, ["set-option", "-t", name, "remain-on-exit", "on"], { expect: null });
  const tui = {
    socket,
    name,
    log,
    /** The screen as text, with the lines scrolled off above it. */
    screen({ history = 200 } = {}) {
      return tmux(socket, ["capture-pane", "-p", "-J", "-t", name, "-S", String(-history)], { expect: null }).stdout;
    },
    /** Types `text` literally (no key names read in it). */
    type(text) {
      tmux(socket, ["send-keys", "-t", name, "-l", text]);
    },
    /** Presses keys by tmux name (`Enter`, `Escape`, `Down`, `C-c`). */
    press(...keys) {
      tmux(socket, ["send-keys", "-t", name, ...keys]);
    },
    /** Whether the program in the pane has exited. */
    exited() {
      const out = tmux(socket, ["display-message", "-p", "-t", name, "#{pane_dead}"], { expect: null });
      return out.status !== 0 || out.stdout.trim() === "1";
    },
    /**
     * Waits until the screen matches `pattern` (a RegExp or a function of
     * the screen's text); returns the screen. Fails after `timeoutMs` with
     * `what` and the screen as it was.
     */
    async waitFor(pattern, what, { timeoutMs = 60_000, history = 200 } = {}) {
      const test = typeof pattern === "function" ? pattern : (s) => pattern.test(s);
      const deadline = Date.now() + timeoutMs;
      let last = "";
      for (;;) {
        last = tui.screen({ history });
        if (test(last)) return last;
        if (Date.now() > deadline) {
          fs.writeFileSync(log, last);
          throw new Error(`waited ${timeoutMs} ms for ${what}; the screen was:\n${last}`);
        }
        await new Promise((r) => setTimeout(r, 150));
      }
    },
    /** Waits for the program to exit (after `/quit` or the like). */
    async waitExit(what, { timeoutMs = 30_000 } = {}) {
      return tui.waitFor(() => tui.exited(), what, { timeoutMs });
    },
    /** Ends the tmux server and whatever still runs in it. */
    kill() {
      tmux(socket, ["kill-server"], { expect: null });
    },
  };
  return tui;
}
