// A Node.js MCP server (the official TypeScript SDK) that logs bursts to stderr.
// Node makes the stderr it inherits non-blocking; the proxy tests use this server
// to show that a burst cannot break the proxy's own writes.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "noisy", version: "1.0.0" });

server.tool(
  "burst",
  "Write `lines` numbered lines to stderr, then return `size` bytes of text.",
  { tag: z.string(), lines: z.number().int(), size: z.number().int() },
  async ({ tag, lines, size }) => {
    const pad = "x".repeat(100);
    for (let i = 0; i < lines; i++) {
      process.stderr.write(`${tag} stderr line ${i} ${pad}\n`);
    }
    const line = `${tag} result line ${pad}\n`;
    const text = line.repeat(Math.ceil(size / line.length)).slice(0, size);
    return { content: [{ type: "text", text }] };
  },
);

server.tool("pid", "Return the server's process id.", {}, async () => ({
  content: [{ type: "text", text: String(process.pid) }],
}));

await server.connect(new StdioServerTransport());
