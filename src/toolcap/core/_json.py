"""The wire cut: bound the JSON bytes of text, not just its UTF-8 bytes.

A text bounded at 32 KB can be several times larger once JSON-escaped: every
quote, backslash, newline and control character grows. This module cuts text
so that its JSON string serialization fits a byte budget, and shares a budget
between the text blocks of a JSON array. It is the one cut engine of
:mod:`._strategy` (strategy, head's share, snapping) with the JSON-byte size
function of :mod:`._jsonsize`; :func:`json_size` and :func:`dumps` live there.

Everything here is pure: no I/O, no global state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ._allocate import water_fill
from ._errors import ConfigError
from ._jsonsize import Fit, dumps, fit_prefix, fit_suffix, json_size, measure
from ._marker import MAX_MARKER_BYTES, SHORT_MARKER
from ._refs import short_ref
from ._sizes import human_size
from ._strategy import CutPolicy
from ._utf8 import utf8_size

__all__ = [
    "DEFAULT_COLLAPSE_MARKER",
    "DEFAULT_WIRE_MARKER",
    "TEXT_BLOCK_OVERHEAD",
    "WIRE_CUT",
    "block_shares",
    "dumps",
    "json_size",
    "project_json_blocks",
    "project_json_text",
    "refit_json",
    "wire_marker",
]

#: The marker put between head and tail by :func:`project_json_text`. Fields:
#: ``{omitted}`` and ``{original}`` (UTF-8 sizes of the text, via ``human_size``),
#: ``{budget}`` (the JSON-byte budget) and ``{where}`` (where the full text is
#: kept, or empty). Rendered, it must be at most 200 bytes.
DEFAULT_WIRE_MARKER = (
    "\n[toolcap: {omitted} of {original} omitted here to fit the {budget} wire limit{where}]\n"
)

#: What the wire cut keeps by default: a fifth of the room for the head, the rest
#: for the tail, cut where the budget falls (a line break is not looked for).
WIRE_CUT = CutPolicy("head_tail", 0.2, snap=None)


def wire_marker(references: Sequence[str] = (), template: str = DEFAULT_WIRE_MARKER) -> str:
    """``template`` with its ``{where}`` field naming where the full text is kept.

    A marker has at most 200 bytes: one reference is named in full, several
    (at most three) by their 16-digit prefix, which still resolves. Raises
    ``ValueError`` when there are references and the template has no ``{where}``.
    """
    if not references:
        return template
    if "{where}" not in template:
        raise ValueError(f"the wire marker {template!r} has no {{where}} field to name"
                         " where the full text is kept")
    if len(references) == 1:
        shown = references[0]
    else:
        shown = ", ".join(short_ref(ref) for ref in references[:3])
    where = f"; full text kept as {shown}".replace("{", "{{").replace("}", "}}")
    return template.replace("{where}", where)


#: The text of the single block that replaces a list of blocks whose empty
#: structure alone exceeds the budget. Fields: ``{count}``, ``{original}``, ``{budget}``.
DEFAULT_COLLAPSE_MARKER = "[toolcap: {count} ({original}) omitted to fit the {budget} wire limit]"

#: JSON bytes of an MCP text content block apart from its text string:
#: ``{"type":"text","text":`` (22) and ``}`` (1).
TEXT_BLOCK_OVERHEAD = 23

# Used instead of the full marker, in this order, when the budget cannot hold it.
_SHORT_MARKERS = (SHORT_MARKER, "…", "")
# How many cuts refit_json tries before its last resort; and the most JSON bytes
# one UTF-8 byte can become (a control character as \u00XX).
_REFIT_TRIES = 8
_MAX_JSON_PER_BYTE = 6


def _render(template: str, omitted: int, original: int, budget: int) -> str:
    try:
        rendered = template.format(
            omitted=human_size(omitted), original=human_size(original), budget=human_size(budget),
            where="",
        )
    except (KeyError, IndexError, ValueError) as error:
        # The same error as a bad size marker's (core/_marker.py): a template is configuration.
        raise ConfigError(f"invalid marker template {template!r}"
                          f" (fields: omitted, original, budget, where): {error}") from None
    if len(rendered.encode("utf-8", "surrogatepass")) > MAX_MARKER_BYTES:
        raise ConfigError(f"the rendered marker is over {MAX_MARKER_BYTES} bytes: {rendered!r}")
    return rendered


class _Plan(NamedTuple):
    head: int  # code points kept from the start
    tail: int  # code points kept from the end
    marker: str


def _plan(text: str, budget: int, original_utf8: int, template: str, policy: CutPolicy) -> _Plan:
    """Where to cut ``text`` (known not to fit) so that its JSON string fits ``budget``."""
    content = budget - 2  # the quotes
    n = len(text)
    snap = policy.snap

    def attempt(marker_bytes: int) -> tuple[int, int, int]:
        room = content - marker_bytes
        head_room, tail_room = policy.split(room)
        head = fit_prefix(text, head_room, n)
        if snap is not None and (at := snap.head_break(text, head.chars)) >= 0:
            head = _without(text, head, at, head.chars)
        if tail_room:  # what the head could not use goes to the tail
            tail_room = room - head.json
        tail = fit_suffix(text, tail_room, n - head.chars)
        if snap is not None and tail.chars:
            start = n - tail.chars
            tail = _without(text, tail, start, snap.tail_start(text, start))
        return head.chars, tail.chars, original_utf8 - head.utf8 - tail.utf8

    def fallback() -> _Plan:
        # No room for the marker: a short one if possible, else none at all.
        for marker in _SHORT_MARKERS:
            size = measure(marker).json
            if size <= content:
                head, tail, _ = attempt(size)
                return _Plan(head, tail, marker)
        raise AssertionError("unreachable: the empty marker always fits")  # pragma: no cover

    # The marker's length depends on the sizes it names, which depend on the
    # room the marker leaves: settle it in a few steps. The reserved room only
    # grows until a rendering fits in it, then only shrinks while each
    # rendering still fits, so the loop ends and the plan kept always fits.
    bound = measure(_render(template, original_utf8, original_utf8, budget)).json
    best: _Plan | None = None
    shrinks = 0
    while bound <= content:
        head, tail, omitted = attempt(bound)
        marker = _render(template, omitted, original_utf8, budget)
        size = measure(marker).json
        if size <= bound:
            best = _Plan(head, tail, marker)
            shrinks += 1
            if size == bound or shrinks == 3:
                break
        elif best is not None:
            break
        bound = size
    return best if best is not None else fallback()


def _without(text: str, fit: Fit, start: int, end: int) -> Fit:
    """``fit`` less the code points ``text[start:end]`` (a snap moved its edge)."""
    if end <= start:
        return fit
    dropped = measure(text[start:end])
    return Fit(fit.chars - (end - start), fit.utf8 - dropped.utf8, fit.json - dropped.json)


def project_json_text(
    text: str,
    budget: int = 65536,
    *,
    marker: str = DEFAULT_WIRE_MARKER,
    policy: CutPolicy = WIRE_CUT,
) -> str:
    """Return ``text`` cut so that its JSON string serialization fits ``budget`` bytes.

    The budget counts the UTF-8 bytes of the serialization, quotes and escapes
    included (``json_size(result) <= budget``). Text that fits is returned
    unchanged (the same object). Otherwise the result is a head of the text,
    ``marker`` rendered with the omitted and original UTF-8 sizes and the budget,
    and a tail of the text, as ``policy`` shares the room (by default
    :data:`WIRE_CUT`: a fifth for the head, the rest for the tail). Cuts fall on
    code points and never between a high and a low surrogate. Beyond one pass
    measuring the input (none for ASCII text longer than the budget), the work
    grows with the budget, not with the input.

    ``marker`` is a ``str.format`` template with the fields ``{omitted}``,
    ``{original}``, ``{budget}`` and ``{where}`` (see :func:`wire_marker`; empty
    here); rendered it must be at most 200 bytes, else :class:`~toolcap.ConfigError`
    (a ``ValueError``). When the budget cannot hold it, ``[toolcap: truncated]`` or
    ``…`` stands in for it (nothing at all below 5 bytes). Raises ``ValueError``
    for a budget below 2 (the two quotes).
    """
    if budget < 2:
        raise ValueError(f"a JSON string needs at least 2 bytes, got a budget of {budget}")
    if len(text) + 2 <= budget:
        size = measure(text)  # short enough to measure: O(budget)
        if size.json + 2 <= budget:
            return text
        original = size.utf8
    else:
        original = utf8_size(text)  # cannot fit: every code point is >= 1 byte
    plan = _plan(text, budget, original, marker, policy)
    return text[: plan.head] + plan.marker + text[len(text) - plan.tail :]


def project_json_blocks(
    texts: Sequence[str],
    budget: int,
    *,
    marker: str = DEFAULT_WIRE_MARKER,
    overheads: Sequence[int] | None = None,
    policy: CutPolicy = WIRE_CUT,
) -> list[str]:
    """Bound a JSON array of text content blocks to ``budget`` bytes; return the new texts.

    The texts are taken as serialized ``[{"type":"text","text":…},…]`` with
    compact separators. When that fits, the texts come back as they are.
    Otherwise the bytes left after the structure are shared by water-fill: the
    largest texts are cut (by :func:`project_json_text`) to a common level,
    smaller ones stay whole, ties break by position; the number and order of
    blocks are kept; bytes a cut cannot use (a code point that does not fit) go
    to the next cut block. When even the structure with empty texts exceeds the
    budget, the result is one plain text block holding an omission marker (the
    caller then sends one block). Deterministic; unchanged texts are the same
    objects.

    ``overheads`` gives, per block, its JSON bytes apart from its text string
    (default :data:`TEXT_BLOCK_OVERHEAD`, a block with only ``type`` and
    ``text``); pass it when the blocks carry more fields. Raises ``ValueError``
    when the budget cannot hold even one empty block.
    """
    if not texts:
        if budget < 2:
            raise ValueError(f"an empty JSON array needs 2 bytes, got a budget of {budget}")
        return []
    planned = block_shares(texts, budget, overheads=overheads)
    if planned is None:
        return [_collapse(texts, budget)]
    sizes, shares = planned
    if all(share >= size for share, size in zip(shares, sizes, strict=True)):
        return list(texts)
    out: list[str] = []
    carry = 0
    for text, size, share in zip(texts, sizes, shares, strict=True):
        if share >= size:
            out.append(text)
            continue
        allowed = share + carry
        cut = project_json_text(text, allowed + 2, marker=marker, policy=policy)
        carry = allowed - (json_size(cut) - 2)
        out.append(cut)
    return out


def block_shares(
    texts: Sequence[str], budget: int, *, overheads: Sequence[int] | None = None
) -> tuple[list[int], list[int]] | None:
    """How an array of text blocks shares ``budget`` JSON bytes: ``(sizes, shares)``.

    Per text, its JSON bytes (quotes excluded; a text longer in code points
    than the whole room counts as the room plus one, unmeasured) and the bytes
    it may take: water-fill of the room the structure leaves, so the largest
    are cut to a common level and small ones stay whole. ``None`` when even the
    structure with empty texts exceeds the budget. ``overheads`` as for
    :func:`project_json_blocks`.
    """
    n = len(texts)
    if overheads is None:
        overheads = [TEXT_BLOCK_OVERHEAD] * n
    elif len(overheads) != n:
        raise ValueError(f"{len(overheads)} overheads for {n} blocks")
    fixed = 2 + max(n - 1, 0) + sum(overheads) + 2 * n  # brackets, commas, wrappers, quotes
    if fixed > budget:
        return None
    room = budget - fixed
    # A text longer (in code points) than the room is cut whatever its exact
    # size, and water-fill gives it the same share for any size above the room:
    # so it is not measured.
    sizes = [room + 1 if len(t) > room else measure(t).json for t in texts]
    return sizes, (list(sizes) if sum(sizes) <= room else water_fill(sizes, room))


def refit_json(cut_to: Callable[[int], str], utf8_limit: int, json_limit: int) -> str:
    """A cut of an original (``cut_to(limit)``: the text cut to ``limit`` UTF-8
    bytes) whose JSON string fits ``json_limit`` bytes (quotes excluded).

    The cut to about the largest limit, at most ``utf8_limit``, that fits: so the
    text keeps the cut's own rules (its marker, whole lines) instead of being cut
    a second time. Each try aims where the last one's JSON bytes per UTF-8 byte
    say the limit fits, kept between the largest limit known to fit and the
    smallest known not to (so text that escapes to twice its size, quotes say, is
    not cut to a limit too small for its marker); the last resort, a sixth of the
    JSON limit, always fits (no UTF-8 byte is more than 6 JSON bytes).
    """
    fits, over = 0, min(utf8_limit, json_limit) + 1  # limits known to fit, not to fit
    limit, best = over - 1, None
    for _ in range(_REFIT_TRIES):
        text = cut_to(limit)
        size = measure(text).json
        if size <= json_limit:
            if limit == over - 1:
                return text  # the largest limit there is
            fits, best = limit, text
            limit = (fits + over) // 2
        else:
            over = limit
            limit = max(fits + 1, min(over - 1, limit * json_limit // size))
        if not fits < limit < over:
            break
    return best if best is not None else cut_to(max(0, json_limit // _MAX_JSON_PER_BYTE))


def _collapse(texts: Sequence[str], budget: int) -> str:
    fixed = 2 + TEXT_BLOCK_OVERHEAD + 2  # [{"type":"text","text":""}]
    if budget < fixed:
        raise ValueError(f"one empty text block needs {fixed} bytes, got a budget of {budget}")
    count = f"{len(texts)} text block{'' if len(texts) == 1 else 's'}"
    original = sum(utf8_size(t) for t in texts)
    text = DEFAULT_COLLAPSE_MARKER.format(
        count=count, original=human_size(original), budget=human_size(budget)
    )
    fit = fit_prefix(text, budget - fixed, len(text))
    return text[: fit.chars]
