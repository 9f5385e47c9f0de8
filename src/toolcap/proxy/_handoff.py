"""Messages from an upstream whose I/O runs on the HTTP server's own event loop.

Under ``toolcap proxy --listen --url``, a session's upstream exchanges run on the
loop that serves the client, so a small call crosses no thread: its answer is
handed to the relay right there. A message the relay must bound or store (the
work of milliseconds, and of a store that may be remote) is handled on a thread
instead, so that it never holds up the other sessions; the messages of one
session reach the relay one at a time and in order either way.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from ._contracts import OnLine

__all__ = ["Handoff"]


class Handoff:
    """The messages of an upstream on a shared loop, handed to the relay in order: on the
    loop when ``inline`` says so and nothing is still being handled elsewhere, else on
    a thread of the pool all sessions share (the relay handles one message at a time,
    in order). A message handed away comes back as a future, which the reader waits
    for before it reads on: what the upstream sends is held once, as over stdio."""

    # A message larger than this is never handled on the loop, whatever the limits.
    INLINE_MAX = 16 << 10

    def __init__(self, inline: Callable[[int], bool]) -> None:
        self.on_line: OnLine = lambda holder: None
        self._inline = inline
        self._lock = threading.Lock()
        self._waiting: deque[tuple[list[bytes | bytearray], Future[None]]] = deque()
        self._draining = False  # a thread of the pool is handing on self._waiting

    def hand_on(self, holder: list[bytes | bytearray]) -> Future[None] | None:
        """Hand one message on; None if it was handled here, else the future of its
        handling elsewhere."""
        size = len(holder[0])
        done: Future[None] | None = None
        start = False
        with self._lock:
            if self._draining or size > self.INLINE_MAX or not self._inline(size):
                done = Future()
                self._waiting.append((holder, done))
                start = not self._draining
                self._draining = True
        if done is None:
            self.on_line(holder)
        elif start:
            _pool().submit(self._drain)
        return done

    def _drain(self) -> None:
        try:
            while True:
                with self._lock:
                    if not self._waiting:
                        self._draining = False
                        return
                    holder, done = self._waiting.popleft()
                try:
                    self.on_line(holder)  # guarded by the relay: it does not raise
                finally:
                    # A reader whose request was cancelled gave up waiting and cancelled
                    # this future; the messages behind it are handed on all the same.
                    if done.set_running_or_notify_cancel():
                        done.set_result(None)
        except BaseException:
            with self._lock:
                self._draining = False  # the next message starts a drain again
            raise


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The threads that bound the messages of every session (two: the reading and the
    other sessions go on meanwhile; the bounding itself holds the GIL)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(2, thread_name_prefix="toolcap-http-relay"))
        return _POOL[0]
