"""A JSON reader that remembers where each string value stands in the text.

It parses what :func:`json.loads` parses, but every string *value* comes back as
a :class:`Located` (a ``str``) that knows the span of its literal, quotes
included, and every array as a :class:`LocatedList` that knows its span, so
that one value can be replaced in the original text while every other byte
stays as it was. Errors name the line, the column and the offset.
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable
from typing import Any

from ..core._errors import JSONSpanError

__all__ = ["JSONSpanError", "Located", "LocatedList", "parse_value", "position", "skip_space"]

_SPACE = re.compile(r"[ \t\n\r]*")
_SPACE_CHARS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None,
             "NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# The C string scanner json.loads itself uses (not in the typing stubs).
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# Deep enough for any real document, shallow enough for Python's own stack.
_MAX_DEPTH = 400


class Located(str):
    """A JSON string value that knows where its literal is: ``text[start:end]``."""

    start: int
    end: int


class LocatedList(list[Any]):
    """A JSON array that knows where it is: ``text[start:end]``, brackets included."""

    start: int
    end: int


def position(text: str, index: int) -> tuple[int, int, int]:
    """Line and column (1-based) and UTF-8 byte offset of character ``index``."""
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column, len(text[:index].encode("utf-8", "surrogatepass"))


def skip_space(text: str, index: int, stop: int | None = None) -> int:
    """The index of the first non-whitespace character at or after ``index`` (before ``stop``)."""
    end = len(text) if stop is None else stop
    # Most tokens are followed by no space or by one: skip the regex for those.
    if index >= end or text[index] not in _SPACE_CHARS:
        return index
    if index + 1 >= end or text[index + 1] not in _SPACE_CHARS:
        return index + 1
    match = _SPACE.match(text, index, end)
    return match.end() if match else index


def parse_value(
    text: str, index: int, *, on_item: Callable[[int], None] | None = None
) -> tuple[Any, int]:
    """Parse one JSON value starting at ``index`` (after whitespace); return it and its end.

    ``on_item`` is called with the current index after each element of an array
    at the top level or one level down, for progress reports.
    """
    return _Reader(text, on_item).value(skip_space(text, index), 0)


def _string_error(error: ValueError, index: int) -> JSONSpanError:
    message = str(getattr(error, "msg", error))
    message = message.removesuffix(" at").removesuffix(" starting")
    return JSONSpanError(f"invalid string: {message.lower()}", getattr(error, "pos", index))


class _Reader:
    def __init__(self, text: str, on_item: Callable[[int], None] | None) -> None:
        self.text = text
        self.on_item = on_item

    def fail(self, message: str, index: int) -> JSONSpanError:
        found = self.text[index : index + 1]
        what = f"found {found!r}" if found else "found the end of the text"
        return JSONSpanError(f"{message}, {what}", index)

    def value(self, index: int, depth: int) -> tuple[Any, int]:
        text = self.text
        char = text[index : index + 1]
        if char == '"':
            return self.string(index)
        if char == "{":
            return self.object(index, depth + 1)
        if char == "[":
            return self.array(index, depth + 1)
        match = _NUMBER.match(text, index)
        if match:
            literal = match.group()
            if match.group(1) or match.group(2):
                return float(literal), match.end()
            return int(literal), match.end()
        for word, value in _LITERALS.items():
            if text.startswith(word, index):
                return value, index + len(word)
        raise self.fail("expected a JSON value", index)

    def string(self, index: int) -> tuple[Located, int]:
        try:
            raw, end = scanstring(self.text, index + 1, True)
        except ValueError as error:
            raise _string_error(error, index) from None
        located = Located(raw)
        located.start, located.end = index, end
        return located, end

    def key(self, index: int) -> tuple[str, int]:
        if self.text[index : index + 1] != '"':
            raise self.fail("expected a property name in double quotes", index)
        try:
            return scanstring(self.text, index + 1, True)
        except ValueError as error:
            raise _string_error(error, index) from None

    def object(self, index: int, depth: int) -> tuple[dict[str, Any], int]:
        if depth > _MAX_DEPTH:
            raise JSONSpanError("nested too deeply", index)
        text = self.text
        result: dict[str, Any] = {}
        index = skip_space(text, index + 1)
        if text.startswith("}", index):
            return result, index + 1
        while True:
            key, index = self.key(index)
            index = skip_space(text, index)
            if not text.startswith(":", index):
                raise self.fail("expected ':'", index)
            value, index = self.value(skip_space(text, index + 1), depth)
            result[key] = value
            index = skip_space(text, index)
            if text.startswith(",", index):
                index = skip_space(text, index + 1)
            elif text.startswith("}", index):
                return result, index + 1
            else:
                raise self.fail("expected ',' or '}'", index)

    def array(self, index: int, depth: int) -> tuple[LocatedList, int]:
        if depth > _MAX_DEPTH:
            raise JSONSpanError("nested too deeply", index)
        text = self.text
        result = LocatedList()
        result.start = index
        report = self.on_item if depth <= 2 else None
        index = skip_space(text, index + 1)
        if text.startswith("]", index):
            result.end = index + 1
            return result, result.end
        while True:
            value, index = self.value(index, depth)
            result.append(value)
            if report is not None:
                report(index)
            index = skip_space(text, index)
            if text.startswith(",", index):
                index = skip_space(text, index + 1)
            elif text.startswith("]", index):
                result.end = index + 1
                return result, result.end
            else:
                raise self.fail("expected ',' or ']'", index)
