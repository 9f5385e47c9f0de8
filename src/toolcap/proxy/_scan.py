"""Reading one JSON-RPC line from the upstream, with a fast path for a large one:
its long strings found in the bytes.

:func:`parse_line` gives a line's message, and the line itself when it may be
forwarded as it arrived. A tool result of 100 MB is one line whose bulk is one
or two long strings (a text block, and often the same text again as
``structuredContent``). Decoding the whole line and parsing it builds every
string from the decoded copy; this scanner instead finds where each string
starts and ends in the raw bytes (a ``find`` for the next quote, which skips a
string with no quote in it at memchr speed), parses a small *skeleton* in which
every long string is a placeholder, and decodes each long string on its own,
once: a string whose bytes repeat an earlier one (the text again as
``structuredContent``) is the same ``str``. The result equals
``json.loads(line.decode())``. Given a table
(:class:`~toolcap.core._jsonraw.RawStrings`), it also keeps the bytes each long
string was decoded from, so that storing a value that holds it need not
serialize it again (:func:`~toolcap.core._jsonraw.dumps_utf8`).

Anything the scanner does not understand, or could only follow slowly, makes it
return ``None`` and :func:`parse_line` takes the slow path: bytes that are not UTF-8
(the slow path replaces them), a long string as an object key, too many quotes
to walk (JSON text inside a text block escapes every quote; the scanner gives
up within about a tenth of what the parse then costs), nesting too deep.
"""

from __future__ import annotations

import json
import secrets
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from ..core._errors import NotJson
from ..core._jsonraw import RawStrings

__all__ = ["LONG_STRING", "SCAN_FROM", "VERBATIM_MAX", "NotJson", "parse_line", "scan_message"]

#: A line this long is read by the scanner first; a shorter one parses as fast the
#: plain way.
SCAN_FROM = 1 << 20
#: A line up to this size is kept as it arrived, to forward it unchanged byte for
#: byte; a larger one is let go once decoded (its text once parsed), so that memory
#: holds about two copies of it (a result with structuredContent keeps it while it
#: is bounded instead of a serialization of its long strings). A larger message
#: that passes unchanged is forwarded re-serialized: the same JSON.
VERBATIM_MAX = 16 << 20

#: A string of at least this many bytes is decoded on its own, outside the skeleton.
LONG_STRING = 1 << 16
#: Each quote and backslash the scanner steps over costs about half a microsecond
#: in Python, the plain parse about 1.5 ns a byte: at one step per this many
#: bytes it gives up, having spent at most about a tenth of the parse's time.
_BYTES_PER_STEP = 4096
_QUOTE, _BACKSLASH = 0x22, 0x5C
_WHITESPACE = b" \t\r\n"


def parse_line(
    holder: list[bytes | bytearray],
) -> tuple[Any, bytes | bytearray | None, RawStrings | None]:
    """The message of the line in ``holder`` (taken out of it, so that a line over
    :data:`VERBATIM_MAX` is let go as soon as it may be); the line, to forward as it
    arrived if the message passes unchanged (None: it is over :data:`VERBATIM_MAX`,
    or not UTF-8); and, for a long line whose result has ``structuredContent``, the
    bytes of its long strings (views of the line), to store them without serializing
    them again. Raises :class:`NotJson` if the line is not JSON.
    """
    line: bytes | bytearray | None = holder.pop()
    assert line is not None
    size = len(line)
    verbatim = True
    # A long line (a big result) is read by its long strings, each decoded once.
    raw = RawStrings() if size >= SCAN_FROM else None
    message = scan_message(line, raw=raw) if size >= SCAN_FROM else None
    if raw is not None and not _has_structured_content(message):
        raw = None  # nothing will be stored from them: the line need not outlive its parse
    if message is None:
        try:
            # Decoding first is faster than json.loads(bytes), which decodes
            # with the slow "surrogatepass" handler (a third of a 10 MB parse).
            text: str | None = line.decode("utf-8")
        except UnicodeDecodeError:
            # Bytes that are not UTF-8 inside a message: keep the message, with
            # U+FFFD for what cannot be read, rather than lose a whole result.
            verbatim = False
            text = line.decode("utf-8", "replace")
        if size > VERBATIM_MAX:
            line = None
        try:
            assert text is not None
            message = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise NotJson(str(exc) or type(exc).__name__) from None
        text = None
    elif size > VERBATIM_MAX:
        line = None
    return message, line if verbatim else None, raw


def _has_structured_content(message: Any) -> bool:
    """Whether ``message`` is a response whose result has ``structuredContent``."""
    result = message.get("result") if isinstance(message, dict) else None
    return isinstance(result, dict) and result.get("structuredContent") is not None


def scan_message(line: bytes | bytearray, *, long_string: int = LONG_STRING,
                 steps: int | None = None, raw: RawStrings | None = None) -> Any:
    """The JSON value of ``line`` as ``json.loads(line.decode())`` gives it, or ``None``
    when the fast path does not apply (no long string, or anything it does not follow).

    ``steps`` bounds the quotes and backslashes stepped over (default: one per 4 KB).
    ``raw``, when given, gets each long string's token (a view of ``line``, quotes
    included), when the value is returned.
    """
    if steps is None:
        steps = max(64, len(line) // _BYTES_PER_STEP)
    view = memoryview(line)
    find = line.find
    spans: list[tuple[int, int]] = []  # (opening quote, closing quote) of each long string
    pos = 0
    while (start := find(b'"', pos)) >= 0:
        end = start
        while True:
            end = find(b'"', end + 1)
            if end < 0:
                return None  # an unterminated string: the slow path says why
            escapes = 0
            while line[end - 1 - escapes] == _BACKSLASH:
                escapes += 1
            steps -= 1 + escapes
            if steps < 0:
                return None
            if escapes % 2 == 0:
                break
        if end - start - 1 >= long_string:
            if _is_key(line, end + 1):
                return None
            spans.append((start, end))
        pos = end + 1
    if not spans:
        return None
    token = f"\x00toolcap-{secrets.token_hex(8)}-"
    skeleton: list[bytes | bytearray] = []
    last = 0
    for index, (start, end) in enumerate(spans):
        skeleton += [line[last:start], json.dumps(f"{token}{index}").encode("ascii")]
        last = end + 1
    skeleton.append(line[last:])
    try:
        values = _decode_strings(line, view, spans)
        if values is None:
            return None
        parsed = json.loads(b"".join(skeleton).decode("utf-8"))
        filled = _fill(parsed, token, values)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if raw is not None:
        for value, (start, end) in zip(values, spans, strict=True):
            raw.add(value, view[start : end + 1])
    return filled


def _is_key(line: bytes | bytearray, after: int) -> bool:
    """Whether the string that ends before ``after`` is an object key."""
    size = len(line)
    while after < size and line[after] in _WHITESPACE:
        after += 1
    return after < size and line[after] == 0x3A  # ':'


def _decode_strings(
    line: bytes | bytearray, view: memoryview, spans: list[tuple[int, int]]
) -> list[str] | None:
    """Each long string's value, a repeat of an earlier one sharing its ``str``."""
    values: list[str] = []
    seen: dict[int, list[int]] = {}  # length -> indexes of long strings of that length
    for index, (start, end) in enumerate(spans):
        length = end - start
        for earlier in seen.get(length, ()):
            first = spans[earlier][0]
            if line.startswith(view[first : first + length], start):
                values.append(values[earlier])
                break
        else:
            quoted = str(view[start : end + 1], "utf-8")
            value, stop = scanstring(quoted, 1, True)
            if stop != len(quoted):
                return None
            values.append(value)
            seen.setdefault(length, []).append(index)
    return values


def _fill(value: Any, token: str, values: list[str]) -> Any:
    """``value`` with each placeholder string replaced by the long string it stands for."""
    if isinstance(value, str):
        if value.startswith(token):
            return values[int(value[len(token) :])]
        return value
    if isinstance(value, list):
        return [_fill(item, token, values) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, token, values) for key, item in value.items()}
    return value
