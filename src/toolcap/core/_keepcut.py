"""The cut that keeps lines: :func:`assemble_keeping`, a cut whose marker is followed by
the lines of the elided part that a :class:`~toolcap.core._keeplines.KeepLines` matches.

The lines are found by :mod:`toolcap.core._keeplines` (a whole input) or
:mod:`toolcap.core._keepstream` (a stream as it passes); the head and the tail
are cut as :func:`toolcap.core._assemble.assemble` cuts them, from a smaller budget.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ._assemble import CapResult, CutPlan, assemble, cut_points
from ._keeplines import KeepLines, MiddleLines, join_kept, render_kept, select_kept
from ._strategy import split_content
from ._utf8 import utf8_size

__all__ = ["assemble_keeping"]


def assemble_keeping(
    plan: CutPlan,
    head: bytes,
    tail: bytes,
    *,
    original_bytes: int,
    limit: int,
    keep: KeepLines,
    middle: MiddleLines,
    reference: str | None = None,
    snap_lines: bool = True,
) -> CapResult:
    """:func:`assemble`, with the lines of the elided part that ``keep`` matches.

    ``keep``'s share of the content budget is set aside: the head and the tail
    are planned from the rest, and the matching lines between them (``middle``
    lists them) fill the share under the marker. When none fits (or the cut is
    a ``head`` cut, or the input is not valid UTF-8), this is :func:`assemble`.
    """
    budget = keep.budget(plan.head + plan.tail)
    if plan.strategy != "head" and budget > 0:
        head_size, tail_size = split_content(plan.head + plan.tail - budget, plan.strategy,
                                             plan.head_ratio)
        reduced = replace(plan, head=head_size, tail=tail_size)
        if head_size or tail_size:
            head_end, tail_start = cut_points(reduced, head, tail, original_bytes, snap_lines)
            tail_offset = original_bytes - len(tail)
            candidates, total = middle(head_end, tail_offset + tail_start, budget)
            kept = select_kept(candidates, total, budget)
            if kept:
                with contextlib.suppress(UnicodeDecodeError):
                    head_text = str(memoryview(head)[:head_end], "utf-8")
                    tail_text = str(memoryview(tail)[tail_start:], "utf-8")
                    shown = head_end + len(tail) - tail_start + sum(len(k.text) for k in kept)
                    marker = plan.marker.render(original=original_bytes, kept=shown,
                                                reference=reference)
                    text = join_kept(head_text if plan.strategy == "head_tail" else None,
                                     marker, render_kept(kept, total), tail_text)
                    return CapResult(text, True, original_bytes, utf8_size(text), reference)
    return assemble(plan, head, tail, original_bytes=original_bytes, limit=limit,
                    reference=reference, snap_lines=snap_lines)
