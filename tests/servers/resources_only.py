"""A minimal MCP server with resources and no tools, speaking raw JSON-RPC lines.

It exists to show what the proxy does for a server without a tools capability:
the proxy still offers ``read_artifact`` for what it cuts from resources.
"""

from __future__ import annotations

import json
import sys
from typing import Any

BIG_URI = "data://big"


def big_text() -> str:
    return "".join(f"resource line {n:06d}\n" for n in range(50_000))


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"resources": {}},
            "serverInfo": {"name": "resources-only", "version": "0.1"},
        }
    elif method == "resources/list":
        result = {"resources": [{"uri": BIG_URI, "name": "big"}]}
    elif method == "resources/read":
        uri = request["params"]["uri"]
        result = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": big_text()}]}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": f"no method {method}"},
        }
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        response = answer(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
