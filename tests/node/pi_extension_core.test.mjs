// The pi extension's pure logic (src/specialists/pi_extension/core.mjs), with node:test only.
// Run: node --test tests/node/   (tests/integration/test_pi_extension_core.py runs it in the gate)

import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import * as core from "../../src/specialists/pi_extension/core.mjs";

// --- who we are ------------------------------------------------------------------------

test("owner key: job-<id> inside one of our jobs, else pi-<session id>", () => {
  assert.equal(core.ownerKey({ SPECIALISTS_JOB_ID: "0123abcd" }, "s1"), "job-0123abcd");
  assert.equal(core.ownerKey({ SPECIALISTS_JOB_ID: "../etc" }, "s1"), "pi-s1"); // not a job id
  assert.equal(core.ownerKey({}, "01a230b9-c1bb"), "pi-01a230b9-c1bb");
  assert.equal(core.ownerKey({}, "a b/../c"), "pi-a_b_._c");
  assert.equal(core.ownerKey({}, ""), "pi-unknown");
});

test("sidecar command: SPECIALISTS_CMD as a path or a JSON argv, else specialists", () => {
  const empty = mkdtempSync(join(tmpdir(), "sidecar-"));
  assert.deepEqual(core.sidecarCommand({}, { cwd: empty, agentDir: empty }), ["specialists"]);
  assert.deepEqual(core.sidecarCommand({ SPECIALISTS_CMD: "/opt/bin/specialists" }), ["/opt/bin/specialists"]);
  assert.deepEqual(core.sidecarCommand({ SPECIALISTS_CMD: '["python", "-m", "specialists"]' }), [
    "python",
    "-m",
    "specialists",
  ]);
  assert.throws(() => core.sidecarCommand({ SPECIALISTS_CMD: "[python" }), /not a JSON array/);
  assert.throws(() => core.sidecarCommand({ SPECIALISTS_CMD: "[1]" }), /array of strings/);
  assert.throws(() => core.sidecarCommand({ SPECIALISTS_CMD: "[]" }), /array of strings/);
});

test("sidecar command: the interpreter install --pi recorded, nearest settings first", () => {
  const root = mkdtempSync(join(tmpdir(), "sidecar-"));
  const user = join(root, "agent");
  const project = join(root, "project");
  const nested = join(project, "src", "deep");
  mkdirSync(join(project, ".pi"), { recursive: true });
  mkdirSync(nested, { recursive: true });
  mkdirSync(user, { recursive: true });
  const python = process.execPath; // any executable file stands for an interpreter
  const record = (dir, argv) => writeFileSync(join(dir, "settings.json"), JSON.stringify({ extensions: [], specialists: { sidecar: argv } }));
  record(user, ["/usr/bin/env", "specialists"]);
  assert.deepEqual(core.sidecarCommand({}, { cwd: nested, agentDir: user }), ["/usr/bin/env", "specialists"]);
  record(join(project, ".pi"), [python, "-m", "specialists"]);
  assert.deepEqual(core.sidecarCommand({}, { cwd: nested, agentDir: user }), [python, "-m", "specialists"]);
  // SPECIALISTS_CMD still wins
  assert.deepEqual(core.sidecarCommand({ SPECIALISTS_CMD: "/x/sp" }, { cwd: nested, agentDir: user }), ["/x/sp"]);
  // a recorded interpreter that is gone: one line saying what to do
  record(join(project, ".pi"), [join(root, "gone-venv", "bin", "python"), "-m", "specialists"]);
  assert.throws(() => core.sidecarCommand({}, { cwd: nested, agentDir: user }), /gone-venv.*is gone.*specialists install --pi/);
  // damaged settings are skipped, not fatal: pi reports its own settings problems
  writeFileSync(join(project, ".pi", "settings.json"), "{not json");
  assert.deepEqual(core.sidecarCommand({}, { cwd: nested, agentDir: user }), ["/usr/bin/env", "specialists"]);
});

// --- framing ---------------------------------------------------------------------------

test("lines split on \\n only, across chunks, with \\r stripped and U+2028 kept", () => {
  const lines = [];
  const s = new core.LineSplitter((l) => lines.push(l));
  s.push(Buffer.from('{"a":1}\n{"b"'));
  s.push(Buffer.from(':"x\u2028y"}\r\n\n'));
  const euro = Buffer.from("€\n");
  s.push(euro.subarray(0, 1)); // a UTF-8 character split between chunks
  s.push(euro.subarray(1));
  assert.deepEqual(lines, ['{"a":1}', '{"b":"x\u2028y"}', "€"]);
});

test("a line over the limit is dropped whole and the next line still arrives", () => {
  const lines = [];
  const over = [];
  const s = new core.LineSplitter((l) => lines.push(l), { maxBytes: 10, onOversize: (n) => over.push(n) });
  s.push(Buffer.from("0123456789ABC"));
  s.push(Buffer.from("DEF more\nok\n"));
  assert.deepEqual(lines, ["ok"]);
  assert.equal(over.length, 1);
});

// --- the sidecar client ----------------------------------------------------------------

function fakeChild() {
  const child = new EventEmitter();
  child.stdout = new EventEmitter();
  child.written = [];
  child.stdin = { write: (s) => child.written.push(JSON.parse(s)), end: () => (child.ended = true), on() {} };
  child.reply = (message) => child.stdout.emit("data", Buffer.from(`${JSON.stringify(message)}\n`));
  return child;
}

test("requests resolve with their reply, errors reject, pushes go to onPush", async () => {
  const child = fakeChild();
  const pushes = [];
  const client = new core.SidecarClient(child, { onPush: (p) => pushes.push(p) });
  const hello = client.request("hello");
  const bad = client.request("call", { tool: "x" });
  assert.deepEqual(child.written, [
    { id: 1, op: "hello" },
    { id: 2, op: "call", tool: "x" },
  ]);
  child.reply({ push: "status", timers: 1 });
  child.reply({ id: 2, ok: false, error: "unknown tool 'x'" });
  child.reply({ id: 1, ok: true, result: { owner: "pi-s" } });
  assert.deepEqual(await hello, { owner: "pi-s" });
  await assert.rejects(bad, /unknown tool 'x'/);
  assert.deepEqual(pushes, [{ push: "status", timers: 1 }]);
});

test("a silent sidecar times out, an abort rejects, garbage is reported, exit fails all", async () => {
  const child = fakeChild();
  const problems = [];
  const exits = [];
  const client = new core.SidecarClient(child, {
    onProblem: (p) => problems.push(p),
    onExit: (code, signal) => exits.push([code, signal]),
  });
  await assert.rejects(client.request("status", {}, { timeoutMs: 20 }), /did not answer status within 20 ms/);
  const controller = new AbortController();
  const aborted = client.request("call", {}, { signal: controller.signal });
  controller.abort();
  await assert.rejects(aborted, /call aborted/);
  child.stdout.emit("data", Buffer.from("not json\n"));
  assert.match(problems[0], /not JSON/);
  const pending = client.request("tools");
  child.emit("exit", 1, null);
  child.emit("error", new Error("late")); // reported once: exit already ended it
  await assert.rejects(pending, /sidecar exited \(code 1\)/);
  await assert.rejects(client.request("tools"), /not running/);
  assert.deepEqual(exits, [[1, null]]);
});

test("a sidecar that cannot start fails its requests at once", async () => {
  const child = fakeChild();
  const exits = [];
  const client = new core.SidecarClient(child, { onExit: (c, s, err) => exits.push(err.message) });
  const hello = client.request("hello", {}, { timeoutMs: 60_000 });
  child.emit("error", new Error("spawn specialists ENOENT"));
  await assert.rejects(hello, /ENOENT/);
  assert.deepEqual(exits, ["spawn specialists ENOENT"]);
});

// --- delivery --------------------------------------------------------------------------

function harness({ canSend = true, idle = true } = {}) {
  const h = { sent: [], acked: [], now: 1000, canSend, idle };
  h.delivery = new core.Delivery({
    send: (m) => h.sent.push(m),
    ack: (b) => h.acked.push(b),
    canSend: () => h.canSend,
    isIdle: () => h.idle,
    now: () => h.now,
    resendAfterMs: 3000,
  });
  return h;
}

const ev = (id, text = `[specialists event] timer from sleep (${id})`) => ({
  id,
  kind: "timer",
  tool: "sleep",
  call_id: "c1",
  text,
});
const accepted = (message) => ({ role: "custom", ...message });

test("a batch is sent once and acknowledged only when pi's message_end shows it", () => {
  const h = harness();
  assert.equal(h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1"), ev("e2")] }), "sent");
  const [message] = h.sent;
  assert.equal(message.customType, "specialists-event");
  assert.equal(message.content, `${ev("e1").text}\n\n${ev("e2").text}`);
  assert.deepEqual(
    message.details.events.map((e) => e.id),
    ["e1", "e2"],
  );
  assert.deepEqual(h.acked, []);
  h.delivery.onMessageEnd({ role: "user", content: "x" });
  h.delivery.onMessageEnd(accepted(message));
  assert.deepEqual(h.acked, ["b1"]);
});

test("while pi cannot take a message it is held, then sent", () => {
  const h = harness({ canSend: false });
  assert.equal(h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] }), "held");
  assert.equal(h.sent.length, 0);
  h.canSend = true;
  h.delivery.tick();
  assert.equal(h.sent.length, 1);
});

test("a repeated push is not sent twice; one pi already holds is acknowledged at once", () => {
  const h = harness();
  h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] });
  assert.equal(h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] }), "in-flight");
  h.delivery.onMessageEnd(accepted(h.sent[0]));
  assert.equal(h.delivery.onPush({ push: "events", batch: "b9", events: [ev("e1")] }), "duplicate");
  assert.deepEqual(h.acked, ["b1", "b9"]);
  assert.equal(h.sent.length, 1);
});

test("a restarted sidecar re-pushes under a new batch id: the ack goes to that id", () => {
  const h = harness();
  h.delivery.onPush({ push: "events", batch: "old-1", events: [ev("e1")] });
  assert.equal(h.delivery.onPush({ push: "events", batch: "new-1", events: [ev("e1")] }), "in-flight");
  h.delivery.onMessageEnd(accepted(h.sent[0]));
  assert.deepEqual(h.acked, ["new-1"]);
  assert.equal(h.sent.length, 1);
});

test("events restored from the session are acknowledged without being sent again", () => {
  const h = harness();
  h.delivery.restore([
    { type: "message", message: { role: "user" } },
    { type: "custom_message", customType: "specialists-event", details: { events: [{ id: "e1" }] } },
    { type: "custom_message", customType: "other", details: { events: [{ id: "e2" }] } },
  ]);
  assert.equal(h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] }), "duplicate");
  const mixed = h.delivery.onPush({ push: "events", batch: "b2", events: [ev("e1"), ev("e2")] });
  assert.equal(mixed, "sent");
  assert.deepEqual(
    h.sent[0].details.events.map((e) => e.id),
    ["e2"],
  );
});

test("a message pi dropped is sent again once pi is idle, and the model reads it once", () => {
  const h = harness();
  h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] });
  h.now += 2999;
  h.delivery.tick();
  assert.equal(h.sent.length, 1); // too early
  h.now += 1;
  h.idle = false;
  h.delivery.tick();
  assert.equal(h.sent.length, 1); // pi is busy: the steer may still be queued
  h.idle = true;
  h.delivery.tick();
  assert.equal(h.sent.length, 2);
  const copy = accepted(h.sent[1]);
  const context = [{ role: "user", content: "go" }, copy, { role: "assistant" }, accepted(h.sent[0])];
  assert.deepEqual(h.delivery.filterContext(context), context.slice(0, 3));
  assert.equal(h.delivery.filterContext(context.slice(0, 3)), null); // nothing to drop
});

test("the accepted set is bounded", () => {
  const h = harness();
  for (let i = 0; i < core.SEEN_CAP + 10; i++) h.delivery.onMessageEnd(accepted({ customType: core.CUSTOM_TYPE, details: { events: [{ id: `e${i}` }] } }));
  assert.equal(h.delivery.accepted.size, core.SEEN_CAP);
  assert.ok(!h.delivery.accepted.has("e0"));
});

test("waitForSend: true when a batch goes out, false on timeout or abort", async () => {
  const h = harness();
  const waiting = h.delivery.waitForSend(5000);
  h.delivery.onPush({ push: "events", batch: "b1", events: [ev("e1")] });
  assert.equal(await waiting, true);
  assert.equal(await h.delivery.waitForSend(5000), true); // one is in flight already
  const idle = harness();
  assert.equal(await idle.delivery.waitForSend(10), false);
  const controller = new AbortController();
  const aborted = idle.delivery.waitForSend(60_000, controller.signal);
  controller.abort();
  assert.equal(await aborted, false);
});

// --- guards ----------------------------------------------------------------------------

test("bash decisions follow the mode", () => {
  const flagged = { flagged: true, pattern: "sleep 600", reason: "Blocked: use bg_run" };
  assert.deepEqual(core.bashDecision({ ...flagged, mode: "block" }), { action: "block", reason: "Blocked: use bg_run" });
  const warn = core.bashDecision({ ...flagged, mode: "warn" });
  assert.equal(warn.action, "warn");
  assert.match(warn.notice, /`sleep 600`/);
  assert.deepEqual(core.bashDecision({ ...flagged, mode: "off" }), { action: "run" });
  assert.deepEqual(core.bashDecision({ flagged: false, mode: "block" }), { action: "run" });
});

test("the result guard counts text only, exempts read, keeps images in place", () => {
  const image = { type: "image", data: "AAAA", mimeType: "image/png" };
  const content = [{ type: "text", text: "a".repeat(30) }, image, { type: "text", text: "b".repeat(30) }];
  assert.equal(core.needsBound("bash", content, 60), true); // 30 + 1 + 30
  assert.equal(core.needsBound("bash", content, 61), false);
  assert.equal(core.needsBound("read", content, 1), false);
  assert.equal(core.needsBound("bash", [image], 0), false);
  assert.equal(core.textOf(content), `${"a".repeat(30)}\n${"b".repeat(30)}`);
  assert.deepEqual(core.replaceText(content, "BOUNDED"), [{ type: "text", text: "BOUNDED" }, image]);
});

test("pieces never split a surrogate pair", () => {
  const text = "ab🙂cd🙂";
  const parts = core.pieces(text, 3);
  assert.equal(parts.join(""), text);
  for (const p of parts) assert.ok(!/[\ud800-\udbff]$/.test(p));
});

// --- what people see -------------------------------------------------------------------

test("status line: shown when anything is pending, cleared when nothing is", () => {
  assert.equal(core.statusText({ jobs: 0, timers: 2, threads: 0 }), "jobs 0, timers 2, threads 0");
  assert.equal(core.statusText({ jobs: 0, timers: 0, threads: 0 }), undefined);
});

test("the renderer shows one line collapsed and the body expanded", () => {
  const message = {
    content: "[specialists event] timer from sleep (c1)\noriginal_args: {}\n---\nfired\n\n[specialists event] job_exit from bg_run (c2)",
    details: { events: [{ id: "a" }, { id: "b" }] },
  };
  assert.equal(core.renderEventText(message, false), "[specialists event] timer from sleep (c1) (+1 more)");
  assert.equal(core.renderEventText(message, true), message.content);
});

test("a tool's snippet is its first sentence, short", () => {
  assert.equal(core.snippet("Wait without blocking: sets a timer. More."), "Wait without blocking");
  assert.equal(core.snippet("Cancel a timer. Or all."), "Cancel a timer");
  assert.equal(core.snippet("x".repeat(300)).length, 120);
});

test("the log is capped and each kind of problem is told once", () => {
  const dir = mkdtempSync(join(tmpdir(), "sp-log-"));
  const path = join(dir, "sub", "pi-extension.log");
  const told = [];
  const log = new core.Log(path, (m) => told.push(m));
  log.problem("sidecar-exit", "the sidecar stopped");
  log.problem("sidecar-exit", "the sidecar stopped again");
  log.problem("config", "bad config");
  assert.equal(told.length, 2);
  assert.match(told[0], /the sidecar stopped \(details in .*pi-extension\.log\)/);
  assert.match(readFileSync(path, "utf8"), /again/);
  writeFileSync(path, "x".repeat(600 * 1024));
  log.write("after rotation");
  assert.ok(statSync(path).size < 1024);
  assert.ok(statSync(`${path}.1`).size > 512 * 1024);
  assert.equal(core.logPath({ XDG_STATE_HOME: "/s" }), "/s/specialists/pi-extension.log");
  assert.equal(core.logPath({ SPECIALISTS_PI_LOG: "/x.log" }), "/x.log");
});

test("a notify that throws is logged, never thrown", () => {
  const dir = mkdtempSync(join(tmpdir(), "sp-log-"));
  const log = new core.Log(join(dir, "l.log"), () => {
    throw new Error("stale ctx");
  });
  log.problem("k", "m");
  assert.match(readFileSync(join(dir, "l.log"), "utf8"), /notify failed: stale ctx/);
});
