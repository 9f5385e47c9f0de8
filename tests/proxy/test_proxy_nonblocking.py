"""A Node.js upstream makes the stderr it inherits non-blocking; a client may hand the
proxy non-blocking pipes. Neither may make the proxy lose a line, a notice, or its
upstream: every descriptor is waited on, and the upstream's stderr is its own pipe.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from proxy.proxy_helpers import REF, base_env, proxy_argv, write_config

NOISY = Path(__file__).resolve().parents[1] / "npm" / "servers" / "noisy-server.mjs"
SDK = Path(__file__).resolve().parents[1] / "npm" / "node_modules" / "@modelcontextprotocol" / "sdk"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not SDK.exists(),
    reason="npm test servers not installed: run `npm ci --prefix tests/npm`",
)

CALLS = 5
LINES = 2_000  # about 260 KB of stderr per call: several times a pipe's capacity
RESULT = 100_000  # over the 32 KB threshold: every call is cut and gets a notice


class PipedProxy:
    """`toolcap proxy` on pipes the test makes (and may make non-blocking)."""

    def __init__(self, argv: list[str], env: dict[str, str], *, nonblocking: bool) -> None:
        in_read, self._in = os.pipe()
        self._out, out_write = os.pipe()
        self.err, err_write = os.pipe()
        if nonblocking:  # as a Node.js client, or a Node.js sibling sharing them, would
            for fd in (in_read, out_write, err_write):
                os.set_blocking(fd, False)
        self.proc = subprocess.Popen(argv, stdin=in_read, stdout=out_write, stderr=err_write,
                                     env=env)
        for fd in (in_read, out_write, err_write):
            os.close(fd)
        self._reader = os.fdopen(self._out, "rb")
        self._next = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        os.write(self._in, json.dumps(message).encode() + b"\n")
        while True:
            line = self._reader.readline()
            assert line, "the proxy closed its stdout"
            answer = json.loads(line)
            if answer.get("id") == self._next and "method" not in answer:
                return dict(answer)

    def notify(self, method: str) -> None:
        os.write(self._in, json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")

    def close(self) -> None:
        os.close(self._in)
        self._reader.close()


def read_all(fd: int, into: list[bytes]) -> threading.Thread:
    def run() -> None:
        with os.fdopen(fd, "rb") as stream:
            into.append(stream.read())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@needs_node
@pytest.mark.parametrize("nonblocking", [False, True], ids=["pipes", "non-blocking-pipes"])
def test_a_node_server_bursting_on_a_slow_stderr_loses_no_line_no_notice_no_upstream(
    tmp_path: Path, artifacts: Path, nonblocking: bool
) -> None:
    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    proxy = PipedProxy(proxy_argv("--", "node", str(NOISY)), base_env(artifacts, config),
                       nonblocking=nonblocking)
    init = proxy.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "0"}})
    assert "result" in init
    proxy.notify("notifications/initialized")
    pid = proxy.request("tools/call", {"name": "pid", "arguments": {}})
    server = int(pid["result"]["content"][0]["text"])
    # Nobody reads the proxy's stderr while the server bursts: the pipe is full
    # for every notice the proxy has to write.
    for call in range(CALLS):
        answer = proxy.request("tools/call", {"name": "burst", "arguments": {
            "tag": f"call{call}", "lines": LINES, "size": RESULT}})
        text = answer["result"]["content"][0]["text"]
        assert len(text.encode()) <= 32 * 1024 and REF.search(text), answer
    again = proxy.request("tools/call", {"name": "pid", "arguments": {}})
    assert int(again["result"]["content"][0]["text"]) == server  # never restarted nor killed
    # Now the client drains stderr, and goes away.
    stderr: list[bytes] = []
    drained = read_all(proxy.err, stderr)
    proxy.close()
    assert proxy.proc.wait(timeout=60) == 0
    drained.join(60)
    lines = stderr[0].decode().splitlines()
    for call in range(CALLS):
        tag = f"call{call}"
        got = [line for line in lines if line.startswith(f"{tag} stderr line ")]
        assert got == [f"{tag} stderr line {i} {'x' * 100}" for i in range(LINES)]
    notices = [line for line in lines if re.fullmatch(
        r"burst: sent [\d.]+ KB of 97\.6 KB to the assistant \(size_threshold\)", line)]
    assert len(notices) == CALLS
    assert not [line for line in lines if "failed to relay" in line]
