// One MCP session on the TypeScript client SDK 2.x (@modelcontextprotocol/client: the client the
// MCP Inspector 2.x is built on, installed with it under .tools/). The Inspector's CLI makes
// one request per run; this keeps one connection for several, which a cancellation test needs
// (the server must go on serving after a call it was told to drop).
//
//   echo '{"mode": "auto", "ops": [["call", "status", {}], ["cancel", 1000, "events", {"wait_s": 30}]]}' \
//     | node mcp_ts_session.mjs python -m specialists mcp
//
// mode: "legacy" (initialize), "auto" (server/discover, then initialize if it must), or a
// version to pin. Prints one JSON line for the connection ({"connected": {version, era}}),
// then one per op: {"op", "ok": true, "result"} or {"op", "ok": false, "error"}. A "cancel"
// op aborts its call after the given milliseconds (the SDK sends notifications/cancelled); a
// "pause" op keeps the connection open that long, doing nothing, or until the file named by its
// second argument exists (the test has seen what it waited for).
// The SDK is found under $MCP_CLIENT_DIR, else the repository's .tools/node_modules.
import { existsSync } from "node:fs";

const dir = process.env.MCP_CLIENT_DIR
  ? new URL(`file://${process.env.MCP_CLIENT_DIR}/`)
  : new URL("../../.tools/node_modules/@modelcontextprotocol/client/", import.meta.url);
const { Client } = await import(new URL("dist/index.mjs", dir));
const { StdioClientTransport } = await import(new URL("dist/stdio.mjs", dir));

const [command, ...args] = process.argv.slice(2);
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { mode, ops } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const negotiation = mode === "legacy" || mode === "auto" ? { mode } : { mode: { pin: mode } };

const say = (obj) => console.log(JSON.stringify(obj));
const client = new Client({ name: "specialists-ts-session", version: "1.0.0" }, { versionNegotiation: negotiation });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
say({ connected: { version: client.getNegotiatedProtocolVersion(), era: client.getProtocolEra() } });
await client.listTools(); // the SDK learns the output schemas it then checks answers against
for (const [op, ...rest] of ops) {
  try {
    if (op === "list") {
      say({ op, ok: true, result: await client.listTools() });
    } else if (op === "call") {
      const [name, callArgs] = rest;
      say({ op, ok: true, result: await client.callTool({ name, arguments: callArgs }) });
    } else if (op === "cancel") {
      const [afterMs, name, callArgs] = rest;
      const abort = new AbortController();
      setTimeout(() => abort.abort("the test cancels it"), afterMs);
      say({ op, ok: true, result: await client.callTool({ name, arguments: callArgs }, { signal: abort.signal }) });
    } else if (op === "pause") {
      const [ms, until] = rest;
      const end = Date.now() + ms;
      while (Date.now() < end && !(until && existsSync(until))) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      say({ op, ok: true });
    } else {
      say({ op, ok: false, error: `unknown op ${op}` });
    }
  } catch (err) {
    say({ op, ok: false, error: String(err?.message ?? err) });
  }
}
await client.close();
