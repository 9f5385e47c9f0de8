"""The FastMCP proxy with its response-limiting middleware, for bench_proxy.py only.

Run with the interpreter of the separate FastMCP venv:
    benchmarks/.venv-fastmcp/bin/python benchmarks/_fastmcp_proxy.py COMMAND [ARGS...]
"""

from __future__ import annotations

import sys

from fastmcp.server import create_proxy
from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware

LIMIT = 32 * 1024  # the same bound toolcap applies by default


def main() -> None:
    command, *args = sys.argv[1:]
    config = {"mcpServers": {"upstream": {"command": command, "args": args}}}
    proxy = create_proxy(config, name="fastmcp-proxy")
    proxy.add_middleware(ResponseLimitingMiddleware(max_size=LIMIT))
    proxy.run(show_banner=False)


if __name__ == "__main__":
    main()
