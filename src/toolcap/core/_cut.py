"""Cuts: bound the UTF-8 size of a text, marker included, in time O(limit).

A cut is planned from the limit alone (how many bytes of head and of tail to
keep), then assembled from those two slices. Planning does not look at the
input, so a stream can keep just the slices and be cut the same way.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from typing import AnyStr

from ._keeplines import (
    KeepLines,
    MiddleLines,
    join_kept,
    render_kept,
    select_kept,
    whole_middle,
)
from ._marker import SHORT_MARKER, Marker
from ._refs import REFERENCE_LENGTH
from ._sizes import MIN_LIMIT, parse_limit
from ._strategy import (
    LINE_SNAP,
    STRATEGIES,
    Strategy,
    check_head_ratio,
    check_strategy,
    split_content,
)
from ._utf8 import decode, head_boundary, sanitize, tail_boundary, utf8_size

__all__ = [
    "STRATEGIES",
    "CapResult",
    "CutPlan",
    "Strategy",
    "assemble",
    "assemble_keeping",
    "cap_text",
    "check_head_ratio",
    "check_strategy",
    "cut",
    "plan_cut",
    "split_content",
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
    head_end, tail_start = _cut_points(plan, head, tail, original_bytes, snap_lines)
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


def _cut_points(
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
            head_end, tail_start = _cut_points(reduced, head, tail, original_bytes, snap_lines)
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


def _assemble_ascii(
    plan: CutPlan, text: str, limit: int, reference: str | None, snap_lines: bool
) -> CapResult:
    # The same cut as assemble(), on str slices: no encoding, no decoding.
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


def cut(
    text: str | bytes,
    limit: int,
    *,
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    reference: str | None = None,
    snap_lines: bool = True,
    keep_lines: KeepLines | None = None,
) -> CapResult:
    """:func:`cap_text` for a limit already parsed, of any size (even below 1 KB)."""
    keeping = keep_lines is not None and strategy != "head" and bool(keep_lines.matchers)
    if isinstance(text, str):
        if text.isascii():
            if len(text) <= limit:
                return CapResult(text, False, len(text), len(text))
            if not keeping:
                plan = plan_cut(limit, strategy=strategy, head_ratio=head_ratio, marker=marker,
                                reference=reference)
                return _assemble_ascii(plan, text, limit, reference, snap_lines)
        try:
            data = text.encode("utf-8")
            clean = text
        except UnicodeEncodeError:  # lone surrogates: rare, so repaired only when met
            clean = sanitize(text)
            data = clean.encode("utf-8")
        if len(data) <= limit:
            return CapResult(clean, False, len(data), len(data))
    else:
        data = bytes(text)
        if len(data) <= limit:
            decoded = decode(data)
            size = utf8_size(decoded)
            if size <= limit:
                return CapResult(decoded, False, len(data), size)
        # Replaced invalid bytes grow; a cut never delivers more than it received.
        limit = min(limit, len(data))
    plan = plan_cut(limit, strategy=strategy, head_ratio=head_ratio, marker=marker,
                    reference=reference)
    if keeping and keep_lines is not None:
        return assemble_keeping(plan, data, data, original_bytes=len(data), limit=limit,
                                keep=keep_lines, middle=whole_middle(keep_lines, data),
                                reference=reference, snap_lines=snap_lines)
    return assemble(plan, data, data, original_bytes=len(data), limit=limit,
                    reference=reference, snap_lines=snap_lines)


def _cut_bytes(data: bytes, limit: int, reference: str | None) -> CapResult | None:
    """:func:`assemble` for the default settings when it has nothing to repair; else None.

    Each cut lands on an ASCII or lead byte and what is kept is valid UTF-8:
    then this is the same cut, without the checks a general call needs (about
    half of a 32 KB cut's time went to them). Anything else goes the long way.
    """
    plan = _plan(limit, "head_tail", 0.2, _DEFAULT_MARKER,
                 0 if reference is None else len(reference.encode("utf-8")))
    head_end, size = plan.head, len(data)
    tail_start = max(size - plan.tail, head_end)  # as assemble() places it, tail being data
    if (not head_end or not plan.tail or tail_start >= size
            or data[head_end] & 0xC0 == 0x80 or data[tail_start] & 0xC0 == 0x80):
        return None  # no room, or a cut inside a character: head_/tail_boundary decide
    head_end, tail_start = _snap(data, head_end, data, tail_start)
    try:
        head_text = str(memoryview(data)[:head_end], "utf-8")
        tail_text = str(memoryview(data)[tail_start:], "utf-8")
    except UnicodeDecodeError:
        return None
    return _join(plan, head_text, tail_text, head_end + size - tail_start, size, reference)


def cap_text(
    text: str | bytes,
    limit: int | str | None,
    *,
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: str | Marker | None = None,
    reference: str | None = None,
    snap_lines: bool = True,
    keep_lines: KeepLines | None = None,
) -> CapResult:
    """Bound ``text`` to ``limit`` UTF-8 bytes, marker included.

    Args:
        text: a ``str``, or ``bytes`` decoded as UTF-8 with invalid sequences
            replaced by U+FFFD. Lone surrogates in a ``str`` are replaced by U+FFFD
            (and surrogate pairs joined) so the result always encodes as UTF-8.
        limit: a byte count, a size such as ``"32KB"``, or ``"unlimited"``/``None``.
            A limit below 1 KB is refused with :class:`ConfigError`.
        strategy: keep the ``head``, the ``tail``, or both (``head_tail``).
        head_ratio: with ``head_tail``, the share of the content budget for the head.
        marker: a marker template (see :mod:`toolcap.core._marker`), or the default.
        reference: the artifact reference of the stored original, if any.
        snap_lines: move each cut to a line break when one is close (within a
            quarter of the part kept, at most 1 KB).
        keep_lines: with ``head_tail`` or ``tail``, the lines of the elided part
            to keep under the marker (see :mod:`toolcap.core._keeplines`; build
            one from patterns with :func:`toolcap.keep_lines`, the built-in set
            with ``toolcap.keep_lines()``); ``None`` (the default) keeps none.
            A tool's policy (``Policy.finalize``) keeps the built-in set by default.

    Text that fits is returned as is: the same object when it is a valid ``str``.
    Cost grows with ``limit``, not with the input, for ``bytes`` and ASCII ``str``;
    other text is encoded once. With ``keep_lines``, the elided part is scanned too.
    """
    if (type(text) is bytes and type(limit) is int and MIN_LIMIT <= limit < len(text)
            and marker is None and strategy == "head_tail" and head_ratio == 0.2
            and snap_lines is True and keep_lines is None):
        fast = _cut_bytes(text, limit, reference)  # the common call, settled in a few steps
        if fast is not None:
            return fast
    parsed = parse_limit(limit, key="limit")
    check_strategy(strategy, key="strategy")
    check_head_ratio(head_ratio, key="head_ratio")
    template = marker if isinstance(marker, Marker) or marker is None else Marker.parse(marker)
    if parsed is None:
        if isinstance(text, str):
            clean = sanitize(text)
            size = utf8_size(clean)
            return CapResult(clean, False, size, size)
        decoded = decode(text)
        return CapResult(decoded, False, len(text), utf8_size(decoded))
    return cut(text, parsed, strategy=strategy, head_ratio=head_ratio, marker=template,
               reference=reference, snap_lines=snap_lines, keep_lines=keep_lines)

