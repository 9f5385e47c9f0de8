"""Share one byte budget among several parts: largest first, to a common level."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["water_fill"]


def water_fill(sizes: Sequence[int], budget: int) -> list[int]:
    """Allocate ``budget`` bytes among parts of the given ``sizes``.

    Parts at or below a common level keep their size; the larger ones are cut
    down to that level, so one giant part cannot starve its small siblings. The
    bytes left by rounding go one each to the earliest cut parts. The result is
    deterministic, never above a part's size, and sums to
    ``min(budget, sum(sizes))``.
    """
    if budget < 0:
        raise ValueError(f"budget must not be negative, got {budget}")
    if sum(sizes) <= budget:
        return list(sizes)
    remaining = budget
    left = len(sizes)
    level = 0
    for size in sorted(sizes):
        if size * left <= remaining:
            remaining -= size
            left -= 1
            continue
        level = remaining // left
        break
    extra = remaining - level * left
    allocation = []
    for size in sizes:
        if size <= level:
            allocation.append(size)
        elif extra > 0:
            allocation.append(level + 1)
            extra -= 1
        else:
            allocation.append(level)
    return allocation
