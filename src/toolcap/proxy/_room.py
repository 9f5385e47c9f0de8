"""What an HTTP session's client has not read yet, bounded.

Over stdio a client that stops reading its stdout stops the proxy writing, and so
the server: its pipe fills and it waits. Over HTTP the messages for a client wait
in the queues of its streams instead, and a client that reads none of them while
its server goes on sending would have the proxy hold everything the server sent
(a demonstration: 1.3 GB of notifications for a call whose stream was not read,
taken in at 190 MB a second). A session's :class:`Room` counts those bytes, and
once they are over :data:`ROOM_BYTES` the session takes nothing more from its
upstream until the client has read some: the thread that reads a stdio server
waits, as on a full pipe, and the exchange reading a ``--url`` server's answer
waits on the loop, without holding up any other session.

What no request asked for (the server's own requests and notifications) has no
stream of its own: a stream whose client has stalled is passed over for it
(:func:`unstalled`), and while no stream is open it waits in a :class:`Backlog`,
which drops the oldest rather than hold the server back.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

__all__ = ["BACKLOG", "BACKLOG_BYTES", "ROOM_BYTES", "Backlog", "Event", "Room", "StreamQueue",
           "unstalled"]

#: One SSE event: its id (None: not resumable) and its message; None ends the stream.
Event = tuple[str | None, bytes]

#: The bytes of messages a session holds for its client before it reads no more from
#: its upstream (beside them, each stream's chunk on its way to the socket: about
#: 1 MB, or one message if it is larger; see _asgi.CHUNK_MAX).
ROOM_BYTES = 16 << 20
#: A stream whose client has left this many bytes unread for STALL seconds is stalled:
#: what no request asked for goes to another stream (see :func:`unstalled`).
BEHIND = 1 << 20
STALL = 1.0
#: Seconds between looks at whether a full room has room again.
POLL = 0.05
#: Messages the server started while the client had no stream open, and their bytes at
#: most; older ones are dropped (a client need not open a stream for them, so they
#: cannot hold the server back: they are not counted in its Room).
BACKLOG = 256
BACKLOG_BYTES = 16 << 20


class Room:
    """The bytes a session holds for its client: the lines on their way to the loop,
    and the events waiting in its streams' queues (each :class:`StreamQueue` counts
    its own; a queue dropped is no longer counted, whatever dropped it)."""

    def __init__(self, limit: int = ROOM_BYTES) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._queues: weakref.WeakSet[StreamQueue] = weakref.WeakSet()
        self._moving = 0  # bytes of lines handed to the loop and not yet routed
        self.closed = False

    def track(self, queue: StreamQueue) -> None:
        with self._lock:
            self._queues.add(queue)

    def moving(self, size: int) -> None:
        """``size`` more (or, negative, fewer) bytes are on their way to the loop."""
        with self._lock:
            self._moving += size

    def used(self) -> int:
        with self._lock:
            return self._moving + sum(queue.size for queue in self._queues)

    def crowded(self) -> bool:
        """Whether more than half of :attr:`limit` is taken."""
        return self.used() > self.limit // 2

    def full(self) -> bool:
        """Whether the client has more than :attr:`limit` bytes to read (never, once closed)."""
        return not self.closed and self.used() > self.limit

    def wait(self, gone: Callable[[], bool]) -> None:
        """Block this thread (never the loop's) while the room is full and ``gone()`` is false."""
        while self.full() and not gone():
            time.sleep(POLL)

    async def then(self, action: Callable[[], Awaitable[None] | None]) -> None:
        """Once the room is no longer full (waiting on the loop), ``action()``, awaited."""
        while self.full():
            await asyncio.sleep(POLL)
        done = action()
        if done is not None:
            await done

    def close(self) -> None:
        """The session has ended: nothing waits for room any more."""
        self.closed = True


class StreamQueue(asyncio.Queue[Event | None]):
    """The events waiting to go out on one stream, their bytes counted (``size``) and
    seen by ``room``."""

    def __init__(self, room: Room | None = None) -> None:
        super().__init__()
        self.size = 0
        self.taken_at = time.monotonic()  # when its stream last took an event
        if room is not None:
            room.track(self)

    def _put(self, item: Event | None) -> None:
        super()._put(item)
        if item is not None:
            self.size += len(item[1])

    def let_go(self) -> None:
        """Drop what is waiting: nothing will read it."""
        self._queue.clear()  # type: ignore[attr-defined]
        self.size = 0

    def _get(self) -> Event | None:
        item = super()._get()
        self.taken_at = time.monotonic()
        if item is not None:
            self.size -= len(item[1])
        return item

    def stalled(self, now: float, room: Room | None) -> bool:
        """Whether its client has left over ``BEHIND`` bytes unread for ``STALL`` seconds,
        or at all while the session's ``room`` is crowded (half full: at the rate a
        server may send, it would be full before a second has passed)."""
        return self.size > BEHIND and (
            now - self.taken_at > STALL or (room is not None and room.crowded()))


class Backlog:
    """What the server started while its client had no stream open: the newest
    ``max_messages`` messages, ``max_bytes`` bytes at most."""

    def __init__(self, max_messages: int = BACKLOG, max_bytes: int = BACKLOG_BYTES) -> None:
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._messages: deque[bytes] = deque()
        self._bytes = 0

    def keep(self, data: bytes) -> None:
        self._messages.append(data)
        self._bytes += len(data)
        while len(self._messages) > self.max_messages or self._bytes > self.max_bytes:
            self._bytes -= len(self._messages.popleft())

    def drain(self, put: Callable[[bytes], None]) -> None:
        """``put`` each message kept, oldest first; none is kept after."""
        while self._messages:
            put(self._messages.popleft())
        self._bytes = 0


class Stream(Protocol):
    """A stream a message may go out on: the queue its connection reads, if any."""

    @property
    def queue(self) -> asyncio.Queue[Event | None] | None: ...


AnyStream = TypeVar("AnyStream", bound=Stream)


def unstalled(streams: Sequence[AnyStream], room: Room | None) -> AnyStream:
    """Of the open ``streams`` (not empty), the one a message no request asked for goes
    out on: the last, unless its client has stalled; then the one read last of those
    whose client has not (or, all stalled, of them all). A client may read one stream
    to its end before it reads another, and what waits in a stream counts against what
    the session may hold (``room``)."""
    chosen = streams[-1]
    now = time.monotonic()
    if _stalled(chosen, now, room):
        chosen = max(reversed(streams), key=lambda stream: (
            not _stalled(stream, now, room), _taken_at(stream)))
    return chosen


def _stalled(stream: Stream, now: float, room: Room | None) -> bool:
    queue = stream.queue
    return isinstance(queue, StreamQueue) and queue.stalled(now, room)


def _taken_at(stream: Stream) -> float:
    queue = stream.queue
    return queue.taken_at if isinstance(queue, StreamQueue) else 0.0
