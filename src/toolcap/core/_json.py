"""JSON-byte sizes and projections: a bound on what crosses a pipe, not just on text.

A text bounded at 32 KB can be several times larger once JSON-escaped: every
quote, backslash, newline and control character grows. This module measures the
UTF-8 bytes of the *compact JSON serialization* of a value and cuts text so that
its serialization fits a byte budget.

The serialization measured is ``json.dumps(value, ensure_ascii=False,
separators=(",", ":"))`` made valid UTF-8 the way JavaScript's ``JSON.stringify``
does it: a high surrogate code point followed by a low one is a pair and is
written as the character they encode, and any other surrogate code point is
lone and written as a ``\\uXXXX`` escape. :func:`dumps` produces exactly that
serialization.

Everything here is pure: no I/O, no global state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

from ._allocate import water_fill
from ._refs import short_ref
from ._sizes import human_size

__all__ = [
    "DEFAULT_COLLAPSE_MARKER",
    "DEFAULT_WIRE_MARKER",
    "TEXT_BLOCK_OVERHEAD",
    "dumps",
    "json_size",
    "project_json_blocks",
    "project_json_text",
]

#: The marker put between head and tail by :func:`project_json_text`. Fields:
#: ``{omitted}`` and ``{original}`` (UTF-8 sizes of the text, via ``human_size``)
#: and ``{budget}`` (the JSON-byte budget). Rendered, it must be at most 200 bytes.
DEFAULT_WIRE_MARKER = (
    "\n[toolcap: {omitted} of {original} omitted here to fit the {budget} wire limit]\n"
)


def wire_marker(references: Sequence[str] = ()) -> str:
    """The wire marker, naming where the full text is kept.

    A marker has at most 200 bytes: one reference is named in full, several
    (at most three) by their 16-digit prefix, which still resolves.
    """
    if not references:
        return DEFAULT_WIRE_MARKER
    if len(references) == 1:
        shown = references[0]
    else:
        shown = ", ".join(short_ref(ref) for ref in references[:3])
    head, _, tail = DEFAULT_WIRE_MARKER.rpartition("]")
    return f"{head}; full text kept as {shown}]{tail}"

#: The text of the single block that replaces a list of blocks whose empty
#: structure alone exceeds the budget. Fields: ``{count}``, ``{original}``, ``{budget}``.
DEFAULT_COLLAPSE_MARKER = "[toolcap: {count} ({original}) omitted to fit the {budget} wire limit]"

#: JSON bytes of an MCP text content block apart from its text string:
#: ``{"type":"text","text":`` (22) and ``}`` (1).
TEXT_BLOCK_OVERHEAD = 23

_MARKER_MAX_BYTES = 200
# Used instead of the full marker, in this order, when the budget cannot hold it.
_SHORT_MARKERS = ("[toolcap: truncated]", "…", "")

# Bytes that JSON escapes. Inside UTF-8 they only ever stand for themselves
# (continuation and lead bytes are >= 0x80), so they can be counted on the
# encoded bytes. The short ones become two bytes (\" \\ \b \t \n \f \r), the
# other control characters six (\u00XX).
_ESC_SHORT = b'"\\\b\t\n\f\r'
_ESC_ALL = bytes(range(0x20)) + b'"\\'
_ESC_LONG = bytes(sorted(set(_ESC_ALL) - set(_ESC_SHORT)))
# Deleting every byte but the escaped ones leaves a short string to count:
# twice as fast as deleting the escaped ones and comparing lengths.
_NOT_ESC = bytes(sorted(set(range(256)) - set(_ESC_ALL)))
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_PAIR_OR_LONE = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
_HIGH = range(0xD800, 0xDC00)
_LOW = range(0xDC00, 0xE000)
# Measuring in slices keeps memory flat on huge inputs and is faster than one
# giant encode (the slices stay in cache).
_CHUNK = 1 << 18
# The most bytes one code point can take in the serialization (\u00XX or an
# escaped surrogate).
_MAX_CHAR_COST = 6


class _Size(NamedTuple):
    utf8: int  # UTF-8 bytes once repaired: a pair as its character, a lone surrogate as U+FFFD
    json: int  # JSON bytes of the characters, quotes excluded


def _measure_chunk(text: str) -> _Size:
    try:
        data = text.encode("utf-8")
        surrogates = pairs = 0
    except UnicodeEncodeError:
        # Rare: surrogate code points, 3 bytes each with surrogatepass. A lone
        # one is written as a 6-byte \uXXXX escape, a pair as one 4-byte character.
        data = text.encode("utf-8", "surrogatepass")
        surrogates = len(_SURROGATE.findall(text))
        pairs = len(_PAIR.findall(text))
    size = len(data)
    extra = 3 * surrogates - 8 * pairs
    escaped = data.translate(None, _NOT_ESC)
    if escaped:
        # One more byte for each (\n), five more for a \u00XX.
        six = len(escaped) - len(escaped.translate(None, _ESC_LONG))
        extra += len(escaped) + 4 * six
    return _Size(size - 2 * pairs, size + extra)


def _measure(text: str) -> _Size:
    """UTF-8 and JSON bytes of ``text`` (quotes excluded), without serializing it."""
    if len(text) <= _CHUNK:
        return _measure_chunk(text)
    utf8 = js = start = 0
    n = len(text)
    while start < n:
        end = _unsplit(text, start + _CHUNK)
        part = _measure_chunk(text[start:end])
        utf8 += part.utf8
        js += part.json
        start = end
    return _Size(utf8, js)


def _splits_pair(text: str, index: int) -> bool:
    """True when ``index`` falls between the two halves of a surrogate pair."""
    return 0 < index < len(text) and ord(text[index - 1]) in _HIGH and ord(text[index]) in _LOW


def _unsplit(text: str, index: int) -> int:
    # Sizes add up over slices only when no slice splits a pair (a pair is 4
    # bytes, its halves apart are 6 each), so slice boundaries move past pairs.
    return index + 1 if _splits_pair(text, index) else index


def _utf8_size(text: str) -> int:
    if text.isascii():  # O(1) in CPython: the flag is stored on the object
        return len(text)
    total = start = 0
    while start < len(text):
        end = _unsplit(text, start + _CHUNK)
        part = text[start:end]
        try:
            total += len(part.encode("utf-8"))
        except UnicodeEncodeError:
            total += _measure_chunk(part).utf8
        start = end
    return total


def _key_text(key: object) -> str:
    # The same key conversions json.dumps applies.
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _value_size(value: object, active: set[int]) -> int:
    if isinstance(value, str):
        return _measure(value).json + 2
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return len(int.__repr__(value))
    if isinstance(value, float):
        return len(json.dumps(value))  # repr, or NaN/Infinity like json.dumps
    if isinstance(value, (list, tuple, dict)):
        marker = id(value)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        try:
            if isinstance(value, dict):
                total = 2 + max(len(value) - 1, 0)  # braces, commas
                for key, item in value.items():
                    total += _measure(_key_text(key)).json + 3  # quotes, colon
                    total += _value_size(item, active)
                return total
            total = 2 + max(len(value) - 1, 0)
            for item in value:
                total += _value_size(item, active)
            return total
        finally:
            active.discard(marker)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_size(value: object) -> int:
    """Return the UTF-8 byte length of the compact JSON serialization of ``value``.

    Equal to ``len(dumps(value).encode())``. A ``str`` is measured without
    building its serialization; containers are measured recursively. Raises
    ``TypeError`` and ``ValueError`` where ``json.dumps`` would.
    """
    if isinstance(value, str):
        return _measure(value).json + 2
    return _value_size(value, set())


def _repair_surrogates(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 2:
        high, low = ord(found[0]), ord(found[1])
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    return f"\\u{ord(found):04x}"


def dumps(value: object) -> str:
    """Serialize ``value`` as compact JSON whose UTF-8 encoding is always valid.

    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` with each
    surrogate pair written as its character and each lone surrogate escaped as
    ``\\uXXXX``. ``json_size(value)`` is the UTF-8 length of the result.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _PAIR_OR_LONE.sub(_repair_surrogates, text)


class _Fit(NamedTuple):
    chars: int
    utf8: int
    json: int


def _fit_prefix(text: str, limit: int, max_chars: int) -> _Fit:
    """The longest prefix of at most ``max_chars`` code points within ``limit`` JSON bytes.

    The prefix never ends between the halves of a surrogate pair.
    """
    # Every code point costs at least one byte, so no prefix longer than the
    # limit can fit: the work is bounded by the limit, not by the text.
    k = min(max_chars, len(text), max(limit, 0))
    if _splits_pair(text, k):
        k -= 1
    size = _measure(text[:k])
    utf8, js = size.utf8, size.json
    while js > limit:
        # At most 6 bytes per code point: dropping this many never drops more
        # than needed, and the excess shrinks geometrically.
        cut = k - -(-(js - limit) // _MAX_CHAR_COST)
        if _splits_pair(text, cut):
            cut -= 1  # the high half alone would not fit either: both go
        part = _measure(text[cut:k])
        k = cut
        utf8 -= part.utf8
        js -= part.json
    return _Fit(k, utf8, js)


def _fit_suffix(text: str, limit: int, max_chars: int) -> _Fit:
    """The longest suffix of at most ``max_chars`` code points within ``limit`` JSON bytes.

    The suffix never starts between the halves of a surrogate pair.
    """
    n = len(text)
    start = n - min(max_chars, n, max(limit, 0))
    if _splits_pair(text, start):
        start += 1
    size = _measure(text[start:])
    utf8, js = size.utf8, size.json
    while js > limit:
        cut = start + -(-(js - limit) // _MAX_CHAR_COST)
        if _splits_pair(text, cut):
            cut += 1
        part = _measure(text[start:cut])
        start = cut
        utf8 -= part.utf8
        js -= part.json
    return _Fit(n - start, utf8, js)


def _render(template: str, omitted: int, original: int, budget: int) -> str:
    try:
        rendered = template.format(
            omitted=human_size(omitted), original=human_size(original), budget=human_size(budget)
        )
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(
            f"invalid marker template {template!r} (fields: omitted, original, budget): {error}"
        ) from None
    if len(rendered.encode("utf-8", "surrogatepass")) > _MARKER_MAX_BYTES:
        raise ValueError(f"the rendered marker is over {_MARKER_MAX_BYTES} bytes: {rendered!r}")
    return rendered


class _Plan(NamedTuple):
    head: int  # code points kept from the start
    tail: int  # code points kept from the end
    marker: str


def _plan(text: str, budget: int, original_utf8: int, template: str) -> _Plan:
    """Where to cut ``text`` (known not to fit) so that its JSON string fits ``budget``."""
    content = budget - 2  # the quotes
    n = len(text)

    def attempt(marker_bytes: int) -> tuple[int, int, int]:
        room = content - marker_bytes
        head = _fit_prefix(text, room // 5, n)  # ~20% head, the rest for the tail
        tail = _fit_suffix(text, room - head.json, n - head.chars)
        return head.chars, tail.chars, original_utf8 - head.utf8 - tail.utf8

    def fallback() -> _Plan:
        # No room for the marker: a short one if possible, else none at all.
        for marker in _SHORT_MARKERS:
            size = _measure(marker).json
            if size <= content:
                head, tail, _ = attempt(size)
                return _Plan(head, tail, marker)
        raise AssertionError("unreachable: the empty marker always fits")  # pragma: no cover

    # The marker's length depends on the sizes it names, which depend on the
    # room the marker leaves: settle it in a few steps. The reserved room only
    # grows until a rendering fits in it, then only shrinks while each
    # rendering still fits, so the loop ends and the plan kept always fits.
    bound = _measure(_render(template, original_utf8, original_utf8, budget)).json
    best: _Plan | None = None
    shrinks = 0
    while bound <= content:
        head, tail, omitted = attempt(bound)
        marker = _render(template, omitted, original_utf8, budget)
        size = _measure(marker).json
        if size <= bound:
            best = _Plan(head, tail, marker)
            shrinks += 1
            if size == bound or shrinks == 3:
                break
        elif best is not None:
            break
        bound = size
    return best if best is not None else fallback()


def project_json_text(text: str, budget: int = 65536, *, marker: str = DEFAULT_WIRE_MARKER) -> str:
    """Return ``text`` cut so that its JSON string serialization fits ``budget`` bytes.

    The budget counts the UTF-8 bytes of the serialization, quotes and escapes
    included (``json_size(result) <= budget``). Text that fits is returned
    unchanged (the same object). Otherwise the result is a head of the text
    (about 20% of the budget), ``marker`` rendered with the omitted and original
    UTF-8 sizes and the budget, and a tail of the text (the rest). Cuts fall on
    code points and never between a high and a low surrogate. Beyond one pass
    measuring the input (none for ASCII text longer than the budget), the work
    grows with the budget, not with the input.

    ``marker`` is a ``str.format`` template with the fields ``{omitted}``,
    ``{original}`` and ``{budget}``; rendered it must be at most 200 bytes, else
    ``ValueError``. When the budget cannot hold it, ``[toolcap: truncated]`` or
    ``…`` stands in for it (nothing at all below 5 bytes). Raises ``ValueError``
    for a budget below 2 (the two quotes).
    """
    if budget < 2:
        raise ValueError(f"a JSON string needs at least 2 bytes, got a budget of {budget}")
    if len(text) + 2 <= budget:
        size = _measure(text)  # short enough to measure: O(budget)
        if size.json + 2 <= budget:
            return text
        original = size.utf8
    else:
        original = _utf8_size(text)  # cannot fit: every code point is >= 1 byte
    plan = _plan(text, budget, original, marker)
    return text[: plan.head] + plan.marker + text[len(text) - plan.tail :]


def project_json_blocks(
    texts: Sequence[str],
    budget: int,
    *,
    marker: str = DEFAULT_WIRE_MARKER,
    overheads: Sequence[int] | None = None,
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
    n = len(texts)
    if overheads is None:
        overheads = [TEXT_BLOCK_OVERHEAD] * n
    elif len(overheads) != n:
        raise ValueError(f"{len(overheads)} overheads for {n} blocks")
    if n == 0:
        if budget < 2:
            raise ValueError(f"an empty JSON array needs 2 bytes, got a budget of {budget}")
        return []
    fixed = 2 + (n - 1) + sum(overheads) + 2 * n  # brackets, commas, wrappers, quotes
    if fixed > budget:
        return [_collapse(texts, budget)]
    room = budget - fixed
    # A text longer (in code points) than the room is cut whatever its exact
    # size, and water-fill gives it the same share for any size above the room:
    # so it is not measured.
    sizes = [room + 1 if len(t) > room else _measure(t).json for t in texts]
    if sum(sizes) <= room:
        return list(texts)
    shares = water_fill(sizes, room)
    out: list[str] = []
    carry = 0
    for text, size, share in zip(texts, sizes, shares, strict=True):
        if share >= size:
            out.append(text)
            continue
        allowed = share + carry
        cut = project_json_text(text, allowed + 2, marker=marker)
        carry = allowed - (json_size(cut) - 2)
        out.append(cut)
    return out


def _collapse(texts: Sequence[str], budget: int) -> str:
    fixed = 2 + TEXT_BLOCK_OVERHEAD + 2  # [{"type":"text","text":""}]
    if budget < fixed:
        raise ValueError(f"one empty text block needs {fixed} bytes, got a budget of {budget}")
    count = f"{len(texts)} text block{'' if len(texts) == 1 else 's'}"
    original = sum(_utf8_size(t) for t in texts)
    text = DEFAULT_COLLAPSE_MARKER.format(
        count=count, original=human_size(original), budget=human_size(budget)
    )
    fit = _fit_prefix(text, budget - fixed, len(text))
    return text[: fit.chars]
