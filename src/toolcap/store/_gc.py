"""Eviction: the age limit, then the total-size limit, least recently read first.

Nothing read or written within :data:`GRACE_SECONDS` is ever evicted, and the
last use is read again right before each deletion so that a concurrent read or
re-put of the same content wins over the eviction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from toolcap.core._errors import StoreError
from toolcap.core._refs import PREFIX
from toolcap.store._backend import StoreBackend
from toolcap.store._limits import GRACE_SECONDS
from toolcap.store._records import GcReport

__all__ = ["evict", "evict_by_size"]


def evict(
    store: StoreBackend,
    report: GcReport,
    entries: list[tuple[str, int, float]],
    *,
    by_age: bool,
) -> None:
    """Evict from ``entries`` (id, bytes, mtime) what the limits require; fill ``report``."""
    now = store.clock()
    live: list[tuple[float, str, int]] = []
    for ident, size, mtime in entries:
        info = store.info_or_none(ident)
        last = info.last_read if info is not None else mtime
        live.append((last, ident, info.bytes if info is not None else size))
    report.total_before = total = sum(size for _, _, size in live)
    live.sort()
    keep: list[tuple[float, str, int]] = []
    age = store.limits.max_age_days
    for last, ident, size in live:
        expired = by_age and age is not None and now - last > age * 86400
        if expired and _evictable(store, ident, now):
            _evict_one(store, report, ident, size, "age")
            total -= size
        else:
            keep.append((last, ident, size))
    cap = store.limits.max_total_size
    report.total_after = total = evict_by_size(store, report, keep, total)
    report.kept = len(live) - len(report.evicted)
    report.over_limit = cap is not None and total > cap


def evict_by_size(
    store: StoreBackend, report: GcReport, order: Iterable[tuple[float, str, int]], total: int
) -> int:
    """Evict from ``order`` (last use, id, bytes; oldest first) until ``total`` is under the cap.

    Returns the total left. ``order`` is consumed only as far as needed, so a
    lazily kept order (:meth:`StoreBackend.eviction_order`) costs what is evicted.
    """
    cap = store.limits.max_total_size
    now = store.clock()
    for last, ident, size in order:
        if cap is None or total <= cap or now - last < GRACE_SECONDS:
            break  # sorted by last use: everything after is newer still
        if not _evictable(store, ident, now):
            continue  # used since the scan
        _evict_one(store, report, ident, size, "size")
        total -= size
    return total


def _evictable(store: StoreBackend, ident: str, now: float) -> bool:
    try:
        return now - store.load_info(ident).last_read >= GRACE_SECONDS
    except (StoreError, OSError):
        pass
    try:  # gone already: nothing to evict; bytes without a readable record: evictable
        return store.exists(ident)
    except (StoreError, OSError):
        return False


def _evict_one(store: StoreBackend, report: GcReport, ident: str, size: int, why: str) -> None:
    if not report.dry_run:
        with contextlib.suppress(FileNotFoundError):  # another process was first
            store.remove(ident)
    report.evicted.append((PREFIX + ident, size, why))
