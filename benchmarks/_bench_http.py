"""`toolcap proxy --listen` over Streamable HTTP, against the upstream reached directly.

Run through ``bench_proxy.py --http``. The upstream is the test server over
Streamable HTTP; the proxy serves HTTP to the client and reaches that same
server with ``--url`` (and, for reference, a server of its own per session
over stdio). The client is plain HTTP (one keep-alive connection per session),
so the figures are the transport's, not an SDK's.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

# The reference row of a bare TCP forwarder (``_tcpforward.py``).
FLOOR = "byte forwarder"
# Seconds between one small call and the next.
PAUSE = 0.002
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(argv: list[str], env: dict[str, str], ready: re.Pattern[str]) -> tuple[Any, str]:
    """Start a server, wait for the stderr line matching ``ready``; return it and the match."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    found: queue.Queue[str | None] = queue.Queue()

    def watch() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = ready.search(line)
            if match:
                found.put(match.group(match.lastindex or 0))
        found.put(None)

    threading.Thread(target=watch, daemon=True).start()
    value = found.get(timeout=60)
    if value is None:
        raise RuntimeError(f"{argv[:4]} did not start")
    return proc, value


def _messages(response: httpx2.Response) -> list[dict[str, Any]]:
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        return body if isinstance(body, list) else [body]
    # An event with no data (a 2025-11-25 stream's priming event) carries no message.
    return [json.loads(line[5:]) for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()]


class Session:
    """One MCP session over plain HTTP."""

    def __init__(self, client: httpx2.Client, url: str) -> None:
        self.client, self.url, self.next_id = client, url, 0
        self.headers = dict(HEADERS)
        reply = self._post(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
        )
        self.headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = "2025-11-25"
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, message: dict[str, Any]) -> httpx2.Response:
        return self.client.post(self.url, content=json.dumps(message), headers=self.headers)

    def call(self, name: str, arguments: dict[str, Any]) -> int:
        """Call a tool; return the size of its response's body."""
        self.next_id += 1
        params = {"name": name, "arguments": arguments}
        reply = self._post(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        )
        assert any(m.get("id") == self.next_id for m in _messages(reply)), reply.text[:200]
        return len(reply.content)

    def close(self) -> None:
        self.client.delete(self.url, headers=self.headers)


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_seconds(pid: int) -> float:
    """The processor time (user and system) ``pid`` has used so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int, key: str = "VmHWM") -> float:
    """The peak resident size of ``pid`` in MB (``key="VmRSS"``: the resident size now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _concurrent(url: str, sessions: int, calls: int) -> list[float]:
    """``sessions`` sessions at once, each making ``calls`` small calls; every latency."""
    latencies: list[float] = []

    async def one(index: int) -> None:
        async with httpx2.AsyncClient(timeout=120.0) as client:
            headers = dict(HEADERS)
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
            reply = await client.post(url, content=json.dumps(init), headers=headers)
            headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await client.post(url, content=json.dumps(note), headers=headers)
            for i in range(calls):
                call = {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "small", "arguments": {"text": f"s{index} c{i}"}},
                }
                start = time.perf_counter()
                await client.post(url, content=json.dumps(call), headers=headers)
                latencies.append(time.perf_counter() - start)
            await client.delete(url, headers=headers)

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return latencies


def run(
    server: list[str], toolcap: list[str], env: dict[str, str], n_small: int, n_big: int
) -> None:
    big = 10 * 1024 * 1024
    port = _free_port()
    upstream, _ = _start([*server, "--http", str(port)], env, re.compile(r"(Uvicorn running)"))
    direct_url = f"http://127.0.0.1:{port}/mcp"
    serving = re.compile(r"serving MCP \(Streamable HTTP\) on (http://\S+)")
    listen = [*toolcap, "proxy", "--listen", "127.0.0.1:0", "--max-sessions", "64"]
    via_url, url_of_url = _start([*listen, "--url", direct_url], env, serving)
    via_stdio, url_of_stdio = _start([*listen, "--", *server], env, serving)
    forwarder, url_of_forwarder = _start(
        [sys.executable, str(Path(__file__).with_name("_tcpforward.py")), str(port)], env,
        re.compile(r"forwarding on (http://\S+)"))
    urls = {"direct (HTTP)": direct_url, "proxy --url": url_of_url, "proxy -- stdio": url_of_stdio,
            FLOOR: url_of_forwarder}
    try:
        clients = {name: httpx2.Client(timeout=300.0) for name in urls}
        sessions = {name: Session(clients[name], url) for name, url in urls.items()}
        for session in sessions.values():
            for _ in range(20):
                session.call("small", {"text": "warm"})
        samples: dict[str, list[float]] = {name: [] for name in urls}
        pids = {"proxy --url": via_url.pid, "proxy -- stdio": via_stdio.pid,
                FLOOR: forwarder.pid}
        cpu_before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
        # A new order each round: a call that follows another setup's call meets the
        # tail of that one's work (its stream's end, its upstream's bookkeeping), so a
        # fixed order put the same setups at a disadvantage each time (0.2-0.4 ms,
        # two copies of one proxy measured against each other under load).
        # And a pause before each call, as an agent's calls come seconds apart: what a
        # call leaves to do after its answer is sent is then done, as it would be.
        order, shuffle = list(sessions.items()), random.Random(0).shuffle
        for i in range(n_small):
            shuffle(order)
            for name, session in order:
                time.sleep(PAUSE)
                start = time.perf_counter()
                session.call("small", {"text": f"hello {i}"})
                samples[name].append(time.perf_counter() - start)
        cpu = {name: (_cpu_seconds(pid) - cpu_before[name]) / n_small for name, pid in pids.items()}
        print(f"\nOver HTTP: small tools/call, {n_small} calls after 20 warm-up "
              "(interleaved, in a random order each round)")
        base = statistics.median(samples["direct (HTTP)"])
        for name, values in samples.items():
            p50, p99 = statistics.median(values), _percentile(values, 0.99)
            ratio = p50 / base
            # The relay's own processor time a call (its upstream apart): steadier under load.
            own = f"  own CPU {cpu[name] * 1000:.2f} ms a call" if name in cpu else ""
            print(f"  {name:15} p50 {p50 * 1000:8.3f} ms  p99 {p99 * 1000:8.3f} ms  "
                  f"{ratio:5.2f}x{own}")

        print(f"  ({FLOOR}: bytes passed on by asyncio, no HTTP parsed; the least any relay "
              "in Python adds on this machine now)")

        print(f"\nOver HTTP: 10 MB tool result, time until the client holds it (median of {n_big})")
        sessions.pop(FLOOR).close()
        clients.pop(FLOOR).close()
        for name, session in sessions.items():
            times, size = [], 0
            for run_index in range(n_big):
                tag = f"{name[:3]}{run_index}{time.time_ns()}"
                start = time.perf_counter()
                size = session.call("big_text", {"size": big, "tag": tag})
                times.append(time.perf_counter() - start)
            print(f"  {name:15} {statistics.median(times) * 1000:9.1f} ms   body {size:>10,} bytes")
        print(f"  proxy peak RSS after them: --url {_peak_rss_mb(via_url.pid):.0f} MB, "
              f"-- stdio {_peak_rss_mb(via_stdio.pid):.0f} MB (its upstream apart)")
        for name, session in sessions.items():
            session.close()
            clients[name].close()
        rss_before = _peak_rss_mb(via_url.pid, "VmRSS")
        print("\n50 concurrent HTTP sessions through `proxy --url`, 20 small calls each")
        start = time.perf_counter()
        latencies = asyncio.run(_concurrent(url_of_url, 50, 20))
        wall = time.perf_counter() - start
        p50, p99 = statistics.median(latencies), _percentile(latencies, 0.99)
        print(
            f"  p50 {p50 * 1000:8.3f} ms  p99 {p99 * 1000:8.3f} ms  ({len(latencies)} calls in "
            f"{wall:.1f} s)   proxy RSS {rss_before:.0f} MB before, "
            f"{_peak_rss_mb(via_url.pid, 'VmRSS'):.0f} MB after, peak "
            f"{_peak_rss_mb(via_url.pid):.0f} MB"
        )
    finally:
        for proc in (via_url, via_stdio, forwarder, upstream):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
