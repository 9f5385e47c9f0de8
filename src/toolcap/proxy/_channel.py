"""Which HTTP stream each message of a session's relay goes out on.

Streamable HTTP answers a POST's requests on that POST's own SSE stream, and
sends what the server starts itself (its requests and notifications) on the
session's standalone GET stream. The relay never rewrites ids, so a response
is routed by its id to the POST that carried the request. A message the
server starts goes to the GET stream when one is open, else to the newest
open POST stream (the spec allows both), else it waits, in a bounded
backlog, for the client to open a GET stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from typing import Any

from ._contracts import dumps

__all__ = ["Channel", "Exchange", "cancel_lines", "id_key", "restore_id"]

log = logging.getLogger("toolcap.proxy")

# Messages the server started while the client had no stream open; older ones are dropped.
BACKLOG = 256


def id_key(request_id: Any) -> str:
    """A key for a JSON-RPC id that keeps 1 and "1" apart."""
    return json.dumps(request_id, sort_keys=True)


class Exchange:
    """One open response stream: a queue of message lines, ``None`` ends it."""

    def __init__(self, waiting: set[str] | None = None) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.waiting = waiting if waiting is not None else set()

    def put(self, data: bytes) -> None:
        self.queue.put_nowait(data)

    def finish(self) -> None:
        self.queue.put_nowait(None)


class Channel:
    """The routing of one session; every method runs on the event loop."""

    def __init__(self, *, shared: bool = False) -> None:
        # A shared channel (stateless clients) sends nothing a server starts: it
        # could not tell which client it is for.
        self.shared = shared
        self._by_id: dict[str, Exchange] = {}
        self._posts: list[Exchange] = []
        self.standalone: Exchange | None = None
        self._backlog: deque[bytes] = deque(maxlen=BACKLOG)
        self.ended = False

    def open_post(self, request_ids: list[Any]) -> Exchange:
        """A stream that ends once each of ``request_ids`` is answered."""
        keys = {id_key(request_id) for request_id in request_ids}
        exchange = Exchange(keys)
        for key in keys:
            self._by_id[key] = exchange
        self._posts.append(exchange)
        if self.ended:
            exchange.finish()
        return exchange

    def open_standalone(self) -> Exchange | None:
        """The GET stream, with what waited for it; None if one is already open."""
        if self.standalone is not None:
            return None
        exchange = self.standalone = Exchange()
        while self._backlog:
            exchange.put(self._backlog.popleft())
        if self.ended:
            exchange.finish()
        return exchange

    def close(self, exchange: Exchange) -> None:
        """Forget a stream the client has left or that has ended."""
        if exchange is self.standalone:
            self.standalone = None
            return
        for key in exchange.waiting:
            if self._by_id.get(key) is exchange:
                del self._by_id[key]
        exchange.waiting.clear()
        if exchange in self._posts:
            self._posts.remove(exchange)

    def cancelled(self, request_id: Any) -> None:
        """The client cancelled a request: the relay drops its answer, so stop waiting."""
        key = id_key(request_id)
        exchange = self._by_id.pop(key, None)
        if exchange is not None:
            exchange.waiting.discard(key)
            if not exchange.waiting:
                exchange.finish()

    def deliver(self, line: bytes) -> None:
        """Route one line the relay wrote for the client."""
        line = line.rstrip(b"\r")
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            log.error("dropped a malformed message for the client (%d bytes)", len(line))
            return
        if isinstance(message, list):
            for item in message:
                self._route(item, dumps(item))
        else:
            self._route(message, line.replace(b"\r", b""))  # raw CRs are only whitespace in JSON

    def end(self) -> None:
        """The relay has ended: end every stream."""
        self.ended = True
        for exchange in [*self._posts, self.standalone]:
            if exchange is not None:
                exchange.finish()

    def _route(self, message: Any, data: bytes) -> None:
        if isinstance(message, dict) and "method" not in message and "id" in message:
            try:
                key = id_key(message["id"])
            except (TypeError, ValueError):
                key = ""
            exchange = self._by_id.pop(key, None)
            if exchange is None:
                log.info("dropped a response no open stream waits for")
                return
            exchange.put(data)
            exchange.waiting.discard(key)
            if not exchange.waiting:
                exchange.finish()
            return
        if self.shared:
            log.debug("dropped a server message: stateless clients have no stream for it")
        elif self.standalone is not None:
            self.standalone.put(data)
        elif self._posts:
            self._posts[-1].put(data)
        else:
            self._backlog.append(data)


def restore_id(data: bytes, originals: dict[str, Any]) -> bytes:
    """A response with the client's own id back in place of the proxy's."""
    message = json.loads(data)
    if isinstance(message, dict) and "id" in message:
        key = id_key(message["id"])
        if key in originals:
            message["id"] = originals[key]
    return dumps(message)


def cancel_lines(waiting: set[str]) -> list[bytes]:
    """A notifications/cancelled for each request (by id key) still unanswered."""
    return [
        dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": json.loads(key), "reason": "the client went away"},
            }
        )
        for key in waiting
    ]
