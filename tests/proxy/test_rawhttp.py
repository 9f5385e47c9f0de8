"""The proxy's own HTTP/1.1 client against real loopback servers that answer in every
way HTTP allows (length, chunks, until close, gzip), reuse or drop connections, or
answer with something that is not HTTP: each body whole, each failure httpx2's kind."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

httpx2 = pytest.importorskip("httpx2")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from proxy.proxy_helpers import loopback_http  # noqa: E402
from toolcap.proxy._httpclient import drain, usable_for  # noqa: E402
from toolcap.proxy._rawhttp import RawClient  # noqa: E402


class _Handler(http.server.BaseHTTPRequestHandler):
    """POST /length, /chunked, /close, /gzip echo the body back as they are named."""

    protocol_version = "HTTP/1.1"
    connections: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).connections.add(id(self.connection))
        kind = self.path.strip("/")
        self.send_response(200)
        self.send_header("x-path", self.path)
        if kind == "chunked":
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for start in range(0, len(body), 7):
                piece = body[start : start + 7]
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\ntrailer: x\r\n\r\n")
        elif kind == "close":
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
        elif kind == "gzip":
            packed = gzip.compress(body)
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)
        else:
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with loopback_http(_Handler) as port:
        yield f"http://127.0.0.1:{port}"


async def _post(client: RawClient, body: bytes) -> tuple[int, bytes]:
    response = await client.request("POST", {"content-type": "application/json"}, body)
    try:
        return response.status_code, b"".join([piece async for piece in response.aiter_bytes()])
    finally:
        await response.aclose()


@settings(max_examples=40, deadline=None)
@given(bodies=st.lists(st.binary(max_size=3000), min_size=1, max_size=4),
       kind=st.sampled_from(["length", "chunked", "close", "gzip"]))
def test_every_body_comes_back_whole_however_it_is_framed(
    origin: str, bodies: list[bytes], kind: str
) -> None:
    async def run() -> list[bytes]:
        client = RawClient(f"{origin}/{kind}", {}, 10.0, 10.0)
        try:
            return [(await _post(client, body))[1] for body in bodies]
        finally:
            await client.aclose()

    assert asyncio.run(run()) == bodies


def test_a_connection_is_kept_for_the_next_request(origin: str) -> None:
    _Handler.connections.clear()

    async def run() -> None:
        client = RawClient(f"{origin}/length", {}, 10.0, 10.0)
        for number in range(5):
            assert await _post(client, b"%d" % number) == (200, b"%d" % number)
        await client.aclose()

    asyncio.run(run())
    assert len(_Handler.connections) == 1


@pytest.fixture
def drops_idle() -> Iterator[str]:
    """A server that answers one request per connection, then closes it without saying so."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        listener.close()


def test_a_kept_connection_the_server_dropped_is_replaced(drops_idle: str) -> None:
    async def run() -> list[tuple[int, bytes]]:
        client = RawClient(drops_idle, {}, 10.0, 10.0)
        try:
            return [await _post(client, b"one"), await _post(client, b"two")]
        finally:
            await client.aclose()

    assert asyncio.run(run()) == [(200, b"one"), (200, b"two")]


def answering_once(answer: bytes, hold: threading.Event | None = None) -> Iterator[str]:
    """A server that reads one request and sends ``answer``, then closes (once ``hold``
    is set, if given: until then it is silent, the connection open)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)
            if hold is not None:
                hold.wait(30)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        listener.close()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", r"not an HTTP/1\.1 response"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nabc", "body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "body"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", "whole body"),
        # int() takes "-1", and a read of -1 bytes reads until the connection ends.
        (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n" + b"x" * 1000, "Content-Length"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\n" + b"x" * 1000,
         "chunk size"),
        # A chunk longer than its size line says, whole in the buffer or not.
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nabcdeXY3\r\nabc\r\n"
         b"0\r\n\r\n", "body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n80000\r\n" + b"y" * 0x80000
         + b"XY0\r\n\r\n", "body"),
        (b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 5\r\n\r\nnot z",
         "not valid gzip"),
    ],
)
def test_an_answer_that_is_not_whole_http_is_a_protocol_error(answer: bytes, said: str) -> None:
    async def run(url: str) -> None:
        await _post(RawClient(url, {}, 10.0, 10.0), b"{}")

    for url in answering_once(answer):
        with pytest.raises(httpx2.RemoteProtocolError, match=said):
            asyncio.run(run(url))


def test_a_refused_connection_is_a_connect_error_caused_by_the_refusal() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    with pytest.raises(httpx2.ConnectError) as failed:
        asyncio.run(_post(RawClient(url, {}, 10.0, 10.0), b"{}"))
    assert isinstance(failed.value.__cause__, ConnectionRefusedError)


def test_it_steps_aside_for_a_proxy_and_for_headers_that_could_split_a_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert usable_for("http://127.0.0.1:9/mcp", {"Authorization": "Bearer x"})
    assert usable_for("https://mcp.example.com/mcp", {})
    assert not usable_for("http://127.0.0.1:9/mcp", {"X-A": "b\r\nX-Injected: 1"})
    assert not usable_for("ftp://127.0.0.1/mcp", {})
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "")
    assert not usable_for("https://mcp.example.com/mcp", {})
    assert usable_for("http://mcp.example.com/mcp", {})


def test_interim_answers_are_skipped_for_the_answer_that_follows() -> None:
    answer = (b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n"
              b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    for url in answering_once(answer):
        assert asyncio.run(_post(RawClient(url, {}, 10.0, 10.0), b"{}")) == (200, b"ok")


def test_a_compressed_body_inflates_in_bounded_pieces() -> None:
    # 64 MB of zeros is a 64 KB gzip body: it must never be inflated in one piece.
    packed = gzip.compress(bytes(64 << 20), compresslevel=9)
    answer = (b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n"
              % len(packed) + packed)

    async def pieces(url: str) -> tuple[int, int]:
        response = await RawClient(url, {}, 10.0, 10.0).request("POST", {}, b"{}")
        try:
            sizes = [len(piece) async for piece in response.aiter_bytes()]
        finally:
            await response.aclose()
        return sum(sizes), max(sizes)

    for url in answering_once(answer):
        total, largest = asyncio.run(pieces(url))
        assert total == 64 << 20 and largest <= 1 << 16


@contextlib.contextmanager
def stalling(answer: bytes) -> Iterator[str]:
    """A server that reads one request, sends ``answer`` and goes silent, the connection
    open, until the test is done."""
    hold = threading.Event()
    try:
        yield from answering_once(answer, hold)
    finally:
        hold.set()


@pytest.mark.parametrize("kind", ["chunked", "length"])
def test_a_body_that_stops_coming_times_out_after_what_came(kind: str) -> None:
    # What arrived is read with no wait; the read that must wait still has its timeout.
    head = (b"transfer-encoding: chunked\r\n\r\n5\r\nab" if kind == "chunked"
            else b"content-length: 5\r\n\r\nab")

    async def run(url: str) -> list[bytes]:
        response = await RawClient(url, {}, 10.0, 0.3).request("POST", {}, b"{}")
        pieces: list[bytes] = []
        try:
            with pytest.raises(httpx2.ReadTimeout):
                async for piece in response.aiter_bytes():
                    pieces.append(piece)
        finally:
            await response.aclose()
        return pieces

    with stalling(b"HTTP/1.1 200 OK\r\n" + head) as url:
        assert asyncio.run(run(url)) == [b"ab"]


def test_the_rest_of_a_body_is_drained_within_its_time_or_given_up() -> None:
    async def run(url: str) -> None:
        response = await RawClient(url, {}, 10.0, 60.0).request("POST", {}, b"{}")
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            assert await anext(chunks) == b"hello"
            with pytest.raises(asyncio.TimeoutError):  # never ends: not read for 60 s
                await drain(chunks, 0.3, response)
        await response.aclose()

    with stalling(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"
                  ) as url:
        asyncio.run(run(url))

    async def whole(client: RawClient) -> None:
        response = await client.request("POST", {}, b"{}")
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            assert await anext(chunks) == b"hello"
            await drain(chunks, 0.3, response)  # all there: read to its end
        await response.aclose()

    with stalling(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n0\r\n\r\n") as url:
        client = RawClient(url, {}, 10.0, 60.0)
        asyncio.run(whole(client))
        assert len(client._idle) == 1  # kept for the next request


class _Noting(_Handler):
    """As :class:`_Handler`, and says each body it has read, once it has read it."""

    bodies: ClassVar[list[bytes]] = []
    read = threading.Event()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        type(self).bodies.append(body)
        type(self).read.set()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_request_started_on_a_kept_connection_is_sent_before_its_answer_is_awaited() -> None:
    async def run(url: str) -> None:
        client = RawClient(url, {}, 10.0, 10.0)
        try:
            assert await _post(client, b"one") == (200, b"one")  # a connection kept
            _Noting.read.clear()
            started = client.start("POST", {"content-type": "application/json"}, b"two")
            # Nothing awaited since: the server has it all the same.
            assert _Noting.read.wait(10) and _Noting.bodies[-1] == b"two"
            response = await started.response()
            assert b"".join([piece async for piece in response.aiter_bytes()]) == b"two"
            await response.aclose()
        finally:
            await client.aclose()

    with loopback_http(_Noting) as port:
        asyncio.run(run(f"http://127.0.0.1:{port}/length"))


def test_a_started_request_given_up_closes_its_connection() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    closed = threading.Event()

    def serve() -> None:  # answers each request of one connection, then notes its end
        conn, _ = listener.accept()
        with conn:
            while data := conn.recv(65536):
                if data.endswith(b"one"):
                    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none")
            closed.set()

    async def run(url: str) -> None:
        client = RawClient(url, {}, 10.0, 10.0)
        await _post(client, b"one")
        started = client.start("POST", {}, b"two")
        started.abandon()
        # While it is still referenced, and before the client itself is closed:
        assert await asyncio.get_running_loop().run_in_executor(None, closed.wait, 10)
        del started
        await client.aclose()

    threading.Thread(target=serve, daemon=True).start()
    with listener:
        asyncio.run(run(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"))


def test_a_request_started_with_no_kept_connection_is_sent_once_awaited(origin: str) -> None:
    async def run() -> tuple[int, bytes]:
        client = RawClient(f"{origin}/chunked", {}, 10.0, 10.0)
        try:
            response = await client.start("POST", {}, b"first").response()
            try:
                return response.status_code, b"".join(
                    [piece async for piece in response.aiter_bytes()])
            finally:
                await response.aclose()
        finally:
            await client.aclose()

    assert asyncio.run(run()) == (200, b"first")
