"""Cuts: bound the UTF-8 size of a text, marker included, in time O(limit).

:func:`cap_text` (the public entry) and :func:`cut` (a limit already parsed) pick
the way: a text that fits comes back as is; an ASCII ``str`` is cut on its own
slices; other text is encoded once and cut from its head and tail bytes
(:mod:`toolcap.core._assemble`), keeping matching lines under the marker when
asked (:mod:`toolcap.core._keepcut`).
"""

from __future__ import annotations

from ._assemble import (
    CapResult,
    CutPlan,
    assemble,
    assemble_ascii,
    assemble_default,
    fitting_bytes,
    plan_cut,
)
from ._keepcut import assemble_keeping
from ._keeplines import KeepLines, whole_middle
from ._marker import Marker
from ._sizes import MIN_LIMIT, parse_limit
from ._strategy import (
    STRATEGIES,
    Strategy,
    check_head_ratio,
    check_strategy,
    split_content,
)
from ._utf8 import decode, sanitize, utf8_size

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
                return assemble_ascii(plan, text, limit, reference, snap_lines)
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
    if (type(text) is bytes and type(limit) is int and limit >= MIN_LIMIT
            and marker is None and strategy == "head_tail" and head_ratio == 0.2
            and snap_lines is True and keep_lines is None):
        # The common calls, settled in a few steps: bytes that fit and are valid UTF-8
        # (their size is their length), and the default cut with nothing to repair.
        fast = (fitting_bytes(text) if len(text) <= limit
                else assemble_default(text, limit, reference))
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

