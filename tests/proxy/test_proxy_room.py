"""`toolcap proxy --listen`: what a client has not read is bounded, and nothing is lost.

A client that stops reading a stream while its server goes on sending: over stdio
the proxy's stdout fills and the server waits; over HTTP the proxy holds at most
about ``ROOM_BYTES`` for the session, and the server waits (a stdio server on its
pipe, a ``--url`` server on its stream), until the client reads on, and then gets
every message.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from proxy.proxy_helpers import BIGSERVER, base_env, write_config
from proxy.serve_helpers import Listener
from proxy.test_proxy_http import http_url  # noqa: F401  (a fixture: bigserver over HTTP)

COUNT, SIZE = 1500, 64 * 1024  # 96 MB of log messages for one call
ROOM = 16 << 20


def _post(conn: http.client.HTTPConnection, message: dict[str, object],
          session: str | None = None) -> http.client.HTTPResponse:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
    conn.request("POST", "/mcp", json.dumps(message), headers)
    return conn.getresponse()


def _messages(body: bytes) -> list[dict[str, object]]:
    return [json.loads(line[5:]) for line in body.decode().splitlines()
            if line.startswith("data:") and line[5:].strip()]


def _open_session(listener: Listener) -> tuple[tuple[str, int], str]:
    """A session opened with plain HTTP requests: the proxy's address, and the session id."""
    url = urlsplit(listener.url)
    assert url.hostname is not None and url.port is not None
    setup = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    init = _post(setup, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    session = init.getheader("mcp-session-id")
    init.read()
    assert session
    _post(setup, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).read()
    return (url.hostname, url.port), session


def _peak_rss(pid: int) -> int:
    """The process's peak resident set, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _settled(path: Path, deadline: float) -> int:
    """The count ``path`` holds once it has not moved for two seconds (or at ``deadline``)."""
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = int(path.read_text() or 0) if path.exists() else 0
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since > 2.0:
            break
        time.sleep(0.1)
    return last


@pytest.fixture()
def env(artifacts: Path, tmp_path: Path) -> dict[str, str]:
    # Log messages pass whole: the bound under test is the session's, not a result's.
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", ""))


def _upstreams(url: str) -> dict[str, list[str]]:
    return {"stdio": ["--", sys.executable, str(BIGSERVER)], "url": ["--url", url]}


@pytest.fixture(params=["stdio", "url"])
def listener(request: pytest.FixtureRequest, env: dict[str, str],
             tmp_path: Path) -> Iterator[Listener]:
    upstream = _upstreams(request.getfixturevalue("http_url"))[request.param]
    with Listener(["--listen", "127.0.0.1:0", *upstream], env, tmp_path / "err.log") as served:
        yield served


def test_a_stream_the_client_does_not_read_holds_the_server_not_the_proxy_memory(
    listener: Listener, tmp_path: Path
) -> None:
    where, session = _open_session(listener)
    before = _peak_rss(listener.proc.pid)

    sent = tmp_path / "sent"
    slow = http.client.HTTPConnection(*where, timeout=120)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "chatty", "arguments": {"count": COUNT, "size": SIZE, "path": str(sent)}}}
    response = _post(slow, call, session)  # its head; its body is not read yet

    got_to = _settled(sent, time.monotonic() + 90)
    grew = _peak_rss(listener.proc.pid) - before
    assert 0 < got_to < COUNT, f"the server sent {got_to} of {COUNT} to a client reading none"
    assert grew < 4 * ROOM, f"the proxy grew by {grew >> 20} MB for a client reading nothing"

    messages = _messages(response.read())  # the client reads on: every message arrives
    logs = [m for m in messages if m.get("method") == "notifications/message"]
    assert len(logs) == COUNT
    assert [int(str(m["params"]["data"])[:8]) for m in logs] == list(range(COUNT))  # type: ignore[index]
    (answer,) = [m for m in messages if m.get("id") == 1]
    assert "sent 1500" in json.dumps(answer)


def test_a_client_reading_one_stream_to_its_end_gets_its_answer_while_another_waits_unread(
    listener: Listener, tmp_path: Path
) -> None:
    # What answers no request (these log messages) goes to the newest stream, B's,
    # which the client reads only once A is answered: it must not fill the session.
    where, session = _open_session(listener)

    sent = tmp_path / "sent"
    first = http.client.HTTPConnection(*where, timeout=120)
    answer_a = _post(first, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "chatty", "arguments": {"count": COUNT, "size": SIZE, "path": str(sent)}}},
        session)
    second = http.client.HTTPConnection(*where, timeout=120)
    second.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "block", "arguments": {"token": "unread"}}}),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"})

    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(answer_a.read()), daemon=True)
    reader.start()
    reader.join(120)  # a stalled stream would still get a keep-alive every 15 s
    assert read, f"call A got no answer; the server sent {sent.read_text()} of {COUNT} logs"
    (answer,) = [m for m in _messages(read[0]) if m.get("id") == 1]
    assert "sent 1500" in json.dumps(answer)
