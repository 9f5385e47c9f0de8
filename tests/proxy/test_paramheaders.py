"""The Mcp-Param-* headers of a 2026-07-28 tools/call, checked against the official SDK's
own server-side rules: the same tools are valid, and every call's headers pass the
server's comparison with the body, on one safe header line each."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.inbound import find_invalid_x_mcp_header, validate_mcp_param_headers

from toolcap.proxy._paramheaders import ParamHeaders, header_marks

# Header names: tokens, near-duplicates by case, and names no header may have.
mark_names = st.sampled_from(["Region", "region", "Shard", "X-Id", "a.b", "Re gion", "",
                              "Bad\r\nName", "ünï", "L" * 65]) | st.sampled_from([7, None])
kinds = st.sampled_from(["string", "integer", "boolean", "number", "object", "array"]) | (
    st.sampled_from([["string", "null"], {"enum": ["string"]}]))
# Instance data, which may hold a mark-shaped key that is no mark.
data = st.fixed_dictionaries({"x-mcp-header": mark_names}) | st.lists(
    st.fixed_dictionaries({"x-mcp-header": mark_names}), max_size=1)


def property_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries({"type": kinds}, optional={
        "x-mcp-header": mark_names, "examples": data, "default": data, "const": data,
        "enum": data})
    nested = st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(st.sampled_from(
            ["region", "inner", "n"]), children, max_size=3)},
        optional={"x-mcp-header": mark_names})
    elsewhere = st.fixed_dictionaries({"type": st.just("array"), "items": children})
    composed = st.fixed_dictionaries({"oneOf": st.lists(children, min_size=1, max_size=2)})
    return leaf | nested | elsewhere | composed


schemas = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])},
                          optional={"x-mcp-header": mark_names}),
    property_schema, max_leaves=12,
).map(lambda child: {"type": "object", "properties": {"region": child}}) | st.builds(
    lambda props: {"type": "object", "properties": props},
    st.dictionaries(st.sampled_from(["region", "shard", "flag", "deep"]),
                    st.recursive(st.fixed_dictionaries(
                        {"type": kinds}, optional={"x-mcp-header": mark_names}),
                        property_schema, max_leaves=8), max_size=4))

values = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=20) | (
    st.floats(allow_nan=False, allow_infinity=False)) | st.lists(st.integers(), max_size=2)
arguments = st.recursive(st.dictionaries(st.sampled_from(["region", "shard", "flag", "deep",
                                                          "inner", "n"]), values, max_size=4),
                         lambda inner: st.dictionaries(st.sampled_from(
                             ["region", "deep", "inner", "n"]), inner | values, max_size=3),
                         max_leaves=8)


def listed(schema: dict[str, Any]) -> bytes:
    tools = [{"name": "t", "inputSchema": schema}, {"name": "plain", "inputSchema": {}}]
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()


@settings(deadline=None, max_examples=500)
@given(schema=schemas)
def test_a_tool_is_left_out_exactly_when_the_sdk_finds_its_marks_invalid(
    schema: dict[str, Any],
) -> None:
    invalid = find_invalid_x_mcp_header(schema) is not None
    assert isinstance(header_marks(schema), str) == invalid
    kept = json.loads(ParamHeaders().learn(listed(schema), "http://up/mcp"))["result"]["tools"]
    assert [tool["name"] for tool in kept] == (["plain"] if invalid else ["t", "plain"])


@settings(deadline=None, max_examples=500)
@given(schema=schemas, args=arguments)
def test_every_call_carries_the_headers_the_sdk_server_expects_on_safe_lines(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    params = ParamHeaders()
    params.learn(listed(schema), "http://up/mcp")
    headers = params.headers({"name": "t", "arguments": args})
    for name, value in headers.items():
        assert name.startswith("mcp-param-")
        assert value.isascii() and value.isprintable() and value == value.strip()
    assert validate_mcp_param_headers(schema, args, headers) is None


def test_a_tool_never_listed_or_unmarked_gets_no_header() -> None:
    params = ParamHeaders()
    assert params.headers({"name": "t", "arguments": {"region": "x"}}) == {}
    params.learn(listed({"type": "object", "properties": {"region": {"type": "string"}}}), "u")
    assert params.headers({"name": "t", "arguments": {"region": "x"}}) == {}


def test_marked_arguments_nested_or_not_are_mirrored_as_the_spec_spells_them() -> None:
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "where": {"type": "object", "properties": {
            "shard": {"type": "integer", "x-mcp-header": "Shard"},
            "hot": {"type": "boolean", "x-mcp-header": "Hot"}}}}}
    params = ParamHeaders()
    params.learn(listed(schema), "http://up/mcp")
    call = {"name": "t", "arguments": {"region": "Zürich", "where": {"shard": -7, "hot": True}}}
    assert params.headers(call) == {"mcp-param-region": "=?base64?WsO8cmljaA==?=",
                                    "mcp-param-shard": "-7", "mcp-param-hot": "true"}
    assert params.headers({"name": "t", "arguments": {"region": None}}) == {}


def test_a_deep_or_huge_schema_is_walked_within_a_bound_and_its_tool_kept() -> None:
    deep: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"n": deep}}
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20_000)}}
    for schema in (deep, wide):
        assert header_marks(schema) == {}
        kept = json.loads(ParamHeaders().learn(listed(schema), "u"))["result"]["tools"]
        assert [tool["name"] for tool in kept] == ["t", "plain"]
