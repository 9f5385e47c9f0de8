"""JSON Lines cut by whole lines, so that every delivered line still parses.

A text whose lines are JSON values (one record a line: structured logs, an
export, ``--json`` output of many tools) loses its use when a cut splits a
record. Such a text is cut at line boundaries only: the head keeps the whole
lines that fit its share, the tail likewise, and the marker stands on its own
line between them.

Detection is cheap and local: the text's first line must be a JSON object or
array ending within its first 4 KB, and every non-empty line delivered must
parse (so at most the limit and 4 KB are parsed, whatever the input's size).
Otherwise the caller cuts it as text. Like :func:`assemble`,
the cut needs only the input's first and last bytes, so a stream is cut
exactly like the whole text.
"""

from __future__ import annotations

import json

from ._cut import CapResult, CutPlan
from ._utf8 import utf8_size

__all__ = ["PREFIX_BYTES", "cut_json_lines", "looks_like_json_lines"]

_OPENERS = (b"{", b"[")
#: How much of a text's start tells whether it is JSON Lines (a stream keeps as much).
PREFIX_BYTES = 4096


def looks_like_json_lines(prefix: bytes) -> bool:
    """Whether a text that starts with ``prefix`` may be JSON Lines.

    ``prefix`` is the text's first :data:`PREFIX_BYTES` (or all of it): its first
    non-blank line must be an object or an array that parses, and end within it.
    """
    start = len(prefix) - len(prefix.lstrip(b" \t\r\n"))
    end = prefix.find(b"\n", start)
    return prefix[start : start + 1] in _OPENERS and end > 0 and _parses(prefix[start:end])


def _parses(lines: bytes) -> bool:
    try:
        text = lines.decode("utf-8")
    except UnicodeDecodeError:
        return False
    for line in text.split("\n"):
        if line.strip():
            try:
                json.loads(line)
            except (ValueError, RecursionError):
                return False
    return True


def cut_json_lines(
    plan: CutPlan,
    head: bytes,
    tail: bytes,
    *,
    original_bytes: int,
    prefix: bytes,
    reference: str | None = None,
) -> CapResult | None:
    """The cut of a JSON Lines text by whole lines, or ``None`` if it is not one.

    ``head`` starts with the input's first ``plan.head + 1`` bytes and ``tail``
    ends with its last ``plan.tail`` bytes, as for :func:`assemble`; ``prefix``
    is its first :data:`PREFIX_BYTES`. When no whole line fits, the marker
    alone is delivered.
    """
    if not looks_like_json_lines(prefix[:PREFIX_BYTES]):
        return None
    head_end = head.rfind(b"\n", 0, plan.head + 1) if plan.head else -1
    kept_head = head[: max(0, head_end)]
    tail_offset = original_bytes - len(tail)
    if plan.tail:
        # A tail starts after a line break within its share (and after the head).
        start = max(len(tail) - plan.tail, max(0, head_end) - tail_offset)
        at = tail.find(b"\n", max(0, start))
        kept_tail = tail[at + 1 :] if at >= 0 else b""
    else:
        kept_tail = b""
    if not _parses(kept_head) or not _parses(kept_tail):
        return None
    kept = len(kept_head) + len(kept_tail)
    marker = plan.marker.render(original=original_bytes, kept=kept, reference=reference)
    parts = [part.decode("utf-8") for part in (kept_head, marker.encode("utf-8"), kept_tail)
             if part]
    text = "\n".join(parts)
    return CapResult(text, True, original_bytes, utf8_size(text), reference)
