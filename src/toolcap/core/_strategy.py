"""What a cut keeps: the strategies, their share of a budget, and line snapping.

Every cut of toolcap asks this module what to keep, whatever it measures:
:mod:`._cut` (UTF-8 bytes of a text or a stream), :mod:`._json` (JSON bytes on
the wire), the collapse of many parts under one marker (``Policy.finalize``)
and the partial artifacts a store keeps of what is over its largest size. A
new strategy is added here, in :data:`STRATEGIES` and :func:`split_content`,
and reaches all of them.

A :class:`CutPolicy` is the strategy, the head's share and the snapping rule.
The cut moves to a line break when one is within reach (:class:`Snap`); the
line break stays in the result exactly once, at the cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import AnyStr, Literal

from ._errors import ConfigError

__all__ = [
    "STRATEGIES",
    "CutPolicy",
    "Snap",
    "Strategy",
    "check_head_ratio",
    "check_strategy",
    "plan_parts",
    "split_content",
]

Strategy = Literal["head", "tail", "head_tail"]
STRATEGIES: tuple[Strategy, ...] = ("head", "tail", "head_tail")


@dataclass(frozen=True)
class Snap:
    """How far a cut may move to land on a line break.

    At most ``window`` units and, with ``share``, at most ``1/share`` of the part
    kept, so that a long line is never traded for a much shorter text.
    """

    window: int
    share: int | None = None

    def _reach(self, kept: int) -> int:
        return min(self.window, kept // self.share if self.share else kept)

    def head_break(self, data: AnyStr, end: int) -> int:
        """Where the line break that a head ``data[:end]`` may end at is, or -1.

        The head keeps everything before it; the break itself is then the one
        that joins the head to what follows (a marker, or the tail).
        """
        if end <= 0:
            return -1
        newline = "\n" if isinstance(data, str) else b"\n"
        return data.rfind(newline, end - self._reach(end), end)

    def tail_start(self, data: AnyStr, start: int, end: int | None = None) -> int:
        """Where a tail ``data[start:end]`` starts once moved past a nearby line break.

        ``end`` (default ``len(data)``) is where the tail ends, which may lie past
        ``data`` when ``data`` holds only the tail's first bytes. A tail never
        moves to its end: it keeps at least one unit.
        """
        kept = (len(data) if end is None else end) - start
        if kept <= 0:
            return start
        newline = "\n" if isinstance(data, str) else b"\n"
        at = data.find(newline, start, start + min(self._reach(kept), kept - 1))
        return start if at < 0 else at + 1

    def both(self, data: bytes, head_end: int, tail_start: int) -> tuple[int, int]:
        """``(head_break or head_end, tail_start)`` of a head and a tail in one ``data``.

        The two calls above in one, for the cut of a whole ``bytes`` input, whose
        fixed cost is measured against copying 32 KB (their checks were a fifth of it).
        """
        share = self.share
        reach = head_end // share if share else head_end
        at = data.rfind(b"\n", head_end - (reach if reach < self.window else self.window),
                        head_end) if head_end > 0 else -1
        kept = len(data) - tail_start
        if kept <= 0:
            return (head_end if at < 0 else at), tail_start
        reach = kept // share if share else kept
        if reach > self.window:
            reach = self.window
        found = data.find(b"\n", tail_start, tail_start + (reach if reach < kept else kept - 1))
        return (head_end if at < 0 else at), (tail_start if found < 0 else found + 1)


#: Snapping of the cuts a model sees: at most 1 KB, at most a quarter of the part.
LINE_SNAP = Snap(window=1024, share=4)


@dataclass(frozen=True)
class CutPolicy:
    """What a cut keeps: the strategy, the head's share with ``head_tail``, snapping.

    ``snap`` ``None`` never moves a cut to a line break.
    """

    strategy: Strategy = "head_tail"
    head_ratio: float = 0.2
    snap: Snap | None = LINE_SNAP

    def split(self, content: int) -> tuple[int, int]:
        """The head's and the tail's shares of ``content`` (see :func:`split_content`)."""
        return split_content(content, self.strategy, self.head_ratio)


def split_content(content: int, strategy: Strategy, head_ratio: float) -> tuple[int, int]:
    """How a strategy shares a content budget: (head, tail), in the budget's unit."""
    if strategy == "head":
        return content, 0
    if strategy == "tail":
        return 0, content
    head = int(content * head_ratio)
    return head, content - head


def plan_parts(
    sizes: Sequence[int], room: int, strategy: Strategy, head_ratio: float
) -> tuple[int, int, int]:
    """Which parts of a text in parts stay whole when the rest collapses into one.

    ``sizes`` are the parts' bytes; each kept part also costs the line break
    that joins it to the next. ``room`` (what the kept parts may take) is shared
    as :func:`split_content` shares a cut's budget: parts from the start fit the
    head's share, parts from the end the tail's. Returns ``(first, last,
    kept)``: parts ``[first, last)`` (at least one) collapse, the others, of
    ``kept`` bytes with their line breaks, stay whole.
    """
    head_room, tail_room = split_content(max(0, room), strategy, head_ratio)
    first = head_kept = 0
    while first < len(sizes) - 1 and head_kept + sizes[first] + 1 <= head_room:
        head_kept += sizes[first] + 1
        first += 1
    last, tail_kept = len(sizes), 0
    while last - 1 > first and tail_kept + sizes[last - 1] + 1 <= tail_room:
        tail_kept += sizes[last - 1] + 1
        last -= 1
    return first, last, head_kept + tail_kept


def check_strategy(strategy: str, *, key: str | None = None, file: str | None = None) -> Strategy:
    """Return ``strategy`` if it is one of :data:`STRATEGIES`, else raise ConfigError."""
    if strategy not in STRATEGIES:
        raise ConfigError(
            f"unknown strategy {strategy!r} (use head, tail or head_tail)", key=key, file=file
        )
    return strategy


def check_head_ratio(ratio: object, *, key: str | None = None, file: str | None = None) -> float:
    """Return ``ratio`` if it is a number strictly between 0 and 1, else raise ConfigError."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio < 1:
        raise ConfigError(f"head_ratio must be between 0 and 1 (exclusive), got {ratio!r}",
                          key=key, file=file)
    return float(ratio)
