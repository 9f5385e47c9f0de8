"""The eviction grace period and the head/tail cut of big artifacts.

The limits themselves are :class:`toolcap.StoreLimits` (``core/_store_limits.py``).
"""

from __future__ import annotations

__all__ = ["GRACE_SECONDS", "SNAP_WINDOW", "snap_head", "snap_tail"]

#: Nothing read or written more recently than this is ever evicted.
GRACE_SECONDS = 3600.0
#: How far back (head) or forward (tail) a cut may move to land on a line break.
SNAP_WINDOW = 4096


def snap_head(data: bytes, end: int) -> int:
    """Where to end a head of ``data[:end]``: after a line break if one is near ``end``."""
    cut = data.rfind(b"\n", max(0, end - SNAP_WINDOW), end)
    return end if cut < 0 else cut + 1


def snap_tail(window: bytes) -> int:
    """How many leading bytes of a tail to drop so that it starts on a whole line.

    ``window`` is the tail's first :data:`SNAP_WINDOW` bytes (or all of it).
    """
    cut = window.find(b"\n", 0, SNAP_WINDOW)
    return 0 if cut < 0 or cut + 1 >= len(window) else cut + 1
