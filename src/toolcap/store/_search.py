"""Line splitting and search over a stream of chunks (pure: no I/O of its own).

A search runs a linear-time :class:`~toolcap.store._regex.Matcher` on each line's
bytes (never decoded whole) and reports each match by byte offset and line
number. A line longer than :data:`LONG_LINE` is scanned in segments that overlap
by :data:`OVERLAP` bytes, so memory stays a small multiple of a segment however
long the line; a match longer than the overlap on such a line may be missed or
shortened. Matches never span lines: ``^`` and ``$`` are a line's ends.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from toolcap.core._utf8 import decode, head_boundary, tail_boundary
from toolcap.store._records import GrepMatch, GrepResult
from toolcap.store._regex import Matcher

__all__ = [
    "LONG_LINE", "OVERLAP", "Segment", "grep_rows", "line_segments", "search", "split_lines",
]

LONG_LINE = 1 << 20  # a longer line is searched in segments, never held whole
OVERLAP = 64 << 10  # bytes a segment shares with the next: a shorter match is found whole
CUT = "[...]"


def split_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Number the lines of a chunked byte stream (1-based, without their ``\\n``).

    A final ``\\n`` ends the last line rather than starting an empty one, so the
    count matches ``wc -l`` plus one for an unterminated last line.
    """
    number = 0
    pending: list[bytes] = []  # pieces of a line that spans chunks; joined once
    for chunk in chunks:
        parts = chunk.split(b"\n")
        if len(parts) == 1:
            pending.append(chunk)
            continue
        pending.append(parts[0])
        number += 1
        yield number, b"".join(pending)
        for part in parts[1:-1]:
            number += 1
            yield number, part
        pending = [parts[-1]]
    last = b"".join(pending)
    if last:
        yield number + 1, last


@dataclass(frozen=True)
class Segment:
    """A line, or a piece of a long one, as the search sees it.

    Matches that begin in ``data[own:own_end]`` belong to this segment; the
    bytes before ``own`` are context shared with the previous segment, those
    after ``own_end`` are searched again by the next one.
    """

    line: int  # 1-based
    origin: int  # byte offset of data[0] in the artifact
    data: bytes
    own: int
    own_end: int
    first: bool  # data begins the line
    last: bool  # data ends the line


def line_segments(
    chunks: Iterable[bytes],
    *,
    long_line: int = LONG_LINE,
    overlap: int = OVERLAP,
    skip: Matcher | None = None,
    context: int = 0,
) -> Iterator[Segment]:
    """The lines of a chunked byte stream (without their ``\\n``), long ones in pieces.

    Numbering follows :func:`split_lines`. A segment holds at most
    ``long_line + overlap`` bytes plus one chunk. With ``skip``, lines that
    cannot match it are left out, except the ``context`` lines on either side
    of a line that may match and the last ``context`` lines of each chunk;
    line numbers then jump.
    """
    number = 1
    pending = bytearray()
    origin = 0  # artifact offset of pending[0]
    own = 0  # 0 at a line's start, else the context carried from the previous piece
    for chunk in chunks:
        pos = 0
        if pending or own:  # finish the line the previous chunk began
            newline = chunk.find(b"\n")
            if newline >= 0:
                pending += chunk[:newline]
                yield Segment(number, origin, bytes(pending), own, len(pending), own == 0, True)
                number += 1
                origin += len(pending) + 1
                pending.clear()
                own = 0
                pos = newline + 1
        last = chunk.rfind(b"\n", pos) if not (pending or own) else -1
        if last >= 0:  # whole lines chunk[pos:last], each ended by a newline
            base = origin - pos  # artifact offset of chunk[0]
            for line_start, line_end in _wanted_lines(chunk, pos, last, skip, context):
                number += chunk.count(b"\n", pos, line_start)
                yield Segment(number, base + line_start, chunk[line_start:line_end], 0,
                              line_end - line_start, True, True)
                pos = line_start
            number += chunk.count(b"\n", pos, last + 1)
            origin = base + last + 1
            pos = last + 1
        pending += chunk[pos:]
        while len(pending) >= long_line + overlap:
            own_end = len(pending) - overlap
            yield Segment(number, origin, bytes(pending), own, own_end, own == 0, False)
            keep = own_end - overlap  # the next piece starts with `overlap` bytes of context
            del pending[:keep]
            origin += keep
            own = overlap
    if len(pending) > own:
        yield Segment(number, origin, bytes(pending), own, len(pending), own == 0, True)


def _wanted_lines(
    chunk: bytes, pos: int, last: int, skip: Matcher | None, context: int
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the lines in ``chunk[pos:last]`` that a search must see.

    ``chunk[last]`` is a newline. The first and last ``context`` lines are
    always wanted: a line that may match can sit just across a chunk's edge.
    """
    after = context  # lines still wanted after one that may match (one may end the last chunk)
    while pos <= last:
        candidate = None if skip is None else skip.first(chunk, pos, last)
        # Without a candidate no line left may match (or, without skip, all are wanted).
        target = last + 1 if candidate is None else chunk.rfind(b"\n", pos, candidate) + 1 or pos
        start = pos
        while start < target and (after > 0 or skip is None):  # context after a candidate
            end = chunk.find(b"\n", start)
            yield start, end
            start, after = end + 1, after - 1
        if start < target:  # jump to the `context` lines before the target
            first_wanted = target
            for _ in range(context):
                if first_wanted <= start:
                    break
                first_wanted = chunk.rfind(b"\n", start, first_wanted - 1) + 1 or start
            start = max(start, first_wanted)
            while start < target:
                end = chunk.find(b"\n", start)
                yield start, end
                start = end + 1
        if target > last:
            return
        end = chunk.find(b"\n", target)
        yield target, end
        pos, after = end + 1, context


@dataclass
class _Hit:
    line: int
    text: str
    start: int  # artifact offset of text
    end: int  # artifact offset just past text
    before: tuple[tuple[int, str], ...]
    offsets: list[int] = field(default_factory=list)
    after: list[tuple[int, str]] = field(default_factory=list)


def _show(data: bytes, start: int, end: int, cut_before: bool, cut_after: bool) -> str:
    text = decode(data[start:end])
    return f"{CUT + ' ' if cut_before else ''}{text}{' ' + CUT if cut_after else ''}"


def _head(segment: Segment, width: int) -> str:
    """How a line shows as context: its start, cut to ``width`` bytes."""
    data = segment.data
    if segment.last and len(data) <= width:
        return decode(data)
    return _show(data, 0, head_boundary(data, width), False, True)


def search(
    segments: Iterable[Segment],
    matcher: Matcher,
    *,
    context: int,
    max_matches: int,
    width: int,
) -> GrepResult:
    """Matches of ``matcher`` with ``context`` lines around each, at most ``max_matches``.

    A line of at most ``width`` bytes is shown whole, once, with the offsets of
    all its matches; a longer one as windows of at most ``width`` bytes around
    its matches (``width`` must not exceed the segments' overlap). Stops once
    ``max_matches`` are found and one more proved the result truncated.
    """
    before: deque[tuple[int, str]] = deque(maxlen=context)
    hits: list[_Hit] = []
    count = 0
    truncated = False
    resume = 0  # artifact offset where the next match may begin (matches never overlap)
    head = ""
    previous = 0  # the last line seen whole
    for segment in segments:
        number, data, origin = segment.line, segment.data, segment.origin
        if segment.first:
            if truncated and number - hits[-1].line > context:
                break
            if number != previous + 1:
                before.clear()  # lines were skipped: what came before is not adjacent
            head = _head(segment, width) if context else ""
            for hit in reversed(hits):
                if number - hit.line > context:
                    break
                hit.after.append((number, head))
        if truncated:  # only the context after the last match is still wanted
            continue
        whole = segment.first and segment.last and len(data) <= width
        pos = max(segment.own, resume - origin)
        # Mid-line, the last byte stays context, so that `$` or `\b` cannot fire at the cut.
        endpos = len(data) if segment.last else len(data) - 1
        for start, end in matcher.finditer(data, pos, endpos):
            if start > segment.own_end or (start == segment.own_end and not segment.last):
                break  # the next segment finds it
            if count == max_matches:
                truncated = True
                break
            count += 1
            resume = origin + max(end, start + 1)
            same_line = hits[-1] if hits and hits[-1].line == number else None
            if same_line is not None and (whole or origin + start < same_line.end):
                hit = same_line  # shown in the same text: one more offset
            else:
                if whole:
                    left, right = 0, len(data)
                else:
                    left = tail_boundary(data, max(0, start - width // 4))
                    right = head_boundary(data, min(len(data), left + width))
                cut_before = left > 0 or not segment.first
                cut_after = right < len(data) or not segment.last
                hit = _Hit(number, _show(data, left, right, cut_before, cut_after),
                           origin + left, origin + right, tuple(before))
                hits.append(hit)
            hit.offsets.append(origin + start)
        if segment.last:
            previous = number
            if context:
                before.append((number, head))
    matches = tuple(
        GrepMatch(h.line, h.text, h.before, tuple(h.after), tuple(h.offsets), h.start)
        for h in hits
    )
    return GrepResult(matches=matches, truncated=truncated)


def grep_rows(result: GrepResult, *, separate: bool = True) -> list[str]:
    """``result`` as ``grep -n`` shows it, with each match's byte offset.

    A match row is ``LINE:OFFSET:TEXT`` (offsets comma-separated when ``TEXT``
    holds several), a context row ``LINE-TEXT``; contexts that touch are
    merged, and with ``separate`` a ``--`` row stands between groups that do not.
    """
    matched = {match.line for match in result.matches}
    rows: dict[tuple[int, int], str] = {}
    for match in result.matches:
        for number, text in (*match.before, *match.after):
            if number not in matched:
                rows.setdefault((number, -1), f"{number}-{text}")
        offsets = ",".join(str(offset) for offset in match.offsets)
        rows[(match.line, match.start)] = f"{match.line}:{offsets}:{match.text}"
    out: list[str] = []
    previous = 0
    for number, _ in sorted(rows):
        if separate and out and number > previous + 1:
            out.append("--")
        out.append(rows[(number, _)])
        previous = number
    return out
