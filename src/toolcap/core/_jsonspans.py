"""JSON (and JSONC: comments, trailing commas) parsed with the place of each object member.

``toolcap wrap`` edits a client's configuration by replacing the text of a
few values and nothing else, so every other byte (formatting, key order,
comments) stays as it was. That needs where each value starts and ends,
which :mod:`json` does not say. Values below ``span_depth`` are decoded by
:mod:`json` itself (fast, in C), and only objects above it are walked here.

Pure: no I/O. Linear in the text; nesting is bounded (no recursion limit hit).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ._errors import JsonSyntaxError

__all__ = ["JsonSyntaxError", "Node", "parse_with_spans"]

MAX_DEPTH = 200

# White space and comments: each alternative consumes at least one character
# and they start differently, so matching is linear.
_SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_decoder = json.JSONDecoder()


@dataclass
class Node:
    """A value, where its text is (``text[start:end]``) and, for objects, its members."""

    value: Any
    start: int
    end: int
    members: dict[str, Node] = field(default_factory=dict)
    #: Where each member's key starts (for its indentation).
    key_starts: dict[str, int] = field(default_factory=dict)


@dataclass
class _Parser:
    text: str
    span_depth: int
    jsonc: bool = False  # set when a comment or a trailing comma was seen

    def skip(self, at: int) -> int:
        end = _SKIP.match(self.text, at)
        assert end is not None  # the pattern matches the empty string
        if "/" in self.text[at:end.end()]:
            self.jsonc = True
        return end.end()

    def fail(self, message: str, at: int) -> JsonSyntaxError:
        return JsonSyntaxError(message, self.text, at)

    def value(self, at: int, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels", at)
        text = self.text
        if at >= len(text):
            raise self.fail("unexpected end of the text", at)
        char = text[at]
        if char == "{":
            return self.object(at, depth)
        if char == "[":
            return self.array(at, depth)
        if char == '"':
            try:
                string, end = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
            except ValueError as exc:
                raise self.fail("a string that does not end or has a bad escape", at) from exc
            return Node(string, at, end)
        for word, literal in _LITERALS.items():
            if text.startswith(word, at):
                return Node(literal, at, at + len(word))
        number = _NUMBER.match(text, at)
        if number:
            token = number.group()
            parsed = float(token) if any(c in token for c in ".eE") else int(token)
            return Node(parsed, at, number.end())
        raise self.fail(f"unexpected {text[at]!r}", at)

    def fast(self, at: int, depth: int) -> Node:
        """A value below the depth whose spans matter: let json decode it if it can."""
        try:
            value, end = _decoder.raw_decode(self.text, at)
        except (ValueError, RecursionError):
            node = self.value(at, depth)  # JSONC inside, or an error to locate
            node.members = {}
            node.key_starts = {}
            return node
        return Node(value, at, end)

    def child(self, at: int, depth: int) -> Node:
        return self.value(at, depth) if depth <= self.span_depth else self.fast(at, depth)

    def object(self, start: int, depth: int) -> Node:
        node = Node({}, start, start)
        at = self.skip(start + 1)
        first = True
        while True:
            if self.text.startswith("}", at):
                node.end = at + 1
                return node
            if not first:
                if not self.text.startswith(",", at):
                    raise self.fail("expected ',' or '}'", at)
                at = self.skip(at + 1)
                if self.text.startswith("}", at):  # a trailing comma (JSONC)
                    self.jsonc = True
                    continue
            first = False
            if not self.text.startswith('"', at):
                raise self.fail("expected a member name in double quotes", at)
            key_node = self.value(at, depth + 1)
            key: str = key_node.value
            if key in node.members:
                raise self.fail(f"the name {key!r} appears twice in one object", at)
            at = self.skip(key_node.end)
            if not self.text.startswith(":", at):
                raise self.fail("expected ':'", at)
            member = self.child(self.skip(at + 1), depth + 1)
            node.members[key] = member
            node.key_starts[key] = key_node.start
            node.value[key] = member.value
            at = self.skip(member.end)

    def array(self, start: int, depth: int) -> Node:
        items: list[Any] = []
        at = self.skip(start + 1)
        while True:
            if self.text.startswith("]", at):
                return Node(items, start, at + 1)
            if items:
                if not self.text.startswith(",", at):
                    raise self.fail("expected ',' or ']'", at)
                at = self.skip(at + 1)
                if self.text.startswith("]", at):
                    self.jsonc = True
                    continue
            item = self.fast(at, depth + 1)
            items.append(item.value)
            at = self.skip(item.end)


def parse_with_spans(text: str, span_depth: int = 4) -> tuple[Node, bool]:
    """The value of ``text`` with the spans of object members down to ``span_depth``
    levels, and whether the text used JSONC (comments or trailing commas).

    Raises JsonSyntaxError for anything else, with the line and column.
    """
    parser = _Parser(text, span_depth)
    at = parser.skip(1 if text.startswith("\ufeff") else 0)
    root = parser.value(at, 0)
    end = parser.skip(root.end)
    if end != len(text):
        raise parser.fail("unexpected text after the value", end)
    return root, parser.jsonc
