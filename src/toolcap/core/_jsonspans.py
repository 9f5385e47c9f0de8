"""JSON read with the place of each value in the text: one reader, two dialects.

Two jobs edit JSON text by replacing a few values and nothing else, so that every
other byte (layout, key order, comments) stays as it was; both need where a value
starts and ends, which :mod:`json` does not say:

* saved sessions (:data:`SESSION`): what :func:`json.loads` reads, NaN and Infinity
  included, repeated names allowed (the last wins). Every string value comes back as
  a :class:`Located` (a ``str``) and every array as a :class:`LocatedList` (a
  ``list``), each knowing its span. This path reads gigabytes: it records nothing
  else, and :func:`parse_value` is its entry.
* client configurations (:data:`CONFIG`): JSONC (comments, trailing commas), each
  name once, no NaN. Objects also record each member's span, and
  :func:`parse_with_spans` returns them as a tree of :class:`Node`.

Pure: no I/O. Linear in the text (the regexes cannot backtrack); nesting is bounded
so a hostile text cannot exhaust Python's stack. Errors name the character index
(:class:`JSONSpanError`), or the line and column (:class:`JsonSyntaxError`).
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import JSONSpanError, JsonSyntaxError

__all__ = [
    "CONFIG", "MAX_DEPTH", "SESSION", "Dialect", "JSONSpanError", "JsonSyntaxError",
    "Located", "LocatedList", "Node", "parse_value", "parse_with_spans", "skip_space",
]

_SPACE = re.compile(r"[ \t\n\r]*")
_SPACE_CHARS = " \t\n\r"
# White space and comments: each alternative consumes at least one character and
# they start differently, so matching is linear.
_SPACE_AND_COMMENTS = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# The C string scanner json.loads itself uses (not in the typing stubs).
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

#: How deep a client configuration may nest (see :data:`CONFIG`).
MAX_DEPTH = 200


@dataclass(frozen=True)
class Dialect:
    """What a reader accepts and what it records."""

    #: ``//`` and ``/* */`` comments and a comma before ``]`` or ``}`` (JSONC).
    jsonc: bool
    #: ``NaN``, ``Infinity`` and ``-Infinity``, as :func:`json.loads` reads them.
    non_finite: bool
    #: A name given twice in one object is an error (else the last wins).
    unique_names: bool
    #: Objects come back as :class:`_Members`, with each member's span.
    member_spans: bool
    #: Containers nested deeper than this are an error.
    max_depth: int


#: Saved sessions: what json.loads reads; deep enough for any real document,
#: shallow enough for Python's own stack (two frames a level).
SESSION = Dialect(jsonc=False, non_finite=True, unique_names=False, member_spans=False,
                  max_depth=400)
#: MCP clients' configuration files: JSONC, as the editors that own them read it.
CONFIG = Dialect(jsonc=True, non_finite=False, unique_names=True, member_spans=True,
                 max_depth=MAX_DEPTH)


class Located(str):
    """A JSON string value that knows where its literal is: ``text[start:end]``."""

    start: int
    end: int


class LocatedList(list[Any]):
    """A JSON array that knows where it is: ``text[start:end]``, brackets included."""

    start: int
    end: int


class _Members(dict[str, Any]):
    """An object read with :attr:`Dialect.member_spans`: for each name, where its key
    starts and where its value starts and ends."""

    spans: dict[str, tuple[int, int, int]]


@dataclass
class Node:
    """A value, where its text is (``text[start:end]``) and, for objects, its members."""

    value: Any
    start: int
    end: int
    members: dict[str, Node] = field(default_factory=dict)
    #: Where each member's key starts (for its indentation).
    key_starts: dict[str, int] = field(default_factory=dict)


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
    """Parse one JSON value (the :data:`SESSION` dialect) starting at ``index`` (after
    whitespace); return it and its end. Raises :class:`JSONSpanError`.

    ``on_item`` is called with the current index after each element of an array
    at the top level or one level down, for progress reports.
    """
    return _Reader(text, SESSION, on_item).value(skip_space(text, index), 0)


def parse_with_spans(text: str, span_depth: int = 4) -> tuple[Node, bool]:
    """The value of ``text`` (the :data:`CONFIG` dialect) with the spans of object
    members down to ``span_depth`` levels, and whether the text used JSONC
    (comments or trailing commas).

    Raises JsonSyntaxError for anything else, with the line and column.
    """
    reader = _Reader(text, CONFIG, None)
    try:
        start = reader.skip(text, 1 if text.startswith("\ufeff") else 0)
        value, end = reader.value(start, 0)
        after = reader.skip(text, end)
        if after != len(text):
            raise JSONSpanError("unexpected text after the value", after)
    except JSONSpanError as error:
        raise JsonSyntaxError(str(error), text, error.index) from None
    return _node(value, start, end, 0, span_depth), reader.saw_jsonc


def _node(value: Any, start: int, end: int, depth: int, span_depth: int) -> Node:
    node = Node(value, start, end)
    if isinstance(value, _Members) and depth <= span_depth:
        for name, (key_start, value_start, value_end) in value.spans.items():
            node.members[name] = _node(value[name], value_start, value_end, depth + 1,
                                       span_depth)
            node.key_starts[name] = key_start
    return node


def _string_error(error: ValueError, index: int) -> JSONSpanError:
    message = str(getattr(error, "msg", error))
    message = message.removesuffix(" at").removesuffix(" starting")
    return JSONSpanError(f"invalid string: {message.lower()}", getattr(error, "pos", index))


class _Reader:
    def __init__(self, text: str, dialect: Dialect,
                 on_item: Callable[[int], None] | None) -> None:
        self.text = text
        self.on_item = on_item
        self.dialect = dialect
        self.literals = {**_LITERALS, **_NON_FINITE} if dialect.non_finite else _LITERALS
        # A plain function where no comment can appear: the session path calls it for
        # every token.
        self.skip: Callable[[str, int], int] = (
            self.skip_jsonc if dialect.jsonc else skip_space)
        self.saw_jsonc = False

    def skip_jsonc(self, text: str, index: int) -> int:
        match = _SPACE_AND_COMMENTS.match(text, index)
        assert match is not None  # the pattern matches the empty string
        if "/" in text[index : match.end()]:
            self.saw_jsonc = True
        return match.end()

    def fail(self, message: str, index: int) -> JSONSpanError:
        found = self.text[index : index + 1]
        what = f"found {found!r}" if found else "found the end of the text"
        return JSONSpanError(f"{message}, {what}", index)

    def too_deep(self, index: int) -> JSONSpanError:
        return JSONSpanError(f"nested deeper than {self.dialect.max_depth} levels", index)

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
        for word, value in self.literals.items():
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
        dialect = self.dialect
        if depth > dialect.max_depth:
            raise self.too_deep(index)
        text, skip = self.text, self.skip
        # Locals: this loop runs for every member of a session's records.
        jsonc, unique_names = dialect.jsonc, dialect.unique_names
        spans: dict[str, tuple[int, int, int]] | None = None
        result: dict[str, Any]
        if dialect.member_spans:
            result = _Members()
            result.spans = spans = {}
        else:
            result = {}
        index = skip(text, index + 1)
        if text.startswith("}", index):
            return result, index + 1
        while True:
            key_start = index
            key, index = self.key(index)
            if unique_names and key in result:
                raise JSONSpanError(f"the name {key!r} appears twice in one object", key_start)
            index = skip(text, index)
            if not text.startswith(":", index):
                raise self.fail("expected ':'", index)
            value_start = skip(text, index + 1)
            value, index = self.value(value_start, depth)
            result[key] = value
            if spans is not None:
                spans[key] = (key_start, value_start, index)
            index = skip(text, index)
            if text.startswith(",", index):
                index = skip(text, index + 1)
                if jsonc and text.startswith("}", index):
                    self.saw_jsonc = True
                    return result, index + 1
            elif text.startswith("}", index):
                return result, index + 1
            else:
                raise self.fail("expected ',' or '}'", index)

    def array(self, index: int, depth: int) -> tuple[LocatedList, int]:
        if depth > self.dialect.max_depth:
            raise self.too_deep(index)
        text, skip, jsonc = self.text, self.skip, self.dialect.jsonc
        result = LocatedList()
        result.start = index
        report = self.on_item if depth <= 2 else None
        index = skip(text, index + 1)
        if text.startswith("]", index):
            result.end = index + 1
            return result, result.end
        while True:
            value, index = self.value(index, depth)
            result.append(value)
            if report is not None:
                report(index)
            index = skip(text, index)
            if text.startswith(",", index):
                index = skip(text, index + 1)
                if jsonc and text.startswith("]", index):
                    self.saw_jsonc = True
                    result.end = index + 1
                    return result, result.end
            elif text.startswith("]", index):
                result.end = index + 1
                return result, result.end
            else:
                raise self.fail("expected ',' or ']'", index)
