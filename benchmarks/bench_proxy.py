"""`toolcap proxy` against a direct connection and against the FastMCP proxy, in one run.

    .venv/bin/python benchmarks/bench_proxy.py             # 300 small calls, 5 x 10 MB
    .venv/bin/python benchmarks/bench_proxy.py --quick     # 200 small calls, 3 x 10 MB
    .venv/bin/python benchmarks/bench_proxy.py --quick --big-sizes 10MB,100MB
    .venv/bin/python benchmarks/bench_proxy.py --quick --big-only --baseline /tmp/main/src
    .venv/bin/python benchmarks/bench_proxy.py --http      # the same over Streamable HTTP

The upstream is the test server (tests/servers/bigserver.py), over stdio.

1. Latency of a small tools/call (p50, p95 over N calls after a warm-up), with a
   plain JSON-RPC line client, directly and through each proxy. Also with the
   official SDK's ClientSession, whose own overhead dilutes the difference.
2. Time until the client holds the bounded result of a 10 MB tool result (each
   run a different text, so toolcap really stores each original), against the
   upstream's own time to produce and send it, read with a plain line reader.
   Beside it, the processor time each call cost the process the client talks to
   (all its threads, from /proc; the upstream's own for "direct", the proxy's
   alone for a proxy), steadier than wall time on a shared machine. With
   ``--baseline SRC`` another toolcap source tree (``src/`` of a ``git worktree``
   or ``git archive`` of main) runs as a second proxy, in turn with this one:
   before and after, in one run.
3. Reading that result's line: the proxy's scanner (toolcap.proxy._scan) against
   decoding and ``json.loads``, and ``orjson.loads`` when orjson is installed.

The FastMCP proxy (with ResponseLimitingMiddleware at the same 32 KB bound) runs
from a separate venv, made with:

    python3 -m venv benchmarks/.venv-fastmcp
    benchmarks/.venv-fastmcp/bin/pip install fastmcp==4.2.3

It is skipped, with a message, when that venv is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from toolcap import parse_size  # noqa: E402
from toolcap.proxy._io import LineReader  # noqa: E402

SERVER = [sys.executable, str(ROOT / "tests" / "servers" / "bigserver.py")]
TOOLCAP = [sys.executable, "-c", "import sys; from toolcap.cli import main; sys.exit(main())"]
FASTMCP_PY = ROOT / "benchmarks" / ".venv-fastmcp" / "bin" / "python"
FASTMCP = [str(FASTMCP_PY), str(ROOT / "benchmarks" / "_fastmcp_proxy.py")]


class LineClient:
    """A plain JSON-RPC client over a subprocess's pipes: one line out, one line in."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdout is not None
        self.reader = LineReader(self.proc.stdout.fileno())
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> bytes:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        marker = b'"id":%d' % self.next_id
        while True:
            line = self.reader.readline()
            if line is None:
                raise RuntimeError(f"{method}: the server closed its stdout")
            # Cheap test for "this is our response" that never parses a 10 MB line twice.
            head = line[:200].replace(b" ", b"")
            if marker in head or marker in line[-200:].replace(b" ", b""):
                return line

    def call(self, name: str, arguments: dict[str, Any]) -> bytes:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def small_calls(clients: dict[str, LineClient], n: int) -> dict[str, tuple[float, float]]:
    """Interleaved, so that every setup sees the same machine load."""
    for client in clients.values():
        for _ in range(20):
            client.call("small", {"text": "warm"})
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for i in range(n):
        for name, client in clients.items():
            start = time.perf_counter()
            client.call("small", {"text": f"hello {i}"})
            samples[name].append(time.perf_counter() - start)
    return {name: percentiles(values) for name, values in samples.items()}


def cpu_seconds(pid: int) -> float:
    """Processor time of process ``pid`` so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def big_calls(clients: dict[str, LineClient], runs: int, big: int
              ) -> dict[str, tuple[float, int, float]]:
    """Best time of each setup, its runs taken in turn with the others' (so that each
    sees the same machine), its response line's length and the median processor
    time a call cost the process the client talks to.

    The best, not the median: on a machine shared with other work the best run is
    the one nothing else interrupted, for the upstream alone as for the proxy.
    """
    times: dict[str, list[float]] = {name: [] for name in clients}
    cpus: dict[str, list[float]] = {name: [] for name in clients}
    sizes: dict[str, int] = {}
    for run in range(runs):
        for name, client in clients.items():
            tag = f"{name[:3]}{run}{time.time_ns()}"  # new content each run: a real store write
            cpu, start = cpu_seconds(client.proc.pid), time.perf_counter()
            line = client.call("big_text", {"size": big, "tag": tag})
            times[name].append(time.perf_counter() - start)
            cpus[name].append(cpu_seconds(client.proc.pid) - cpu)
            sizes[name] = len(line)
            del line
    return {name: (min(times[name]), sizes[name], statistics.median(cpus[name]))
            for name in clients}


def session_small_calls(
    setups: dict[str, list[str]], env: dict[str, str], n: int
) -> dict[str, tuple[float, float]]:
    """The same with one SDK ClientSession per setup, interleaved on one event loop."""
    from contextlib import AsyncExitStack

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    samples: dict[str, list[float]] = {name: [] for name in setups}

    async def go() -> None:
        async with AsyncExitStack() as stack:
            errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 (the stack closes it)
            sessions = {}
            for name, argv in setups.items():
                params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                for _ in range(20):
                    await session.call_tool("small", {"text": "warm"})
                sessions[name] = session
            for i in range(n):
                for name, session in sessions.items():
                    start = time.perf_counter()
                    await session.call_tool("small", {"text": f"hello {i}"})
                    samples[name].append(time.perf_counter() - start)

    anyio.run(go)
    return {name: percentiles(values) for name, values in samples.items()}


def parse_times(size: int, runs: int) -> dict[str, float]:
    """Best time of each way to read the line of a ``size``-byte big_text result."""
    sys.path.insert(0, str(ROOT / "tests" / "servers"))
    from bigserver import numbered_text

    from toolcap.proxy._scan import scan_message

    text = numbered_text(size, "parse")
    # The line as the SDK server sends it: the text, and the same text as structuredContent.
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": text}], "structuredContent": {"result": text},
        "isError": False}}, separators=(",", ":")).encode()
    del text
    ways = {"json.loads": lambda: json.loads(line.decode("utf-8")),
            "scanner": lambda: scan_message(line)}
    try:
        import orjson

        ways["orjson.loads"] = lambda: orjson.loads(line)
    except ImportError:
        pass
    best: dict[str, float] = {}
    for _ in range(runs):
        for name, way in ways.items():
            start = time.perf_counter()
            way()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    return best


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 small calls, 3 big runs")
    parser.add_argument("--big-sizes", default="10MB",
                        help="sizes of the big tool results, comma-separated (default 10MB)")
    parser.add_argument("--big-only", action="store_true",
                        help="only the big results (no small calls, no line reading)")
    parser.add_argument("--baseline", metavar="SRC",
                        help="another toolcap source tree's src/, run as a second proxy in turn")
    parser.add_argument(
        "--http",
        action="store_true",
        help="proxy --listen over HTTP against the upstream over HTTP, and 50 sessions at once",
    )
    args = parser.parse_args()
    store = tempfile.mkdtemp(prefix="toolcap-bench-store-")
    try:
        run(args, store)
    finally:
        shutil.rmtree(store, ignore_errors=True)  # a run stores about 700 MB


def run(args: argparse.Namespace, store: str) -> None:
    big_sizes = [(text.strip(), parse_size(text)) for text in args.big_sizes.split(",")]
    n_small = 200 if args.quick else 300
    n_big = 3 if args.quick else 5
    env = dict(os.environ, TOOLCAP_ARTIFACTS=store)
    config = Path(store) / "toolcap.toml"
    config.write_text('[tools."*"]\nsize_threshold = "32KB"\n')
    env["TOOLCAP_CONFIG"] = str(config)
    if args.http:
        from _bench_http import run as run_http

        run_http(SERVER, TOOLCAP, env, n_small, n_big)
        return

    setups: dict[str, list[str]] = {
        "direct": SERVER,
        "toolcap proxy": [*TOOLCAP, "proxy", "--", *SERVER],
    }
    if args.baseline:
        setups["proxy baseline"] = ["env", f"PYTHONPATH={Path(args.baseline).resolve()}",
                                    *TOOLCAP, "proxy", "--", *SERVER]
    if FASTMCP_PY.exists():
        setups["FastMCP proxy"] = [*FASTMCP, *SERVER]
    else:
        print(f"FastMCP proxy: skipped ({FASTMCP_PY} missing; see this file's docstring)\n")

    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    small: dict[str, tuple[float, float]] = {}
    session: dict[str, tuple[float, float]] = {}
    if not args.big_only:
        small, session = small_runs(setups, env, n_small)

    big: dict[tuple[str, str], tuple[float, int, float]] = {}
    for size_text, size in big_sizes:
        print(f"\n{size_text} tool result, time until the client holds the result"
              f" (best of {n_big}, the setups in turn)")
        clients = {name: LineClient(argv, env) for name, argv in setups.items()}
        found = big_calls(clients, n_big, size)
        for name, client in clients.items():
            client.close()
            big[name, size_text] = found[name]
            seconds, length, cpu = big[name, size_text]
            print(f"  {name:14} {seconds * 1000:9.1f} ms   response line {length:>12,} bytes"
                  f"   processor time {cpu * 1000:7.1f} ms a call (median)")
        print(f"  (load average {os.getloadavg()[0]:.2f})")

    for size_text, size in [] if args.big_only else big_sizes:
        best = parse_times(size, 3)
        base = best["json.loads"]
        print(f"\nReading the {size_text} result line (best of 3): "
              + "   ".join(f"{name} {seconds * 1000:7.1f} ms ({seconds / base:4.2f}x)"
                         for name, seconds in best.items()))

    print("\nRatios (lower is better; goals: small calls <= 1.3x direct,"
          " each big result <= 1.3x upstream)")
    for name in setups:
        if name == "direct":
            continue
        smalls = ""
        if small:
            (p50, p95), (s50, s95) = small[name], session[name]
            (base50, base95), (sbase50, sbase95) = small["direct"], session["direct"]
            smalls = (f"small p50 {p50 / base50:5.2f}x  p95 {p95 / base95:5.2f}x   "
                      f"(SDK client: p50 {s50 / sbase50:5.2f}x  p95 {s95 / sbase95:5.2f}x)   ")
        print(
            f"  {name:14} {smalls}"
            + "  ".join(f"{size_text} {big[name, size_text][0] / big['direct', size_text][0]:5.2f}x"
                        for size_text, _ in big_sizes)
        )
    if "FastMCP proxy" in setups and small:
        t, f = "toolcap proxy", "FastMCP proxy"
        print(
            f"  toolcap vs FastMCP: small p50 {small[t][0] / small[f][0]:5.2f}x  "
            f"p95 {small[t][1] / small[f][1]:5.2f}x   "
            + "  ".join(f"{size_text} {big[t, size_text][0] / big[f, size_text][0]:5.2f}x"
                        for size_text, _ in big_sizes)
        )


def small_runs(setups: dict[str, list[str]], env: dict[str, str], n_small: int
               ) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
    """Small calls with a plain line client, then with SDK sessions: p50 and p95 each."""
    print(f"Small tools/call, plain line client, {n_small} calls after 20 warm-up (interleaved)")
    clients = {name: LineClient(argv, env) for name, argv in setups.items()}
    small = small_calls(clients, n_small)
    for name, client in clients.items():
        client.close()
        p50, p95 = small[name]
        print(f"  {name:14} p50 {ms(p50)}  p95 {ms(p95)}")

    print(f"\nSmall tools/call, SDK ClientSession over stdio, {n_small} calls (interleaved)")
    session = session_small_calls(setups, env, n_small)
    for name in setups:
        p50, p95 = session[name]
        print(f"  {name:14} p50 {ms(p50)}  p95 {ms(p95)}")
    return small, session


if __name__ == "__main__":
    main()
