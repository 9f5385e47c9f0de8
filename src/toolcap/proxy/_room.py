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
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Awaitable, Callable

__all__ = ["ROOM_BYTES", "Event", "Room", "StreamQueue"]

#: One SSE event: its id (None: not resumable) and its message; None ends the stream.
Event = tuple[str | None, bytes]

#: The bytes of messages a session holds for its client before it reads no more from
#: its upstream (beside them, each stream's chunk on its way to the socket: about
#: 1 MB, or one message if it is larger; see _asgi.CHUNK_MAX).
ROOM_BYTES = 16 << 20
#: A stream whose client has left this many bytes unread for STALL seconds is stalled:
#: what no request asked for goes to another stream (see _channel.Channel._route).
BEHIND = 1 << 20
STALL = 1.0
#: Seconds between looks at whether a full room has room again.
POLL = 0.05


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
