"""The connections of `proxy --listen`: a request's head has a deadline, its body may not
pause for long, and past the cap the oldest connection serving no request makes room.

A real uvicorn server with the proxy's protocol, on a real socket, in this process
(so that the deadlines can be shortened), with a small application that answers
once it has read the body."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from toolcap.proxy import _connections
from toolcap.proxy._connections import GuardedProtocol

REQUEST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


async def _echo_size(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/early":  # answered before its body is read, as a refusal is
        await send({"type": "http.response.start", "status": 404,
                    "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    # Short, but far longer than a loaded machine may keep a client from its next send.
    monkeypatch.setattr(_connections, "HEAD_SECONDS", 2.0)
    monkeypatch.setattr(_connections, "BODY_IDLE_SECONDS", 3.0)
    monkeypatch.setattr(GuardedProtocol, "open_connections", _connections._Open())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(_echo_size, http=GuardedProtocol, lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(30)


def _connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=20)
    return conn


def _closed_by_server(conn: socket.socket) -> bool:
    """Whether the server closes ``conn`` (within the socket's timeout) without a word."""
    try:
        return conn.recv(4096) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _answer(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data or not data.split(b"\r\n\r\n", 1)[1]:
        piece = conn.recv(4096)
        if not piece:
            break
        data += piece
    return data


def test_a_connection_that_sends_nothing_is_closed_once_the_head_deadline_passes(
        port: int) -> None:
    with _connect(port) as conn:
        assert _closed_by_server(conn)


def test_a_request_head_sent_a_piece_at_a_time_is_cut_off_at_the_deadline(port: int) -> None:
    with _connect(port) as conn:
        conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        assert _closed_by_server(conn)


def test_a_body_that_stops_coming_is_cut_off(port: int) -> None:
    with _connect(port) as conn:
        conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        assert _closed_by_server(conn)


def test_a_body_that_keeps_coming_slowly_is_read_whole(port: int) -> None:
    """The body's deadline is on a pause, not on the whole: 40 bytes over about 4 s,
    a byte each 0.1 s, where a pause of 3 s would end it."""
    with _connect(port) as conn:
        conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n")
        for _ in range(40):
            time.sleep(0.1)
            conn.sendall(b"x")
        assert _answer(conn).endswith(b"\r\n\r\n40")


def test_a_connection_answered_before_its_body_came_is_idle_and_closed_in_time(
        port: int) -> None:
    """A refusal goes out before the body is read; the body comes after. uvicorn arms
    no keep-alive timer then: the head's deadline for a next request closes it."""
    with _connect(port) as conn:
        conn.sendall(b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
        assert _answer_head(conn).startswith(b"HTTP/1.1 404 ")
        conn.sendall(b"0123456789")
        assert _closed_by_server(conn)


def _answer_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and (piece := conn.recv(4096)):
        data += piece
    return data


def test_a_request_sent_whole_is_answered_and_its_connection_kept_for_the_next(
        port: int) -> None:
    with _connect(port) as conn:
        for _ in range(3):
            conn.sendall(REQUEST)
            assert _answer(conn).startswith(b"HTTP/1.1 200 ")


def test_past_the_cap_the_oldest_idle_connection_makes_room_for_a_new_client(
        port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_connections, "HEAD_SECONDS", 60.0)  # only the cap closes them
    GuardedProtocol.open_connections.cap = 5
    idle = [_connect(port) for _ in range(8)]
    try:
        with _connect(port) as client:
            client.sendall(REQUEST)
            assert _answer(client).startswith(b"HTTP/1.1 200 ")
        # The four oldest made room for the four after the fifth.
        assert [_closed_by_server(conn) for conn in idle[:4]] == [True] * 4
        for conn in idle[4:]:
            conn.settimeout(0.2)
        assert not any(_closed_by_server(conn) for conn in idle[4:])
    finally:
        for conn in idle:
            conn.close()


def test_a_connection_serving_a_request_is_never_pushed_out(
        port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_connections, "HEAD_SECONDS", 60.0)
    GuardedProtocol.open_connections.cap = 2
    with _connect(port) as busy:
        # The server says "100 Continue" once the application reads the body: the head
        # has been read by then, and the connection serves a request.
        busy.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                     b"Expect: 100-continue\r\n\r\n")
        assert busy.recv(4096).startswith(b"HTTP/1.1 100 ")
        others = [_connect(port) for _ in range(4)]
        try:
            busy.sendall(b"{}  ")
            assert _answer(busy).endswith(b"\r\n\r\n4")
        finally:
            for conn in others:
                conn.close()
