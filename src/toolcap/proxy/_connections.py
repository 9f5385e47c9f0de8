"""The HTTP connections of ``toolcap proxy --listen``: deadlines, and a cap on how many.

uvicorn waits for ever on a connection whose request never comes whole: a client
that opens connections and sends nothing, or sends a request's head a byte at a
time, holds a file descriptor each until the process has none left, and then
every new client is refused (a few hundred connections under the common limit of
1,024). Here a request's head must come whole within :data:`HEAD_SECONDS` (from
the connection's start, or from the head's first byte), and its body may pause
:data:`BODY_IDLE_SECONDS` at most; past either, the connection is closed. Past
:func:`connection_cap` open connections, the oldest one serving no request (idle
between requests, or still sending its head) is closed to let a new one in: a
flood of idle connections pushes out its own, and a client that sends its
request at once is served. A request that arrives whole in one read, as a small
call's does, sets no timer at all. (WebSocket upgrades are not served: uvicorn would
hand such a connection to a protocol that is not counted here.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "ACCEPT_BATCH", "BODY_IDLE_SECONDS", "HEAD_SECONDS", "GuardedProtocol", "connection_cap",
]

#: Seconds a request's head may take, from the connection's start or the head's first byte.
HEAD_SECONDS = 30.0
#: Seconds a request's body may go without a byte.
BODY_IDLE_SECONDS = 30.0
#: Connections asyncio accepts at once, before any of them is seen (uvicorn's
#: ``backlog``, which asyncio also takes as its count of accepts a turn).
ACCEPT_BATCH = 64
_FALLBACK_CAP = 768  # where the limit cannot be read (no ``resource`` module)

# Where a connection's current request is.
_IDLE, _HEAD, _BODY, _SERVED = range(4)


def connection_cap(max_sessions: int) -> int:
    """How many client connections may be open at once: the process's limit on file
    descriptors less those kept for what is not a connection counted yet (the batches
    just accepted, whose closed descriptors are let go a turn later; each session's
    upstream process and its pipes; the artifact store's files). The limit is not
    raised: upstream processes would inherit it."""
    try:
        import resource
    except ImportError:
        return _FALLBACK_CAP
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 1 << 16
    return max(64, soft - (3 * ACCEPT_BATCH + 4 * max_sessions + 64))


class _Open:
    """The server's open connections: how many, and those serving no request, oldest first."""

    def __init__(self) -> None:
        self.cap = _FALLBACK_CAP
        self.count = 0
        self.unbusy: dict[GuardedProtocol, None] = {}  # a dict keeps the order of insertion


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol, with the deadlines and the cap said above."""

    #: Every connection of the process's one server (set its ``cap`` before serving).
    open_connections = _Open()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = _IDLE
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_for = _IDLE  # the state the deadline was set for
        self._last_byte = 0.0  # the loop's time of the body's latest bytes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        connections = GuardedProtocol.open_connections
        connections.count += 1
        if connections.count > connections.cap and connections.unbusy:
            next(iter(connections.unbusy))._close()
        connections.unbusy[self] = None
        self._arm(_HEAD, HEAD_SECONDS)  # the first request's head, from now

    def connection_lost(self, exc: Exception | None) -> None:
        GuardedProtocol.open_connections.count -= 1
        GuardedProtocol.open_connections.unbusy.pop(self, None)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # What the bytes read so far leave the request waiting for decides the deadline.
        if self._state == _HEAD:
            if self._deadline_for != _HEAD:
                self._arm(_HEAD, HEAD_SECONDS)
        elif self._state == _BODY:
            self._last_byte = self.loop.time()
            if self._deadline_for != _BODY:
                self._arm(_BODY, BODY_IDLE_SECONDS)
        elif self._state == _SERVED and self._deadline is not None:
            self._disarm()

    # httptools' callbacks, as a request is read

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._state = _HEAD

    def on_headers_complete(self) -> None:
        self._state = _BODY
        GuardedProtocol.open_connections.unbusy.pop(self, None)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        if self.cycle is not None and self.cycle.response_complete:
            # Answered before its body came (refused: an unknown session, too large):
            # idle from here, and uvicorn arms no keep-alive timer for it.
            self._state = _IDLE
            GuardedProtocol.open_connections.unbusy[self] = None
            self._arm(_HEAD, HEAD_SECONDS)
        else:
            self._state = _SERVED
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
            return  # closing, or serving a request that came pipelined behind
        GuardedProtocol.open_connections.unbusy[self] = None
        if self._state == _SERVED:
            self._state = _IDLE  # until its next request (uvicorn's keep-alive timer runs)

    # the deadline

    def _arm(self, state: int, seconds: float) -> None:
        self._disarm()
        self._deadline_for = state
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._deadline_for = _IDLE

    def _expired(self) -> None:
        self._deadline = None
        if self._deadline_for == _BODY and self._state == _BODY:
            waited = self.loop.time() - self._last_byte
            if waited < BODY_IDLE_SECONDS:  # bytes came meanwhile: wait from the latest
                self._deadline = self.loop.call_later(BODY_IDLE_SECONDS - waited, self._expired)
                return
        if self._state in (_HEAD, _BODY) or (self._deadline_for == _HEAD and self._state == _IDLE):
            self._close()
        else:
            self._deadline_for = _IDLE

    def _close(self) -> None:
        self._disarm()
        GuardedProtocol.open_connections.unbusy.pop(self, None)
        if not self.transport.is_closing():
            self.transport.close()
