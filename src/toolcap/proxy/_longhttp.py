"""An HTTP answer over ``max_line_size``: kept like a stdio line that long, never held.

Over stdio, the reader thread hands a line past the limit to the relay's
long-line handler (``_unread``), which streams it to the store as it is read.
An ``--url`` upstream reads on an event loop, and the handler blocks (it writes
to a store that may be remote), so the handler runs on a thread of its own and
the loop feeds it the answer's bytes through a queue of at most :data:`DEPTH`
chunks: a reader faster than the store waits for room, so memory holds a few
chunks, whatever the answer's length. The same handler, the same note, the
same artifact as over stdio. An answer cut short (the connection dropped, the
request cancelled) ends its message with :class:`~toolcap.proxy._long.MessageCutShort`,
and nothing of it is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from ._contracts import OnLongLine
from ._long import Ends, MessageCutShort, response_ids

__all__ = ["DEPTH", "StreamedMessage"]

#: Chunks of an answer queued at most between the loop and the thread that keeps it.
DEPTH = 4


class StreamedMessage:
    """One long answer: :meth:`put` on the event loop, :meth:`chunks` on the keeping thread.

    ``idle`` bounds the wait for the next chunk on the thread's side (the loop's side
    always ends the message, but a deadline costs nothing and rules out a stuck thread).
    """

    def __init__(self, limit: int, idle: float) -> None:
        self.limit = limit
        #: The first and last bytes fed (to learn which request it answered).
        self.ends = Ends()
        self._idle = idle
        self._loop = asyncio.get_running_loop()
        self._queue: deque[bytes | bytearray] = deque()
        self._lock = threading.Condition()
        self._end: str | None = None  # None while open; "" once whole; else why it was cut
        self._gone = False  # the thread takes no more chunks
        self._room = asyncio.Event()
        self._done: Future[None] = Future()
        self._answers = False
        #: Why the keeping thread saw the message cut short (None: it did not), in which
        #: case its handler kept nothing and answered no call.
        self.cut_short: str | None = None
        #: The most chunks ever queued at once (at most DEPTH: what the tests check).
        self.most_queued = 0

    # -- the event loop's side ---------------------------------------------------

    def start(self, keep: OnLongLine | None) -> None:
        """Keep the message with ``keep`` (the relay's long-line handler) on a new thread;
        with none, it is read and dropped, and it answers nothing."""
        self._answers = keep is not None
        # Running, so that a cancelled wait in kept() cannot cancel it: the thread's
        # set_result would then raise.
        self._done.set_running_or_notify_cancel()

        def run() -> None:
            try:
                if keep is not None:
                    keep(self)
                else:
                    for _ in self.chunks():
                        pass
            except MessageCutShort:
                pass  # nothing kept, no call answered (cut_short says why)
            finally:
                with self._lock:
                    self._gone = True
                    self._queue.clear()
                self._wake_loop()
                self._done.set_result(None)

        threading.Thread(target=run, name="toolcap-long-answer", daemon=True).start()

    async def put(self, chunk: bytes | bytearray) -> None:
        """Queue the next bytes of the message, waiting while the queue is full."""
        if not chunk:
            return
        self.ends.add(chunk)
        while True:
            with self._lock:
                if self._gone:
                    return  # the handler has finished: what is left is skipped
                if len(self._queue) < DEPTH:
                    self._queue.append(chunk)
                    self.most_queued = max(self.most_queued, len(self._queue))
                    self._lock.notify()
                    return
                self._room.clear()
            await self._room.wait()

    def finish(self, cut_short: str | None = None) -> None:
        """The message ended: whole, or ``cut_short`` (why); the first call counts."""
        with self._lock:
            if self._end is None:
                self._end = "" if cut_short is None else cut_short or "cut short"
            self._lock.notify()

    async def kept(self) -> list[Any]:
        """Wait for the handler to finish; the id of the request the message answered
        (and the handler answered with its note): none for a message that is not an
        answer (a request from the server), or that the handler saw cut short."""
        await asyncio.wrap_future(self._done)
        if not self._answers or self.cut_short is not None:
            return []
        return [one for one in response_ids(self.ends.head, self.ends.tail) if one is not None]

    # -- the keeping thread's side (a LongMessage) ---------------------------------

    def chunks(self) -> Iterator[bytes | bytearray]:
        while True:
            with self._lock:
                while not self._queue and self._end is None:
                    if not self._lock.wait(self._idle):
                        self._end = f"no bytes of the answer for {self._idle:g} s"
                if self._queue:
                    chunk = self._queue.popleft()
                elif self._end:
                    self.cut_short = self._end  # the handler keeps nothing of it
                    raise MessageCutShort(self._end)
                else:
                    return
            self._wake_loop()
            yield chunk

    def _wake_loop(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has ended: nobody waits
            self._loop.call_soon_threadsafe(self._room.set)
