"""A stdio MCP server of raw JSON-RPC lines, to watch the proxy list its tools itself.

It appends the method and id of every message it is sent to a record file
(``argv[1]``) and lists two tools over two pages, the second one typed (an output
schema of rows). Its mode (``argv[2]``) says how it answers ``tools/list``:
``pages`` at once, ``error`` with an error, ``huge`` with a first page of 512 KB
(a tool described at length), ``asks`` only after it has asked the client for a
sampling and had the answer. A call of ``change`` says first that its tools changed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

ROWS = {
    "type": "object",
    "properties": {"rows": {"type": "array", "items": {
        "type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
    "required": ["rows"],
}
PAGES = {
    None: {"tools": [{"name": "other", "inputSchema": {"type": "object"}}], "nextCursor": "p2"},
    "p2": {"tools": [{"name": "rows", "inputSchema": {"type": "object"}, "outputSchema": ROWS}]},
}


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    record, mode = sys.argv[1], sys.argv[2]
    asked_for: dict[str, Any] | None = None  # the listing waiting on the client's answer
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        with open(record, "a", encoding="utf-8") as out:
            out.write(json.dumps({"method": method, "id": request_id}) + "\n")
        params = message.get("params") or {}
        if method == "initialize":
            write({"id": request_id, "result": {
                "protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "listing-stub", "version": "0"}}})
        elif method == "tools/list" and mode == "error":
            write({"id": request_id, "error": {"code": -32603, "message": "lists nothing"}})
        elif method == "tools/list" and mode == "huge":
            tool = {"name": "other", "description": "x" * (512 << 10), "inputSchema": {}}
            write({"id": request_id, "result": {"tools": [tool]}})
        elif method == "tools/list" and mode == "asks" and asked_for is None:
            asked_for = message
            write({"id": "ask-1", "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5}})
        elif method == "tools/list":
            write({"id": request_id, "result": PAGES[params.get("cursor")]})
        elif method is None and request_id == "ask-1" and asked_for is not None:
            cursor = (asked_for.get("params") or {}).get("cursor")
            write({"id": asked_for["id"], "result": PAGES[cursor]})
        elif method == "tools/call" and params.get("name") == "change":
            write({"method": "notifications/tools/list_changed"})
            write({"id": request_id, "result": {"content": []}})
        elif method == "tools/call":
            rows = [{"id": i, "name": f"row {i:05d}"} for i in range(2000)]
            write({"id": request_id, "result": {
                "content": [{"type": "text", "text": json.dumps({"rows": rows})}],
                "structuredContent": {"rows": rows}}})
        elif request_id is not None and method is not None:
            write({"id": request_id, "result": {}})


if __name__ == "__main__":
    main()
