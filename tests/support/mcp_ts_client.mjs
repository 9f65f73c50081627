// A tiny MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// .tools/package.json): the SDK the MCP Inspector and many hosts are built on. It starts the
// server given after `--`, lists its tools (so the SDK learns their output schemas), makes
// each call read from stdin (a JSON list of [name, arguments]; argv would cap a string at
// 128 KiB), and prints one JSON line per call:
// {"name", "ok": true, "result": <CallToolResult>} or {"name", "ok": false, "error": "..."}
// when the SDK itself rejected the answer (for example a schema-validation failure).
//
//   echo '[["status", {}]]' | node mcp_ts_client.mjs python -m specialists mcp
// The SDK is found under $MCP_SDK_DIR, else the repository's .tools/node_modules.
const sdk = process.env.MCP_SDK_DIR
  ? new URL(`file://${process.env.MCP_SDK_DIR}/`)
  : new URL("../../.tools/node_modules/@modelcontextprotocol/sdk/", import.meta.url);
const { Client } = await import(new URL("dist/esm/client/index.js", sdk));
const { StdioClientTransport } = await import(new URL("dist/esm/client/stdio.js", sdk));

const [command, ...args] = process.argv.slice(2);
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const calls = JSON.parse(Buffer.concat(chunks).toString("utf8")).map(([name, args]) => ({ name, args }));

const client = new Client({ name: "specialists-ts-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
await client.listTools();
for (const call of calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.args });
    console.log(JSON.stringify({ name: call.name, ok: true, result }));
  } catch (err) {
    console.log(JSON.stringify({ name: call.name, ok: false, error: String(err?.message ?? err) }));
  }
}
await client.close();
