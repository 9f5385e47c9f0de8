"""Which output schemas a structural cut can honour, and what each place of one allows.

:func:`guide_for` reads a JSON Schema (a tool's ``outputSchema``) and returns a
tree of :class:`Node` s saying, for each place in a document, what a cut may do
there and still validate: cut a string inside (a plain string: no length,
pattern, format, enum or const), drop an object's optional members, add the
``toolcap`` elision member (additional members allowed and accepting a string),
drop an array's items (down to ``minItems``), put a note string among them
(items accept a plain string). It returns ``None`` for a schema with anything it
does not know how to honour (``patternProperties``, ``prefixItems``, ``allOf``,
``not``, ``if``, a ``$ref`` outside the document, unions it cannot tell apart by
type, ...): such a tool's schema is withheld. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._jsondoc import type_name

__all__ = ["Node", "accepts_note", "guide_for", "node_for_value"]

# Keywords that only describe, or constrain what a cut never changes (a kept
# number is the original's; a kept array keeps its order and is a subset).
_NEUTRAL = frozenset({
    "title", "description", "default", "examples", "$schema", "$id", "$comment",
    "readOnly", "writeOnly", "deprecated", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "$defs", "definitions", "maxItems", "uniqueItems",
    "contentMediaType", "contentEncoding", "discriminator",
})
_STRUCTURE = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems",
    "maxLength", "minLength", "pattern", "enum", "const", "format", "$ref", "anyOf", "oneOf",
    "maxProperties", "minProperties",
})
# A cut string holds its marker, longer than this many characters.
_SAFE_MIN_LENGTH = 16
_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")


@dataclass
class Node:
    """What a cut may do at one place of a document.

    ``kind``: ``"any"`` (no constraint: the plain structural cut applies below),
    ``"text"`` (a plain string: may be cut inside, or stand as a note),
    ``"keep"`` (kept whole: a number, a constrained string, an enum),
    ``"object"``, ``"array"``, or ``"union"`` (``branches`` by JSON type).
    """

    kind: str
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None  # None: no additional members allowed
    required: frozenset[str] = frozenset()
    min_properties: int = 0
    items: Node | None = None
    min_items: int = 0
    branches: dict[str, Node] = field(default_factory=dict)


ANY = Node("any")
_KEEP = Node("keep")


def accepts_note(node: Node | None) -> bool:
    """Whether a plain note string validates at ``node``."""
    if node is None:
        return False
    if node.kind in ("any", "text"):
        return True
    return node.kind == "union" and accepts_note(node.branches.get("string"))


def node_for_value(node: Node, value: object) -> Node | None:
    """The node that governs ``value`` at ``node`` (a union's branch for its type)."""
    if node.kind != "union":
        return node
    return node.branches.get(type_name(value))


class _Reader:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Node] = {}

    def read(self, schema: object, depth: int = 0) -> Node | None:
        if depth > 64:
            return None
        if schema is True or schema == {}:
            return ANY
        if not isinstance(schema, Mapping):
            return None
        keys = set(schema)
        if keys - _NEUTRAL - _STRUCTURE:
            return None
        if "$ref" in schema:
            return self._ref(schema, depth)
        if "anyOf" in schema or "oneOf" in schema:
            return self._union(schema, depth)
        types = schema.get("type")
        if types is None:
            if keys & {"properties", "required", "additionalProperties"}:
                types = "object"
            elif keys & {"items", "minItems"}:
                types = "array"
            elif keys & {"enum", "const"}:
                return _KEEP
            elif keys & {"maxLength", "minLength", "pattern", "format"}:
                return None  # applies to strings only, but allows anything else: not worth it
            else:
                return ANY
        if isinstance(types, list):
            if not types or not all(isinstance(t, str) and t in _TYPES for t in types):
                return None
            branches: dict[str, Node] = {}
            for name in types:
                branch = self._typed(schema, name, depth)
                if branch is None:
                    return None
                branches["number" if name == "integer" else name] = branch
            return Node("union", branches=branches)
        if not isinstance(types, str) or types not in _TYPES:
            return None
        return self._typed(schema, types, depth)

    def _typed(self, schema: Mapping[str, Any], name: str, depth: int) -> Node | None:
        if "enum" in schema or "const" in schema:
            return _KEEP
        if name == "string":
            constrained = any(key in schema for key in ("maxLength", "pattern", "format"))
            min_length = schema.get("minLength", 0)
            if not isinstance(min_length, int) or min_length > _SAFE_MIN_LENGTH:
                constrained = True
            return _KEEP if constrained else Node("text")
        if name == "object":
            return self._object(schema, depth)
        if name == "array":
            return self._array(schema, depth)
        return _KEEP

    def _object(self, schema: Mapping[str, Any], depth: int) -> Node | None:
        if "maxProperties" in schema:
            return None
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, Mapping) or not isinstance(required, list):
            return None
        node = Node("object", required=frozenset(str(key) for key in required))
        min_properties = schema.get("minProperties", 0)
        if not isinstance(min_properties, int):
            return None
        node.min_properties = min_properties
        for key, sub in properties.items():
            child = self.read(sub, depth + 1)
            if child is None:
                return None
            node.properties[str(key)] = child
        additional = schema.get("additionalProperties", True)
        node.additional = None if additional is False else self.read(additional, depth + 1)
        if additional is not False and node.additional is None:
            return None
        return node

    def _array(self, schema: Mapping[str, Any], depth: int) -> Node | None:
        items = self.read(schema.get("items", True), depth + 1)
        min_items = schema.get("minItems", 0)
        if items is None or not isinstance(min_items, int):
            return None
        return Node("array", items=items, min_items=min_items)

    def _union(self, schema: Mapping[str, Any], depth: int) -> Node | None:
        if set(schema) & {"type", "properties", "items", "$ref"} or (
            "anyOf" in schema and "oneOf" in schema
        ):
            return None
        options = schema.get("anyOf", schema.get("oneOf"))
        if not isinstance(options, list) or not options:
            return None
        branches: dict[str, Node] = {}
        for option in options:
            child = self.read(option, depth + 1)
            if child is None:
                return None
            found = child.branches if child.kind == "union" else {
                _kind_type(self._resolved(option), child): child}
            for name, branch in found.items():
                # Two branches for one JSON type cannot be told apart by a value's type.
                if name is None or name in branches:
                    return None
                branches[name] = branch
        return Node("union", branches=branches)

    def _resolved(self, schema: object) -> object:
        """``schema``, or what its local ``$ref`` names (one step)."""
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if ref.startswith(("#/$defs/", "#/definitions/")):
                section, name = ref[2:].split("/", 1)
                target = self.root.get(section, {})
                if isinstance(target, Mapping):
                    return target.get(name, schema)
        return schema

    def _ref(self, schema: Mapping[str, Any], depth: int) -> Node | None:
        if set(schema) - _NEUTRAL - {"$ref"}:
            return None
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
            return None
        if ref in self.refs:
            return self.refs[ref]
        section, name = ref[2:].split("/", 1)
        target = self.root.get(section, {})
        if not isinstance(target, Mapping) or name not in target:
            return None
        # A recursive model refers to itself: the node exists before it is read.
        node = Node("any")
        self.refs[ref] = node
        found = self.read(target[name], depth + 1)
        if found is None:
            return None
        node.__dict__.update(found.__dict__)
        return node


def _kind_type(schema: object, node: Node) -> str | None:
    """The one JSON type a union's option admits, or None if it admits several."""
    if node.kind in ("object", "array"):
        return node.kind
    if node.kind == "text":
        return "string"
    if isinstance(schema, Mapping):
        kind = schema.get("type")
        if isinstance(kind, str) and kind in _TYPES:
            return "number" if kind == "integer" else kind
        for key in ("const", "enum"):
            if key in schema:
                values = [schema[key]] if key == "const" else schema[key]
                if isinstance(values, list):
                    kinds = {type_name(value) for value in values}
                    if len(kinds) == 1:
                        return kinds.pop()
    return None


def guide_for(schema: object) -> Node | None:
    """The guide for documents of an object ``schema``, or ``None`` if a cut could
    break it (then the schema is withheld and results are cut without it)."""
    if not isinstance(schema, Mapping):
        return None
    node = _Reader(schema).read(schema)
    if node is None or node.kind not in ("object", "any"):
        return None
    return node
