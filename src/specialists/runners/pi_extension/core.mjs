// The pi extension's pure logic: no pi import, so plain node can test it (tests/node/).
//
// index.ts wires these pieces to pi's API: the sidecar client (JSON lines with
// `specialists sidecar`), the guards' decisions, the status line, the message renderer and
// the log. Event delivery (at-least-once, deduplicated, re-sent when pi dropped a message)
// is in delivery.mjs.
// Verified against pi 1.6.0.

import { accessSync, appendFileSync, constants, mkdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";

import { eventIdsOf } from "./delivery.mjs";

export { CUSTOM_TYPE, Delivery, SEEN_CAP } from "./delivery.mjs";

export const STATUS_KEY = "specialists";
export const CMD_ENV = "SPECIALISTS_CMD";
export const JOB_ENV = "SPECIALISTS_JOB_ID";
export const LOG_ENV = "SPECIALISTS_PI_LOG";
export const MAX_LINE_BYTES = 8 * 1024 * 1024; // a sidecar line longer than this is damage
export const PART_CHARS = 128 * 1024; // result text sent to the sidecar in pieces this long
const LOG_MAX_BYTES = 512 * 1024;

// --- who we are ------------------------------------------------------------------------

/** The owner key: `job-<id>` inside one of our jobs, else `pi-<session id>`. */
export function ownerKey(env, sessionId) {
  const job = env[JOB_ENV];
  if (typeof job === "string" && /^[0-9a-f]{8}$/.test(job)) return `job-${job}`;
  // Same reduction as events.owners.session_owner (a test keeps the two in step).
  let safe = String(sessionId ?? "").replace(/[^A-Za-z0-9._-]/g, "_");
  safe = safe.replace(/\.{2,}/g, ".").replace(/^\.+|\.+$/g, "").slice(0, 128);
  return `pi-${safe || "unknown"}`;
}

/**
 * How to start the sidecar: $SPECIALISTS_CMD (a path, or a JSON argv), else the interpreter
 * `specialists install --pi` recorded beside our extension entry in pi's settings.json
 * (`"specialists": {"sidecar": [python, "-m", "specialists"]}`: the nearest project
 * `.pi/settings.json` above `cwd`, then the user's), else `specialists` on PATH. A recorded
 * interpreter that is gone (a moved or removed virtualenv) is one clear error.
 */
export function sidecarCommand(env, { cwd = process.cwd(), agentDir } = {}) {
  const raw = (env[CMD_ENV] ?? "").trim();
  if (!raw) return installedSidecar(env, cwd, agentDir) ?? ["specialists"];
  if (raw.startsWith("[")) {
    let argv;
    try {
      argv = JSON.parse(raw);
    } catch (err) {
      throw new Error(`${CMD_ENV} is not a JSON array: ${err.message}`);
    }
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) {
      throw new Error(`${CMD_ENV} must be a JSON array of strings`);
    }
    return argv;
  }
  return [raw];
}

function installedSidecar(env, cwd, agentDir) {
  const files = [];
  for (let dir = cwd; ; dir = dirname(dir)) {
    files.push(join(dir, ".pi", "settings.json"));
    if (dirname(dir) === dir) break;
  }
  files.push(join(agentDir ?? env.PI_CODING_AGENT_DIR ?? join(homedir(), ".pi", "agent"), "settings.json"));
  for (const file of files) {
    let argv;
    try {
      argv = JSON.parse(readFileSync(file, "utf8"))?.specialists?.sidecar;
    } catch {
      continue; // no such file, or not JSON: pi says so itself; ours is just not there
    }
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) continue;
    if (isAbsolute(argv[0])) {
      try {
        accessSync(argv[0], constants.X_OK);
      } catch {
        throw new Error(
          `${file} starts the specialists sidecar with ${argv[0]}, which is gone (a moved or removed virtualenv?): ` +
            `run \`specialists install --pi\` again from the specialists you use, or set ${CMD_ENV}`,
        );
      }
    }
    return argv;
  }
  return undefined;
}

// --- framing ---------------------------------------------------------------------------

/** Splits a byte stream on "\n" only (never U+2028), dropping lines over `maxBytes`. */
export class LineSplitter {
  constructor(onLine, { maxBytes = MAX_LINE_BYTES, onOversize = () => {} } = {}) {
    this.onLine = onLine;
    this.maxBytes = maxBytes;
    this.onOversize = onOversize;
    this.parts = [];
    this.size = 0;
    this.skipping = false;
  }

  push(chunk) {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl < 0 ? chunk.length : nl;
      if (!this.skipping) {
        this.parts.push(chunk.subarray(start, end));
        this.size += end - start;
        if (this.size > this.maxBytes) {
          this.onOversize(this.size);
          this.skipping = true;
          this.parts = [];
          this.size = 0;
        }
      }
      if (nl < 0) return;
      if (!this.skipping && this.size > 0) {
        const line = Buffer.concat(this.parts).toString("utf8");
        this.onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
      }
      this.parts = [];
      this.size = 0;
      this.skipping = false;
      start = nl + 1;
    }
  }
}

// --- the sidecar client ----------------------------------------------------------------

/**
 * Requests and replies over a child's stdio. `child` is a ChildProcess (or a fake with
 * stdin.write, stdout 'data' events and an 'exit' event). Never throws from callbacks.
 */
export class SidecarClient {
  constructor(child, { onPush = () => {}, onProblem = () => {}, onExit = () => {} } = {}) {
    this.child = child;
    this.onPush = onPush;
    this.onProblem = onProblem;
    this.nextId = 1;
    this.pending = new Map();
    this.closed = false;
    const splitter = new LineSplitter((line) => this._line(line), {
      onOversize: (n) => onProblem(`sidecar sent a line over ${MAX_LINE_BYTES} bytes (${n}); dropped`),
    });
    child.stdout.on("data", (chunk) => splitter.push(chunk));
    let ended = false;
    const end = (reason, code, signal, err) => {
      this._fail(reason);
      if (ended) return;
      ended = true;
      onExit(code, signal, err);
    };
    child.on("exit", (code, signal) => end(`the specialists sidecar exited (${signal ?? `code ${code}`})`, code, signal));
    child.on("error", (err) => end(`the specialists sidecar failed: ${err.message}`, null, null, err));
    child.stdin.on?.("error", (err) => this._fail(`cannot write to the sidecar: ${err.message}`));
  }

  request(op, fields = {}, { timeoutMs = 10_000, signal } = {}) {
    if (this.closed) return Promise.reject(new Error("the specialists sidecar is not running"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const done = (fn, value) => {
        const entry = this.pending.get(id);
        if (!entry) return;
        this.pending.delete(id);
        clearTimeout(entry.timer);
        signal?.removeEventListener?.("abort", entry.onAbort);
        fn(value);
      };
      const timer = setTimeout(
        () => done(reject, new Error(`the sidecar did not answer ${op} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => done(reject, new Error(`${op} aborted`));
      this.pending.set(id, { resolve: (v) => done(resolve, v), reject: (e) => done(reject, e), timer, onAbort });
      signal?.addEventListener?.("abort", onAbort, { once: true });
      try {
        this.child.stdin.write(`${JSON.stringify({ id, op, ...fields })}\n`);
      } catch (err) {
        done(reject, new Error(`cannot write to the sidecar: ${err.message}`));
      }
    });
  }

  close() {
    this._fail("the sidecar was closed");
    try {
      this.child.stdin.end();
    } catch (err) {
      this.onProblem(`closing the sidecar's stdin: ${err.message}`);
    }
  }

  _line(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.onProblem(`sidecar sent a line that is not JSON: ${line.slice(0, 120)}`);
      return;
    }
    if (msg === null || typeof msg !== "object") return this.onProblem("sidecar sent a non-object");
    if (typeof msg.push === "string") {
      try {
        this.onPush(msg);
      } catch (err) {
        this.onProblem(`handling a ${msg.push} push: ${err?.stack ?? err}`);
      }
      return;
    }
    const entry = this.pending.get(msg.id);
    if (!entry) {
      if (msg.ok === false) this.onProblem(`sidecar: ${msg.error}`);
      return;
    }
    if (msg.ok) entry.resolve(msg.result ?? {});
    else entry.reject(new Error(String(msg.error ?? "the sidecar refused the request")));
  }

  _fail(reason) {
    this.closed = true;
    for (const entry of [...this.pending.values()]) entry.reject(new Error(reason));
  }
}

// --- guards ----------------------------------------------------------------------------

/** R-B1: what to do with a classified bash call. */
/** pi's tools that write a file named by `input.path`: the claims guard asks about them. */
export const WRITE_TOOLS = new Set(["write", "edit"]);

export function bashDecision(verdict) {
  if (!verdict?.flagged || verdict.mode === "off") return { action: "run" };
  if (verdict.mode === "block") return { action: "block", reason: verdict.reason };
  return {
    action: "warn",
    notice: `specialists: \`${verdict.pattern}\` may hold this turn until it ends (bash.guard = "warn"; consider bg_run or sleep)`,
  };
}

export function textOf(content) {
  return (Array.isArray(content) ? content : [])
    .filter((p) => p?.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

/** R-O1: does this result need the sidecar's bound? (`read` is exempt; only text counts) */
export function needsBound(toolName, content, maxChars) {
  if (toolName === "read" || !Array.isArray(content)) return false;
  const texts = content.filter((p) => p?.type === "text" && typeof p.text === "string");
  const total = texts.reduce((n, p) => n + p.text.length, 0) + Math.max(0, texts.length - 1);
  return total > maxChars;
}

/** The result with its text parts replaced by one bounded text; other parts unchanged (R-O2). */
export function replaceText(content, bounded) {
  const out = [];
  let placed = false;
  for (const part of content) {
    if (part?.type === "text") {
      if (!placed) out.push({ type: "text", text: bounded });
      placed = true;
    } else {
      out.push(part);
    }
  }
  return out;
}

/** The text in pieces of at most PART_CHARS (never splitting a surrogate pair). */
export function pieces(text, size = PART_CHARS) {
  const out = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

// --- what people see -------------------------------------------------------------------

/** R-U1: `jobs N, timers N, threads N` when any is non-zero, else undefined (cleared). */
export function statusText(counts) {
  const jobs = Number(counts?.jobs) || 0;
  const timers = Number(counts?.timers) || 0;
  const threads = Number(counts?.threads) || 0;
  return jobs || timers || threads ? `jobs ${jobs}, timers ${timers}, threads ${threads}` : undefined;
}

/** R-E4: one line collapsed (the first event's header, and how many more), the body expanded. */
export function renderEventText(message, expanded) {
  const content = typeof message?.content === "string" ? message.content : textOf(message?.content);
  if (expanded) return content;
  const first = content.split("\n", 1)[0] || "[specialists event]";
  const n = eventIdsOf(message).length;
  return n > 1 ? `${first} (+${n - 1} more)` : first;
}

/** A one-line entry for pi's "Available tools": the description's first sentence. */
export function snippet(description) {
  const text = String(description ?? "").replace(/\s+/g, " ").trim();
  const end = text.search(/[.:](\s|$)/);
  const first = end > 0 ? text.slice(0, end) : text;
  return first.length > 120 ? `${first.slice(0, 119)}…` : first;
}

// --- the log ---------------------------------------------------------------------------

export function logPath(env) {
  if (env[LOG_ENV]) return env[LOG_ENV];
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(state, "specialists", "pi-extension.log");
}

/** Appends to a size-capped log file; tells the person about each kind of problem once. */
export class Log {
  constructor(path, notify) {
    this.path = path;
    this.notify = notify;
    this.told = new Set();
  }

  write(line) {
    const text = `${new Date().toISOString()} pid=${process.pid} ${line}\n`;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      try {
        if (statSync(this.path).size > LOG_MAX_BYTES) renameSync(this.path, `${this.path}.1`);
      } catch {
        // no log yet: nothing to rotate
      }
      appendFileSync(this.path, text);
    } catch (err) {
      process.stderr.write(`specialists: cannot write ${this.path}: ${err.message}; ${text}`);
    }
  }

  /** Log the problem; the first time a `key` comes up, tell the person too. */
  problem(key, message) {
    this.write(`${key}: ${message}`);
    if (this.told.has(key)) return;
    this.told.add(key);
    try {
      this.notify(`specialists: ${message} (details in ${this.path})`, "warning");
    } catch (err) {
      this.write(`notify failed: ${err?.message ?? err}`);
    }
  }
}
