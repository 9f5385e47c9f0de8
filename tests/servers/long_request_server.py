"""A stdio MCP server that, before answering a tools/call, sends the client a long
request of its own under the same id (server and client count their ids apart)."""

from __future__ import annotations

import json
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    request_id, method = message.get("id"), message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "long-request", "version": "1"}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage",
              "params": {"messages": [{"role": "user", "content": {
                  "type": "text", "text": "x" * 2_000_000}}], "maxTokens": 5}})
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "content": [{"type": "text", "text": "the real answer"}]}})
    elif request_id is not None and method is not None:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
