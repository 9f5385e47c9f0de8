"""Which HTTP stream each message of a session's relay goes out on, and its SSE events.

Streamable HTTP answers a POST's requests on that POST's own SSE stream, and
sends what the server starts itself (its requests and notifications) on the
session's standalone GET stream. The relay never rewrites ids, so a response
is routed by its id to the POST that carried the request, and a progress
notification by its token to the POST of the request it reports on. Any
other message the server starts goes to the GET stream when one is open, else
to the newest POST stream a client is reading (the spec allows both), unless
its client has stalled (then to the stream read last), else it waits, in a
bounded backlog, for the client to open a GET stream (both rules are
:mod:`~toolcap.proxy._room`'s).

Streams are resumable (the spec's "Resumability and Redelivery"): every event
of a session's stream has an id ``STREAM-N``, its stream's number in the
session and its own number in the stream. A stream whose connection drops
stays open: what it is sent meanwhile is kept, and a GET with
``Last-Event-ID`` replays what followed that event on that stream, then goes
on with the stream. Each session keeps its last :data:`REPLAY_EVENTS` events
and at most :data:`REPLAY_BYTES` bytes of them (an event larger than that is
sent but never kept); a resumption that needs an event no longer kept is
refused, never served with a gap. The stateless revision (2026-07-28) has no
resumption: its events carry no id.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

from ._contracts import dumps
from ._room import Backlog, Event, Room, StreamQueue, unstalled

__all__ = [
    "KEEPALIVE", "KEEPALIVE_EVENT", "Channel", "Event", "Exchange", "Replay", "cancel_lines",
    "id_key", "primed", "progress_tokens", "restore_id", "sse_event",
]

log = logging.getLogger("toolcap.proxy")

#: Events each session keeps for resumption, and their bytes at most.
REPLAY_EVENTS = 256
REPLAY_BYTES = 4 << 20
#: Revisions whose clients expect a resumable stream primed with an event of no data.
PRIMED_REVISIONS = frozenset({"2025-11-25"})
KEEPALIVE = 15.0  # seconds between SSE comments on a quiet stream: finds clients gone away

#: Put in a stream's queue when it has been quiet for KEEPALIVE seconds: sent as a comment.
KEEPALIVE_EVENT: Event = (None, b"")


def id_key(request_id: Any) -> str:
    """A key for a JSON-RPC id that keeps 1 and "1" apart."""
    if type(request_id) is int:  # the usual id, keyed as json.dumps would, more cheaply
        return str(request_id)
    return json.dumps(request_id, sort_keys=True)


class Exchange:
    """One response stream: its numbered events, and the connection reading it (if any)."""

    def __init__(self, number: int | None, replay: Replay | None,
                 waiting: set[str] | None = None, room: Room | None = None) -> None:
        self.number = number  # None: its events carry no id and cannot be resumed
        self.waiting = waiting if waiting is not None else set()
        self.tokens: set[str] = set()  # the progress tokens of its requests
        self.sent = 0  # events numbered so far
        self.lost = 0  # the number of the newest event no longer kept
        self.kept = 0  # events of this stream in the replay buffer
        self.finished = False
        self._room = room
        self.queue: asyncio.Queue[Event | None] | None = StreamQueue(room)
        self._replay = replay

    def put(self, data: bytes) -> None:
        event_id = None
        if self.number is not None and self._replay is not None:
            self.sent += 1
            event_id = f"{self.number}-{self.sent}"
            self._replay.keep(self, self.sent, data)
        if self.queue is not None:
            self.queue.put_nowait((event_id, data))

    def finish(self) -> None:
        self.finished = True
        if self.queue is not None:
            self.queue.put_nowait(None)

    def attach(self, backlog: list[Event]) -> asyncio.Queue[Event | None]:
        """A new connection reads this stream from ``backlog`` on (an older one ends)."""
        if self.queue is not None:
            # The new connection has them from the replay; the old one ends now.
            _let_go(self.queue)
            self.queue.put_nowait(None)
        queue: asyncio.Queue[Event | None] = StreamQueue(self._room)
        for event in backlog:
            queue.put_nowait(event)
        if self.finished:
            queue.put_nowait(None)
        self.queue = queue
        return queue


class Replay:
    """A session's last events, bounded in number and bytes, for resumption."""

    def __init__(self, max_events: int = REPLAY_EVENTS, max_bytes: int = REPLAY_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: deque[tuple[Exchange, int, bytes]] = deque()
        self.size = 0

    def __len__(self) -> int:
        return len(self._events)

    def keep(self, exchange: Exchange, number: int, data: bytes) -> None:
        if len(data) > self.max_bytes:
            exchange.lost = number  # sent, but a resumption from before it is refused
            return
        self._events.append((exchange, number, data))
        exchange.kept += 1
        self.size += len(data)
        while len(self._events) > self.max_events or self.size > self.max_bytes:
            old, old_number, old_data = self._events.popleft()
            old.kept -= 1
            old.lost = max(old.lost, old_number)
            self.size -= len(old_data)

    def after(self, exchange: Exchange, number: int) -> list[Event] | None:
        """The events of ``exchange`` after its event ``number``; None if one is gone."""
        if exchange.lost > number or number > exchange.sent:
            return None
        return [(f"{exchange.number}-{n}", data)
                for owner, n, data in self._events if owner is exchange and n > number]


class Channel:
    """The routing of one session; every method runs on the event loop."""

    def __init__(self, *, shared: bool = False, room: Room | None = None) -> None:
        # A shared channel (stateless clients) sends nothing a server starts: it
        # could not tell which client it is for; nor are its streams resumable.
        self.shared = shared
        self.room = room  # counts what waits in the streams' queues
        self._by_id: dict[str, Exchange] = {}
        self._by_token: dict[str, Exchange] = {}  # progress tokens of the requests in flight
        self._posts: list[Exchange] = []
        self._streams: dict[int, Exchange] = {}  # resumable streams by number
        self._numbers = 0
        self._scan_at = 16  # streams known when the finished ones are next forgotten
        self.replay = None if shared else Replay()
        self.standalone: Exchange | None = None
        self._last_get: Exchange | None = None  # the newest GET stream: it may be resumed
        self._backlog = Backlog()  # what no stream was open for
        self.ended = False

    def _new_exchange(self, waiting: set[str] | None = None) -> Exchange:
        if self.replay is None:
            return Exchange(None, None, waiting, self.room)
        if len(self._streams) >= self._scan_at:
            # Amortized: a scan at twice what the last one left costs O(1) a stream.
            self._forget_finished()
            self._scan_at = 2 * len(self._streams) + 16
        self._numbers += 1
        exchange = self._streams[self._numbers] = Exchange(self._numbers, self.replay, waiting,
                                                           self.room)
        return exchange

    def _forget_finished(self) -> None:
        done = [number for number, exchange in self._streams.items()
                if exchange.finished and exchange.kept == 0 and exchange.queue is None]
        for number in done:
            del self._streams[number]

    def open_post(self, request_ids: list[Any], progress_tokens: Sequence[Any] = ()) -> Exchange:
        """A stream that ends once each of ``request_ids`` is answered; the progress
        notifications of its requests (by ``progress_tokens``) go out on it too."""
        keys = {id_key(request_id) for request_id in request_ids}
        exchange = self._new_exchange(keys)
        for key in keys:
            self._by_id[key] = exchange
        for token in progress_tokens:
            key = id_key(token)
            exchange.tokens.add(key)
            self._by_token[key] = exchange
        self._posts.append(exchange)
        if self.ended:
            exchange.finish()
        return exchange

    def open_standalone(self) -> Exchange | None:
        """The GET stream, with what waited for it; None if one is already open."""
        if self.standalone is not None:
            return None
        if self._last_get is not None and self._last_get.queue is None:
            self._last_get.finish()  # a new GET stream: the one left before resumes no more
        exchange = self.standalone = self._last_get = self._new_exchange()
        self._backlog.drain(exchange.put)
        if self.ended:
            exchange.finish()
        return exchange

    def resume(self, last_event_id: str) -> tuple[Exchange, asyncio.Queue[Event | None]] | None:
        """The stream ``last_event_id`` belongs to, read again from the event after it;
        None if that stream is unknown or an event after it is no longer kept."""
        stream, _, number = last_event_id.strip().partition("-")
        if not (stream.isdigit() and number.isdigit()) or self.replay is None:
            return None
        exchange = self._streams.get(int(stream))
        if exchange is None:
            return None
        events = self.replay.after(exchange, int(number))
        if events is None:
            return None
        queue = exchange.attach(events)
        if exchange is self._last_get and not exchange.finished:
            if self.standalone is None:
                self.standalone = exchange  # the GET stream again, with what waited for it
                self._backlog.drain(exchange.put)
            elif self.standalone is not exchange:
                exchange.finish()
        elif exchange in self._posts:
            self._posts.remove(exchange)
            self._posts.append(exchange)  # the newest stream a client reads
        return exchange, queue

    def close(self, exchange: Exchange, queue: asyncio.Queue[Event | None] | None) -> None:
        """The connection reading ``exchange`` through ``queue`` has ended.

        A resumable stream stays, to be resumed; any other is forgotten.
        """
        if exchange.queue is not queue:
            return  # a newer connection reads it now
        if queue is not None:
            _let_go(queue)  # no longer read: what it holds is counted no more
        exchange.queue = None
        if exchange is self.standalone:
            self.standalone = None
            return
        if exchange.number is not None and not exchange.finished:
            return  # what it is sent now is kept for a resumption
        for key in exchange.waiting:
            if self._by_id.get(key) is exchange:
                del self._by_id[key]
        exchange.waiting.clear()
        self._finished(exchange)

    def cancelled(self, request_id: Any) -> None:
        """The client cancelled a request: the relay drops its answer, so stop waiting."""
        key = id_key(request_id)
        exchange = self._by_id.pop(key, None)
        if exchange is not None:
            exchange.waiting.discard(key)
            if not exchange.waiting:
                self._finished(exchange)

    def _finished(self, exchange: Exchange) -> None:
        """Every request of ``exchange`` is answered (or cancelled): it ends."""
        exchange.finish()
        for token in exchange.tokens:
            if self._by_token.get(token) is exchange:
                del self._by_token[token]
        exchange.tokens.clear()
        if exchange.queue is None and exchange in self._posts:
            self._posts.remove(exchange)

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
                self._finished(exchange)
            return
        if isinstance(message, dict) and message.get("method") == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            try:
                owner = self._by_token.get(id_key(token))
            except (TypeError, ValueError):
                owner = None
            if owner is not None:
                owner.put(data)  # on the stream of the request it reports on
                return
        if self.shared:
            log.debug("dropped a server message: stateless clients have no stream for it")
            return
        streams = [post for post in self._posts if post.queue is not None and not post.finished]
        if self.standalone is not None:
            streams.append(self.standalone)
        if streams:
            # The GET stream, else the newest POST stream, unless its client has stalled.
            unstalled(streams, self.room).put(data)
        else:
            self._backlog.keep(data)


def _let_go(queue: asyncio.Queue[Event | None]) -> None:
    if isinstance(queue, StreamQueue):
        queue.let_go()


def sse_event(event_id: str | None, data: bytes) -> bytes:
    """One SSE event carrying ``data`` (one JSON-RPC message); no data: a keep-alive comment."""
    if not data:
        return b": keepalive\n\n"
    head = b"" if event_id is None else b"id: " + event_id.encode("ascii") + b"\n"
    return head + b"event: message\ndata: " + data + b"\n\n"


def primed(revision: str | None) -> bool:
    """Whether a client of ``revision`` expects a stream primed with an event id (named,
    not compared: revisions are a set, and 2026-07-28 dropped resumption)."""
    return revision in PRIMED_REVISIONS


def progress_tokens(messages: list[dict[str, Any]]) -> list[Any]:
    """The progress tokens the requests among ``messages`` ask for."""
    tokens = []
    for message in messages:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) and "id" in message else None
        if isinstance(meta, dict) and "progressToken" in meta:
            tokens.append(meta["progressToken"])
    return tokens


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
