"""One response of the proxy's HTTP/1.1 client (:mod:`toolcap.proxy._rawhttp`), and
the connection it is read from.

The body is read as it is iterated: chunked, counted by Content-Length, or up to
the connection's end, and inflated from gzip or deflate piece by piece. Every read
that could wait has a deadline, and a read of what has already arrived has none
(a small answer in one piece is read with no timer at all). Failures are
``httpx2``'s exceptions, as the upstream expects of either client.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["Connection", "RawResponse", "protocol_error", "timed"]

T = TypeVar("T")

CHUNK = 1 << 16
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


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

    def __init__(self, release: Callable[[Connection, bool], None], conn: Connection,
                 request: tuple[str, str], status: int, headers: dict[str, str],
                 length: int | None, chunked: bool, read_timeout: float | None) -> None:
        self._release = release  # gives the connection back once the body is read
        self._read_timeout = read_timeout
        self._deadline: float | None = None  # the loop's time by which the body is read
        self._conn: Connection | None = conn
        self.request = _Request(*request)
        self.status_code = status
        self.headers = _Headers(headers)
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
                # In pieces of at most CHUNK: a small body may inflate to gigabytes, and the
                # caller bounds what it holds only piece by piece.
                data = chunk
                while data:
                    try:
                        piece = inflate.decompress(data, CHUNK)
                    except zlib.error as exc:
                        raise protocol_error(f"a body that is not valid {encoding}") from exc
                    data = inflate.unconsumed_tail
                    if piece:
                        yield piece
        if inflate is not None and (rest := inflate.flush(CHUNK)):
            yield rest

    async def _raw(self) -> AsyncGenerator[bytes, None]:
        conn = self._conn
        if conn is None or self._done:
            return
        try:
            if self._chunked:
                while size := await self._chunk_size(conn):
                    if size <= CHUNK and conn.holds(size + 2):  # here whole: read at once
                        data = await conn.reader.readexactly(size)
                        if await conn.reader.readexactly(2) != b"\r\n":  # longer than said
                            raise ValueError("a chunk not followed by CRLF")
                        yield data
                        continue
                    async for data in self._counted(conn, size):
                        yield data
                    if await timed(conn.reader.readexactly(2), self._wait(conn, size=2)) != (
                            b"\r\n"):
                        raise ValueError("a chunk not followed by CRLF")
            elif self._length is not None:
                async for data in self._counted(conn, self._length):
                    yield data
            else:
                while data := await timed(conn.reader.read(CHUNK), self._wait(conn)):
                    yield data
                conn.reusable = False
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise protocol_error(f"a malformed or cut body ({type(exc).__name__})") from exc
        except ConnectionError as exc:
            import httpx2

            raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc
        self._done = True

    def finish_within(self, seconds: float) -> None:
        """Let what is left of the body take ``seconds`` more at most, in all (then
        reading it fails with ReadTimeout). Reads of what has arrived need no timer."""
        self._deadline = asyncio.get_running_loop().time() + seconds

    def _wait(self, conn: Connection, *, size: int = 1, line: bool = False) -> float | None:
        """How long the next read may wait (None: for ever, or it need not)."""
        read = self._read_timeout
        if self._deadline is not None:
            left = max(0.0, self._deadline - asyncio.get_running_loop().time())
            read = left if read is None else min(read, left)
        return conn.wait(read, size=size, line=line)

    async def _chunk_size(self, conn: Connection) -> int:
        """The size of the next chunk of a chunked body (0: the last, its trailers read)."""
        size_line = await timed(conn.reader.readline(), self._wait(conn, line=True))
        if not size_line.endswith(b"\n"):
            raise protocol_error("the connection ended inside a chunked body")
        token = size_line.split(b";", 1)[0].strip()
        if not _HEX.fullmatch(token):  # int() would take "-1", and read(-1) reads to the end
            raise protocol_error(f"a malformed or cut body (chunk size {token[:40]!r})")
        size = int(token, 16)
        if size == 0:
            while (await timed(conn.reader.readline(), self._wait(conn, line=True))).strip():
                pass  # trailers
        return size

    async def _counted(self, conn: Connection, left: int) -> AsyncIterator[bytes]:
        while left:
            data = await timed(conn.reader.read(min(left, CHUNK)), self._wait(conn))
            if not data:
                raise protocol_error("the connection ended before the whole body")
            left -= len(data)
            yield data

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._release(conn, self._done and conn.reusable)


class Connection:
    """One keep-alive connection: its streams, and whether it may carry another request."""

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


def protocol_error(text: str) -> Exception:
    import httpx2

    return httpx2.RemoteProtocolError(text)


def timed(awaitable: Awaitable[T], seconds: float | None, *,
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
