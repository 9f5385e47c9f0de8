"""UTF-8 facts about text, computed without copying more than needed."""

from __future__ import annotations

__all__ = [
    "CHUNK",
    "decode",
    "head_boundary",
    "is_valid",
    "sanitize",
    "splits_pair",
    "tail_boundary",
    "unsplit",
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


#: Long texts are measured in slices of this many code points: memory stays flat
#: on huge inputs, and it is faster than one giant encode (the slices stay in cache).
CHUNK = 1 << 18
_HIGH = range(0xD800, 0xDC00)
_LOW = range(0xDC00, 0xE000)


def splits_pair(text: str, index: int) -> bool:
    """True when ``index`` falls between the two halves of a surrogate pair."""
    return 0 < index < len(text) and ord(text[index - 1]) in _HIGH and ord(text[index]) in _LOW


def unsplit(text: str, index: int) -> int:
    """``index``, moved past a surrogate pair it would split.

    Sizes add up over slices only when no slice splits a pair (a pair is one
    4-byte character, its halves apart are replaced one by one).
    """
    return index + 1 if splits_pair(text, index) else index


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` once sanitized. O(1) for ASCII text.

    The one UTF-8 size function of toolcap: measured in slices, so a huge text
    is never copied whole.
    """
    if text.isascii():  # O(1) in CPython: the flag is stored on the object
        return len(text)
    total = start = 0
    while start < len(text):
        end = unsplit(text, start + CHUNK)
        part = text[start:end]
        try:
            total += len(part.encode("utf-8"))
        except UnicodeEncodeError:
            total += len(sanitize(part).encode("utf-8"))
        start = end
    return total


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
    size = len(data)
    if 0 < end < size and not 0x80 <= data[end] <= 0xBF:
        return end  # the usual case, settled by one byte
    end = max(0, min(end, size))
    stop = max(0, end - 3)
    position = end
    while position > stop and position < len(data) and _is_continuation(data[position]):
        position -= 1
    if position < len(data) and _is_continuation(data[position]):
        return end  # not UTF-8 here anyway: any cut is as good as another
    return position


def tail_boundary(data: bytes, start: int) -> int:
    """The smallest character boundary at or after ``start``."""
    size = len(data)
    if 0 <= start < size and not 0x80 <= data[start] <= 0xBF:
        return start  # the usual case, settled by one byte
    start = max(0, min(start, size))
    stop = min(size, start + 3)
    position = start
    while position < stop and _is_continuation(data[position]):
        position += 1
    if position < len(data) and _is_continuation(data[position]):
        return start
    return position
