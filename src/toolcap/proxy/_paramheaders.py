"""The ``Mcp-Param-{Name}`` headers of a ``tools/call`` over Streamable HTTP (2026-07-28 on).

A server may mark arguments of a tool with ``x-mcp-header`` in its ``inputSchema``;
a client that reaches it over HTTP must then mirror their values into headers, so
that load balancers and gateways can route on them, and must leave out of
``tools/list`` a tool whose marks break the rules (a name that is no HTTP token, a
repeated one, a mark on a value that is not a string, an integer or a boolean, or
one not reached through ``properties`` alone). :class:`ParamHeaders` learns the
marks from the upstream's ``tools/list`` answers as they pass and says the headers
of each call.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ._contracts import dumps, print_error
from ._revision import answer_result, header_value

__all__ = ["ParamHeaders", "header_marks"]

log = logging.getLogger("toolcap.proxy")

_MARK = "x-mcp-header"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE = frozenset({"string", "integer", "boolean"})
# The JSON Schema 2020-12 keywords whose values are schemas (by the shape of the
# value). Only these are walked: instance data (default, examples, const, enum) may
# hold anything, an "x-mcp-header" key included, and $ref is not followed.
_ONE_SCHEMA = frozenset({"items", "contains", "unevaluatedItems", "additionalProperties",
                         "propertyNames", "unevaluatedProperties", "not", "if", "then",
                         "else", "contentSchema"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})
# A schema is walked this deep and this wide at most: a deeper or larger one is refused.
_MAX_DEPTH = 32
_MAX_NODES = 10_000

Marks = dict[str, tuple[str, ...]]  # header name -> the argument's path of property names


def header_marks(schema: Any) -> Marks | str:
    """The marked arguments of an ``inputSchema`` (by header name), or why its marks are
    invalid; none for a schema past the bounds of the walk (deeper than 32 levels, or
    over 10,000 nodes)."""
    marks: Marks = {}
    seen: set[str] = set()
    stack: list[tuple[Any, tuple[str, ...] | None, int]] = [(schema, (), 0)]
    nodes = 0
    while stack:
        node, path, depth = stack.pop()
        nodes += 1
        if nodes > _MAX_NODES or depth > _MAX_DEPTH:
            # Not walked for ever: such a tool is kept, its calls with no Mcp-Param-*.
            log.warning("an inputSchema too large or too deep to look for x-mcp-header")
            return {}
        if not isinstance(node, dict):
            continue
        if _MARK in node:
            why = _check_mark(node, path, seen)
            if why:
                return why
            assert path is not None
            marks[node[_MARK]] = path
        for key, value in node.items():
            # Reached through "properties" alone, an argument keeps its path; any other
            # keyword (items, oneOf, $defs, if, ...) leads where no mark may stand.
            if key == "properties" and isinstance(value, dict):
                stack.extend((child, None if path is None else (*path, name), depth + 1)
                             for name, child in value.items())
            elif key in _ONE_SCHEMA:
                stack.append((value, None, depth + 1))
            elif key in _SCHEMA_LIST and isinstance(value, list):
                stack.extend((item, None, depth + 1) for item in value)
            elif key in _SCHEMA_MAP and isinstance(value, dict):
                stack.extend((item, None, depth + 1) for item in value.values())
    return marks


def _check_mark(node: dict[str, Any], path: tuple[str, ...] | None, seen: set[str]) -> str:
    name = node[_MARK]
    if path is None or not path:
        return f"{_MARK} {str(name)[:40]!r} is not on a property reached through properties"
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return f"{_MARK} {str(name)[:40]!r} is not an HTTP header name"
    if name.lower() in seen:
        return f"{_MARK} {name!r} is used twice"
    seen.add(name.lower())
    kind = node.get("type")
    if not isinstance(kind, str) or kind not in _PRIMITIVE:
        return f"{_MARK} {name!r} marks a value that is not a string, an integer or a boolean"
    return ""


def _encoded(value: Any) -> str | None:
    """A marked argument's value as its header carries it; None: no header. A number
    that is not the integer its schema says is still mirrored as it reads (the server
    compares it with the body, and refuses a call that left it out)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            return header_value(str(value))
        except ValueError:  # an integer past Python's digit limit: no header can say it
            return None
    if isinstance(value, str):
        return header_value(value)
    return None


class ParamHeaders:
    """The marked arguments of an upstream's tools, by tool name."""

    def __init__(self) -> None:
        self._by_tool: dict[str, Marks] = {}

    def headers(self, params: Any) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers of a ``tools/call`` with ``params``."""
        name = params.get("name") if isinstance(params, dict) else None
        marks = self._by_tool.get(name) if isinstance(name, str) else None
        if not marks:
            return {}
        arguments = params.get("arguments")
        headers = {}
        for header, path in marks.items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            encoded = _encoded(value)
            if encoded is not None:
                headers[f"mcp-param-{header.lower()}"] = encoded
        return headers

    def learn(self, answer: bytes, url: str) -> bytes:
        """Learn the marks of the tools a ``tools/list`` answer lists; the answer, without
        the tools whose marks are invalid (each named on stderr)."""
        found = answer_result(answer)
        tools = found[1].get("tools") if found is not None else None
        if found is None or not isinstance(tools, list):
            return answer
        message, result = found
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            marks = header_marks(tool.get("inputSchema")) if isinstance(name, str) else {}
            if isinstance(marks, str):
                print_error(f"toolcap proxy: {url} lists the tool {name!r} with an invalid "
                            f"inputSchema ({marks}); it is left out")
                continue
            if isinstance(name, str):
                if marks:
                    self._by_tool[name] = marks
                else:
                    self._by_tool.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return answer
        return dumps({**message, "result": {**result, "tools": kept}})
