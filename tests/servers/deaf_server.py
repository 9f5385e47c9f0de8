"""A stdio MCP server that answers ``initialize`` and never reads its stdin again, as a
server stuck in a long computation (or a hostile one) does. It writes its pid to the
file named by ``argv[1]`` first, and ends only when it is killed."""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(str(os.getpid()))
    request = json.loads(sys.stdin.readline())
    version = request["params"]["protocolVersion"]
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
        "protocolVersion": version, "capabilities": {"tools": {}},
        "serverInfo": {"name": "deaf", "version": "0"}}}) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
