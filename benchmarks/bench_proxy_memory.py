"""Peak memory of `toolcap proxy` for one huge tools/call result line.

    .venv/bin/python benchmarks/bench_proxy_memory.py --mb 200
    .venv/bin/python benchmarks/bench_proxy_memory.py --mb 200 --max-line 64MB
    .venv/bin/python benchmarks/bench_proxy_memory.py --mb 100 --structured
    .venv/bin/python benchmarks/bench_proxy_memory.py --mb 20 --url sse   # or --url json

The upstream is a tiny raw JSON-RPC server (below) that writes one result line
of the given size without holding it (with ``--structured``, the text again as
``structuredContent``, as the Python SDK sends a tool's text); with ``--url``
the same server over HTTP, reached with ``toolcap proxy --url``, the result
sent as one SSE event or as a JSON body. The proxy's peak resident size (VmHWM
from /proc, Linux) is read after the result reached the client, and reported
next to the size of the line and to the proxy's resident size right after start.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLCAP = [sys.executable, "-c", "import sys; from toolcap.cli import main; sys.exit(main())"]

# One result of SIZE bytes of numbered text, written in 1 MB pieces.
SERVER = textwrap.dedent("""
    import json, sys
    size = int(sys.argv[1])
    structured = len(sys.argv) > 2
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "big", "version": "0"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
        else:
            head = b'{"jsonrpc":"2.0","id":%d,"result":' % msg["id"]
            out.write(head + b'{"content":[{"type":"text","text":"')
            line = b"".join(b"line %09d of the big result\\\\n" % i for i in range(32768))
            for part in range(2 if structured else 1):
                if part:  # the same text again, as an SDK sends a tool's str result
                    out.write(b'"}],"structuredContent":{"result":"')
                left = size
                while left > 0:
                    piece = line[:left]
                    out.write(piece)
                    left -= len(piece)
            out.write(b'"}}}\\n' if structured else b'"}]}}\\n')
            out.flush()
            continue
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        out.write(json.dumps(answer).encode() + b"\\n")
        out.flush()
""")


# The same over HTTP: each POST answered with a JSON body, the big result as one
# SSE event (argv[3] == "sse") or a JSON body, the connection closed at its end.
HTTP_SERVER = textwrap.dedent("""
    import http.server, json, sys
    size, port, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            msg = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if "id" not in msg:
                self.send_response(202)
                self.end_headers()
                return
            if msg["method"] != "tools/call":
                if msg["method"] == "initialize":
                    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "big", "version": "0"}}
                else:
                    result = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
                body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("mcp-session-id", "s1")
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            sse = kind == "sse"
            self.send_header("content-type", "text/event-stream" if sse else "application/json")
            self.end_headers()
            out = self.wfile
            head = b'{"jsonrpc":"2.0","id":%d,"result":' % msg["id"]
            out.write((b"data: " if sse else b"") + head)
            out.write(b'{"content":[{"type":"text","text":"')
            line = b"".join(b"line %09d of the big result\\\\n" % i for i in range(32768))
            left = size
            while left > 0:
                piece = line[:left]
                out.write(piece)
                left -= len(piece)
            out.write(b'"}]}}' + (b"\\n\\n" if sse else b""))

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()
""")


def vm(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the result line in MB")
    parser.add_argument("--max-line", help="the proxy's --max-line-size (default: its default)")
    parser.add_argument("--structured", action="store_true",
                        help="the text again as structuredContent (stdio only): a line twice"
                        " as long")
    parser.add_argument("--url", choices=["sse", "json"],
                        help="reach the server over HTTP with --url, the result as SSE or JSON")
    args = parser.parse_args()
    size = args.mb * 1024 * 1024
    with tempfile.TemporaryDirectory() as tmp:
        server = Path(tmp) / "server.py"
        server.write_text(SERVER)
        env = {**os.environ, "TOOLCAP_ARTIFACTS": str(Path(tmp) / "artifacts")}
        extra = ["--max-line-size", args.max_line] if args.max_line else []
        argv = [*TOOLCAP, "proxy", *extra, "--", sys.executable, str(server), str(size),
                *(["structured"] if args.structured else [])]
        http_server = None
        if args.url:
            server.write_text(HTTP_SERVER)
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            http_server = subprocess.Popen([sys.executable, str(server), str(size), str(port),
                                            args.url], stdout=subprocess.PIPE)
            assert http_server.stdout is not None
            http_server.stdout.readline()  # "ready"
            argv = [*TOOLCAP, "proxy", "--url", f"http://127.0.0.1:{port}/mcp"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None

        def ask(ident: int, method: str, params: dict[str, object]) -> bytes:
            message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            return proc.stdout.readline()

        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "0"}})
        start = vm(proc.pid, "VmRSS")
        answer = ask(2, "tools/call", {"name": "big", "arguments": {}})
        peak = vm(proc.pid, "VmHWM")
        proc.stdin.close()
        proc.wait(60)
        if http_server is not None:
            http_server.terminate()
            http_server.wait(60)
    line = (2 * size if args.structured else size) + 80
    print(f"result line {line / 2**20:.1f} MB; answer {len(answer)} bytes")
    print(f"proxy RSS after start {start / 2**20:.1f} MB; peak {peak / 2**20:.1f} MB "
          f"= {(peak - start) / line:.2f} x the line above the start")


if __name__ == "__main__":
    main()
