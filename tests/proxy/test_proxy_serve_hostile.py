"""`toolcap proxy --listen` against clients that send what no SDK would: messages that
are not JSON-RPC, large bodies for sessions that do not exist, many large bodies at
once. Each gets a clear refusal, and the proxy goes on serving."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from proxy.proxy_helpers import BIGSERVER, base_env, write_config
from proxy.serve_helpers import Listener, raw

MB = 1 << 20
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}).encode()


@pytest.fixture(scope="module")
def listener(artifacts: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    home = tmp_path_factory.mktemp("hostile")
    env = base_env(artifacts, write_config(home / "toolcap.toml", ""))
    with Listener(["--listen", "127.0.0.1:0", "--", sys.executable, str(BIGSERVER)], env,
                  home / "stderr.log") as served:
        yield served


@pytest.fixture(scope="module")
def session(listener: Listener) -> dict[str, str]:
    """The headers of a session opened and initialized."""
    opened = raw(listener.url, "POST", INITIALIZE)
    assert opened.status_code == 200, opened.text
    headers = {"Mcp-Session-Id": opened.headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-11-25"}
    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert raw(listener.url, "POST", note, headers).status_code == 202
    return headers


def _ping_answered(listener: Listener, headers: dict[str, str], request_id: int) -> bool:
    reply = raw(listener.url, "POST",
                json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode(),
                headers)
    return reply.status_code == 200 and f'"id":{request_id}' in reply.text.replace(" ", "")


@pytest.mark.parametrize(("body", "said"), [
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', 'a request\'s "id" must be a string'),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 'a request\'s "id" must be a string'),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', 'a request\'s "id" must be a string'),
    ('{"id":78,"method":"ping"}', '"jsonrpc" must be "2.0"'),
    ('{"jsonrpc":"2.0","id":79,"method":42}', '"method" must be a string'),
    ('{"jsonrpc":"2.0","id":80,"method":"ping","params":"x"}', '"params" must be an object'),
    ('{"jsonrpc":"2.0","id":81}', 'a response needs one of "result" and "error"'),
    ('{"jsonrpc":"2.0"}', 'a message needs a "method"'),
    ('[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":null,"method":"ping"}]',
     "message 2 of the batch is not JSON-RPC 2.0"),
])
def test_a_message_that_is_not_json_rpc_is_refused_with_400_saying_what_is_wrong(
        listener: Listener, session: dict[str, str], body: str, said: str) -> None:
    # Read by hand: before this was refused, such a message had an answer stream that
    # never ended (keep-alives only), which no read timeout would have cut short.
    head = b"".join(f"{name}: {value}\r\n".encode() for name, value in session.items())
    with _send_head(listener, head + b"Content-Length: %d\r\n" % len(body), body.encode()
                    ) as sock:
        status, reply = _reply(sock)
    assert status.startswith(b"HTTP/1.1 400"), status
    error = json.loads(reply)["error"]
    assert error["code"] == -32600 and said in error["message"], error
    assert _ping_answered(listener, session, 90)  # the session is as it was


@pytest.mark.parametrize("body", [
    '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,'
    '"progress":1}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized","params":null}',
    '{"jsonrpc":"2.0","id":"srv-1","result":{}}',
    '{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"could not parse"}}',
])
def test_notifications_and_answers_to_the_server_pass_as_they_are(
        listener: Listener, session: dict[str, str], body: str) -> None:
    assert raw(listener.url, "POST", body.encode(), session).status_code == 202


def _send_head(listener: Listener, head: bytes, body_start: bytes = b"") -> socket.socket:
    host, port = listener.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    sock = socket.create_connection((host, port), timeout=30)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Accept: application/json, text/event-stream\r\n" + head + b"\r\n" + body_start)
    return sock


def _status(sock: socket.socket) -> bytes:
    answer = b""
    while b"\r\n\r\n" not in answer and (got := sock.recv(4096)):
        answer += got
    return answer.split(b"\r\n", 1)[0]


def _reply(sock: socket.socket) -> tuple[bytes, bytes]:
    """The status line of the answer read from ``sock``, and its body if it has a length."""
    answer = b""
    while b"\r\n\r\n" not in answer and (got := sock.recv(4096)):
        answer += got
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length and (got := sock.recv(4096)):
        body += got
    return head.split(b"\r\n", 1)[0], body


def test_a_large_body_for_an_unknown_session_is_refused_before_it_is_read(
        listener: Listener) -> None:
    """Only its head and 10 bytes of 50 MB are sent: the 404 cannot wait for the rest."""
    with _send_head(listener, b"Mcp-Session-Id: nope\r\nContent-Length: 52428800\r\n",
                    b'{"jsonrpc"') as sock:
        assert _status(sock).startswith(b"HTTP/1.1 404")


def _headers_of(session: dict[str, str]) -> bytes:
    return b"".join(f"{name}: {value}\r\n".encode() for name, value in session.items())


def test_large_bodies_read_at_once_are_bounded_together_and_small_ones_go_on(
        listener: Listener, session: dict[str, str]) -> None:
    large = _headers_of(session) + b"Content-Length: %d\r\n" % (60 * MB)
    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    body = b" " * (60 * MB - len(note)) + note
    # Two bodies of 60 MB, all but their last byte sent: 120 MB held of the 128 MB.
    held = [_send_head(listener, large, body[:-1]) for _ in range(2)]
    try:
        for _ in range(20):  # the proxy reads the two as its loop turns
            with _send_head(listener, large, body[:10 * MB]) as third:
                status = _status(third)
            if status.startswith(b"HTTP/1.1 503"):
                break
        assert status.startswith(b"HTTP/1.1 503"), status
        assert _ping_answered(listener, session, 91)  # small bodies fit beside them
    finally:
        for sock in held:
            sock.close()
    # Once those clients have gone, a body as large is read and relayed.
    for _ in range(10):
        with _send_head(listener, large, body) as sock:
            status = _status(sock)
        if not status.startswith(b"HTTP/1.1 503"):
            break
    assert status.startswith(b"HTTP/1.1 202"), status


def test_slow_bodies_hold_only_what_they_sent_so_small_posts_go_on(
        listener: Listener, session: dict[str, str]) -> None:
    """Two chunked bodies that send a byte and wait: they hold two bytes of the budget,
    not the 64 MB a chunked body may grow to, so nobody else is refused meanwhile."""
    chunked = _headers_of(session) + b"Transfer-Encoding: chunked\r\n"
    slow = [_send_head(listener, chunked, b"1\r\n \r\n") for _ in range(2)]
    try:
        assert _ping_answered(listener, session, 92)
    finally:
        for sock in slow:
            sock.close()


@contextmanager
def _allowed_400_files(artifacts: Path, tmp_path: Path) -> Iterator[tuple[str, int, str]]:
    """A proxy allowed 400 open files (its connection cap is then 64): its host, port
    and URL; its stderr goes to ``tmp_path / "stderr.log"``."""
    resource = pytest.importorskip("resource")
    env = base_env(artifacts, write_config(tmp_path / "toolcap.toml", ""))
    with Listener(["--listen", "127.0.0.1:0", "--", sys.executable, str(BIGSERVER)], env,
                  tmp_path / "stderr.log",
                  preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (400, 400))
                  ) as served:
        host, port = served.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        yield host, int(port), served.url


def test_a_websocket_upgrade_is_not_taken_and_leaves_no_connection_counted(
        artifacts: Path, tmp_path: Path) -> None:
    """uvicorn would hand an upgraded connection to a protocol of its own, never
    counted down: past the cap, every new connection would then push out the oldest
    idle one. 100 upgrade requests against a proxy whose cap is 64, then connection A,
    then B served: A, idle and the oldest, must still be served."""
    with _allowed_400_files(artifacts, tmp_path) as (host, port, _):
        upgrade = (b"GET /mcp HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                   b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        for _ in range(100):
            with socket.create_connection((host, port), timeout=30) as sock:
                sock.sendall(upgrade)
                assert not _status(sock).startswith(b"HTTP/1.1 101")
        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        request = (b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Accept: application/json, text/event-stream\r\n"
                   b"Mcp-Session-Id: none\r\nContent-Length: %d\r\n\r\n" % len(ping) + ping)
        with socket.create_connection((host, port), timeout=30) as first, \
                socket.create_connection((host, port), timeout=30) as second:
            second.sendall(request)
            assert _status(second).startswith(b"HTTP/1.1 404")  # B is in
            first.sendall(request)
            assert _status(first).startswith(b"HTTP/1.1 404")  # and A was not pushed out


def test_idle_connections_past_the_descriptor_limit_neither_lock_clients_out_nor_last(
        artifacts: Path, tmp_path: Path) -> None:
    """600 connections that send a partial head, against a proxy allowed 400 file
    descriptors: the oldest make room for the newest, a real client is served
    meanwhile, the deadline closes the rest, and no accept ever fails."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 800:
        pytest.skip("this test needs 800 file descriptors of its own")
    if soft != resource.RLIM_INFINITY and soft < 800:
        resource.setrlimit(resource.RLIMIT_NOFILE, (800, hard))
    with _allowed_400_files(artifacts, tmp_path) as (host, port, url):
        idle = []
        try:
            for _ in range(600):
                sock = socket.create_connection((host, port), timeout=30)
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000)
                idle.append(sock)
            opened = raw(url, "POST", INITIALIZE)
            assert opened.status_code == 200, opened.text
        finally:
            for sock in idle:
                sock.close()
    assert "Too many open files" not in (tmp_path / "stderr.log").read_text()
