"""The eviction grace period and the head/tail cut of big artifacts.

The limits themselves are :class:`toolcap.StoreLimits` (``core/_store_limits.py``),
which also holds :data:`PARTIAL_CUT`, the cut engine's policy for stored partials.
"""

from __future__ import annotations

from toolcap.core._store_limits import PARTIAL_CUT, PARTIAL_SNAP, StoreLimits

__all__ = ["GRACE_SECONDS", "PARTIAL_CUT", "SNAP_WINDOW", "kept_part", "snap_head", "snap_tail"]

#: Nothing read or written more recently than this is ever evicted.
GRACE_SECONDS = 3600.0
#: How far back (head) or forward (tail) a cut may move to land on a line break.
SNAP_WINDOW = PARTIAL_SNAP.window


def snap_head(data: bytes, end: int) -> int:
    """Where to end a head of ``data[:end]``: after a line break if one is near ``end``.

    The stored head keeps the line break (head and tail are stored joined by nothing).
    """
    at = PARTIAL_SNAP.head_break(data, end)
    return end if at < 0 else at + 1


def snap_tail(window: bytes, size: int) -> int:
    """How many leading bytes of a tail of ``size`` bytes to drop to start on a whole line.

    ``window`` is the tail's first :data:`SNAP_WINDOW` bytes (or all of it).
    """
    return PARTIAL_SNAP.tail_start(window, 0, size)


def kept_part(raw: bytes, limits: StoreLimits) -> tuple[bytes, int | None]:
    """What a put of ``raw`` stores: ``(raw, None)``, or, over ``max_artifact_size``,
    its head and tail joined, and the head's length."""
    limit = limits.max_artifact_size
    if limit is None or len(raw) <= limit:
        return raw, None
    head_budget, tail_budget = limits.split()
    head = snap_head(raw, head_budget)
    tail = raw[len(raw) - tail_budget :]
    return raw[:head] + tail[snap_tail(tail[:SNAP_WINDOW], len(tail)) :], head
