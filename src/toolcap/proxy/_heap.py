"""Keeping the memory a big result freed, for the next big result (glibc only).

A 100 MB result takes the proxy about 600 MB of short-lived buffers (the line,
the decoded text, the bytes stored). glibc serves each buffer over 32 MB from a
fresh mapping and unmaps it when freed, and a buffer made on a thread other than
the main one (the upstream's reader) from a mapping whenever it is over 64 MB; so
every big result touched about 600 MB of new pages: 155,000 page faults, 0.3 to
0.5 s of the proxy's processor time on the project's 2-core VM, whose host also
takes back freed pages within seconds, after which they cost as new.

:func:`keep_freed_memory`, called once when the proxy starts, has every thread
allocate from one heap that keeps what is freed (no mapping below 1 GB, no trim
of the heap's top), so that the next big result reuses those pages. What is kept
is given back (``malloc_trim``) once no big message has come for
:data:`KEEP_SECONDS`: the proxy's resident size stays at its peak, a small
multiple of the largest line, only while big results keep coming.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["KEEP_SECONDS", "HeapReuse", "handling", "keep_freed_memory"]

log = logging.getLogger("toolcap.proxy")

#: Seconds without a big message after which the memory kept is given back.
KEEP_SECONDS = 10.0
#: mallopt's parameters (malloc.h) and the value the two thresholds get.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_THRESHOLD = 1 << 30


class HeapReuse:
    """The thread that gives kept memory back once big messages stop coming."""

    def __init__(self, trim: Any, keep_seconds: float = KEEP_SECONDS) -> None:
        self._trim = trim  # malloc_trim, or a stand-in
        self.keep_seconds = keep_seconds
        self._last: float | None = None  # when the last big message was noted, if not trimmed since
        self._changed = threading.Condition()
        self.trims = 0  # how many times memory was given back
        threading.Thread(target=self._run, name="toolcap-heap-trim", daemon=True).start()

    def note(self) -> None:
        """A big message was handled now: keep what it freed for a while."""
        with self._changed:
            self._last = time.monotonic()
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._last is None:
                    self._changed.wait()
                left = self._last + self.keep_seconds - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue  # look again: another big message may have come meanwhile
                self._last = None
            with contextlib.suppress(Exception):
                self._trim(0)
            with self._changed:
                self.trims += 1
                self._changed.notify_all()

    def wait_trimmed(self, count: int, timeout: float) -> bool:
        """Wait until memory was given back ``count`` times in all (for tests)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.trims < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True


_reuse: HeapReuse | None = None


def keep_freed_memory(keep_seconds: float = KEEP_SECONDS) -> HeapReuse | None:
    """Set glibc's allocator to keep freed memory for reuse (once, before the proxy
    starts its threads: a thread keeps the heap it first allocated from); None, and
    nothing changed, where the C library is not glibc or refuses."""
    global _reuse
    if _reuse is not None:
        return _reuse
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        set_option, trim = libc.mallopt, libc.malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        # The mapping threshold first: a glibc that refuses 1 GB (older ones cap it at
        # 32 MB) then has nothing changed at all.
        if not (set_option(_M_MMAP_THRESHOLD, _THRESHOLD)
                and set_option(_M_TRIM_THRESHOLD, _THRESHOLD) and set_option(_M_ARENA_MAX, 1)):
            log.debug("glibc refused the heap settings; big results use new pages each")
            return None
    except (OSError, AttributeError):
        return None
    _reuse = HeapReuse(trim, keep_seconds)
    return _reuse


@contextlib.contextmanager
def handling(big: bool) -> Iterator[None]:
    """While a message is handled: if it is ``big``, what it frees is kept a while for
    the next one, counted from when it is freed (nothing when heap reuse is off)."""
    if big and _reuse is not None:
        _reuse.note()
    try:
        yield
    finally:
        if big and _reuse is not None:
            _reuse.note()
