"""Eviction: the age limit, then the total-size limit, least recently read first.

Nothing read or written within :data:`GRACE_SECONDS` is ever evicted, and the
last use is read again right before each deletion so that a concurrent read or
re-put of the same content wins over the eviction.
"""

from __future__ import annotations

from collections.abc import Iterable

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
    """Evict from ``entries`` (id, bytes, last use: a scan) what the limits require.

    Fills ``report``. Victims are removed in batches through
    :meth:`StoreBackend.remove_unused`, which reads each one's last use again
    first (one listing on an object store), so a use since the scan wins.
    """
    now = store.clock()
    live = sorted((last, ident, size) for ident, size, last in entries)
    report.total_before = total = sum(size for _, _, size in live)
    age = store.limits.max_age_days
    expired: list[tuple[float, str, int]] = []
    if by_age and age is not None:
        expired = [e for e in live if now - e[0] > age * 86400 and now - e[0] >= GRACE_SECONDS]
    total -= _remove(store, report, expired, "age")
    tried = {ident for _, ident, _ in expired}
    cap = store.limits.max_total_size
    kept = [entry for entry in live if entry[1] not in tried]
    report.total_after = total = evict_by_size(store, report, kept, total)
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
    pending = iter(order)
    while cap is not None and total > cap:
        batch: list[tuple[float, str, int]] = []
        need = total - cap
        for last, ident, size in pending:
            if now - last < GRACE_SECONDS:
                need = -1  # sorted by last use: everything after is newer still
                break
            batch.append((last, ident, size))
            need -= size
            if need <= 0:
                break
        if not batch:
            break
        total -= _remove(store, report, batch, "size")
        if need < 0:
            break
    return total


def _remove(
    store: StoreBackend, report: GcReport, batch: list[tuple[float, str, int]], why: str
) -> int:
    """Remove what of ``batch`` is still unused; report it; the bytes freed."""
    if not batch:
        return 0
    if report.dry_run:
        gone = {ident for _, ident, _ in batch}
    else:
        before = store.clock() - GRACE_SECONDS
        gone = set(store.remove_unused([(ident, last) for last, ident, _ in batch], before))
    freed = 0
    for _, ident, size in batch:
        if ident in gone:
            report.evicted.append((PREFIX + ident, size, why))
            freed += size
    return freed
