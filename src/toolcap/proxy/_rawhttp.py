"""A small HTTP/1.1 client on asyncio streams, for the proxy's exchanges with a ``--url`` server.

The proxy's upstream exchanges are few kinds of requests to one origin: a POST
with a JSON body, a GET for an event stream, a DELETE. This client makes them
with keep-alive connections of its own and nothing else between the socket and
the relay, which costs a fraction of a general client's time per request (a
small call's exchange is most of the proxy's own time). It answers to the part
of ``httpx2``'s interface the upstream uses, and raises ``httpx2``'s exceptions
(their causes the socket's), so failures read the same; the upstream takes
``httpx2`` itself where this one does not apply (an HTTP proxy from the
environment).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import ssl
import sys
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import Any, TypeVar
from urllib.parse import urlsplit

__all__ = ["RawClient", "RawResponse", "Started", "header_safe"]

T = TypeVar("T")

_CHUNK = 1 << 16
_MAX_HEAD = 1 << 20  # status line and headers of one response
_MAX_INTERIM = 8  # 1xx heads skipped before the answer
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_IDLE_KEEP = 8  # idle connections kept open for the next requests


def header_safe(text: str) -> bool:
    """Whether ``text`` can stand in a request's head: ASCII, no line break, no NUL."""
    return text.isascii() and "\r" not in text and "\n" not in text and "\0" not in text


class _Headers:
    """Response headers, read case-insensitively (the last of a repeated one wins)."""

    def __init__(self, pairs: dict[str, str]) -> None:
        self._pairs = pairs

    def get(self, name: str, default: Any = None) -> Any:
        return self._pairs.get(name.lower(), default)


class _Url:
    def __init__(self, host: str) -> None:
        self.host = host


class _Request:
    def __init__(self, method: str, host: str) -> None:
        self.method = method
        self.url = _Url(host)


class RawResponse:
    """One response: status, headers, and the body read as it is iterated."""

    def __init__(self, client: RawClient, conn: _Conn, request: _Request, status: int,
                 headers: _Headers, length: int | None, chunked: bool,
                 read_timeout: float | None) -> None:
        self._client = client
        self._read_timeout = read_timeout
        self._deadline: float | None = None  # the loop's time by which the body is read
        self._conn: _Conn | None = conn
        self.request = request
        self.status_code = status
        self.headers = headers
        self._length = length
        self._chunked = chunked
        self._done = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body, decoded from gzip or deflate if it was sent so."""
        encoding = (self.headers.get("content-encoding") or "").strip().lower()
        inflate = (zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else
                   zlib.decompressobj() if encoding == "deflate" else None)
        async with contextlib.aclosing(self._raw()) as raw:
            async for chunk in raw:
                if inflate is None:
                    yield chunk
                    continue
                # In pieces of at most _CHUNK: a small body may inflate to gigabytes, and the
                # caller bounds what it holds only piece by piece.
                data = chunk
                while data:
                    try:
                        piece = inflate.decompress(data, _CHUNK)
                    except zlib.error as exc:
                        raise _protocol(f"a body that is not valid {encoding}") from exc
                    data = inflate.unconsumed_tail
                    if piece:
                        yield piece
        if inflate is not None and (rest := inflate.flush(_CHUNK)):
            yield rest

    async def _raw(self) -> AsyncGenerator[bytes, None]:
        conn = self._conn
        if conn is None or self._done:
            return
        try:
            if self._chunked:
                while size := await self._chunk_size(conn):
                    if size <= _CHUNK and conn.holds(size + 2):  # here whole: read at once
                        data = await conn.reader.readexactly(size)
                        if await conn.reader.readexactly(2) != b"\r\n":  # longer than said
                            raise ValueError("a chunk not followed by CRLF")
                        yield data
                        continue
                    async for data in self._counted(conn, size):
                        yield data
                    if await _timed(conn.reader.readexactly(2), self._wait(conn, size=2)) != (
                            b"\r\n"):
                        raise ValueError("a chunk not followed by CRLF")
            elif self._length is not None:
                async for data in self._counted(conn, self._length):
                    yield data
            else:
                while data := await _timed(conn.reader.read(_CHUNK), self._wait(conn)):
                    yield data
                conn.reusable = False
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise _protocol(f"a malformed or cut body ({type(exc).__name__})") from exc
        except ConnectionError as exc:
            import httpx2

            raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc
        self._done = True

    def finish_within(self, seconds: float) -> None:
        """Let what is left of the body take ``seconds`` more at most, in all (then
        reading it fails with ReadTimeout). Reads of what has arrived need no timer."""
        self._deadline = asyncio.get_running_loop().time() + seconds

    def _wait(self, conn: _Conn, *, size: int = 1, line: bool = False) -> float | None:
        """How long the next read may wait (None: for ever, or it need not)."""
        read = self._read_timeout
        if self._deadline is not None:
            left = max(0.0, self._deadline - asyncio.get_running_loop().time())
            read = left if read is None else min(read, left)
        return conn.wait(read, size=size, line=line)

    async def _chunk_size(self, conn: _Conn) -> int:
        """The size of the next chunk of a chunked body (0: the last, its trailers read)."""
        size_line = await _timed(conn.reader.readline(), self._wait(conn, line=True))
        if not size_line.endswith(b"\n"):
            raise _protocol("the connection ended inside a chunked body")
        token = size_line.split(b";", 1)[0].strip()
        if not _HEX.fullmatch(token):  # int() would take "-1", and read(-1) reads to the end
            raise _protocol(f"a malformed or cut body (chunk size {token[:40]!r})")
        size = int(token, 16)
        if size == 0:
            while (await _timed(conn.reader.readline(), self._wait(conn, line=True))).strip():
                pass  # trailers
        return size

    async def _counted(self, conn: _Conn, left: int) -> AsyncIterator[bytes]:
        while left:
            data = await _timed(conn.reader.read(min(left, _CHUNK)), self._wait(conn))
            if not data:
                raise _protocol("the connection ended before the whole body")
            left -= len(data)
            yield data

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client.release(conn, reusable=self._done and conn.reusable)


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reusable = True

    def stale(self) -> bool:
        return self.reader.at_eof() or self.writer.is_closing()

    def wait(self, timeout: float | None, *, size: int = 1, line: bool = False) -> float | None:
        """``timeout`` for the next read (of a line, or of ``size`` bytes), or None when
        what is read already holds it: a read that cannot wait needs no timer, and a
        small answer that came in one piece is read with none after its head."""
        buffered = getattr(self.reader, "_buffer", None)  # asyncio's, read in place
        if buffered is None or self.reader.exception() is not None:
            return timeout
        ready = b"\n" in buffered if line else len(buffered) >= size
        return None if ready else timeout

    def holds(self, size: int) -> bool:
        """Whether ``size`` bytes have arrived and wait to be read (reading them cannot wait)."""
        return self.wait(1.0, size=size) is None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Started:
    """A request on its way (:meth:`RawClient.start`): its response awaited once, or
    the request given up (:meth:`abandon`)."""

    def __init__(self, client: RawClient, method: str, data: bytes, timeout: float | None,
                 written: _Conn | None) -> None:
        self._client = client
        self._method = method
        self._data = data
        self._timeout = timeout
        self._written = written  # the idle connection it went out on at once, if any

    async def response(self) -> RawResponse:
        """The response once its head has arrived. A connection found closed by the
        server is replaced once."""
        client = self._client
        for attempt in (0, 1):
            conn, self._written = self._written, None
            unsent, reused = conn is None, True
            if conn is None:
                conn, reused = await client._connection()
            try:
                if unsent:
                    conn.writer.write(self._data)
                response = await client._response(conn, self._method, self._timeout)
            except BaseException:
                conn.close()
                raise
            if response is not None:
                return response
            conn.close()
            if not reused or attempt:
                break
            # The server had closed the idle connection: the request goes on a fresh one.
        raise _protocol("the server closed the connection without an answer")

    def abandon(self) -> None:
        """The response will not be awaited: the connection it went out on is closed."""
        conn, self._written = self._written, None
        if conn is not None:
            conn.close()


class RawClient:
    """Requests to one origin over keep-alive HTTP/1.1 connections."""

    def __init__(self, url: str, headers: dict[str, str], connect_timeout: float,
                 read_timeout: float) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        default_port = parts.port is None or parts.port == (443 if self._tls else 80)
        shown = f"[{self._host}]" if ":" in self._host else self._host
        self._authority = shown if default_port else f"{shown}:{self._port}"
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {name.lower(): value for name, value in headers.items()}
        self._headers_safe = all(header_safe(name) and header_safe(value)
                                 for name, value in self._headers.items())  # checked once
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._idle: list[_Conn] = []

    async def request(self, method: str, headers: dict[str, str], body: bytes = b"",
                      read_timeout: float | None = -1.0) -> RawResponse:
        """Send a request; the response once its head has arrived (its body is read
        by iterating it). A connection found closed by the server is replaced once."""
        return await self.start(method, headers, body, read_timeout).response()

    def start(self, method: str, headers: dict[str, str], body: bytes = b"",
              read_timeout: float | None = -1.0) -> Started:
        """A request, written here and now on an idle connection if one is open (else
        once its :meth:`Started.response` is awaited): the server is at work on it while
        the caller goes on. Raises httpx2's LocalProtocolError for a header that could
        break the request apart."""
        merged = {**self._headers, **headers}
        if not (self._headers_safe and all(header_safe(name) and header_safe(value)
                                           for name, value in headers.items())):
            import httpx2

            raise httpx2.LocalProtocolError("a header with a line break or a non-ASCII byte")
        head = [f"{method} {self._target} HTTP/1.1", f"host: {self._authority}",
                "accept-encoding: identity"]
        head += [f"{name}: {value}" for name, value in merged.items()
                 if name not in ("host", "content-length", "accept-encoding")]
        if body or method == "POST":
            head.append(f"content-length: {len(body)}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        timeout = self.read_timeout if read_timeout == -1.0 else read_timeout
        written = self._idle_connection()
        if written is not None:
            written.writer.write(data)
        return Started(self, method, data, timeout, written)

    def _idle_connection(self) -> _Conn | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.stale():
                return conn
            conn.close()
        return None

    async def _connection(self) -> tuple[_Conn, bool]:
        conn = self._idle_connection()
        if conn is not None:
            return conn, True
        import httpx2

        context = _tls_context() if self._tls else None
        try:
            reader, writer = await _timed(asyncio.open_connection(
                self._host, self._port, ssl=context, limit=_MAX_HEAD,
                server_hostname=self._host if context else None), self.connect_timeout,
                connect=True)
        except httpx2.TimeoutException:
            raise
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return _Conn(reader, writer), False

    async def _response(
        self, conn: _Conn, method: str, timeout: float | None, interim: int = 0
    ) -> RawResponse | None:
        """The response's head; None if the connection ended before its first byte.

        Interim answers (1xx, such as 103 Early Hints) are skipped, a few at most."""
        try:
            await conn.writer.drain()
            head = await _timed(conn.reader.readuntil(b"\r\n\r\n"), timeout)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise _protocol("the connection ended inside a response's head") from exc
        except asyncio.LimitOverrunError as exc:
            raise _protocol("a response's head is over 1 MB") from exc
        except ConnectionError:  # reset or broken before any answer
            return None
        lines = head.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
            raise _protocol(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
        try:
            status = int(status_line[1])
        except ValueError:
            raise _protocol(f"a malformed status line: {lines[0][:80]!r}") from None
        if 100 <= status < 200 and status != 101:
            if interim >= _MAX_INTERIM:
                raise _protocol(f"more than {_MAX_INTERIM} interim answers")
            return await self._response(conn, method, timeout, interim + 1)
        pairs: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                pairs[name.strip().lower()] = value.strip()
        if status_line[0] == "HTTP/1.0" or "close" in pairs.get("connection", "").lower():
            conn.reusable = False
        chunked = "chunked" in pairs.get("transfer-encoding", "").lower()
        length: int | None = None
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            length = 0
        elif not chunked and "content-length" in pairs:
            if not _DIGITS.fullmatch(pairs["content-length"]):  # "-1" would read to the end
                raise _protocol("a malformed Content-Length")
            length = int(pairs["content-length"])
        return RawResponse(self, conn, _Request(method, self._host), status, _Headers(pairs),
                           length, chunked, timeout)

    def release(self, conn: _Conn, *, reusable: bool) -> None:
        if reusable and not conn.stale() and len(self._idle) < _IDLE_KEEP:
            self._idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()


def _protocol(text: str) -> Exception:
    import httpx2

    return httpx2.RemoteProtocolError(text)


def _timed(awaitable: Awaitable[T], seconds: float | None, *,
           connect: bool = False) -> Awaitable[T]:
    """``awaitable``, failing with httpx2's timeout after ``seconds`` (None: never, and
    it is awaited as it is, with no coroutine around it)."""
    return awaitable if seconds is None else _within(awaitable, seconds, connect)


async def _within(awaitable: Awaitable[T], seconds: float, connect: bool) -> T:
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(seconds):
                return await awaitable
        return await asyncio.wait_for(awaitable, seconds)
    except (TimeoutError, asyncio.TimeoutError):
        import httpx2

        raise (httpx2.ConnectTimeout if connect else httpx2.ReadTimeout)(
            f"no answer within {seconds:g} s") from None


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One context for every https upstream of the process: loading the system's
    certificates takes tens of milliseconds, on a loop other sessions share."""
    return ssl.create_default_context()

