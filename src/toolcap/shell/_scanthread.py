"""A long stream's matching lines found on a thread of their own, while it is read.

Finding ``keep_lines`` in a stream is one scan of every byte (Hyperscan or RE2,
both of which release the interpreter's lock) plus a little bookkeeping per
matching line. On the reading thread it adds its whole time to the stream's;
on a thread of its own it overlaps the reading, which also waits mostly
outside the lock (in the system call). A short stream never starts the thread:
it is scanned inline until it passes :data:`THREAD_AFTER` bytes.

The collector is only ever used by one thread at a time: inline, then by the
scanning thread alone, and again by the caller once :meth:`CollectorThread.wait`
has returned. At most :data:`DEPTH` chunks wait in between (the chunks are
immutable ``bytes``, held by reference), so memory stays bounded.
"""

from __future__ import annotations

import queue
import threading
import weakref

from ..core._keeplines import KeptLine
from ..core._keepstream import LineCollector

__all__ = ["DEPTH", "THREAD_AFTER", "CollectorThread"]

#: Bytes scanned inline before the scan moves to its own thread.
THREAD_AFTER = 8 << 20
#: Chunks that may wait for the scanning thread.
DEPTH = 4

_Item = tuple[bytes, int | None] | None


class CollectorThread:
    """A :class:`LineCollector` fed on a thread of its own once the stream is long."""

    def __init__(self, collector: LineCollector, *, after: int | None = None) -> None:
        self._collector = collector
        self._after = THREAD_AFTER if after is None else after
        self._fed = 0
        self._queue: queue.Queue[_Item] = queue.Queue(DEPTH)
        self._thread: threading.Thread | None = None
        self._errors: list[BaseException] = []  # what the thread raised, handed back

    def feed(self, chunk: bytes, newlines: int | None = None) -> None:
        """Scan the next bytes of the stream (inline, or queued for the thread)."""
        if self._thread is None:
            self._fed += len(chunk)
            if self._fed <= self._after:
                self._collector.feed(chunk, newlines)
                return
            self._start()
        if self._errors:
            raise self._errors[0]
        self._queue.put((chunk, newlines))

    def _start(self) -> None:
        self._thread = threading.Thread(target=_scan,
                                        args=(self._collector, self._queue, self._errors),
                                        name="toolcap-keep-lines", daemon=True)
        self._thread.start()
        # A stream dropped without wait() still ends its thread.
        weakref.finalize(self, self._queue.put, None)

    def wait(self) -> None:
        """Let the thread scan what was queued, and end it; raises what it raised."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        if self._errors:
            raise self._errors[0]

    def middle(self, start: int, end: int, budget: int) -> tuple[list[KeptLine | None], int]:
        """The collector's :meth:`~LineCollector.middle`, once every chunk is scanned."""
        self.wait()
        return self._collector.middle(start, end, budget)


def _scan(collector: LineCollector, chunks: queue.Queue[_Item],
          errors: list[BaseException]) -> None:
    # Holds no reference to its owner, so that a stream dropped without wait() is
    # collected, and its finalizer's None ends this loop.
    while (item := chunks.get()) is not None:
        if errors:
            continue  # drain, so that the reader never blocks on a full queue
        try:
            collector.feed(*item)
        except BaseException as error:  # handed to the reading thread
            errors.append(error)
