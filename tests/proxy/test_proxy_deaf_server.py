"""A server that stops reading its stdin while the client still writes: the proxy's
write to it waits, and the client going (or SIGTERM, or the end of an HTTP session)
still ends the proxy's relay and the server, instead of leaving both behind; a client
that only closed its stdin, and still reads, still gets its answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.proxy_helpers import SERVERS, base_env, proxy_argv, wait_pid_gone, write_config
from toolcap.proxy._io import FdWriter, WriterClosed

DEAF = SERVERS / "deaf_server.py"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"}}}
# More than the pipe to the server holds (1 MB at most here), so the write waits.
BIG = json.dumps({"jsonrpc": "2.0", "method": "notifications/big",
                  "params": {"x": "y" * (3 << 20)}}).encode() + b"\n"


def start_stuck(tmp_path: Path, *deaf_for: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A proxy in front of the deaf server, initialized, its write of BIG to it stuck."""
    config = write_config(tmp_path / "toolcap.toml", "")
    pid_file = tmp_path / "pid"
    proxy = subprocess.Popen(
        proxy_argv("--", sys.executable, str(DEAF), str(pid_file), *deaf_for),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=base_env(tmp_path / "artifacts", config))
    assert proxy.stdin is not None and proxy.stdout is not None
    try:
        proxy.stdin.write(json.dumps(INIT).encode() + b"\n")
        proxy.stdin.flush()
        assert json.loads(proxy.stdout.readline())["id"] == 1
        # The proxy reads it all from us, and is stuck passing it on.
        proxy.stdin.write(BIG)
        proxy.stdin.flush()
        yield proxy, int(pid_file.read_text())
    finally:
        if proxy.poll() is None:
            proxy.kill()
        proxy.wait(30)


@pytest.fixture
def stuck(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    yield from start_stuck(tmp_path)


def test_a_client_that_goes_while_a_write_to_the_server_is_stuck_ends_both(
    stuck: tuple[subprocess.Popen[bytes], int],
) -> None:
    proxy, server = stuck
    assert proxy.stdin is not None and proxy.stdout is not None
    proxy.stdin.close()
    proxy.stdout.close()  # it reads no answer either: it has gone
    assert proxy.wait(timeout=60) == 0
    assert wait_pid_gone(server, 30)


def test_a_client_that_only_closed_its_stdin_still_gets_its_answers(tmp_path: Path) -> None:
    # The server reads again after 3 s: the call sent after the stuck message, and
    # the answer to it, still go through although the client's stdin is closed.
    for proxy, _ in start_stuck(tmp_path, "3"):
        assert proxy.stdin is not None and proxy.stdout is not None
        proxy.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "t", "arguments": {}}}).encode()
                          + b"\n")
        proxy.stdin.close()
        answer = json.loads(proxy.stdout.readline())
        assert answer["id"] == 2 and "result" in answer


def test_sigterm_while_a_write_to_the_server_is_stuck_ends_both(
    stuck: tuple[subprocess.Popen[bytes], int],
) -> None:
    proxy, server = stuck
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait(timeout=60) is not None
    assert wait_pid_gone(server, 30)


def test_closing_a_writer_ends_its_write_that_waits_for_a_reader_that_never_reads() -> None:
    read_end, write_end = os.pipe()
    writer = FdWriter(write_end, cancelable=True)
    outcome: list[BaseException | None] = []
    waiting = threading.Event()

    def write() -> None:
        try:
            writer.write_line(b"x" * (4 << 20))
            outcome.append(None)
        except WriterClosed as exc:
            outcome.append(exc)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    # It waits once the pipe is full: watch for it, as the relay does.
    deadline = time.monotonic() + 60
    while writer.waiting_since is None and thread.is_alive() and time.monotonic() < deadline:
        waiting.wait(0.01)
    assert writer.waiting_since is not None
    writer.close()
    thread.join(30)
    assert not thread.is_alive() and isinstance(outcome[0], WriterClosed)
    assert writer.waiting_since is None
    with pytest.raises(WriterClosed):
        writer.write_line(b"after")
    writer.close()  # twice is harmless
    os.close(read_end)


def test_an_http_session_ended_while_a_write_to_its_server_is_stuck_ends_the_server(
    tmp_path: Path,
) -> None:
    from proxy.serve_helpers import Listener, raw

    config = write_config(tmp_path / "toolcap.toml", "")
    pid_file = tmp_path / "pid"
    args = ["--listen", "127.0.0.1:0", "--", sys.executable, str(DEAF), str(pid_file)]
    with Listener(args, base_env(tmp_path / "artifacts", config), tmp_path / "err.log") as listener:
        opened = raw(listener.url, "POST", json.dumps(INIT).encode())
        assert opened.status_code == 200
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        server = int(pid_file.read_text())
        assert raw(listener.url, "POST", BIG, session).status_code == 202
        assert raw(listener.url, "DELETE", None, session).status_code in (200, 204)
        assert wait_pid_gone(server, 30)


def test_a_writer_whose_reader_went_still_closes_its_descriptor() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    writer = FdWriter(write_end)
    with pytest.raises(WriterClosed):
        writer.write_line(b"nobody reads this")
    writer.close()
    with pytest.raises(OSError):
        os.fstat(write_end)  # closed, not leaked
