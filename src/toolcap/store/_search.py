"""Line splitting and search over a stream of chunks (pure: no I/O of its own)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator

from toolcap.store._records import GrepMatch, GrepResult

__all__ = ["search_lines", "split_lines"]


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


def search_lines(
    lines: Iterable[tuple[int, bytes]],
    regex: re.Pattern[str],
    *,
    context: int,
    max_matches: int,
    max_line_chars: int,
) -> GrepResult:
    """Matches of ``regex`` among decoded ``lines``, with ``context`` lines around each.

    Stops once ``max_matches`` are complete and one more match proved that the
    result is truncated.
    """

    def show(raw: bytes) -> str:
        text = raw.decode("utf-8", "replace")
        return text if len(text) <= max_line_chars else text[:max_line_chars] + " [...]"

    before: deque[tuple[int, str]] = deque(maxlen=context)
    found: list[tuple[int, str, tuple[tuple[int, str], ...], list[tuple[int, str]]]] = []
    truncated = False
    for number, raw in lines:
        text = raw.decode("utf-8", "replace")
        for hit in found[-context:] if context else ():
            if number - hit[0] <= context:
                hit[3].append((number, show(raw)))
        if regex.search(text):
            if len(found) == max_matches:
                truncated = True
            elif not truncated:
                found.append((number, show(raw), tuple(before), []))
        if truncated and number - found[-1][0] >= context:
            break
        if context:
            before.append((number, show(raw)))
    matches = tuple(GrepMatch(n, t, b, tuple(a)) for n, t, b, a in found)
    return GrepResult(matches=matches, truncated=truncated)
