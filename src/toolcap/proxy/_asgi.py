"""Requests and replies of ``toolcap proxy --listen``, in plain ASGI.

No framework stands between uvicorn and the sessions: a small call's request
is read and its reply sent by these few functions, which is most of what a
framework's routing, middleware and task groups cost per request. A request's
headers are read once into a dict; a reply is one ``send`` of its head and one
of its body; an SSE stream sends what its queue holds at once in one body chunk
(an answer and the stream's end together), and notices a client that went away
as soon as the server does, by one task waiting for the disconnect. A head and
the body sent right after it leave in one socket write (:func:`send_whole`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ._channel import KEEPALIVE, KEEPALIVE_EVENT, Event, sse_event

# Seconds a POST's stream waits for its first event before it watches for the client's
# going away, and a primed one sends its head and priming event alone: a quick answer
# goes out with them in one chunk, and needs no watching.
FIRST_GRACE = 0.05
# The most bytes of waiting events one body chunk takes: a client reading slowly while
# many wait would otherwise have the proxy hold them in several copies at once (the
# events, the chunk, the socket's buffer).
CHUNK_MAX = 1 << 20

__all__ = [
    "BodyBudget", "EventStream", "Receive", "Reply", "Request", "Scope", "Send", "send_events",
    "send_whole",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Request:
    """One HTTP request: its method, path and headers (names lowercase, the first of a
    repeated one), and its body read on demand."""

    __slots__ = ("headers", "method", "path", "receive")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.receive = receive
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            if key not in headers:
                headers[key] = value.decode("latin-1")
        self.headers = headers

    def declared_size(self) -> int | None:
        """The body's size as its Content-Length says; None if it says none (chunked)."""
        declared = self.headers.get("content-length", "")
        return int(declared) if declared.isdigit() and len(declared) <= 18 else None

    async def body(self, limit: int, budget: BodyBudget | None = None) -> bytes | int:
        """The whole body; or the HTTP status refusing it: 413 if it is over ``limit``
        bytes (said by its Content-Length before anything is read, or found while
        reading), 503 if what arrived does not fit in ``budget`` (the bodies being read
        at once, given back once this one is read). Empty if the client went away
        before sending all of it."""
        declared = self.declared_size()
        if declared is not None and declared > limit:
            return 413
        chunks: list[bytes] = []
        size = taken = 0
        try:
            while True:
                message = await self.receive()
                if message["type"] != "http.request":
                    return b""  # the client went away: what it sent is not whole, so not used
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return 413
                if budget is not None:
                    if not budget.take(len(chunk)):
                        return 503
                    taken += len(chunk)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            if budget is not None:
                budget.give(taken)


class BodyBudget:
    """The bytes of request bodies being read at once, all requests together, bounded:
    each body is bounded alone, and many read at once would add up (four of 60 MB took
    a proxy from 77 MB to 503 MB). Counted as they arrive, so that a client must send
    the bytes to hold them. One event loop uses it: no lock."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        """Count ``size`` more bytes in, if they fit; False if they do not."""
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class Reply:
    """A whole HTTP response: ``status``, ``body`` of ``media_type`` and ``headers``."""

    __slots__ = ("body", "headers", "media_type", "status")

    def __init__(self, status: int, body: bytes = b"", *, media_type: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.media_type = media_type
        self.headers = headers or {}

    async def send(self, send: Send) -> None:
        head = [(name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in self.headers.items()]
        if self.media_type is not None:
            head.append((b"content-type", self.media_type.encode("latin-1")))
        if self.status not in (204, 304):
            head.append((b"content-length", str(len(self.body)).encode("ascii")))
        await send_whole(send, {"type": "http.response.start", "status": self.status,
                                "headers": head},
                         {"type": "http.response.body", "body": self.body, "more_body": False})


class _HeldWrites:
    """A transport whose writes are held, to go out as one (:func:`send_whole`)."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        parts, self.parts = self.parts, []
        if parts:
            self.transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:  # what was held goes out first
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def send_whole(send: Send, start: dict[str, Any], body: dict[str, Any]) -> None:
    """Send a response's head, then its (first) body: in one socket write under uvicorn,
    whose ``send`` writes each at once (two writes cost a system call more, and the
    client may wake for the head alone). Elsewhere, two sends as usual."""
    cycle: Any = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None or not callable(getattr(transport, "write", None)):
        await send(start)
        await send(body)
        return
    held = _HeldWrites(transport)
    cycle.transport = held
    try:
        await send(start)
        await send(body)
    finally:
        cycle.transport = transport
        held.flush()


async def send_events(
    send: Send,
    receive: Receive,
    headers: dict[str, str],
    queue: asyncio.Queue[Event | None],
    on_end: Callable[[], None],
    *,
    prime: str | None = None,
    rewrite: Callable[[bytes], bytes] | None = None,
    wait_for_first: bool = False,
) -> None:
    """Send an SSE response of the events read from ``queue`` (None ends it); ``on_end``
    runs once it has ended, or the client has gone.

    ``prime``, an event id, is sent first as an event with no data (the 2025-11-25
    revision's way to give a client a place to resume from before any message).
    ``wait_for_first``: the response's head waits for its first event, so that a
    quick answer and the stream's end go out together (one write of the head, one
    of the body; the end goes alone after an answer of :data:`CHUNK_MAX` or more);
    primed, it waits :data:`FIRST_GRACE` at most, then the priming event goes alone.
    A stream the client reads for what comes later (GET) sends
    its head, and its priming event, at once. A client that went away is noticed
    from :data:`FIRST_GRACE` on (at once on a GET stream).
    """
    loop = asyncio.get_running_loop()
    head = [(b"content-type", b"text/event-stream"),
            *((name.lower().encode("latin-1"), value.encode("latin-1"))
              for name, value in headers.items())]
    priming = b"" if prime is None else b"id: " + prime.encode("ascii") + b"\ndata: \n\n"
    started = False
    watcher: asyncio.Task[None] | None = None
    keepalive: asyncio.TimerHandle

    def watch() -> None:
        nonlocal watcher
        if watcher is None:
            watcher = loop.create_task(_put_none_when_gone(receive, queue))

    def grace_over() -> None:
        nonlocal keepalive
        watch()
        if priming:  # a keep-alive event: it sends the head and the priming event
            queue.put_nowait(KEEPALIVE_EVENT)
        else:
            keepalive = loop.call_later(KEEPALIVE - FIRST_GRACE, queue.put_nowait,
                                        KEEPALIVE_EVENT)

    keepalive = (loop.call_later(FIRST_GRACE, grace_over) if wait_for_first else
                 loop.call_later(KEEPALIVE, queue.put_nowait, KEEPALIVE_EVENT))
    try:
        if not wait_for_first:
            watch()
            started = True
            start = {"type": "http.response.start", "status": 200, "headers": head}
            if priming:
                await send_whole(send, start, {"type": "http.response.body", "more_body": True,
                                               "body": priming})
                priming = b""
            else:
                await send(start)
        ended = False
        while not ended:
            event: Event | None = await queue.get()
            parts: list[bytes] = [priming] if priming else []
            priming = b""
            size = 0
            while True:  # what is there already goes out in the same chunk, up to CHUNK_MAX
                if event is None:
                    ended = True
                    break
                event_id, data = event
                if data or not parts:  # a keep-alive says nothing where an event goes out
                    parts.append(sse_event(event_id, data if rewrite is None or not data
                                           else rewrite(data)))
                    size += len(parts[-1])
                if queue.empty() or size >= CHUNK_MAX:
                    break
                event = queue.get_nowait()
            chunk = {"type": "http.response.body", "body": b"".join(parts),
                     "more_body": not ended}
            del parts
            if started:
                await send(chunk)
            else:
                started = True
                await send_whole(send, {"type": "http.response.start", "status": 200,
                                        "headers": head}, chunk)
            if not ended:
                watch()
                keepalive.cancel()
                keepalive = loop.call_later(KEEPALIVE, queue.put_nowait, KEEPALIVE_EVENT)
    finally:
        keepalive.cancel()
        if watcher is not None:
            watcher.cancel()
        on_end()


async def _put_none_when_gone(receive: Receive, queue: asyncio.Queue[Event | None]) -> None:
    """End the stream read from ``queue`` once the client has gone (or the response
    is complete: then nothing reads the queue any more)."""
    with contextlib.suppress(Exception):
        while (await receive())["type"] != "http.disconnect":
            pass
    queue.put_nowait(None)


class EventStream:
    """An SSE response, sent by :func:`send_events` (``options``: its keywords)."""

    def __init__(self, queue: asyncio.Queue[Event | None], on_end: Callable[[], None],
                 headers: dict[str, str], **options: Any) -> None:
        self.queue, self.on_end, self.headers, self.options = queue, on_end, headers, options

    async def send(self, send: Send, receive: Receive) -> None:
        await send_events(send, receive, self.headers, self.queue, self.on_end, **self.options)
