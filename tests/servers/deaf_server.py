"""A stdio MCP server that answers ``initialize`` and then does not read its stdin, as
a server stuck in a long computation (or a hostile one) does. It writes its pid to the
file named by ``argv[1]`` first. With ``argv[2]``, it is deaf that many seconds, then
reads on and answers every request with an empty result; without, it is deaf until it
is killed."""

from __future__ import annotations

import json
import os
import sys
import time


def write(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(str(os.getpid()))
    request = json.loads(sys.stdin.readline())
    version = request["params"]["protocolVersion"]
    write({"id": request["id"], "result": {
        "protocolVersion": version, "capabilities": {"tools": {}},
        "serverInfo": {"name": "deaf", "version": "0"}}})
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 1e9)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:
            write({"id": message["id"], "result": {"content": []}})


if __name__ == "__main__":
    main()
