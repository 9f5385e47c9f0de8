"""A sparse line index: where to start reading for a given line, kept beside an artifact.

An artifact's record may carry *marks*, pairs ``(offset, newlines)``: ``newlines``
is the number of line breaks in the stored bytes before ``offset``, so that byte
``offset`` lies in line ``newlines + 1``. Marks are taken at least :data:`STEP`
bytes apart while the bytes are counted anyway (the write's pass that hashes
them), and never more than :data:`MAX_MARKS` of them: past that every other mark
is dropped and the spacing doubles. A read of line ``n`` then starts at the last
mark before it and scans at most about ``stored bytes / (MAX_MARKS / 2)`` bytes
(one :data:`STEP` for an artifact under 1 GB) plus the lines it returns.

Marks are a hint with a strict shape: a record whose marks are malformed is read
without them (by scanning from the start), as are records written before marks
existed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["MAX_MARKS", "STEP", "LineMarks", "Marks", "parse_marks", "start_for_line"]

#: Least distance in bytes between two marks.
STEP = 1 << 20
#: Most marks a record holds (about 25 KB of JSON at worst).
MAX_MARKS = 1024

Marks = tuple[tuple[int, int], ...]


class LineMarks:
    """Counts the line breaks of bytes fed in order and marks where lines can be found.

    ``feed`` returns the number of line breaks in what it was given, so that a
    writer that counts lines anyway does so through it, once.
    """

    __slots__ = ("_marks", "_newlines", "_next", "_pos", "_step")

    def __init__(self) -> None:
        self._pos = 0  # offset of the next byte fed
        self._newlines = 0  # line breaks before it
        self._step = STEP
        self._next = STEP  # where the next mark is due
        self._marks: list[tuple[int, int]] = []

    @property
    def newlines(self) -> int:
        """Line breaks fed so far."""
        return self._newlines

    def feed(self, data: bytes, newlines: int | None = None) -> int:
        """Count ``data``'s line breaks, marking every :data:`STEP` bytes; return the count.

        ``newlines``: the count, when the caller has it already; then, if ``data``
        is no longer than the marks' spacing (a stream's chunks), nothing is
        counted again, and a mark falls at the first start of ``data`` at least
        that far past the last one.
        """
        before = self._newlines
        pos, size = 0, len(data)
        if newlines is not None and size <= self._step:
            if size and self._pos >= self._next:
                self._mark()
            self._newlines += newlines
            self._pos += size
            return newlines
        while pos < size:
            if self._pos >= self._next:  # only once a byte follows: no mark at the very end
                self._mark()
            take = min(size - pos, self._next - self._pos)
            # count() steps through every byte; find() skips a span without a line
            # break (compact JSON, such as a structuredContent's, has none) at memchr speed.
            if data.find(b"\n", pos, pos + take) >= 0:
                self._newlines += data.count(b"\n", pos, pos + take)
            pos += take
            self._pos += take
        return self._newlines - before

    def resumed(self, pos: int, newlines: int) -> LineMarks:
        """Marks of other bytes that share these up to ``pos`` (``newlines`` line breaks
        before it) and go on differently: this index's marks before ``pos``, fed on from there."""
        other = LineMarks()
        other._marks = [mark for mark in self._marks if mark[0] < pos]
        other._step = self._step
        other._pos, other._newlines = pos, newlines
        other._next = other._marks[-1][0] + other._step if other._marks else other._step
        return other

    def _mark(self) -> None:
        self._marks.append((self._pos, self._newlines))
        if len(self._marks) > MAX_MARKS:
            self._marks = self._marks[1::2]  # every other one: the spacing doubles
            self._step *= 2
        self._next = self._pos + self._step

    def marks(self) -> Marks:
        """The marks taken so far, by increasing offset."""
        return tuple(self._marks)


def parse_marks(value: object, stored: int) -> Marks:
    """Marks as a record holds them (``[[offset, newlines], ...]``), or ``()`` if malformed.

    Offsets must increase strictly and lie inside the ``stored`` bytes; counts
    must not decrease nor exceed their offset.
    """
    if not isinstance(value, list) or len(value) > MAX_MARKS:
        return ()
    out: list[tuple[int, int]] = []
    last_offset, last_lines = 0, 0
    for item in value:
        if not (isinstance(item, list) and len(item) == 2):
            return ()
        offset, lines = item
        if type(offset) is not int or type(lines) is not int:
            return ()
        if not (last_offset < offset < stored and last_lines <= lines <= offset):
            return ()
        out.append((offset, lines))
        last_offset, last_lines = offset, lines
    return tuple(out)


def start_for_line(marks: Sequence[tuple[int, int]], line: int) -> tuple[int, int]:
    """Where a scan for line ``line`` (1-based) may start: ``(offset, newlines before it)``.

    The byte at the returned offset lies in a line before ``line`` (or the
    offset is 0), so a scan that numbers its first piece ``newlines + 1`` finds
    ``line`` whole.
    """
    # The last mark in a line no later than line - 1: its count is at most line - 2.
    index = bisect_right(marks, line - 2, key=lambda mark: mark[1])
    return marks[index - 1] if index else (0, 0)
