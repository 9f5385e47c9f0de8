"""Flushing new artifacts to the disk on a thread of its own, in batches.

A local store normally flushes each artifact's bytes before it links it into
place. A caller that answers someone while it writes (the proxy, replying to
its client) can take the flush off that wait instead: the artifact is linked
as soon as it is written (complete, and readable by any process on the
machine, since the kernel serves it from its cache), and this thread flushes
it shortly after. Flushing a file through another descriptor of it flushes
the same pages (``fdatasync`` acts on the file, not on the descriptor).

Once a big artifact is on the disk its pages leave the kernel's cache
(:func:`drop_cached`): it was written once and is read back rarely and by
range, so keeping it cached only pushes out what the machine uses, and the
next big write then takes pages just freed instead of new ones (on the
project's 2-core VM a 100 MB write into new page-cache pages takes about
250 ms of processor time, into freed ones about 25 ms).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import IO

__all__ = ["DROP_CACHED_MIN", "FLUSH_DELAY", "BackgroundFlush", "drop_cached", "flush_early"]

log = logging.getLogger("toolcap.store")

#: Seconds the thread waits after the first unflushed artifact, so that a burst
#: of writes is flushed in one pass; an artifact is on the disk within about this
#: long plus the flush itself.
FLUSH_DELAY = 0.05

#: A flushed artifact of at least this many bytes leaves the page cache (:func:`drop_cached`).
DROP_CACHED_MIN = 1 << 20

_datasync = getattr(os, "fdatasync", os.fsync)


def drop_cached(fd: int) -> None:
    """Let the kernel drop the cached pages of the file open as ``fd``, which must be
    flushed (only clean pages are dropped), if it is at least :data:`DROP_CACHED_MIN`
    bytes long. A hint: nothing happens where there is no ``posix_fadvise``."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_size >= DROP_CACHED_MIN:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def flush_early(spool: IO[bytes]) -> None:
    """Start flushing what ``spool`` holds so far on a thread of its own (best effort:
    the flush before publishing still covers everything)."""
    try:
        fd = os.dup(spool.fileno())  # the thread's own: the spool may be closed first
    except (OSError, ValueError):
        return

    def flush() -> None:
        try:
            with contextlib.suppress(OSError):
                _datasync(fd)
        finally:
            os.close(fd)

    threading.Thread(target=flush, name="toolcap-flush-early", daemon=True).start()


class BackgroundFlush:
    """Files to flush, and the daemon thread that flushes them."""

    def __init__(self, delay: float = FLUSH_DELAY) -> None:
        self.delay = delay
        self._paths: list[str] = []
        self._busy = 0  # paths taken by the thread and not yet flushed
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, *paths: str) -> None:
        """Flush these files soon."""
        with self._changed:
            idle = not self._paths
            self._paths.extend(paths)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="toolcap-flush", daemon=True
                )
                self._thread.start()
            elif idle:
                self._changed.notify_all()  # wake the thread; a batch under way keeps its delay

    def wait(self, timeout: float) -> bool:
        """Wait until every file added so far is flushed; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            self._changed.notify_all()  # no need to wait out the delay
            while self._paths or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._paths:
                    self._changed.wait()
                self._changed.wait(self.delay)  # gather a batch (or be told to hurry)
                batch, self._paths = self._paths, []
                self._busy = len(batch)
            for path in batch:
                _flush(path)
            with self._changed:
                self._busy = 0
                self._changed.notify_all()


def _flush(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return  # removed meanwhile (a delete, an eviction): nothing left to keep
    try:
        _datasync(fd)
        drop_cached(fd)
    except OSError as exc:
        log.warning("could not flush %s to the disk: %s", path, exc.strerror or exc)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
