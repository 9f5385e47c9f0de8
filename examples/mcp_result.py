"""Bounding an MCP ``CallToolResult``: the dict form (JSON-RPC) and the SDK's model.

The same code bounds every result in ``toolcap proxy``.

    python examples/mcp_result.py
"""

from __future__ import annotations

import base64

from toolcap import Policy
from toolcap.adapters.mcp import bound_call_tool_result

policy = Policy.load()  # toolcap.toml / [tool.toolcap] / TOOLCAP_* as found from here

log = "".join(f"{i:07d} INFO request served in 3 ms\n" for i in range(150_000))  # ~5 MB
png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(600_000)).decode()

# The JSON form, as it comes over the wire.
result = {"content": [{"type": "text", "text": log},
                      {"type": "image", "data": png, "mimeType": "image/png"}],
          "isError": False}
bounded = bound_call_tool_result(result, policy, tool="read_log")
for block in bounded["content"]:
    print(block["type"], len(block.get("text", "")), block.get("text", "")[-90:].strip())

# The SDK's own model (pip install 'toolcap[mcp]').
try:
    from mcp.types import CallToolResult, TextContent
except ImportError:
    raise SystemExit(0) from None
typed = CallToolResult(content=[TextContent(type="text", text=log)])
small = bound_call_tool_result(typed, policy, tool="read_log")  # a CallToolResult again
print(type(small).__name__, len(small.content[0].text))
