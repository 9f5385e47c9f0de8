"""UTF-8 facts about text, computed without copying more than needed."""

from __future__ import annotations

__all__ = [
    "decode",
    "head_boundary",
    "is_valid",
    "sanitize",
    "tail_boundary",
    "utf8_size",
]


def is_valid(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (it holds no surrogate code point)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sanitize(text: str) -> str:
    """Make ``text`` encodable: join surrogate pairs, replace lone surrogates with U+FFFD.

    Returns ``text`` itself when there is nothing to repair. A repaired text is
    never larger in UTF-8 than the surrogates' own 3-byte encodings.
    """
    if is_valid(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` once sanitized. O(1) for ASCII text."""
    if text.isascii():
        return len(text)
    return len(sanitize(text).encode("utf-8"))


def decode(data: bytes) -> str:
    """Decode UTF-8, replacing invalid sequences with U+FFFD."""
    return data.decode("utf-8", "replace")


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def head_boundary(data: bytes, end: int) -> int:
    """The largest character boundary at or before ``end``.

    Walks back over at most three continuation bytes, so a malformed run never
    costs more than that.
    """
    end = max(0, min(end, len(data)))
    stop = max(0, end - 3)
    position = end
    while position > stop and position < len(data) and _is_continuation(data[position]):
        position -= 1
    if position < len(data) and _is_continuation(data[position]):
        return end  # not UTF-8 here anyway: any cut is as good as another
    return position


def tail_boundary(data: bytes, start: int) -> int:
    """The smallest character boundary at or after ``start``."""
    start = max(0, min(start, len(data)))
    stop = min(len(data), start + 3)
    position = start
    while position < stop and _is_continuation(data[position]):
        position += 1
    if position < len(data) and _is_continuation(data[position]):
        return start
    return position
