// The official TypeScript SDK's client over Streamable HTTP, for the proxy tests.
// Usage: node http_client.mjs URL TOOL ARGS_JSON
// Calls TOOL with ARGS_JSON, then read_artifact on the first reference in its
// text; prints one JSON line: {"text": ..., "read": ...}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, args] = process.argv.slice(2);
const client = new Client({ name: "toolcap-test-ts", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
const text = result.content[0].text;
const ref = /toolcap:[0-9a-f]{16,32}/.exec(text);
let read = null;
if (ref) {
  const back = await client.callTool({
    name: "read_artifact",
    arguments: { ref: ref[0], offset: 0, length: 20 },
  });
  read = back.content[0].text;
}
await transport.terminateSession();
await client.close();
process.stdout.write(JSON.stringify({ text, read }) + "\n");
