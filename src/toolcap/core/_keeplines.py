"""Keep lines: the lines of a cut's elided part that match a tool's ``keep_lines``.

A ``head_tail`` or ``tail`` cut drops the middle of a text, and the middle is
where a build's first error or a test run's traceback sits. The lines of the
dropped part that match are delivered under the marker, in their order, each
after its line number, within a share of the budget (``keep_lines_share``).

Matching runs on text we did not write, so it is linear whatever the pattern:
a :class:`LineMatcher` finds a position at or before the first match in a
range of whole lines (a literal ``bytes.find``, or RE2 injected by the seam),
and only the line holding it is checked. A line is examined only if it is at
most :data:`MAX_LINE_BYTES` long (without its line break) and valid UTF-8;
longer lines never match. Each line is checked once, so a scan costs time
linear in the text, and the same lines match whether the text comes whole
or in chunks (:class:`LineScanner`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DEFAULT_KEEP_LINES",
    "DEFAULT_NEEDLES",
    "MAX_LINE_BYTES",
    "KeepLines",
    "KeptLine",
    "LineMatcher",
    "MiddleLines",
    "Needle",
    "NeedleGroup",
    "find_lines",
    "join_kept",
    "line_matches",
    "middle_region",
    "render_kept",
    "select_kept",
    "whole_middle",
]

#: Lines longer than this (bytes, without the line break) are never examined.
MAX_LINE_BYTES = 4096
SUMMARY = ("[toolcap: {kept} of {total} lines of the cut part that match keep_lines,"
           " each after its line number:]")


class LineMatcher(Protocol):
    """Tells which lines match; both calls cost time linear in what they look at."""

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        """A position at or before the first match in any line of ``data[pos:endpos]``.

        ``None`` when no line in the range matches. ``pos`` is a line start.
        """
        ...

    def matches(self, line: bytes) -> bool:
        """Whether ``line`` (one line, without its line break) matches."""
        ...


@dataclass(frozen=True)
class Needle:
    """A literal that marks a line, with an optional check of each place it occurs.

    ``check(line, at)`` tells whether the occurrence at ``at`` counts (a digit
    before `` failed``, a non-zero status after ``exit status``).
    """

    text: bytes
    check: Callable[[bytes, int], bool] | None = None

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        found = data.find(self.text, pos, endpos)
        return None if found < 0 else found

    def matches(self, line: bytes) -> bool:
        at = line.find(self.text)
        if self.check is None:
            return at >= 0
        while at >= 0:
            if self.check(line, at):
                return True
            at = line.find(self.text, at + 1)
        return False


def _after_digit(line: bytes, at: int) -> bool:
    return at > 0 and line[at - 1 : at].isdigit()


def _nonzero_status(size: int) -> Callable[[bytes, int], bool]:
    def check(line: bytes, at: int) -> bool:
        rest = line[at + size : at + size + 24].lstrip(b" :=")
        rest = rest[1:] if rest[:1] == b"-" else rest
        digits = len(rest) - len(rest.lstrip(b"0123456789"))
        return digits > 0 and rest[:digits].strip(b"0") != b""
    return check


def _exception_name(line: bytes, at: int) -> bool:
    # The last line of a Python traceback that has no message: ``AssertionError``,
    # ``pkg.mod.CustomError``: the line is one dotted name ending at the needle.
    name = line.rstrip(b"\r")
    if not name.endswith(b"Error") or at != len(name) - 5:
        return False
    return name[:1].isalpha() and name.replace(b".", b"").replace(b"_", b"").isalnum()


def _exit_needles(*texts: bytes) -> tuple[Needle, ...]:
    return tuple(Needle(text, _nonzero_status(len(text))) for text in texts)


#: The built-in set: what developers look for first in a long log.
DEFAULT_NEEDLES: tuple[Needle, ...] = (
    Needle(b"Traceback (most recent call last)"),
    Needle(b"Error", _exception_name),
    Needle(b"error:"),
    Needle(b"Error:"),
    Needle(b"ERROR"),
    Needle(b"ERR!"),  # npm
    Needle(b"error["),  # rustc: error[E0308]: mismatched types
    Needle(b": error "),  # tsc, MSBuild: file(3,5): error TS2304: ...
    Needle(b"FAILED"),
    Needle(b"FAIL:"),
    Needle(b"FAIL\t"),  # go test: FAIL<tab>package
    Needle(b"panic:"),
    Needle(b"fatal:"),
    Needle(b"Exception"),
    Needle(b" failed", _after_digit),
    Needle(b" passed", _after_digit),
    Needle(b" error", _after_digit),  # pytest: 1 error / 2 errors
    *_exit_needles(b"exit status", b"exit code", b"exited with code", b"Exit code",
                   b"Exit status"),
)


@dataclass(frozen=True)
class NeedleGroup:
    """Needles that all contain ``anchor``: one scan for the anchor finds them all."""

    anchor: bytes
    needles: tuple[Needle, ...]

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        found = data.find(self.anchor, pos, endpos)
        return None if found < 0 else found

    def matches(self, line: bytes) -> bool:
        return any(needle.matches(line) for needle in self.needles)


# Scans of the built-in set without RE2: ten passes over the text instead of one a needle.
_ANCHORS = (b"rror", b"ERR", b"FAIL", b"panic:", b"fatal:", b"Exception", b"Traceback",
            b" failed", b" passed", b"xit")


def _grouped(needles: tuple[Needle, ...]) -> tuple[NeedleGroup, ...]:
    groups: dict[bytes, list[Needle]] = {anchor: [] for anchor in _ANCHORS}
    for needle in needles:
        anchor = next(a for a in _ANCHORS if a in needle.text)  # every needle has one
        groups[anchor].append(needle)
    return tuple(NeedleGroup(anchor, tuple(members)) for anchor, members in groups.items())


@dataclass(frozen=True)
class KeepLines:
    """Which lines of a cut's elided part to keep, and the share of the budget for them.

    ``matchers``: a line matches if any of them matches it (none: nothing kept).
    """

    matchers: tuple[LineMatcher, ...]
    share: float = 0.25

    def budget(self, content: int) -> int:
        """The bytes of a cut's content budget set aside for kept lines."""
        return int(content * self.share) if self.matchers else 0


DEFAULT_KEEP_LINES = KeepLines(_grouped(DEFAULT_NEEDLES))


@dataclass(frozen=True)
class KeptLine:
    """One line kept from the elided part: its number (from 1) and its text."""

    number: int
    text: bytes

    @property
    def cost(self) -> int:
        """Its bytes in the delivered text: number, separator, text and line break."""
        return len(str(self.number)) + 2 + len(self.text) + 1


def line_matches(matchers: Sequence[LineMatcher], line: bytes) -> bool:
    """Whether ``line`` (without its line break) is short enough, valid text, and matches."""
    if len(line) > MAX_LINE_BYTES or not any(m.matches(line) for m in matchers):
        return False
    try:
        line.decode("utf-8")  # a kept line is delivered as it was: only valid text
    except UnicodeDecodeError:
        return False
    return True


def find_lines(
    matchers: Sequence[LineMatcher], data: bytes, start: int, end: int
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each matching line in ``data[start:end]``, in order.

    ``start`` is a line start and ``data[end - 1]`` a line break (or ``end``
    is ``start``); a line's ``end`` is the index of its line break.
    """
    nexts = [m.first(data, start, end) for m in matchers]
    pos = start
    while pos < end:
        live = [p for p in nexts if p is not None]
        if not live:
            return
        found = max(pos, min(live))
        low = max(pos, found - MAX_LINE_BYTES - 1)
        line_start = data.rfind(b"\n", low, found) + 1
        if line_start == 0:
            line_start = pos if low == pos else -1  # -1: longer than any line examined
        line_end = data.find(b"\n", found, end)
        if line_end < 0:
            return
        if line_start >= 0 and line_matches(matchers, data[line_start:line_end]):
            yield line_start, line_end
        pos = line_end + 1
        nexts = [p if p is None or p >= pos else m.first(data, pos, end)
                 for m, p in zip(matchers, nexts, strict=True)]


def middle_region(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The whole lines between a head that ends at ``start`` and a tail from ``end``.

    A line is in the middle if it starts at or after ``start`` and its line
    break is before ``end``. Returns the range those lines span (empty if none).
    """
    first = start if start == 0 or data[start - 1 : start] == b"\n" else (
        data.find(b"\n", start, end) + 1)
    last = data.rfind(b"\n", first, end) if first > 0 or start == 0 else -1
    return (first, last + 1) if last >= 0 else (end, end)


def numbered(
    data: bytes, spans: Iterable[tuple[int, int]], start: int, number: int
) -> Iterator[KeptLine]:
    """The lines at ``spans`` with their numbers; ``number`` is that of the line at ``start``."""
    at = start
    for line_start, line_end in spans:
        number += data.count(b"\n", at, line_start)
        at = line_start
        yield KeptLine(number, data[line_start:line_end])


def _summary(kept: int, total: int) -> str:
    return SUMMARY.format(kept=kept, total=total)


def select_kept(candidates: Iterable[KeptLine | None], total: int, budget: int) -> list[KeptLine]:
    """The first candidates that fit ``budget`` with the summary line, in order.

    ``None`` stands for a candidate not kept in memory: the selection stops
    there (a stream drops only those past the widest budget).
    """
    room = budget - len(_summary(total, total)) - 1
    kept: list[KeptLine] = []
    for line in candidates:
        if line is None or line.cost > room:
            break
        kept.append(line)
        room -= line.cost
    return kept


def join_kept(head: str | None, marker: str, block: str, tail: str) -> str:
    """A cut with kept lines: the head (unless a ``tail`` cut), the marker, the block, the tail."""
    return "\n".join([marker, block, tail] if head is None else [head, marker, block, tail])


def render_kept(kept: Sequence[KeptLine], total: int) -> str:
    """The summary line and the kept lines, joined by line breaks (no final one)."""
    lines = [_summary(len(kept), total)]
    lines.extend(f"{line.number}| {line.text.decode('utf-8')}" for line in kept)
    return "\n".join(lines)


#: The matching lines between a head that ends at ``start`` and a tail from ``end``
#: (input offsets), given the budget for them: ``(candidates, total)``, where the
#: candidates are the first matching lines in order, at least those whose costs fit
#: the budget (``None`` stands for one not held), and ``total`` counts them all.
MiddleLines = Callable[[int, int, int], tuple[list[KeptLine | None], int]]


def whole_middle(keep: KeepLines, data: bytes) -> MiddleLines:
    """The :data:`MiddleLines` of an input held whole."""

    def lines(start: int, end: int, budget: int) -> tuple[list[KeptLine | None], int]:
        first, last = middle_region(data, start, end)
        spans = find_lines(keep.matchers, data, first, last)
        number = data.count(b"\n", 0, first) + 1
        kept: list[KeptLine | None] = []
        total = cost = 0
        for line in numbered(data, spans, first, number):
            total += 1
            if cost <= budget:  # past the budget no line is selected: count only
                kept.append(line)
                cost += line.cost
        return kept, total

    return lines
