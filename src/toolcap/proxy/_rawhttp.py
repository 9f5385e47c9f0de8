"""A small HTTP/1.1 client on asyncio streams, for the proxy's exchanges with a ``--url`` server.

The proxy's upstream exchanges are few kinds of requests to one origin: a POST
with a JSON body, a GET for an event stream, a DELETE. This client makes them
with keep-alive connections of its own and nothing else between the socket and
the relay, which costs a fraction of a general client's time per request (a
small call's exchange is most of the proxy's own time). It answers to the part
of ``httpx2``'s interface the upstream uses, and raises ``httpx2``'s exceptions
(their causes the socket's), so failures read the same; the upstream takes
``httpx2`` itself where this one does not apply (an HTTP proxy from the
environment). A response's body is read in :mod:`toolcap.proxy._rawresponse`.
"""

from __future__ import annotations

import asyncio
import functools
import re
import ssl
from urllib.parse import urlsplit

from ._rawresponse import Connection, RawResponse, protocol_error, timed

__all__ = ["RawClient", "RawResponse", "Started", "header_safe"]

_MAX_HEAD = 1 << 20  # status line and headers of one response
_MAX_INTERIM = 8  # 1xx heads skipped before the answer
_DIGITS = re.compile(r"[0-9]{1,18}")
_IDLE_KEEP = 8  # idle connections kept open for the next requests


def header_safe(text: str) -> bool:
    """Whether ``text`` can stand in a request's head: ASCII, no line break, no NUL."""
    return text.isascii() and "\r" not in text and "\n" not in text and "\0" not in text


class Started:
    """A request on its way (:meth:`RawClient.start`): its response awaited once, or
    the request given up (:meth:`abandon`)."""

    def __init__(self, client: RawClient, method: str, data: bytes, timeout: float | None,
                 written: Connection | None) -> None:
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
        raise protocol_error("the server closed the connection without an answer")

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
        self._idle: list[Connection] = []

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

    def _idle_connection(self) -> Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.stale():
                return conn
            conn.close()
        return None

    async def _connection(self) -> tuple[Connection, bool]:
        conn = self._idle_connection()
        if conn is not None:
            return conn, True
        import httpx2

        context = _tls_context() if self._tls else None
        try:
            reader, writer = await timed(asyncio.open_connection(
                self._host, self._port, ssl=context, limit=_MAX_HEAD,
                server_hostname=self._host if context else None), self.connect_timeout,
                connect=True)
        except httpx2.TimeoutException:
            raise
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return Connection(reader, writer), False

    async def _response(
        self, conn: Connection, method: str, timeout: float | None, interim: int = 0
    ) -> RawResponse | None:
        """The response's head; None if the connection ended before its first byte.

        Interim answers (1xx, such as 103 Early Hints) are skipped, a few at most."""
        try:
            await conn.writer.drain()
            head = await timed(conn.reader.readuntil(b"\r\n\r\n"), timeout)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise protocol_error("the connection ended inside a response's head") from exc
        except asyncio.LimitOverrunError as exc:
            raise protocol_error("a response's head is over 1 MB") from exc
        except ConnectionError:  # reset or broken before any answer
            return None
        lines = head.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
            raise protocol_error(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
        try:
            status = int(status_line[1])
        except ValueError:
            raise protocol_error(f"a malformed status line: {lines[0][:80]!r}") from None
        if 100 <= status < 200 and status != 101:
            if interim >= _MAX_INTERIM:
                raise protocol_error(f"more than {_MAX_INTERIM} interim answers")
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
                raise protocol_error("a malformed Content-Length")
            length = int(pairs["content-length"])
        return RawResponse(self.release, conn, (method, self._host), status, pairs, length,
                           chunked, timeout)

    def release(self, conn: Connection, reusable: bool) -> None:
        if reusable and not conn.stale() and len(self._idle) < _IDLE_KEEP:
            self._idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One context for every https upstream of the process: loading the system's
    certificates takes tens of milliseconds, on a loop other sessions share."""
    return ssl.create_default_context()

