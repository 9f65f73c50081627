// specialists for pi: the agent tool table, its guards and its events inside a pi session.
//
// Load with `pi -e <this file>` or `specialists install --pi`. One `specialists sidecar`
// per session does the work (tools, guards, inboxes, timers) in Python; this file adapts
// pi's extension API (verified on pi 1.6.0) and never throws into pi: problems go to
// $XDG_STATE_HOME/specialists/pi-extension.log and are shown once.
//
// - tools: every tool the sidecar lists; a yielding one (sleep, ...) ends the turn with
//   `terminate: true`. In print mode there is no later, so it waits in place (bounded by
//   $SPECIALISTS_PI_PRINT_WAIT_S, 600 s) for the event it yields to.
// - events: inbox batches arrive as `specialists-event` messages (steer, triggerTurn),
//   acknowledged to the sidecar once pi's message_end shows them.
// - guards: bash calls are classified (block / warn / off, default timeout); a write or edit
//   of a file another live job claimed is blocked with the holder's name; results over
//   overflow.maxChars (except read's) are spilled to a file and replaced by head, tail, path.
// - status line `specialists`, the `/specialists` command, a renderer for the events.

import { type ChildProcess, spawn } from "node:child_process";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import * as core from "./core.mjs";

const PRINT_WAIT_ENV = "SPECIALISTS_PI_PRINT_WAIT_S";
const STARTUP_GRACE_MS = 1500; // before the first prompt, events wait this long for one
const MAX_RESTARTS = 5; // sidecar restarts per RESTART_WINDOW_MS; then the tools say so
const RESTART_WINDOW_MS = 10 * 60_000;
const SUBCOMMANDS = ["jobs", "timers", "threads", "cancel", "config"];

const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of children) c.kill("SIGTERM"); // a sidecar dies with pi, even on exit()
});

type Level = "info" | "warning" | "error";

export default function specialists(pi: ExtensionAPI): void {
  let ctxRef: ExtensionContext | undefined;
  let active = false;
  let started = false; // may an event start a turn yet (after the first prompt, or a grace)
  let owner = "";
  let client: core.SidecarClient | undefined;
  let overflowMax = 40_000;
  let everStarted = false; // a sidecar answered hello once: later exits are crashes to retry
  let ticker: ReturnType<typeof setInterval> | undefined;
  const restarts: number[] = [];
  const registered = new Set<string>();

  const notify = (message: string, level: Level = "info"): void => {
    if (!active || !ctxRef) return log.write(`(not shown) ${message}`);
    if (ctxRef.hasUI) ctxRef.ui.notify(message, level);
    else process.stderr.write(`${message}\n`); // print mode: no UI; stdout is the answer
  };
  const log = new core.Log(core.logPath(process.env), notify);

  const safe =
    <A extends unknown[], R>(name: string, fn: (...args: A) => R) =>
    (...args: A): R | undefined => {
      try {
        const out = fn(...args);
        if (out instanceof Promise) {
          return out.catch((err: unknown) => {
            log.problem(name, describe(err));
            return undefined;
          }) as R;
        }
        return out;
      } catch (err) {
        log.problem(name, describe(err));
        return undefined;
      }
    };

  const delivery = new core.Delivery({
    send: (message: object) => {
      if (active) pi.sendMessage(message as never, { triggerTurn: true, deliverAs: "steer" });
    },
    ack: (batch: string) => {
      client?.request("ack", { batch }).catch((err: unknown) => log.write(`ack ${batch}: ${describe(err)}`));
    },
    // Print mode ends when its prompt is done: only a running turn can take an event there.
    canSend: () => active && started && !!ctxRef && (ctxRef.hasUI || !ctxRef.isIdle()),
    isIdle: () => active && !!ctxRef && ctxRef.isIdle(),
  });

  const onPush = (push: Record<string, any>): void => {
    if (!active) return;
    if (push.push === "events") delivery.onPush(push);
    else if (push.push === "status" && ctxRef?.hasUI) ctxRef.ui.setStatus(core.STATUS_KEY, core.statusText(push));
    else if (push.push === "settings") applySettings(push.settings, push.problems);
  };

  const applySettings = (settings: any, problems: unknown): void => {
    const max = settings?.overflow?.max_chars;
    if (typeof max === "number" && max > 0) overflowMax = max;
    if (Array.isArray(problems)) for (const p of problems) log.problem("config", String(p));
  };

  async function startSidecar(ctx: ExtensionContext): Promise<void> {
    const argv = core.sidecarCommand(process.env);
    const proc = spawn(argv[0], [...argv.slice(1), "sidecar", "--owner", owner, "--cwd", ctx.cwd, "--parent-pid", String(process.pid)], {
      stdio: ["pipe", "pipe", "pipe"],
      env: process.env,
    });
    children.add(proc);
    const stderr = new core.LineSplitter((line: string) => log.write(`sidecar: ${line}`), { maxBytes: 64 * 1024 });
    proc.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    const sidecar = new core.SidecarClient(proc, {
      onPush,
      onProblem: (message: string) => log.write(message),
      onExit: (code: number | null, signal: string | null, err?: Error) => {
        children.delete(proc);
        if (client === sidecar) onSidecarExit(argv, code, signal, err);
      },
    });
    client = sidecar;
    const hello = await sidecar.request("hello", {}, { timeoutMs: 20_000 });
    everStarted = true;
    applySettings(hello.settings, hello.problems);
  }

  function onSidecarExit(argv: string[], code: number | null, signal: string | null, err?: Error): void {
    if (!active || !ctxRef) return;
    const why = err ? err.message : `exit ${signal ?? code}`;
    if (!everStarted) {
      // Never answered hello: a wrong command or a broken install, not a crash to retry
      // (session_start tells the person; this adds the command to the log).
      log.write(`cannot start the sidecar (${argv.join(" ")} sidecar: ${why}); set ${core.CMD_ENV}`);
      return;
    }
    const now = Date.now();
    while (restarts.length && now - restarts[0] > RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length >= MAX_RESTARTS) {
      log.problem("sidecar-gone", `the sidecar (${argv.join(" ")} sidecar) keeps failing (${why}); tools are off`);
      return;
    }
    log.problem("sidecar-exit", `the sidecar stopped (${why}); restarting it`);
    restarts.push(now);
    const ctx = ctxRef;
    setTimeout(
      safe("sidecar-restart", async () => {
        if (!active || ctxRef !== ctx) return;
        await startSidecar(ctx);
        await registerTools(); // if it died before the first listing; known names are kept
      }),
      500 * 2 ** (restarts.length - 1),
    ).unref();
  }

  async function registerTools(): Promise<void> {
    const listed = await client!.request("tools", {}, { timeoutMs: 10_000 });
    const before = registered.size;
    for (const tool of listed.tools ?? []) {
      if (registered.has(tool.name)) continue;
      registered.add(tool.name);
      pi.registerTool({
        name: tool.name,
        label: tool.name,
        description: tool.description,
        promptSnippet: core.snippet(tool.description),
        // R-G1 through pi's own channel: the shared rules once (pi dedupes), then the tool's.
        promptGuidelines: tool.guidance ? [listed.guidance_core, tool.guidance] : [],
        parameters: tool.schema,
        execute: (callId: string, params: unknown, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) =>
          runTool(tool.name, callId, params, signal, ctx),
      } as never);
    }
    log.write(`tools registered: ${registered.size - before} new, ${[...registered].join(", ")}`);
  }

  async function runTool(name: string, callId: string, params: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext) {
    if (!client || client.closed) throw new Error(`the specialists sidecar is not running (see ${log.path})`);
    const reply = await client.request("call", { tool: name, args: params ?? {}, call_id: callId }, { timeoutMs: callTimeoutMs(name, params), signal });
    if (reply.is_error) throw new Error(String(reply.text)); // pi marks a thrown error isError
    let terminate = reply.yields === true;
    if (terminate && !ctx.hasUI && (await waitInPlace(signal))) terminate = false;
    return { content: [{ type: "text", text: String(reply.text) }], details: reply.data ?? {}, terminate };
  }

  // contact_supervisor waits for its reply up to timeout_s (default 300, asks/model.py): the
  // sidecar answers when it is in or the ask gave up, so wait a little longer than that.
  function callTimeoutMs(name: string, params: unknown): number {
    if (name !== "contact_supervisor") return 120_000;
    const asked = (params as { timeout_s?: unknown } | undefined)?.timeout_s;
    return ((typeof asked === "number" && asked > 0 ? asked : 300) + 30) * 1000;
  }

  // Print mode: pi exits when the prompt is done, so a yield would lose the wake-up. If work
  // is pending, wait here (bounded) until its event is queued as a steer, then go on.
  async function waitInPlace(signal: AbortSignal | undefined): Promise<boolean> {
    const counts = await client!.request("status", {}, { timeoutMs: 5000 }).catch(() => undefined);
    if (!counts || !(counts.jobs || counts.timers || counts.threads || counts.pending_events)) return false;
    const seconds = Number(process.env[PRINT_WAIT_ENV] ?? 600);
    return delivery.waitForSend(Math.max(0, Number.isFinite(seconds) ? seconds : 600) * 1000, signal);
  }

  async function bound(toolName: string, text: string): Promise<string> {
    if (text.length <= core.PART_CHARS) return (await client!.request("bound", { tool: toolName, text }, { timeoutMs: 60_000 })).text;
    const stream = `r${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    for (const piece of core.pieces(text)) await client!.request("bound_part", { stream, text: piece }, { timeoutMs: 30_000 });
    return (await client!.request("bound", { tool: toolName, stream }, { timeoutMs: 60_000 })).text;
  }

  pi.on(
    "session_start",
    safe("session_start", async (_event: unknown, ctx: ExtensionContext) => {
      ctxRef = ctx;
      active = true;
      owner = core.ownerKey(process.env, ctx.sessionManager.getSessionId());
      delivery.restore(ctx.sessionManager.getBranch());
      ticker = setInterval(safe("tick", () => delivery.tick()), 1000);
      ticker.unref();
      if (ctx.hasUI) setTimeout(safe("startup", () => ((started = true), delivery.flush())), STARTUP_GRACE_MS).unref();
      await startSidecar(ctx).catch((err: unknown) => {
        throw new Error(`the sidecar did not start (${describe(err)}); is specialists on PATH, or ${core.CMD_ENV} set?`);
      });
      await registerTools();
    }),
  );

  pi.on(
    "session_shutdown",
    safe("session_shutdown", () => {
      active = false;
      if (ticker) clearInterval(ticker);
      const proc = client?.child as ChildProcess | undefined;
      client?.close(); // the sidecar ends when its stdin closes
      if (proc) setTimeout(() => proc.kill("SIGTERM"), 2000).unref();
    }),
  );

  pi.on("agent_start", safe("agent_start", () => ((started = true), delivery.flush())));
  pi.on("agent_end", safe("agent_end", () => void setTimeout(safe("tick", () => delivery.tick()), 300).unref()));
  pi.on("message_end", safe("message_end", (event: any) => delivery.onMessageEnd(event.message)));
  pi.on(
    "context",
    safe("context", (event: any) => {
      const messages = delivery.filterContext(event.messages);
      return messages ? { messages } : undefined;
    }),
  );

  // R-B1..R-B5, and file claims (issue 23). A guard that cannot ask the sidecar lets the call
  // run (and logs it): a sidecar that is down must not stop every write.
  pi.on(
    "tool_call",
    safe("guard", async (event: any) => {
      if (!client) return undefined;
      if (core.WRITE_TOOLS.has(event.toolName) && typeof event.input?.path === "string") {
        const verdict = await client.request("claimed", { path: event.input.path }, { timeoutMs: 3000 });
        return verdict.refused ? { block: true, reason: String(verdict.refused) } : undefined;
      }
      if (event.toolName !== "bash" || typeof event.input?.command !== "string") return undefined;
      const verdict = await client.request("classify", { command: event.input.command }, { timeoutMs: 3000 });
      if (verdict.default_timeout_s && event.input.timeout == null) event.input.timeout = verdict.default_timeout_s;
      const decision = core.bashDecision(verdict);
      if (decision.action === "block") return { block: true, reason: decision.reason };
      if (decision.action === "warn") notify(decision.notice, "warning");
      return undefined;
    }),
  );

  // R-O1..R-O3.
  pi.on(
    "tool_result",
    safe("result-guard", async (event: any) => {
      if (!client || !core.needsBound(event.toolName, event.content, overflowMax)) return undefined;
      return { content: core.replaceText(event.content, await bound(event.toolName, core.textOf(event.content))) };
    }),
  );

  pi.registerCommand("specialists", {
    description: "specialists: jobs, timers, threads, cancel <id|all>, config",
    getArgumentCompletions: (prefix: string) => {
      const items = SUBCOMMANDS.filter((s) => s.startsWith(prefix.trim())).map((s) => ({ value: s, label: s }));
      return items.length ? items : null;
    },
    handler: safe("command", async (args: string) => {
      if (!client || client.closed) return notify(`specialists: the sidecar is not running (see ${log.path})`, "error");
      try {
        notify((await client.request("command", { args: args ?? "" }, { timeoutMs: 30_000 })).text, "info");
      } catch (err) {
        notify(`specialists: ${describe(err)}`, "error");
      }
    }) as never,
  });

  pi.registerMessageRenderer(core.CUSTOM_TYPE, (message: any, options: { expanded: boolean }, theme: any) => {
    const text = core.renderEventText(message, options.expanded);
    return new Text(options.expanded || !theme?.fg ? text : theme.fg("accent", text), 0, 0);
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
