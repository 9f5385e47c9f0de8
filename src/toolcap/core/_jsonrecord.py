"""The containers of a JSON index and its record form, as an artifact's record keeps it.

:func:`~toolcap.core._jsonindex.build_index` makes a :class:`JsonIndex` when a
document is stored; :meth:`JsonIndex.record` is the JSON-ready form written
beside the artifact, and :func:`parse_index` reads it back, checking every
offset against the stored size so that a damaged record is read without its
index rather than wrongly. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ._jsondoc import Style

__all__ = ["Container", "JsonIndex", "key_cost", "parse_index"]


def key_cost(key: str) -> int:
    """About the bytes a key (or pointer) and its two offsets take in a record."""
    return len(key) + 24 if key.isascii() else len(json.dumps(key)) + 24


@dataclass(frozen=True)
class Container:
    """An indexed array or object: its byte span and where its children are."""

    start: int  # byte offset of its opening bracket
    end: int  # byte offset just after its closing bracket
    count: int  # items or members
    is_array: bool
    #: Arrays: ``(item index, byte offset of the item)``, increasing, from item 0.
    marks: tuple[tuple[int, int], ...] = ()
    #: Objects: ``(key, value start, value end)`` of every member, or ``None``.
    members: tuple[tuple[str, int, int], ...] | None = None

    def cost(self, pointer: str) -> int:
        """About the bytes of its record form (keys as a record writes them: escaped)."""
        members = sum(key_cost(key) for key, _, _ in self.members or ())
        return 48 + key_cost(pointer) + 16 * len(self.marks) + members


@dataclass(frozen=True)
class JsonIndex:
    """The indexed containers of a document by JSON Pointer (``""`` the root), and its style."""

    style: Style
    nodes: dict[str, Container]

    def record(self) -> dict[str, Any]:
        """The JSON-ready form kept in an artifact's record."""
        style = self.style
        nodes = []
        for where, node in self.nodes.items():
            children: list[Any] | None = (
                [list(mark) for mark in node.marks] if node.is_array
                else None if node.members is None else [list(m) for m in node.members])
            nodes.append([where, node.start, node.end, node.count,
                          "a" if node.is_array else "o", children])
        return {"style": [style.indent, style.item_separator, style.key_separator],
                "nodes": nodes}


def parse_index(value: object, stored: int) -> JsonIndex | None:
    """An index as a record holds it (:meth:`JsonIndex.record`), or ``None`` if malformed.

    Every offset must lie inside the ``stored`` bytes and in order, so that a
    damaged record is read without its index rather than wrongly.
    """
    try:
        return _parsed_index(value, stored)
    except (TypeError, ValueError, KeyError, IndexError):
        return None


def _int(value: object, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError("out of range")
    return value


def _parsed_index(value: object, stored: int) -> JsonIndex | None:
    if not isinstance(value, dict):
        return None
    indent, item_separator, key_separator = value["style"]
    if not (indent is None
            or (isinstance(indent, str) and len(indent) <= 64 and indent.strip(" \t") == "")):
        return None
    if not (item_separator in (",", ", ") and key_separator in (":", ": ")):
        return None
    nodes: dict[str, Container] = {}
    for where, start, end, count, kind, children in value["nodes"]:
        if not isinstance(where, str) or kind not in ("a", "o") or where in nodes:
            return None
        start, end = _int(start, 0, stored - 1), _int(end, start + 2, stored)
        count = _int(count, 0, end - start)
        if kind == "a":
            marks = tuple((_int(i, 0, count - 1), _int(at, start + 1, end - 1))
                          for i, at in children)
            if (count and (not marks or marks[0][0] != 0)) or any(
                    a[0] >= b[0] or a[1] >= b[1] for a, b in pairwise(marks)):
                return None
            nodes[where] = Container(start, end, count, True, marks=marks)
        else:
            members = None if children is None else tuple(
                (key, _int(begin, start + 1, end - 1), _int(stop, begin + 1, end - 1))
                for key, begin, stop in children if isinstance(key, str))
            if members is not None and len(members) != len(children):
                return None
            nodes[where] = Container(start, end, count, False, members=members)
    if "" not in nodes:
        return None
    return JsonIndex(Style(indent, item_separator, key_separator), nodes)
