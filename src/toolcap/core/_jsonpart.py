"""Reading a part of a stored JSON original by pointer, through its index when it has one.

:func:`select_stored` is what ``read_artifact`` and ``artifacts cat --pointer``
call: with a :class:`~toolcap.core._jsonrecord.JsonIndex`, :func:`select_indexed`
reads and parses only the smallest indexed span that holds the part; without
one, the whole original is parsed (:func:`select_part`).
Both give the same text and description. Pure: the bytes come from a
``read(start, end)`` the caller supplies.
"""

from __future__ import annotations

from collections.abc import Callable

from ._jsondoc import (
    DECODER,
    MAX_STRUCTURAL_BYTES,
    Style,
    Writer,
    array_index,
    escape_token,
    parse_document,
    resolve_pointer,
    split_pointer,
    type_name,
    unescape_token,
)
from ._jsonrecord import Container, JsonIndex
from ._sizes import human_size

__all__ = ["Read", "select_indexed", "select_part", "select_stored"]

_WHITESPACE = " \t\n\r"


_PARSE = DECODER  # as parse_document parses the whole

Read = Callable[[int, int], bytes]


def select_stored(
    index: JsonIndex | None, read: Read, size: int, where: str,
    start: int | None = None, count: int | None = None,
) -> tuple[str, str]:
    """The part of a stored original of ``size`` bytes at ``where``: through its index if
    it has one, else by parsing the whole (which the caller bounds)."""
    try:
        if index is not None:
            return select_indexed(index, read, where, start, count)
        return select_part(read(0, size).decode("utf-8", "replace"), where, start, count)
    except RecursionError:
        # A record's spans are checked only for range and order: a damaged or forged one
        # can point into the middle of a string, "[[[[..." say, that nests past Python's limit.
        raise ValueError(f"the part at {(where or '/')[:120]} cannot be read by pointer (it"
                         " nests too deeply, or the index is damaged): read it by bytes"
                         " or a search instead") from None


def select_indexed(
    index: JsonIndex, read: Read, where: str, start: int | None = None, count: int | None = None
) -> tuple[str, str]:
    """What :func:`select_part` gives, reading only through ``index``.

    ``read(start, end)`` returns the stored bytes ``[start, end)``. At most
    :data:`MAX_STRUCTURAL_BYTES` are read and parsed, else ValueError says so
    (as it does for every other one-line error).
    """
    try:
        tokens = split_pointer(where)
    except KeyError as error:
        raise ValueError(f"pointer {where[:120]!r}: {error.args[0]}") from None
    node, node_where, walked = index.nodes[""], "", ""
    value: object = None
    for position, raw in enumerate(tokens):
        rest = "".join("/" + token for token in tokens[position:])
        token = unescape_token(raw)
        try:
            if not node.is_array and node.members is None:
                # Not listed: parse the object, the smallest span known to hold the part.
                part = resolve_pointer(_parse(read, node.start, node.end, node_where), rest, walked)
                return render_selection(part, where, start, count, index.style)
            walked += "/" + raw
            child_where = f"{node_where}/{escape_token(token)}"
            child = index.nodes.get(child_where)
            if node.is_array:
                item = array_index(token, node.count, walked)
                if child is None:
                    value = _items(read, node, item, item + 1, node_where)[0]
            else:
                spans = {key: (begin, end) for key, begin, end in node.members or ()}
                if token not in spans:
                    raise KeyError(f"no member {token[:60]!r} at {walked[:120]}")
                if child is None:
                    value = _parse(read, *spans[token], child_where)
            if child is None:
                part = resolve_pointer(value, rest[len(raw) + 1 :], walked)
                return render_selection(part, where, start, count, index.style)
        except KeyError as error:
            raise ValueError(f"pointer {where[:120]!r}: {error.args[0]}") from None
        node, node_where = child, child_where
    # The pointer names an indexed container.
    if not node.is_array and (start is not None or count is not None):
        return render_selection({}, where, start, count, index.style)  # the error it gives
    if start is None and count is None:
        part = _parse(read, node.start, node.end, node_where)
        return render_selection(part, where, start, count, index.style)
    first, stop = item_range(node.count, where, start, count)
    items = _items(read, node, first, stop, node_where) if first < stop else []
    return render_items(items, first, node.count, where, index.style)


def _bounded(start: int, end: int, where: str) -> None:
    if end - start > MAX_STRUCTURAL_BYTES:
        raise ValueError(f"the part at {(where or '/')[:120]} is {human_size(end - start)}, more"
                         f" than the {human_size(MAX_STRUCTURAL_BYTES)} a pointer read parses:"
                         " name a deeper pointer or fewer items (start, count)")


def _parse(read: Read, start: int, end: int, where: str) -> object:
    """The value stored at ``[start, end)``, parsed as a whole document's parse would."""
    _bounded(start, end, where)
    return _PARSE.decode(read(start, end).decode("utf-8", "replace"))


def _items(read: Read, node: Container, first: int, stop: int, where: str) -> list[object]:
    """Items ``[first, stop)`` of an indexed array, read from the mark before ``first``."""
    marks = node.marks
    below = 0
    while below + 1 < len(marks) and marks[below + 1][0] <= first:
        below += 1
    beyond = below
    while beyond < len(marks) and marks[beyond][0] < stop:
        beyond += 1
    begin = marks[below][1]
    end = marks[beyond][1] if beyond < len(marks) else node.end
    _bounded(begin, end, where)
    text = read(begin, end).decode("utf-8", "replace")
    items: list[object] = []
    at = 0
    for item in range(marks[below][0], stop):
        value, at = _PARSE.raw_decode(text, at)
        if item >= first:
            items.append(value)
        while text[at : at + 1] in _WHITESPACE and at < len(text):
            at += 1
        if text[at : at + 1] == ",":
            at += 1
            while text[at : at + 1] in _WHITESPACE and at < len(text):
                at += 1
    return items


def select_part(
    text: str, where: str, start: int | None = None, count: int | None = None
) -> tuple[str, str]:
    """The part of JSON document ``text`` at pointer ``where``, in the document's layout.

    With ``start`` or ``count``, the part must be an array and only those items
    are returned (still an array). Returns ``(json_text, description)``; raises
    ValueError with a one-line message naming what is wrong.
    """
    parsed = parse_document(text, "json")
    if parsed is None:
        raise ValueError("it is not a JSON object or array of at most 64 MB: read it by lines,"
                         " bytes or a search instead")
    value, style = parsed
    try:
        part = resolve_pointer(value, where)
    except KeyError as error:
        raise ValueError(f"pointer {where[:120]!r}: {error.args[0]}") from None
    return render_selection(part, where, start, count, style)


def render_selection(
    part: object, where: str, start: int | None, count: int | None, style: Style
) -> tuple[str, str]:
    """``part`` (found at ``where``) or its items ``start``/``count``, and what it is."""
    shown = where or "/"
    if start is None and count is None:
        return Writer(style).render(part), f"{type_name(part)} at {shown[:120]}"
    if not isinstance(part, list):
        raise ValueError(f"{shown[:120]} is an {type_name(part)}, not an array:"
                         " start and count select items of an array")
    first, stop = item_range(len(part), where, start, count)
    return render_items(part[first:stop], first, len(part), where, style)


def item_range(length: int, where: str, start: int | None, count: int | None) -> tuple[int, int]:
    """The items ``[first, stop)`` that ``start`` and ``count`` select of ``length``."""
    first = start or 0
    if first > length:
        raise ValueError(f"start {first} is past the end of {(where or '/')[:120]}"
                         f" ({length} items)")
    return first, length if count is None else min(length, first + count)


def render_items(
    items: list[object], first: int, length: int, where: str, style: Style
) -> tuple[str, str]:
    """Items ``first``… of the ``length`` of the array at ``where``, and what they are."""
    shown = (where or "/")[:120]
    if not items:
        return "[]", f"no items from {first} of the {length} at {shown}"
    last = first + len(items) - 1
    return Writer(style).render(items), f"items {first}–{last} of the {length} at {shown}"
