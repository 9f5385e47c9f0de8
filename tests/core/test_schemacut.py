"""The schema-guided structural cut: over generated output schemas of the kind it honours
and documents that validate against them, the cut is within its budget and still
validates (checked with the jsonschema library), and what a schema it cannot honour is."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

jsonschema = pytest.importorskip("jsonschema")

from toolcap.core._jsondoc import parse_document  # noqa: E402
from toolcap.core._schemacut import cut_to_schema  # noqa: E402
from toolcap.core._schemaguide import guide_for  # noqa: E402

REF = "toolcap:" + "ab" * 16
VALIDATOR = jsonschema.Draft202012Validator

words = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x2FF), max_size=8)
long_text = st.builds(lambda unit, n: unit * n,
                      st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x9FFF),
                              min_size=1, max_size=20), st.integers(0, 400))

leaf_schemas = st.sampled_from([
    {"type": "string"},
    {"type": "string", "maxLength": 12},
    {"type": "string", "enum": ["open", "closed", "merged"]},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"anyOf": [{"type": "string"}, {"type": "null"}]},
    {"type": ["integer", "null"]},
    {},
])


def containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.lists(st.sampled_from(["id", "title", "body", "items", "toolcap", "n", "tags"]),
                    min_size=1, max_size=5, unique=True)

    @st.composite
    def an_object(draw: st.DrawFn) -> dict[str, Any]:
        names = draw(keys)
        properties = {name: draw(children) for name in names}
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        schema["required"] = draw(st.lists(st.sampled_from(names), unique=True))
        additional = draw(st.sampled_from([None, False, {"type": "string"}, {"type": "integer"}]))
        if additional is not None:
            schema["additionalProperties"] = additional
        return schema

    @st.composite
    def an_array(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": draw(children)}
        low = draw(st.integers(0, 3))
        if low:
            schema["minItems"] = low
        return schema

    return st.one_of(an_object(), an_array())


schemas = st.recursive(leaf_schemas, containers, max_leaves=12)


@st.composite
def document(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A document that validates against one of the generated ``schema`` s."""
    if "anyOf" in schema:
        return draw(document(draw(st.sampled_from(schema["anyOf"]))))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind is None:
        return draw(st.one_of(long_text, st.integers(), st.none()))
    if kind == "string":
        if "enum" in schema:
            return draw(st.sampled_from(schema["enum"]))
        if "maxLength" in schema:
            return draw(st.text(max_size=schema["maxLength"]))
        return draw(long_text)
    if kind == "integer":
        return draw(st.integers(-10**12, 10**12))
    if kind == "number":
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        count = draw(st.integers(schema.get("minItems", 0), 40))
        return [draw(document(schema["items"])) for _ in range(count)]
    out: dict[str, Any] = {}
    for name, sub in schema["properties"].items():
        if name in schema["required"] or draw(st.booleans()):
            out[name] = draw(document(sub))
    additional = schema.get("additionalProperties")
    if additional not in (False, None) and draw(st.booleans()):
        out["extra"] = draw(document(additional))
    return out


@st.composite
def schema_and_document(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    root = draw(containers(schemas).filter(lambda s: s["type"] == "object"))
    return root, draw(document(root))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=schema_and_document(), budget=st.integers(200, 6000))
def test_a_cut_of_a_document_still_validates_against_its_schema(
    pair: tuple[dict[str, Any], Any], budget: int
) -> None:
    schema, doc = pair
    VALIDATOR(schema).validate(doc)
    guide = guide_for(schema)
    assert guide is not None
    parsed = parse_document(json.dumps(doc, ensure_ascii=False), "json")
    assert parsed is not None
    found = cut_to_schema(parsed[0], guide, budget, reference=REF)
    if found is None:
        return
    assert len(found.encode()) <= budget
    cut = json.loads(found)
    VALIDATOR(schema).validate(cut)
    key = "toolcap_2" if "toolcap" in doc else "toolcap"
    may_note = key not in schema["properties"] and schema.get("additionalProperties") in (
        None, True, {"type": "string"})
    if cut != doc and may_note and budget >= 1000:
        assert "[toolcap:" in found


def test_a_long_required_string_and_a_long_array_are_cut_and_validate() -> None:
    schema = {"type": "object", "required": ["title", "body", "lines", "rows"],
              "properties": {"title": {"type": "string"}, "body": {"type": "string"},
                             "lines": {"type": "integer"},
                             "rows": {"type": "array", "minItems": 1, "items": {
                                 "type": "object", "required": ["id"],
                                 "properties": {"id": {"type": "integer"}},
                                 "additionalProperties": False}}}}
    doc = {"title": "report", "body": "line of text\n" * 20_000, "lines": 20_000,
           "rows": [{"id": i} for i in range(5000)]}
    guide = guide_for(schema)
    assert guide is not None
    parsed = parse_document(json.dumps(doc), "json")
    assert parsed is not None
    found = cut_to_schema(parsed[0], guide, 4096, reference=REF)
    assert found is not None and len(found.encode()) <= 4096
    cut = json.loads(found)
    VALIDATOR(schema).validate(cut)
    assert cut["title"] == "report" and cut["lines"] == 20_000
    assert REF in cut["body"]
    assert cut["rows"][0] == {"id": 0} and len(cut["rows"]) < 5000


@pytest.mark.parametrize("schema", [
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}},
    {"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{}]}}},
    {"type": "object", "properties": {"a": {"$ref": "https://example.com/schema"}}},
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}, {"type": "object",
                                                                          "required": ["x"]}]}}},
    {"type": "array"},
    {"type": "object", "maxProperties": 3},
])
def test_a_schema_a_cut_could_break_is_not_honoured(schema: dict[str, Any]) -> None:
    assert guide_for(schema) is None


def test_a_pydantic_style_schema_with_refs_and_optionals_is_honoured() -> None:
    schema = {"type": "object", "$defs": {"Item": {"type": "object", "properties": {
        "name": {"type": "string", "title": "Name"},
        "child": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}], "default": None}},
        "required": ["name"]}},
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                       "total": {"type": "integer"}},
        "required": ["items", "total"], "title": "Listing"}
    assert guide_for(schema) is not None
