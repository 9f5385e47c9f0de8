"""JSON-byte sizes: what a value costs once serialized, measured without serializing it.

The serialization measured is ``json.dumps(value, ensure_ascii=False,
separators=(",", ":"))`` made valid UTF-8 the way JavaScript's ``JSON.stringify``
does it: a high surrogate code point followed by a low one is a pair and is
written as the character they encode, and any other surrogate code point is
lone and written as a ``\\uXXXX`` escape. :func:`dumps` produces exactly that
serialization. The JSON cut (:mod:`._json`) fits text to a budget with
:func:`fit_prefix` and :func:`fit_suffix`, the JSON-byte size function of the
one cut engine, as :mod:`._utf8`'s boundaries are the UTF-8 one.

Everything here is pure: no I/O, no global state.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from ._utf8 import CHUNK, splits_pair, unsplit

__all__ = ["Fit", "dumps", "fit_prefix", "fit_suffix", "json_size", "measure"]

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
# The most bytes one code point can take in the serialization (\u00XX or an
# escaped surrogate).
_MAX_CHAR_COST = 6


class Size(NamedTuple):
    """A text's UTF-8 and JSON sizes (the JSON string's, quotes excluded)."""

    utf8: int  # UTF-8 bytes once repaired: a pair as its character, a lone surrogate as U+FFFD
    json: int  # JSON bytes of the characters, quotes excluded


def _measure_chunk(text: str) -> Size:
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
    return Size(size - 2 * pairs, size + extra)


def measure(text: str) -> Size:
    """UTF-8 and JSON bytes of ``text`` (quotes excluded), without serializing it."""
    if len(text) <= CHUNK:
        return _measure_chunk(text)
    utf8 = js = start = 0
    n = len(text)
    while start < n:
        end = unsplit(text, start + CHUNK)
        part = _measure_chunk(text[start:end])
        utf8 += part.utf8
        js += part.json
        start = end
    return Size(utf8, js)


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


#: Strings at least this long are measured once per :func:`json_size` call that is
#: given a ``seen`` table (a tool result often holds its text twice, as one ``str``).
_SHARED_FROM = 1 << 16


def _value_size(value: object, active: set[int], seen: dict[int, tuple[str, int]]) -> int:
    if isinstance(value, str):
        if len(value) < _SHARED_FROM:
            return measure(value).json + 2
        known = seen.get(id(value))
        if known is not None and known[0] is value:  # the entry holds it: its id is its own
            return known[1]
        size = measure(value).json + 2
        seen[id(value)] = (value, size)
        return size
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
                    total += measure(_key_text(key)).json + 3  # quotes, colon
                    total += _value_size(item, active, seen)
                return total
            total = 2 + max(len(value) - 1, 0)
            for item in value:
                total += _value_size(item, active, seen)
            return total
        finally:
            active.discard(marker)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_size(value: object, seen: dict[int, tuple[str, int]] | None = None) -> int:
    """Return the UTF-8 byte length of the compact JSON serialization of ``value``.

    Equal to ``len(dumps(value).encode())``. A ``str`` is measured without
    building its serialization; containers are measured recursively. Raises
    ``TypeError`` and ``ValueError`` where ``json.dumps`` would.

    ``seen``, a table the caller keeps across calls (start with ``{}``), spares
    measuring a long string again when the same ``str`` object comes back (in
    one value or in the next one measured with the same table); it holds those
    strings until the caller drops it.
    """
    if isinstance(value, str) and seen is None:
        return measure(value).json + 2
    return _value_size(value, set(), {} if seen is None else seen)


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


class Fit(NamedTuple):
    """A slice of a text that fits a JSON-byte limit: its code points and sizes."""

    chars: int
    utf8: int
    json: int


def fit_prefix(text: str, limit: int, max_chars: int) -> Fit:
    """The longest prefix of at most ``max_chars`` code points within ``limit`` JSON bytes.

    The prefix never ends between the halves of a surrogate pair.
    """
    # Every code point costs at least one byte, so no prefix longer than the
    # limit can fit: the work is bounded by the limit, not by the text.
    k = min(max_chars, len(text), max(limit, 0))
    if splits_pair(text, k):
        k -= 1
    size = measure(text[:k])
    utf8, js = size.utf8, size.json
    while js > limit:
        # At most 6 bytes per code point: dropping this many never drops more
        # than needed, and the excess shrinks geometrically.
        cut = k - -(-(js - limit) // _MAX_CHAR_COST)
        if splits_pair(text, cut):
            cut -= 1  # the high half alone would not fit either: both go
        part = measure(text[cut:k])
        k = cut
        utf8 -= part.utf8
        js -= part.json
    return Fit(k, utf8, js)


def fit_suffix(text: str, limit: int, max_chars: int) -> Fit:
    """The longest suffix of at most ``max_chars`` code points within ``limit`` JSON bytes.

    The suffix never starts between the halves of a surrogate pair.
    """
    n = len(text)
    start = n - min(max_chars, n, max(limit, 0))
    if splits_pair(text, start):
        start += 1
    size = measure(text[start:])
    utf8, js = size.utf8, size.json
    while js > limit:
        cut = start + -(-(js - limit) // _MAX_CHAR_COST)
        if splits_pair(text, cut):
            cut += 1
        part = measure(text[start:cut])
        start = cut
        utf8 -= part.utf8
        js -= part.json
    return Fit(n - start, utf8, js)


