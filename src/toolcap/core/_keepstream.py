"""The matching lines of a stream, found as it passes and held within a bound.

A stream keeps its first bytes and a ring of its last ones; a line that
scrolls out of the ring into the middle is gone unless it matches
``keep_lines``. :class:`LineCollector` scans each chunk as it arrives (the
same :func:`find_lines` the whole-text cut uses, so the same lines match) and
holds the matching lines so that :func:`toolcap.core._cut.assemble_keeping`
cuts the stream exactly as it cuts the whole text.

Memory stays constant, whatever the length of the stream:

- lines that start within the head the widest plan may keep: at most that many bytes;
- lines that may still be in the tail (within the ring): at most the ring's bytes;
- lines certainly in the middle ("settled"): only the first ones, until their
  cost passes the widest budget for kept lines; later ones are only counted,
  since a cut keeps the first matching lines that fit and stops at the first
  that does not;
- one unfinished line of at most :data:`MAX_LINE_BYTES` (a longer one is skipped).

Time: the scan for matching lines, and counting line breaks for their numbers,
which costs more than the scan. Counting stops once the first settled line is
dropped, since no line after it can be kept.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from ._keeplines import MAX_LINE_BYTES, KeepLines, KeptLine, find_lines, line_matches

__all__ = ["LineCollector"]


class _Found(NamedTuple):
    start: int  # stream offset of the line
    end: int  # stream offset of its line break
    line: KeptLine


class LineCollector:
    """Scan a stream for ``keep``'s lines in chunks; see the module's bounds.

    Args:
        keep: which lines to look for.
        head_keep: how many first bytes of the stream the widest plan may keep.
        tail_keep: how many last bytes (the ring) it may keep.
        budget: the widest budget for kept lines among the plans.
    """

    def __init__(self, keep: KeepLines, *, head_keep: int, tail_keep: int, budget: int) -> None:
        self._matchers = keep.matchers
        self._head_keep = head_keep
        self._tail_keep = tail_keep
        self._budget = budget
        self._early: list[_Found] = []
        self._pending: deque[_Found] = deque()
        self._settled: list[KeptLine] = []
        self._settled_cost = 0
        self._dropped = 0
        self._offset = 0  # of the next chunk in the stream
        self._lines = 0  # line breaks before it
        self._carry = bytearray()  # the unfinished line
        self._carry_start = 0
        self._overlong = False  # the unfinished line is too long to be examined
        self._evicted = 0  # lines whose break is before this offset have left the ring

    @property
    def numbering(self) -> bool:
        """Whether line numbers still matter: once a line past the budget was dropped,
        no later line can be kept (a cut stops at the first that does not fit)."""
        return not self._dropped

    def feed(self, chunk: bytes, newlines: int | None = None) -> None:
        """Scan the next bytes of the stream.

        ``newlines``: the chunk's line breaks, when the caller counted them anyway
        (then only the part before the last matching line is counted again).
        """
        base, pos = self._offset, 0
        # A line whose break is before this is out of the ring once the chunk is in:
        # settled at once, so a chunk of matching lines never piles up.
        self._evicted = base + len(chunk) - self._tail_keep
        self._settle()
        lines_before = self._lines
        if self._carry or self._overlong:
            first = chunk.find(b"\n")
            if first < 0:
                self._hold(chunk)
                self._offset += len(chunk)
                return
            if not self._overlong and len(self._carry) + first <= MAX_LINE_BYTES:
                line = bytes(self._carry) + chunk[:first]
                if line_matches(self._matchers, line):
                    self._found(self._carry_start, base + first, self._lines + 1, line)
            self._lines += 1
            self._carry.clear()
            self._overlong = False
            pos = first + 1
        last = chunk.rfind(b"\n", pos)
        if last >= 0:
            number, at = self._lines + 1, pos
            for start, end in find_lines(self._matchers, chunk, pos, last + 1):
                if self.numbering:  # counting is most of a scan's cost: only while it matters
                    number += chunk.count(b"\n", at, start)
                    at = start
                self._found(base + start, base + end, number, chunk[start:end])
            if self.numbering:
                self._lines = (lines_before + newlines if newlines is not None
                               else number - 1 + chunk.count(b"\n", at, last + 1))
            pos = last + 1
        self._carry_start = base + pos
        self._hold(chunk[pos:])
        self._offset += len(chunk)
        self._settle()

    def _hold(self, piece: bytes) -> None:
        if self._overlong:
            return
        if len(self._carry) + len(piece) > MAX_LINE_BYTES:
            self._carry.clear()
            self._overlong = True
        else:
            self._carry += piece

    def _found(self, start: int, end: int, number: int, text: bytes) -> None:
        if start < self._head_keep:
            self._early.append(_Found(start, end, KeptLine(number, text)))
        elif end < self._evicted and not self._pending:
            self._keep_settled(KeptLine(number, text))
        else:
            self._pending.append(_Found(start, end, KeptLine(number, text)))

    def _settle(self) -> None:
        # A line whose break has left the ring is in the middle of every plan's cut.
        while self._pending and self._pending[0].end < self._evicted:
            self._keep_settled(self._pending.popleft().line)

    def _keep_settled(self, line: KeptLine) -> None:
        if self._dropped or self._settled_cost + line.cost > self._budget:
            self._dropped += 1
        else:
            self._settled.append(line)
            self._settled_cost += line.cost

    def middle(self, start: int, end: int, budget: int) -> tuple[list[KeptLine | None], int]:
        """The :data:`~toolcap.core._keeplines.MiddleLines` of the stream so far."""
        assert budget <= self._budget
        candidates: list[KeptLine | None] = [
            found.line for found in self._early if found.start >= start and found.end < end]
        candidates.extend(self._settled)
        total = len(candidates) + self._dropped
        if self._dropped:
            candidates.append(None)
        for found in self._pending:
            if found.end < end:
                candidates.append(found.line)
                total += 1
        return candidates, total
