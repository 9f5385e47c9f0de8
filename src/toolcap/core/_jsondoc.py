"""JSON documents: cheap detection, parsing that keeps numbers as written, style, pointers.

The structural cut (:mod:`toolcap.core._jsoncut`) works on what this module
parses: a value tree whose numbers are :class:`Number` (the original digits, so
``1.0e5`` stays ``1.0e5`` and ``1e400`` never becomes ``Infinity``), rendered
back in the document's own style (indented or compact) by :class:`Writer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._errors import ConfigError
from ._jsonsize import dumps
from ._utf8 import utf8_size

__all__ = [
    "DECODER",
    "FORMATS",
    "MAX_STRUCTURAL_BYTES",
    "Format",
    "Number",
    "Style",
    "Writer",
    "array_index",
    "check_format",
    "parse_document",
    "parses_back",
    "pointer",
    "reject_constant",
    "resolve_pointer",
    "split_pointer",
    "unescape_token",
    "wire_cost",
]

#: A tool's ``format``: ``"auto"`` (detect a document), ``"text"`` or ``"json"``.
#: A plain ``str`` checked by :func:`check_format` (a ``Literal`` holding "auto"
#: would read as "use the default", which core/_default.py spells one way).
Format = str
FORMATS: tuple[Format, ...] = ("auto", "text", "json")

#: Larger documents are cut as text in every path: a stream holds at most this
#: much to decide, and parsing a bigger one costs more memory than a cut should.
MAX_STRUCTURAL_BYTES = 64 * 1024 * 1024

_WHITESPACE = " \t\n\r"
_CLOSING = {"{": "}", "[": "]"}
# How far into a document the style is looked for.
_STYLE_WINDOW = 4096


class Number(str):
    """A JSON number with a fraction or exponent, as written (rendered back unchanged).

    Integers stay ``int`` (parsing them through a hook would cost half as much again
    as the whole parse): they come back as the same number, ``-0`` as ``0``.
    """

    __slots__ = ()


def reject_constant(name: str) -> object:
    """``parse_constant`` of every parse: NaN and Infinity are not JSON, nor a text holding them."""
    raise ValueError(f"{name} is not JSON")


#: How a document is parsed, whole or in parts: numbers as written, no NaN or Infinity.
DECODER = json.JSONDecoder(parse_float=Number, parse_constant=reject_constant)


def parses_back(value: object) -> bool:
    """Whether :data:`DECODER` gives ``value`` back from its serialization, so that a
    cut may take it as it is instead of parsing what it was just serialized to.

    Dicts with ``str`` keys, lists, and exact ``str``, ``int``, ``bool`` and ``None``
    do; a float does not (it comes back as a :class:`Number`), nor a tuple, another
    key or a subclass. ``value`` must be serializable (no cycles): its walk costs a
    step per container and item, never per byte.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key, sub in item.items():
                if type(key) is not str:
                    return False
                stack.append(sub)
        elif type(item) is list:
            stack.extend(item)
        elif type(item) not in (str, int, bool) and item is not None:
            return False
    return True


def check_format(value: object, *, key: str | None = None, file: str | None = None) -> Format:
    """Return ``value`` if it is one of :data:`FORMATS`, else raise ConfigError."""
    if value not in FORMATS:
        raise ConfigError(f"unknown format {value!r:.40} (use auto, text or json)",
                          key=key, file=file)
    return value


def looks_like_document(text: str) -> bool:
    """Whether ``text`` starts and ends like a JSON object or array (O(1) typically)."""
    start = len(text) - len(text.lstrip(_WHITESPACE)) if text[:1] in _WHITESPACE else 0
    if start >= len(text):
        return False
    opening = text[start]
    if opening not in _CLOSING:
        return False
    end = len(text)
    while end > start and text[end - 1] in _WHITESPACE:
        end -= 1
    return text[end - 1] == _CLOSING[opening]


@dataclass(frozen=True)
class Style:
    """How a document is laid out: an indent (``None``: one line) and its separators."""

    indent: str | None = None
    item_separator: str = ","
    key_separator: str = ":"


COMPACT = Style()


def detect_style(text: str) -> Style:
    """The layout of ``text``, read from its first few KB (strings skipped)."""
    window = text[:_STYLE_WINDOW]
    start = len(window) - len(window.lstrip(_WHITESPACE))
    after = window[start + 1 :]
    stripped = after.lstrip(" \t\r")
    if stripped.startswith("\n"):
        line = stripped[1:]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if indent and indent.strip() == "":
            return Style(indent, ",", _key_separator(window) or ": ")
    key_separator = _key_separator(window) or ":"
    item_separator = ", " if _item_spaced(window) else ","
    return Style(None, item_separator, key_separator)


def _outside_strings(window: str) -> list[tuple[int, str]]:
    """The structural characters of ``window`` (``:`` and ``,``) with their index."""
    found: list[tuple[int, str]] = []
    in_string = escaped = False
    for index, char in enumerate(window):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in ",:":
            found.append((index, char))
            if len(found) >= 8:
                break
    return found


def _key_separator(window: str) -> str | None:
    for index, char in _outside_strings(window):
        if char == ":":
            return ": " if window[index + 1 : index + 2] == " " else ":"
    return None


def _item_spaced(window: str) -> bool:
    for index, char in _outside_strings(window):
        if char == ",":
            return window[index + 1 : index + 2] == " "
    return False


def parse_document(
    text: str, format: Format = "auto", *, size: int | None = None
) -> tuple[object, Style] | None:
    """The value and style of ``text`` if it is a whole JSON object or array, else ``None``.

    ``format="text"`` never parses; ``"auto"`` and ``"json"`` parse a text that
    starts and ends like a document and is at most :data:`MAX_STRUCTURAL_BYTES`
    UTF-8 bytes (``size``, when the caller knows it); anything else, invalid
    JSON included, is cut as text.
    """
    if format == "text" or len(text) > MAX_STRUCTURAL_BYTES or not looks_like_document(text):
        return None
    if (utf8_size(text) if size is None else size) > MAX_STRUCTURAL_BYTES:
        return None
    try:
        value = DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    return value, detect_style(text)


def escape_token(token: str) -> str:
    """One reference token of a JSON Pointer (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(tokens: Sequence[str]) -> str:
    """The JSON Pointer of a path of keys and indexes (``""`` for the document)."""
    return "".join("/" + escape_token(token) for token in tokens)


def split_pointer(where: str) -> list[str]:
    """The reference tokens of JSON Pointer ``where``, still escaped; KeyError if malformed."""
    if where == "":
        return []
    if not where.startswith("/"):
        raise KeyError(f"a JSON Pointer starts with '/', got {where[:60]!r}")
    return where[1:].split("/")


def unescape_token(raw: str) -> str:
    """The key or index one escaped reference token names (``~1`` → ``/``, ``~0`` → ``~``)."""
    return raw.replace("~1", "/").replace("~0", "~")


def array_index(token: str, length: int, walked: str) -> int:
    """The item ``token`` names in an array of ``length``; KeyError naming what is wrong."""
    # ASCII digits only: str.isdigit() also takes "²" and "١", which are no index.
    if not (token.isascii() and token.isdigit()) or (token != "0" and token.startswith("0")):
        raise KeyError(f"{token[:60]!r} is not an array index at {walked[:120]}")
    index = int(token)
    if index >= length:
        raise KeyError(f"index {index} is past the end ({length} items) at {walked[:120]}")
    return index


def resolve_pointer(value: object, where: str, walked: str = "") -> object:
    """The part of ``value`` that JSON Pointer ``where`` names; KeyError naming what is missing.

    ``walked`` is the pointer of ``value`` itself in a larger document, for the messages.
    """
    current = value
    for raw in split_pointer(where):
        token = unescape_token(raw)
        walked += "/" + raw
        if isinstance(current, dict):
            if token not in current:
                raise KeyError(f"no member {token[:60]!r} at {walked[:120]}")
            current = current[token]
        elif isinstance(current, list):
            current = current[array_index(token, len(current), walked)]
        else:
            raise KeyError(f"nothing inside a {type_name(current)} at {walked[:120]}")
    return current


def type_name(value: object) -> str:
    """The JSON type of a parsed value, as a note names it."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "number" if isinstance(value, Number) else "string"
    if value is None:
        return "null"
    return "boolean" if isinstance(value, bool) else "number"


def wire_cost(text: str) -> int:
    """UTF-8 bytes of ``text`` once written inside a JSON string (quotes excluded)."""
    return utf8_size(json.dumps(text, ensure_ascii=False)) - 2


def plain_cost(text: str) -> int:
    """UTF-8 bytes of ``text`` (valid text: the serializer never writes a lone surrogate)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


Cost = Callable[[str], int]


class Writer:
    """Render parsed values in one style, and measure them in one cost (bounded).

    ``cost`` is :func:`plain_cost` (UTF-8 bytes) or :func:`wire_cost` (bytes once
    the text is itself JSON-escaped, for a bound on the wire).
    """

    def __init__(self, style: Style, cost: Cost = plain_cost) -> None:
        self.style = style
        self.cost = cost
        self.item_separator = style.item_separator if style.indent is None else ","
        self.key_separator = style.key_separator
        #: Keys and scalars rendered whole so far: how much of the original a cut kept.
        self.rendered_leaves = 0

    def opening(self, depth: int) -> str:
        """What follows an opening bracket, before the first member."""
        indent = self.style.indent
        return "" if indent is None else "\n" + indent * (depth + 1)

    def between(self, depth: int) -> str:
        """What stands between two members."""
        indent = self.style.indent
        return self.item_separator if indent is None else ",\n" + indent * (depth + 1)

    def closing(self, depth: int) -> str:
        """What precedes a closing bracket, after the last member."""
        indent = self.style.indent
        return "" if indent is None else "\n" + indent * depth

    def leaf(self, value: object) -> str:
        """A scalar's text."""
        if isinstance(value, Number):
            return str.__str__(value)
        if isinstance(value, str):
            return dumps(value)
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        return int.__repr__(value)

    def join(self, opening: str, members: Sequence[str], depth: int) -> str:
        """A container from its rendered members (``opening`` is ``{`` or ``[``)."""
        if not members:
            return opening + _CLOSING[opening]
        return (opening + self.opening(depth) + self.between(depth).join(members)
                + self.closing(depth) + _CLOSING[opening])

    def render(self, value: object, depth: int = 0) -> str:
        """The whole of ``value``."""
        if isinstance(value, dict):
            self.rendered_leaves += len(value)
            members = [self.leaf(key) + self.key_separator + self.render(item, depth + 1)
                       for key, item in value.items()]
            return self.join("{", members, depth)
        if isinstance(value, list):
            return self.join("[", [self.render(item, depth + 1) for item in value], depth)
        self.rendered_leaves += 1
        return self.leaf(value)

    def size(self, value: object, depth: int, cap: int) -> int:
        """The cost of ``value`` rendered at ``depth`` if at most ``cap``, else ``cap + 1``.

        Stops as soon as the bound is passed, so a huge value costs no more than
        ``cap`` to find too big.
        """
        if isinstance(value, str):
            if len(value) > cap:  # every character costs at least a byte
                return cap + 1
            return min(cap + 1, self.cost(self.leaf(value)))
        if not isinstance(value, (dict, list)):
            return self.cost(self.leaf(value))
        if not value:
            return 2
        total = 2 + self.cost(self.opening(depth)) + self.cost(self.closing(depth))
        between = self.cost(self.between(depth))
        key_separator = self.cost(self.key_separator)
        first = True
        if isinstance(value, dict):
            for key, item in value.items():
                total += (0 if first else between) + self.cost(self.leaf(key)) + key_separator
                first = False
                if total > cap:
                    return cap + 1
                total += self.size(item, depth + 1, cap - total)
                if total > cap:
                    return cap + 1
            return total
        for item in value:
            total += 0 if first else between
            first = False
            total += self.size(item, depth + 1, cap - total)
            if total > cap:
                return cap + 1
        return total
