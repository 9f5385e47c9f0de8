"""A planned cut assembled: bound the UTF-8 size of a text, marker included, in O(limit).

A cut is planned from the limit alone (how many bytes of head and of tail to
keep), then assembled from those two slices. Planning does not look at the
input, so a stream can keep just the slices and be cut the same way. The entry
points (:func:`toolcap.core._cut.cut`, :func:`~toolcap.core._cut.cap_text`) and the
cut that keeps matching lines (:mod:`toolcap.core._keepcut`) build on these.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import AnyStr

from ._marker import SHORT_MARKER, Marker
from ._refs import REFERENCE_LENGTH
from ._strategy import LINE_SNAP, Strategy, check_strategy, split_content
from ._utf8 import decode, head_boundary, tail_boundary, utf8_size

__all__ = [
    "CapResult",
    "CutPlan",
    "assemble",
    "assemble_ascii",
    "assemble_default",
    "cut_points",
    "fitting_bytes",
    "plan_cut",
]

_DEFAULT_MARKER = Marker()


@dataclass(frozen=True)
class CapResult:
    """What a cut delivered.

    Attributes:
        text: the bounded text, always valid UTF-8 (encodable).
        truncated: whether content was dropped.
        original_bytes: UTF-8 size of the input (for ``bytes``, its length).
        kept_bytes: UTF-8 size of ``text``, marker included; never over the limit.
        reference: the artifact reference the marker names, if any.
    """

    text: str
    truncated: bool
    original_bytes: int
    kept_bytes: int
    reference: str | None = None


@dataclass(frozen=True)
class CutPlan:
    """How many bytes of the input's head and tail a cut keeps at most."""

    head: int
    tail: int
    marker: Marker
    strategy: Strategy
    head_ratio: float = 0.2


def plan_cut(
    limit: int,
    *,
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    stored: bool = False,
    reference: str | None = None,
) -> CutPlan:
    """Split the content budget of ``limit`` between head and tail.

    The budget is what is left after the widest possible marker and the line
    breaks around it, so the plan does not depend on the input. The marker's
    room depends on the reference it names: ``reference`` itself, or with
    ``stored`` one of the standard length (a stream learns its reference last).
    """
    check_strategy(strategy)
    if reference is not None:
        reference_length = len(reference.encode("utf-8"))
    else:
        reference_length = REFERENCE_LENGTH if stored else 0
    return _plan(limit, strategy, head_ratio, marker or _DEFAULT_MARKER, reference_length)


# Plans depend on a handful of settings that a program repeats: caching them keeps a
# cut of a huge input down to the work on the bytes it keeps.
@functools.lru_cache(maxsize=256)
def _plan(
    limit: int, strategy: Strategy, head_ratio: float, marker: Marker, reference_length: int
) -> CutPlan:
    separators = 2 if strategy == "head_tail" else 1
    content = limit - marker.reserve(reference_length) - separators
    if content <= 0:
        return CutPlan(0, 0, marker, strategy, head_ratio)
    head, tail = split_content(content, strategy, head_ratio)
    return CutPlan(head, tail, marker, strategy, head_ratio)


def assemble(
    plan: CutPlan,
    head: bytes,
    tail: bytes,
    *,
    original_bytes: int,
    limit: int,
    reference: str | None = None,
    snap_lines: bool = True,
) -> CapResult:
    """Build the cut text from the input's first and last bytes.

    ``head`` starts with the input's first ``plan.head + 1`` bytes (the extra byte
    tells whether the cut splits a character) and ``tail`` ends with its last
    ``plan.tail`` bytes; both may be the whole input, which spares a copy.
    Invalid UTF-8 is replaced; if that makes the text grow past ``limit``, the
    slices shrink until it fits.
    """
    if plan.head == 0 and plan.tail == 0:
        return _fallback(original_bytes, limit)
    head_end, tail_start = cut_points(plan, head, tail, original_bytes, snap_lines)
    try:
        # Valid UTF-8 (the usual case): decoded straight from the input, and the
        # sizes are known without encoding again.
        head_text = str(memoryview(head)[:head_end], "utf-8")
        tail_text = str(memoryview(tail)[tail_start:], "utf-8")
    except UnicodeDecodeError:
        return _assemble_replacing(plan, head[:head_end], tail[tail_start:], original_bytes,
                                   limit, reference)
    kept = head_end + len(tail) - tail_start
    return _join(plan, head_text, tail_text, kept, original_bytes, reference)


def cut_points(
    plan: CutPlan, head: bytes, tail: bytes, original_bytes: int, snap_lines: bool
) -> tuple[int, int]:
    """Where the head ends in ``head`` and the tail starts in ``tail``."""
    head_end = head_boundary(head, plan.head) if plan.head else 0
    # Where ``tail`` sits in the input: the tail never starts before the head ends
    # (an input shorter than the plan, which replacement characters can make too long).
    tail_offset = original_bytes - len(tail)
    start = max(len(tail) - plan.tail, head_end - tail_offset)
    tail_start = tail_boundary(tail, start) if plan.tail else len(tail)
    if snap_lines:
        head_end, tail_start = _snap(head, head_end, tail, tail_start)
    return head_end, tail_start


def assemble_ascii(
    plan: CutPlan, text: str, limit: int, reference: str | None, snap_lines: bool
) -> CapResult:
    """:func:`assemble` of an ASCII ``text``, on ``str`` slices: no encoding, no decoding."""
    if plan.head == 0 and plan.tail == 0:
        return _fallback(len(text), limit)
    head_end, tail_start = plan.head, len(text) - plan.tail
    if snap_lines:
        head_end, tail_start = _snap(text, head_end, text, tail_start)
    head, tail = text[:head_end], text[tail_start:]
    return _join(plan, head, tail, len(head) + len(tail), len(text), reference)


def _assemble_replacing(
    plan: CutPlan,
    kept_head: bytes,
    kept_tail: bytes,
    original_bytes: int,
    limit: int,
    reference: str | None,
) -> CapResult:
    while True:
        head_text, tail_text = decode(kept_head), decode(kept_tail)
        kept = len(head_text.encode("utf-8")) + len(tail_text.encode("utf-8"))
        # The marker counts input bytes, as {original} does, not their replacements.
        result = _join(plan, head_text, tail_text, kept, original_bytes, reference,
                       kept_input=len(kept_head) + len(kept_tail))
        if result.kept_bytes <= limit:
            return result
        if not kept_head and not kept_tail:
            return _fallback(original_bytes, limit)
        # Only replacement characters grow a text (one invalid byte becomes three), so
        # giving back a third of the excess per round converges in a few rounds.
        give_back = max(1, (result.kept_bytes - limit) // 3)
        if len(kept_tail) >= len(kept_head):
            kept_tail = kept_tail[tail_boundary(kept_tail, give_back) :]
        else:
            kept_head = kept_head[: head_boundary(kept_head, len(kept_head) - give_back)]


def _join(
    plan: CutPlan,
    head: str,
    tail: str,
    kept: int,
    original_bytes: int,
    reference: str | None,
    *,
    kept_input: int | None = None,
) -> CapResult:
    """Head, marker and tail; ``kept`` is their UTF-8 size, ``kept_input`` the input
    bytes they came from when that differs (replaced invalid UTF-8)."""
    shown = kept if kept_input is None else kept_input
    marker = plan.marker.render(original=original_bytes, kept=shown, reference=reference)
    marker_bytes = utf8_size(marker)
    if plan.strategy == "head":
        text = f"{head}\n{marker}"
    elif plan.strategy == "tail":
        text = f"{marker}\n{tail}"
    else:
        text = f"{head}\n{marker}\n{tail}"
    separators = 2 if plan.strategy == "head_tail" else 1
    return CapResult(text, True, original_bytes, kept + marker_bytes + separators, reference)


def _fallback(original_bytes: int, limit: int) -> CapResult:
    # An allocation too small for the marker: say as much as fits, never more.
    text = SHORT_MARKER if len(SHORT_MARKER) <= limit and original_bytes > 0 else ""
    return CapResult(text, True, original_bytes, len(text))


def _snap(head: AnyStr, head_end: int, tail: AnyStr, tail_start: int) -> tuple[int, int]:
    """Move the head's end back, and the tail's start forward, to a nearby line break.

    Works on positions in the input (``str`` or ``bytes``), so nothing is copied.
    The head ends before its line break: the line break that joins it to the
    marker stands for it.
    """
    at = LINE_SNAP.head_break(head, head_end)
    return (head_end if at < 0 else at), LINE_SNAP.tail_start(tail, tail_start)


def _result(text: str, truncated: bool, original: int, kept: int,
            reference: str | None) -> CapResult:
    # CapResult(...) without the frozen dataclass's __init__ (one object.__setattr__ a
    # field): a third of the fixed cost of a 32 KB cut of bytes. Same fields, same object.
    result = object.__new__(CapResult)
    fields = result.__dict__
    fields["text"] = text
    fields["truncated"] = truncated
    fields["original_bytes"] = original
    fields["kept_bytes"] = kept
    fields["reference"] = reference
    return result


def fitting_bytes(data: bytes) -> CapResult | None:
    """``data`` that fits its limit, as a cut returns it, when it is valid UTF-8 (its
    size is then its length); else None (the long way replaces what is invalid)."""
    try:
        return _result(str(data, "utf-8"), False, len(data), len(data), None)
    except UnicodeDecodeError:
        return None


#: The default plan for a (limit, reference length): a dict look-up costs a third of
#: the lru_cache call with five arguments. Bounded like the cache it copies.
_DEFAULT_PLANS: dict[tuple[int, int], CutPlan] = {}


def assemble_default(data: bytes, limit: int, reference: str | None) -> CapResult | None:
    """:func:`assemble` of all of ``data`` for the default settings (``head_tail``, a head
    ratio of 0.2, the default marker, lines snapped) when it has nothing to repair; else None.

    Each cut lands on an ASCII or lead byte and what is kept is valid UTF-8:
    then this is the same cut, without the checks a general call needs (about
    half of a 32 KB cut's time went to them). Anything else goes the long way.
    """
    key = (limit, 0 if reference is None else len(reference.encode("utf-8")))
    plan = _DEFAULT_PLANS.get(key)
    if plan is None:
        if len(_DEFAULT_PLANS) >= 256:
            _DEFAULT_PLANS.clear()
        plan = _DEFAULT_PLANS[key] = _plan(limit, "head_tail", 0.2, _DEFAULT_MARKER, key[1])
    head_end, size = plan.head, len(data)
    tail_start = max(size - plan.tail, head_end)  # as assemble() places it, tail being data
    if (not head_end or not plan.tail or tail_start >= size
            or data[head_end] & 0xC0 == 0x80 or data[tail_start] & 0xC0 == 0x80):
        return None  # no room, or a cut inside a character: head_/tail_boundary decide
    head_end, tail_start = LINE_SNAP.both(data, head_end, tail_start)
    kept = head_end + size - tail_start
    view = memoryview(data)
    try:
        marker = plan.marker.render(original=size, kept=kept, reference=reference).encode()
        # One decode of the joined bytes: valid exactly when each part is (a part cut
        # inside a character stays invalid next to a line break), and a call fewer.
        text = str(b"".join((view[:head_end], b"\n", marker, b"\n", view[tail_start:])),
                   "utf-8")
    except UnicodeError:  # invalid input, or a reference with a lone surrogate
        return None
    return _result(text, True, size, kept + len(marker) + 2, reference)
